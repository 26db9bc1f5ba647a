"""What `serve` rejects in a config, checked without starting anything: `serve`, `tools` and
`config check` all call `preflight`, so `config check` passes exactly the configs `serve` accepts.

Beyond the file itself (config.py), that is the embedder (`nexus.embedder`) and the engine settings
(`nexus.engine`), which `serve` would otherwise reject only when the index is built or on the first `run`.
"""

from __future__ import annotations

from nexus_gateway.config import GatewayConfig
from nexus_gateway.engine.settings import engine_settings
from nexus_gateway.errors import ConfigError
from nexus_gateway.routing.specs import check_retriever


def preflight(config: GatewayConfig) -> None:
    """Raise the `ConfigError` that `serve` would meet for this config (one line naming file and key)."""
    label = str(config.path) if config.path else "<config>"
    try:
        check_retriever(config.nexus.embedder)
    except ConfigError as exc:
        raise ConfigError(f"{label}: nexus settings, key 'embedder': {exc}") from None
    engine_settings(config)
