"""Hybrid scoring on its own: the fused score per tool, and the top k of a score vector."""

from __future__ import annotations

import numpy as np
import pytest

from nexus_gateway.routing.fusion import LEXICAL_WEIGHT, RRF_K, fuse, top_k

DENSE = np.array([0.50, 0.40, 0.10])
LEXICAL = np.array([0.0, 8.0, 4.0])


def test_linear_fusion_adds_the_weighted_max_normalized_bm25_to_the_cosine():
    fused = fuse(DENSE, LEXICAL, "linear", 0.5)
    np.testing.assert_allclose(fused, [0.50, 0.40 + 0.5 * 1.0, 0.10 + 0.5 * 0.5])
    assert int(np.argmax(fused)) == 1  # the lexical match overtakes the best cosine


def test_linear_fusion_uses_the_default_weight():
    np.testing.assert_allclose(fuse(DENSE, LEXICAL), DENSE + LEXICAL_WEIGHT * LEXICAL / 8.0)


def test_a_given_peak_normalizes_bm25_instead_of_the_batch_maximum():
    np.testing.assert_allclose(fuse(DENSE, LEXICAL, "linear", 1.0, peak=16.0), DENSE + LEXICAL / 16.0)


def test_no_lexical_overlap_leaves_the_cosine_scores_unchanged():
    fused = fuse(DENSE, np.zeros(3), "linear", 0.3)
    assert np.all(np.isfinite(fused))
    np.testing.assert_array_equal(fused, DENSE)


def test_an_empty_catalog_fuses_to_an_empty_score_vector():
    assert fuse(np.zeros(0), np.zeros(0)).shape == (0,)


def test_reciprocal_rank_fusion_scores_by_rank_on_each_side():
    fused = fuse(DENSE, LEXICAL, "rrf")
    # dense ranks 1, 2, 3; lexical ranks 3, 1, 2
    expected = [1 / (RRF_K + 1) + 1 / (RRF_K + 3), 1 / (RRF_K + 2) + 1 / (RRF_K + 1), 1 / (RRF_K + 3) + 1 / (RRF_K + 2)]
    np.testing.assert_allclose(fused, expected)
    assert int(np.argmax(fused)) == 1


@pytest.mark.parametrize(("method", "side"), [("dense", DENSE), ("lexical", LEXICAL)])
def test_a_single_side_method_returns_that_side_alone(method, side):
    np.testing.assert_array_equal(fuse(DENSE, LEXICAL, method), side)


def test_top_k_returns_the_best_indices_best_first():
    assert top_k(np.array([0.1, 0.9, 0.5, 0.7]), 3).tolist() == [1, 3, 2]


def test_top_k_breaks_ties_by_index_order():
    assert top_k(np.array([0.2, 0.5, 0.5, 0.5, 0.1]), 3).tolist() == [1, 2, 3]


def test_top_k_past_the_catalog_size_returns_every_tool_and_zero_returns_none():
    scores = np.array([0.3, 0.8])
    assert top_k(scores, 10).tolist() == [1, 0]
    assert top_k(scores, 0).tolist() == []
    assert top_k(np.zeros(0), 5).tolist() == []


def test_top_k_of_a_large_shuffled_catalog_is_sorted_best_first():
    scores = np.random.default_rng(7).permutation(200).astype(np.float64)
    expected = np.argsort(-scores)[:20].tolist()
    assert top_k(scores, 20).tolist() == expected


def test_top_k_of_a_large_catalog_with_ties_keeps_index_order_among_them():
    scores = np.tile([0.25, 0.75, 0.5, 0.75], 50)  # 0.75 at every index 1, 3 (mod 4)
    assert top_k(scores, 6).tolist() == [1, 3, 5, 7, 9, 11]
