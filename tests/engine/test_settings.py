"""Engine settings come from the config file's `nexus.engine` object, command-line options on top."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nexus_gateway.config import load_config
from nexus_gateway.engine.settings import compiled_root, engine_settings
from nexus_gateway.errors import ConfigError


def config_with(tmp_path: Path, engine: object) -> Path:
    path = tmp_path / "gateway.json"
    path.write_text(json.dumps({"mcpServers": {}, "nexus": {"state_dir": str(tmp_path / "state"), "engine": engine}}))
    return path


def test_any_gguf_can_be_named_with_its_context_threads_and_gpu_layers(tmp_path: Path):
    engine = {"model": "/models/qwen.gguf", "n_ctx": 8192, "threads": 8, "gpu_layers": -1}
    config = load_config(config_with(tmp_path, engine))
    settings = engine_settings(config, threads=2, n_ctx=None)
    assert (settings.model, settings.n_ctx, settings.threads, settings.gpu_layers) == ("/models/qwen.gguf", 8192, 2, -1)
    assert compiled_root(settings, config) == tmp_path / "state" / "compiled_schemas"


def test_a_wrong_engine_setting_is_a_config_error_naming_file_and_key(tmp_path: Path):
    config = load_config(config_with(tmp_path, {"n_ctx": 10}))
    with pytest.raises(ConfigError, match=r"gateway\.json: nexus\.engine: n_ctx"):
        engine_settings(config)
