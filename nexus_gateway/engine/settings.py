"""Engine settings: the `engine` object under the config file's `nexus` key, e.g.

    "nexus": {"engine": {"model": "~/models/qwen2.5-14b-instruct-q4_k_m.gguf",
                         "n_ctx": 8192, "threads": 8, "gpu_layers": -1}}

Everything is optional: with no `engine` key the packaged Qwen2.5-Coder-0.5B-Instruct runs on the CPU.
`model` is a registry name (`qwen2.5-coder-0.5b`, `qwen2.5-coder-1.5b`, `gemma3-270m`; engine/models.py)
or the path of any GGUF. `gpu_layers`
-1 offloads every layer (Metal on Apple Silicon, CUDA, ...) when llama.cpp was built with a GPU backend.

With `"backend": "openai"` the model runs on an inference server that speaks the OpenAI completions API
(llama.cpp's server, llama_cpp.server, vLLM, ...; engine/remote.py) and the gateway loads no model:

    "nexus": {"engine": {"backend": "openai", "base_url": "http://127.0.0.1:8080/v1",
                         "model": "qwen2.5-coder-0.5b", "api_key": "${env:INFERENCE_KEY}"}}

There `model` is the name sent to the server, and the local settings (n_ctx, threads, ...) do not apply.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from nexus_gateway.config import GatewayConfig, default_state_dir
from nexus_gateway.errors import ConfigError


class EngineSettings(BaseModel):
    model_config = ConfigDict(extra="allow")

    model: str | None = None
    """A packaged model's name (engine/models.py) or a GGUF path; `qwen2.5-coder-0.5b` when unset."""
    n_ctx: int = Field(default=4096, ge=256)
    threads: int | None = Field(default=None, ge=1)
    """CPU threads for prompt batches (when unset: every core up to 4, else half of them up to 8)."""
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
    # -- the model on an inference server (engine/remote.py) --
    backend: Literal["local", "openai"] = "local"
    """`local`: llama.cpp in this process; `openai`: an inference server's /v1/completions (no model loads here)."""
    base_url: str | None = None
    """The server's OpenAI API root, `/v1` included (`http://127.0.0.1:8080/v1`); required with `openai`."""
    api_key: str | None = None
    """Sent as a bearer token (`${env:NAME}` keeps it out of the file); never logged."""
    timeout: float = Field(default=60.0, gt=0)
    """Seconds one request to the server may take."""
    layout: Literal["chatml", "gemma", "plain"] | None = None
    """The served model's prompt layout (engine/prompt.py); from `model`'s name when unset (ChatML unless it
    names Gemma)."""
    grammar_field: str = "grammar"
    """Where the GBNF grammar goes in the request body, dotted for a nested key: `grammar` (llama.cpp's server,
    llama_cpp.server), `structured_outputs.grammar` (vLLM), `guided_grammar` (older vLLM)."""
    scoring: Literal["forced", "echo"] = "forced"
    """How re-ranking reads the request's log-probabilities: `forced` (the request generated under a grammar
    that allows only it, with `logprobs`) or `echo` (`echo` + `logprobs` on the prompt, as vLLM returns them)."""

    @model_validator(mode="after")
    def _server_named(self) -> EngineSettings:
        if self.backend == "openai" and not self.base_url:
            raise ValueError("backend 'openai' needs base_url, the server's API root (e.g. http://127.0.0.1:8080/v1)")
        return self


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
