"""`nexus-gateway eval fields`: the grid search of field weights, and the embedding cache it runs on."""

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from nexus_gateway.evals.dataset import Case
from nexus_gateway.evals.embed_cache import CachedEmbedder
from nexus_gateway.evals.fields import TuningSet, search_fields
from nexus_gateway.routing.embedders import HashingEmbedder
from nexus_gateway.routing.retriever import FieldWeights
from tests.conftest import cli, write_labelled_set


class Counting(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += texts
        return super().embed_batch(texts)


def test_the_cache_embeds_each_text_once_and_keeps_vectors_across_runs(tmp_path: Path):
    path, inner = tmp_path / "cache.npz", Counting()
    cached = CachedEmbedder(inner, path)
    first = cached.embed_batch(["read a file", "send mail", "read a file"])
    cached.save()
    again = CachedEmbedder(Counting(), path)
    assert inner.texts == ["read a file", "send mail"] and np.array_equal(again.embed_batch(["send mail"]), first[1:2])
    assert again.inner.texts == []  # type: ignore[attr-defined]


def _tool(server: str, name: str, description: str) -> dict[str, object]:
    return {"server": server, "name": f"{server}__{name}", "description": description, "inputSchema": {}}


TOOLS = [
    _tool("hello", "debug", "Lists all available tools and methods"),
    _tool("files", "read_text_file", "Read the complete contents of a file as text"),
    _tool("mail", "send_email", "Send an email to someone"),
    _tool("weather", "forecast", "Rain and sun for a city"),
]
CASES = [
    Case("a", "hello txt contents", "files__read_text_file"),  # a file named like a server (as words: names are masked)
    Case("b", "send an email", "mail__send_email"),
]


def test_the_grid_ranks_points_by_mean_top1_and_reports_the_current_defaults():
    lexical = [FieldWeights(server=3.0), FieldWeights(server=0.0)]  # a server's name that outweighs the passages
    report = search_fields(
        [TuningSet("toy", TOOLS, CASES, len(TOOLS))],
        HashingEmbedder(),
        lexical_grid=lexical,
        dense_grid=[FieldWeights(server=0.0)],
        fusion_grid=[100.0],  # the lexical side decides
    )
    assert len(report["grid"]) == 2 and report["best"]["lexical"]["server"] == 0.0
    assert report["best"]["sets"]["toy"]["top1"] == 1.0 and report["grid"][1]["sets"]["toy"]["top1"] == 0.5
    tops = [row["mean_top1"] for row in report["grid"]]
    assert tops == sorted(tops, reverse=True)


def test_eval_fields_writes_the_grid_as_json(tmp_path: Path):
    tools, cases = write_labelled_set(tmp_path, TOOLS, [vars(case) | {"alternatives": []} for case in CASES])
    out, extra = tmp_path / "grid.json", tmp_path / "extra.json"
    extra.write_text(json.dumps([_tool("maps", "directions", "Directions between two places")]))
    spec = f"toy={tools}+{extra},{cases},all"  # the set's tools and, after +, distractors
    result = cli("eval", "fields", "--set", spec, "--embedder", "hashing", "--json", str(out), timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text())
    assert report["sets"] == [{"name": "toy", "cases": 2, "tools": 5, "size": 5}]
    assert report["current"] is not None and len(report["grid"]) > 100
