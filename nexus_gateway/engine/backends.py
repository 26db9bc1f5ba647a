"""`open_engine`: the engine `nexus.engine.backend` names, unopened (`async with open_engine(...) as engine`).

    local    `LocalEngine` (worker.py): llama.cpp in this process, KV blocks under `compiled_root`
    openai   `RemoteEngine` (remote.py): an inference server's completions API; llama.cpp never loads

Each is imported only when chosen, so a gateway on a remote backend never imports the local runtime.
"""

from __future__ import annotations

from pathlib import Path

from nexus_gateway.engine import ManagedEngine
from nexus_gateway.engine.settings import EngineSettings


def open_engine(settings: EngineSettings, *, compiled_root: Path | None = None) -> ManagedEngine:
    if settings.backend == "openai":
        from nexus_gateway.engine.remote import RemoteEngine

        return RemoteEngine(settings)
    from nexus_gateway.engine.worker import LocalEngine

    return LocalEngine(settings, compiled_root=compiled_root)
