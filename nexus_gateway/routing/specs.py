"""Which embedder and retriever a config names, checked without importing numpy or any model.

`config check` and `serve` (through `preflight`) reject the same specs with the same `ConfigError`; the
embedders themselves (embedders.py) are built from a spec that passed here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from nexus_gateway.errors import ConfigError

DEFAULT_SPEC = "default"
EmbedderKind = Literal["default", "hashing", "gguf"]


def embedder_kind(spec: str | None) -> tuple[EmbedderKind, Path | None]:
    """(kind, GGUF path or None) of an embedder spec: None or "default", "hashing", or "gguf:/path/model.gguf"."""
    spec = (spec or DEFAULT_SPEC).strip()
    if spec == DEFAULT_SPEC:
        return "default", None
    if spec == "hashing":
        return "hashing", None
    if spec.startswith("gguf:"):
        path = Path(spec.removeprefix("gguf:")).expanduser()
        if not path.is_file():
            raise ConfigError(f"Embedder {spec!r}: no GGUF file at {path}.")
        return "gguf", path
    raise ConfigError(f"Unknown embedder {spec!r}: use 'default', 'hashing' or 'gguf:/path/to/model.gguf'.")


def check_retriever(spec: str) -> None:
    """Raise the `ConfigError` `build_retriever` (hybrid.py) would raise for this spec (`bm25` or an embedder)."""
    if spec != "bm25":
        embedder_kind(spec)
