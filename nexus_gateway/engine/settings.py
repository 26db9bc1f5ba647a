"""Engine settings: the `engine` object under the config file's `nexus` key, e.g.

    "nexus": {"engine": {"model": "~/models/qwen2.5-14b-instruct-q4_k_m.gguf",
                         "n_ctx": 8192, "threads": 8, "gpu_layers": -1}}

Everything is optional: with no `engine` key the packaged Qwen2.5-Coder-0.5B-Instruct runs on the CPU.
`model` is a registry name (`qwen2.5-coder-0.5b`, `qwen2.5-coder-1.5b`, `gemma3-270m`; engine/models.py)
or the path of any GGUF. `gpu_layers`
-1 offloads every layer (Metal on Apple Silicon, CUDA, ...) when llama.cpp was built with a GPU backend.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from nexus_gateway.config import GatewayConfig, default_state_dir
from nexus_gateway.errors import ConfigError


class EngineSettings(BaseModel):
    model_config = ConfigDict(extra="allow")

    model: str | None = None
    """A packaged model's name (engine/models.py) or a GGUF path; `qwen2.5-coder-0.5b` when unset."""
    n_ctx: int = Field(default=4096, ge=256)
    threads: int | None = Field(default=None, ge=1)
    """CPU threads for prompt batches (half the cores, up to 8, when unset)."""
    decode_threads: int | None = Field(default=None, ge=1)
    """CPU threads for token-by-token decoding (`threads` when unset)."""
    gpu_layers: int = Field(default=0, ge=-1)
    sessions: int = Field(default=8, ge=1, le=200)
    """Concurrent sessions (sequences) in the one context."""
    n_batch: int = Field(default=512, ge=32)
    flash_attn: bool = True
    kv_type: Literal["f16", "q8_0", "f32"] = "f16"
    compiled_dir: str | None = None
    """Where `compiled_schemas/` lives; beside the gateway's state when unset."""


def engine_settings(config: GatewayConfig | None = None, **overrides: object) -> EngineSettings:
    """`nexus.engine` from the config (if any), with non-None `overrides` (command-line options) on top."""
    raw: object = {}
    if config is not None and config.nexus.model_extra:
        raw = config.nexus.model_extra.get("engine", {})
    where = f"{config.path if config and config.path else '<config>'}: nexus.engine"
    if not isinstance(raw, dict):
        raise ConfigError(f"{where} must be an object of engine settings")
    merged = {**raw, **{key: value for key, value in overrides.items() if value is not None}}
    try:
        return EngineSettings.model_validate(merged)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"{where}: {problems}") from None


def compiled_root(settings: EngineSettings, config: GatewayConfig | None = None) -> Path:
    """`compiled_schemas/`: the configured folder, else beside the gateway's state, else the user cache."""
    if settings.compiled_dir:
        return Path(settings.compiled_dir).expanduser()
    if config is not None:
        return default_state_dir(config) / "compiled_schemas"
    return Path.home() / ".cache" / "nexus-gateway" / "compiled_schemas"
