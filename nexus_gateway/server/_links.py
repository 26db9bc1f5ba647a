"""The host side of an upstream call on the handshake era: `HostLink`s over a host's request or connection.

A link checks what the host declared before it asks (an upstream may ask for sampling with tools,
or a URL elicitation, that the host never said it handles: the upstream gets a clear error), and
passes the upstream's progress and log messages to the host, at or above the host's log level.
"""

from __future__ import annotations

from typing import Any, cast, get_args

import mcp_types as types
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from pydantic import BaseModel

from nexus_gateway._sdk import client_connection
from nexus_gateway.upstreams.callbacks import HostAnswer

LEVELS: tuple[str, ...] = get_args(types.LoggingLevel)
"""Severity-ascending (RFC 5424 order, as `LoggingLevel` declares it)."""


OFF = "off"
"""The log level of a modern-era request that did not opt in to log messages."""


def log_allowed(level: str, minimum: str | None) -> bool:
    """Whether a message at `level` passes a host's `minimum` (None: the host set no level, all pass;
    `OFF`: none pass)."""
    if minimum == OFF:
        return False
    if minimum is None or minimum not in LEVELS:
        return True
    return level in LEVELS and LEVELS.index(level) >= LEVELS.index(minimum)


def asks_host(capabilities: types.ClientCapabilities | None) -> bool:
    """Whether an upstream may ask this host for input at all."""
    return capabilities is not None and any((capabilities.sampling, capabilities.elicitation, capabilities.roots))


def refusal(capabilities: types.ClientCapabilities | None, request: types.InputRequest) -> str | None:
    """Why the host cannot be sent `request` (it did not declare the capability), or None."""
    caps = capabilities or types.ClientCapabilities()
    missing: str | None = None
    if isinstance(request, types.CreateMessageRequest):
        params = request.params
        if caps.sampling is None:
            missing = "sampling"
        elif (params.tools or params.tool_choice) and caps.sampling.tools is None:
            missing = "sampling with tools"
        elif params.include_context not in (None, "none") and caps.sampling.context is None:
            missing = "sampling with context"
    elif isinstance(request, types.ElicitRequest):
        url_mode = isinstance(request.params, types.ElicitRequestURLParams)
        elicitation = caps.elicitation
        if elicitation is None:
            missing = "elicitation"
        elif url_mode and elicitation.url is None:
            missing = "URL elicitation"
        elif not url_mode and elicitation.url is not None and elicitation.form is None:
            missing = "form elicitation"
    elif caps.roots is None:
        missing = "roots"
    if missing is None:
        return None
    return f"The host connected to nexus-gateway does not support {missing} ({request.method})."


def response_type(request: types.InputRequest) -> type[BaseModel]:
    if isinstance(request, types.CreateMessageRequest):
        wants_tools = bool(request.params.tools or request.params.tool_choice)
        return types.CreateMessageResultWithTools if wants_tools else types.CreateMessageResult
    if isinstance(request, types.ElicitRequest):
        return types.ElicitResult
    return types.ListRootsResult


def _as_answer(exc: Exception) -> types.ErrorData:
    if isinstance(exc, MCPError):
        return types.ErrorData(code=exc.code, message=exc.message, data=exc.data)
    return types.ErrorData(code=types.INTERNAL_ERROR, message=f"The host's answer could not be delivered: {exc}")


class RequestLink:
    """A host request being served (a tools/call): requests and notifications ride that request."""

    def __init__(self, ctx: ServerRequestContext[Any], log_level: str | None) -> None:
        self._ctx = ctx
        self._log_level = log_level
        self.capabilities = ctx.session.client_capabilities

    @property
    def key(self) -> object:
        return client_connection(self._ctx)  # the client's connection: it lives as long as the client

    @property
    def asks_host(self) -> bool:
        return asks_host(self.capabilities)

    async def request(self, request: types.InputRequest) -> HostAnswer:
        if (reason := refusal(self.capabilities, request)) is not None:
            return types.ErrorData(code=types.INVALID_REQUEST, message=reason)
        metadata = ServerMessageMetadata(related_request_id=self._ctx.request_id)
        try:
            answer: Any = await self._ctx.session.send_request(request, response_type(request), metadata=metadata)
        except Exception as exc:  # boundary: whatever the host did, the upstream gets an error answer
            return _as_answer(exc)
        return cast(HostAnswer, answer)  # the SDK types the answer by the `response_type` it was given

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        if log_allowed(params.level, self._log_level):
            notification = types.LoggingMessageNotification(params=params)
            await self._ctx.session.send_notification(notification, related_request_id=self._ctx.request_id)

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        await self._ctx.session.report_progress(progress, total, message)

    async def elicitation_complete(self, params: types.ElicitCompleteNotificationParams) -> None:
        # Not tied to the call: it may have ended (a related message would then be dropped on /mcp).
        await self._ctx.session.send_notification(types.ElicitCompleteNotification(params=params))


class ConnectionLink:
    """A connected host outside any call: requests ride its connection's own channel."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    @property
    def key(self) -> object:
        return self._connection

    @property
    def asks_host(self) -> bool:
        return asks_host(self._connection.client_capabilities)

    async def request(self, request: types.InputRequest) -> HostAnswer:
        if (reason := refusal(self._connection.client_capabilities, request)) is not None:
            return types.ErrorData(code=types.INVALID_REQUEST, message=reason)
        try:
            answer: Any = await self._connection.send_request(request, result_type=response_type(request))
        except Exception as exc:  # boundary: as above
            return _as_answer(exc)
        return cast(HostAnswer, answer)  # the SDK types the answer by the `response_type` it was given

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        dumped = params.model_dump(by_alias=True, mode="json", exclude_none=True)
        await self._connection.notify("notifications/message", dumped)

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        return None

    async def elicitation_complete(self, params: types.ElicitCompleteNotificationParams) -> None:
        dumped = params.model_dump(by_alias=True, mode="json", exclude_none=True)
        await self._connection.notify("notifications/elicitation/complete", dumped)
