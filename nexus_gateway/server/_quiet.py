"""Which requests of a streamable-HTTP session (handshake era) are answered with JSON instead of SSE.

An SSE stream costs the host and the gateway more than one JSON body (a stream to open, events to frame,
a task to run it), and most requests send nothing but their answer. A request is quiet when nothing but
its answer can be sent for it:

- lists, ping, completions, log levels and subscriptions, unless the host asked for progress;
- tools/call, resources/read and prompts/get, when moreover the host can be asked for nothing (it declared
  neither sampling, elicitation nor roots: an upstream's request would be refused anyway) and has not
  asked for log messages (`logging/setLevel`: they ride the request's stream).

Everything else keeps its SSE stream. The modern era (2026-07-28) needs none of this: the SDK answers a
stateless request with JSON when its handler sends nothing before it returns.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

_LISTS = frozenset(
    {
        "ping",
        "tools/list",
        "resources/list",
        "resources/templates/list",
        "prompts/list",
        "completion/complete",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
    }
)
_CALLS = frozenset({"tools/call", "resources/read", "prompts/get"})
_ASKING = ("sampling", "elicitation", "roots")


class SessionQuiet:
    """The quiet-request rule of one session (`QuietJSONTransport`'s `quiet`); it sees each request in order."""

    def __init__(self) -> None:
        self.asks_host = True
        """Until the host's initialize says otherwise."""
        self.wants_logs = False

    def __call__(self, message: types.JSONRPCRequest) -> bool:
        params: dict[str, Any] = message.params if isinstance(message.params, dict) else {}
        method = message.method
        if method == "initialize":
            capabilities = params.get("capabilities")
            self.asks_host = not isinstance(capabilities, dict) or any(
                capabilities.get(key) is not None for key in _ASKING
            )
            return False
        meta = params.get("_meta")
        if isinstance(meta, dict) and meta.get("progressToken") is not None:
            return False
        if method == "logging/setLevel":
            self.wants_logs = True
        if method in _LISTS:
            return True
        return method in _CALLS and not self.asks_host and not self.wants_logs
