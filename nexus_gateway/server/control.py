"""Run-time control on the HTTP front (what `nexus-gateway servers` talks to), in JSON.

    GET  /control/servers                  every configured server: state, tools, enabled
    POST /control/servers/{name}/enable    start it again (remembered across restarts)
    POST /control/servers/{name}/disable   stop it (remembered across restarts)

Behind the same guard as `/mcp` (Host/Origin, bearer token). A token bound to a profile is refused (403,
server/_clients.py): a client limited to part of the gateway does not switch the gateway's servers.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from nexus_gateway.errors import NexusError
from nexus_gateway.gateway import Gateway
from nexus_gateway.reload import switch


def server_rows(gateway: Gateway) -> list[dict[str, Any]]:
    """Each configured server, in config order, with its switch and (when running) its health."""
    statuses = {status.name: status for status in gateway.pool.statuses()}
    rows = []
    for name, spec in gateway.config.servers.items():
        status = statuses.get(name)
        rows.append(
            {
                "name": name,
                "enabled": not spec.disabled and name not in gateway.switches.disabled,
                "disabled_in": "config" if spec.disabled else "runtime" if name in gateway.switches.disabled else None,
                "state": status.state.value if status else "stopped",
                "tools": status.tools if status else 0,
                "restarts": status.restarts if status else 0,
                "last_error": status.last_error if status else None,
            }
        )
    return rows


def control_routes(gateway: Gateway) -> list[Route]:
    async def servers(request: Request) -> Response:
        return JSONResponse({"servers": server_rows(gateway)})

    async def set_enabled(request: Request) -> Response:
        name, action = request.path_params["name"], request.path_params["action"]
        if action not in ("enable", "disable"):
            return JSONResponse({"error": "not_found", "message": f"No action {action!r}."}, status_code=404)
        try:
            changed = await switch(gateway, name, enabled=action == "enable")
        except NexusError as exc:
            return JSONResponse({"error": "unknown_server", "message": str(exc)}, status_code=404)
        row = next(row for row in server_rows(gateway) if row["name"] == name)
        return JSONResponse(row | {"changed": changed})

    return [
        Route("/control/servers", endpoint=servers, methods=["GET"]),
        Route("/control/servers/{name}/{action}", endpoint=set_enabled, methods=["POST"]),
    ]
