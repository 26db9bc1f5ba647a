"""The protocol kernel: one low-level MCP `Server` whose handlers call the Gateway (tools through meta/).

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

from nexus_gateway import __version__, tracing
from nexus_gateway._sdk import client_connection as client_of
from nexus_gateway.clients import current_client
from nexus_gateway.config.profiles import Profile
from nexus_gateway.errors import NexusError
from nexus_gateway.gateway import Changed, Gateway
from nexus_gateway.meta.tools import MetaTools
from nexus_gateway.server._clients import request_profile
from nexus_gateway.server._forward import Forwarder
from nexus_gateway.server._pages import page_result
from nexus_gateway.server._results import CACHE_HINTS, complete
from nexus_gateway.server._tracing import TracingMiddleware
from nexus_gateway.server.clients import ClientRegistry

logger = logging.getLogger(__name__)

INSTRUCTIONS = (
    "nexus-gateway fronts many MCP servers. In routed mode, call search_tools with what you want to do, "
    "then call_tool with the name and arguments of the tool you chose; describe_tool shows a full schema; "
    "run does a plain request in one step."
)


NOTIFICATIONS = NotificationOptions(tools_changed=True, resources_changed=True, prompts_changed=True)
"""The list_changed notifications the gateway sends (see `notify_changed`), hence advertises (the modern
era's capabilities follow from `subscriptions/listen`, which the gateway serves)."""


class GatewayServer(Server[Any]):
    """The SDK's server, advertising the gateway's notifications on every transport (the streamable-HTTP
    manager and the in-memory client build their initialize result without being told)."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NOTIFICATIONS, experimental_capabilities, extensions
        )


def build_server(gateway: Gateway, *, profile: str | None = None) -> Server[Any]:
    """The MCP server of `gateway`; its clients see `profile` (profiles.py) unless their HTTP request
    names another (a bearer token's, or `/p/NAME/`: server/_clients.py)."""
    clients: weakref.WeakSet[Connection] = weakref.WeakSet()
    tools = MetaTools.of(gateway)
    page_size = gateway.settings.list_page_size
    forwarder = Forwarder(gateway)
    registry = ClientRegistry.of(gateway)
    Profile.of(gateway.settings, profile)  # an unknown profile is a ConfigError now, not on every request

    def seen(ctx: ServerRequestContext[Any]) -> Profile:
        """Remember the client (to tell it of changed lists); the profile its request is served under."""
        clients.add(client_of(ctx))
        chosen = profile_of(ctx)
        registry.seen(ctx, chosen.name)
        return chosen

    def profile_of(ctx: ServerRequestContext[Any]) -> Profile:
        try:
            identity = current_client()  # a daemon socket's client names its profile when it connects
            default = identity.profile if identity is not None and identity.profile is not None else profile
            return Profile.of(gateway.settings, request_profile(ctx, default))
        except NexusError as exc:  # its profile went away in a config reload
            raise MCPError(code=types.INVALID_REQUEST, message=str(exc)) from exc

    async def list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None) -> Any:
        await gateway.wait_ready()
        return page_result("tools", tools.list_tools(seen(ctx)), params, page_size)

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> Any:
        await gateway.wait_ready()
        shown = seen(ctx)
        client = current_client() or client_of(ctx)  # the socket client outlives a modern era's connection

        async def call(link: Any, meta: dict[str, Any] | None) -> Any:
            return await tools.call_tool(
                params.name, params.arguments, client=client, link=link, meta=meta, profile=shown
            )

        return complete(await forwarder.forward(ctx, params, call))

    async def list_resources(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None) -> Any:
        await gateway.wait_ready()
        return page_result("resources", gateway.list_resources(seen(ctx).sees_server), params, page_size)

    async def list_templates(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None) -> Any:
        await gateway.wait_ready()
        templates = gateway.list_resource_templates(seen(ctx).sees_server)
        return page_result("resourceTemplates", templates, params, page_size)

    async def read_resource(ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams) -> Any:
        shown = profile_of(ctx)

        async def read(link: Any, meta: dict[str, Any] | None) -> Any:
            try:
                if not shown.everything:
                    await gateway.wait_ready()
                    if not shown.sees_server(gateway.resource_upstream(str(params.uri)).name):
                        raise NexusError(f"No upstream serves the resource {str(params.uri)!r}.")
                return await gateway.read_resource(str(params.uri), link=link)
            except NexusError as exc:
                raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from exc

        return await forwarder.forward(ctx, params, read)

    async def list_prompts(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None) -> Any:
        await gateway.wait_ready()
        return page_result("prompts", gateway.list_prompts(seen(ctx).sees_server), params, page_size)

    async def get_prompt(ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams) -> Any:
        shown = profile_of(ctx)

        async def get(link: Any, meta: dict[str, Any] | None) -> Any:
            try:
                if not shown.everything:
                    await gateway.wait_ready()
                    try:
                        owner: str | None = gateway.prompt_upstream(params.name)[0].name
                    except NexusError:  # its suggestions may name prompts outside the profile
                        owner = None
                    if owner is None or not shown.sees_server(owner):
                        unknown = f"Unknown prompt {params.name!r}. prompts/list gives every prompt served here."
                        raise NexusError(unknown)
                return await gateway.get_prompt(params.name, params.arguments, link=link)
            except NexusError as exc:
                raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from exc

        return await forwarder.forward(ctx, params, get)

    server = GatewayServer(
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
        cache_hints=CACHE_HINTS,
    )

    async def notify_changed(changed: Changed) -> None:
        for client in list(clients):
            try:
                if "tools" in changed:
                    await client.send_tool_list_changed()
                if "resources" in changed:
                    await client.send_resource_list_changed()
                if "prompts" in changed:
                    await client.send_prompt_list_changed()
            except Exception as exc:  # boundary: a gone client must not stop the others being told
                logger.debug("could not notify a client of changed lists: %s", exc)
        await forwarder.listeners.changed(changed)  # the modern era's listen streams

    gateway.on_change(notify_changed)
    server.middleware.clear()  # the SDK's only default middleware, its span per request: ours takes its place
    if gateway.settings.tracing:
        tracing.install(gateway.settings.tracing)
        server.middleware.append(TracingMiddleware())
    forwarder.install(server)
    return server


def initialization_options(server: Server[Any]) -> InitializationOptions:
    return server.create_initialization_options(NOTIFICATIONS)
