"""Choosing the store: a cluster without redis-py installed is a clear configuration error."""

import builtins
from pathlib import Path
from typing import Any

import pytest

from nexus_gateway.config import ClusterSettings
from nexus_gateway.errors import ConfigError
from nexus_gateway.state import open_store


def test_a_redis_url_without_redis_py_installed_says_which_extra_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_import = builtins.__import__

    def no_redis(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "redis" or name.startswith("redis."):
            raise ModuleNotFoundError(f"No module named {name!r}", name="redis")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(__import__("sys").modules, "nexus_gateway.state.redis_store", raising=False)
    monkeypatch.setattr(builtins, "__import__", no_redis)
    with pytest.raises(ConfigError, match=r"nexus-gateway\[cluster\]"):
        open_store(ClusterSettings(redis_url="redis://127.0.0.1:1/0"), tmp_path)
