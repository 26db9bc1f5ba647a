"""The protocol kernel: one low-level MCP `Server` whose handlers all call the Gateway.

Transports (stdio.py, http.py) are siblings that run this server; none of them knows about tools.
"""

from __future__ import annotations

import logging
import weakref
from typing import Any

import mcp_types as types
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.shared.exceptions import MCPError

from nexus_gateway import __version__
from nexus_gateway.errors import NexusError
from nexus_gateway.gateway import Gateway

logger = logging.getLogger(__name__)

INSTRUCTIONS = (
    "nexus-gateway fronts many MCP servers. In routed mode, call search_tools with what you want to do, "
    "then call_tool with the name and arguments of the tool you chose; describe_tool shows a full schema; "
    "run does a plain request in one step."
)


def client_of(ctx: ServerRequestContext[Any]) -> Connection:
    """The client's connection: it lives as long as the client does. (The SDK builds a new `ctx.session`
    for every request, so that cannot key anything per client; it has no public accessor for this yet.)"""
    return ctx.session._connection


def build_server(gateway: Gateway) -> Server[Any]:
    clients: weakref.WeakSet[Connection] = weakref.WeakSet()

    def seen(ctx: ServerRequestContext[Any]) -> None:
        clients.add(client_of(ctx))

    async def list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None) -> Any:
        await gateway.wait_ready()
        seen(ctx)
        return {"tools": gateway.list_tools()}

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> Any:
        await gateway.wait_ready()
        seen(ctx)
        return await gateway.call_tool(params.name, params.arguments, client=client_of(ctx))

    async def list_resources(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None) -> Any:
        await gateway.wait_ready()
        seen(ctx)
        return {"resources": gateway.list_resources()}

    async def list_templates(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None) -> Any:
        return {"resourceTemplates": gateway.list_resource_templates()}

    async def read_resource(ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams) -> Any:
        try:
            return await gateway.read_resource(str(params.uri))
        except NexusError as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from exc

    async def list_prompts(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None) -> Any:
        await gateway.wait_ready()
        seen(ctx)
        return {"prompts": gateway.list_prompts()}

    async def get_prompt(ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams) -> Any:
        try:
            return await gateway.get_prompt(params.name, params.arguments)
        except NexusError as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from exc

    server: Server[Any] = Server(
        "nexus-gateway",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )

    async def notify_tools_changed() -> None:
        for client in list(clients):
            try:
                await client.send_tool_list_changed()
            except Exception as exc:  # boundary: a gone client must not stop the others being told
                logger.debug("could not notify a client of changed tools: %s", exc)

    gateway.on_change(notify_tools_changed)
    if not gateway.settings.tracing:
        server.middleware.clear()  # the SDK's only default middleware is its OpenTelemetry span per request
    return server


def initialization_options(server: Server[Any]) -> InitializationOptions:
    return server.create_initialization_options(NotificationOptions(tools_changed=True))
