"""`MetaTools`: what a host's tools/list and tools/call reach, over the gateway core.

    tools/list   -> every upstream tool, namespaced               [passthrough]
                 -> the meta-tools (+ pinned tools)                [routed]
    search_tools -> GatewayCore.search -> signatures (+ the local model's choice below the gate: `rerank`)
    call_tool    -> GatewayCore.resolve -> GatewayCore.call_upstream
    describe_tool-> GatewayCore.resolve -> the full tool
    run          -> run.py (the engine is loaded on the first `run`)

Tool failures (unknown tool, invalid arguments, dead or slow upstream, upstream error) come back as
`CallToolResult(is_error=True)` with a message a model can act on; nothing here raises for them.
"""

from __future__ import annotations

import json
import math
import weakref
from typing import TYPE_CHECKING, Any, Literal

import anyio
import mcp_types as types

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.catalog.validation import validate_arguments
from nexus_gateway.config.profiles import EVERYTHING, Profile
from nexus_gateway.errors import NexusError, ToolQuarantined, UnknownTool, UpstreamNeedsAuthorization
from nexus_gateway.gateway import GatewayCore, ToolResult
from nexus_gateway.meta import definitions
from nexus_gateway.upstreams.callbacks import HostLink

if TYPE_CHECKING:
    from nexus_gateway.meta.run import Runner


def _k_problem(arguments: dict[str, Any]) -> str | None:
    """search_tools's `k` when it is no number JSON can carry (Infinity, NaN: the SDK's HTTP path hands them on
    as null), worded for the model; None otherwise (the schema's own messages say the rest clearly)."""
    k = arguments.get("k", 0)
    if k is None:
        shown = "null (Infinity and NaN arrive as null)"
    elif isinstance(k, float) and not math.isfinite(k):
        shown = "NaN" if math.isnan(k) else "Infinity" if k > 0 else "-Infinity"
    else:
        return None
    return (
        f"Arguments for {definitions.SEARCH_TOOLS!r} do not match its input schema: k: {shown} is not a whole "
        "number from 1 to 50; send how many tools to return, or leave k out for the default."
    )


def error_result(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


class MetaTools:
    """The tools one gateway serves. `MetaTools.of(gateway)` is the one instance of a gateway (every front
    built on it shares it, hence one engine for `run`)."""

    _instances: weakref.WeakKeyDictionary[Any, MetaTools] = weakref.WeakKeyDictionary()

    def __init__(self, gateway: GatewayCore) -> None:
        self.gateway = gateway
        self.settings = gateway.settings
        self._runner: Runner | None = None
        self._runner_lock = anyio.Lock()

    @classmethod
    def of(cls, gateway: GatewayCore) -> MetaTools:
        tools = cls._instances.get(gateway)
        if tools is None:
            tools = cls._instances[gateway] = cls(gateway)
        return tools

    @property
    def runner(self) -> Runner | None:
        """`run`'s runner once the first `run` made it."""
        return self._runner

    @property
    def engine_loaded(self) -> bool:
        """Whether `run` has started the local model."""
        return self._runner is not None and self._runner.engine_loaded

    def mode(self, profile: Profile = EVERYTHING) -> Literal["passthrough", "routed"]:
        return profile.mode or self.gateway.mode

    def list_tools(self, profile: Profile = EVERYTHING) -> list[dict[str, Any]]:
        gateway = self.gateway
        records = [record for record in gateway.catalog if profile.allows(record)]
        if self.mode(profile) == "passthrough":
            return [record.to_wire() for record in records]
        pins = profile.pinned_tools or self.settings.pinned
        pinned = [record.to_wire() for name in pins if (record := self._allowed(name, profile)) is not None]
        servers = [server for server in gateway.servers() if profile.sees_server(server)]
        return definitions.definitions(len(records), servers, run=self.settings.run) + pinned

    def _allowed(self, name: str, profile: Profile) -> ToolRecord | None:
        record = self.gateway.catalog.get(name)
        return record if record is not None and profile.allows(record) else None

    def resolve(self, name: str, profile: Profile = EVERYTHING) -> ToolRecord:
        """`GatewayCore.resolve`, for a client of `profile`: a tool outside it is unknown, and the names
        suggested instead are the profile's own."""
        if profile.everything:
            return self.gateway.resolve(name)
        try:
            record = self.gateway.resolve(name)
        except (UnknownTool, ToolQuarantined) as exc:
            servers = self.gateway.catalog.servers_for(name)
            if isinstance(exc, ToolQuarantined) and any(map(profile.sees_server, servers)):
                raise
            record = None
        if record is None or not profile.allows(record):
            close = [match for match in self.gateway.catalog.close_matches(name) if self._allowed(match, profile)]
            hint = None if self.mode(profile) == "routed" else "tools/list gives the name of every tool served here."
            raise UnknownTool(name, close, hint=hint)
        return record

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        client: object = None,
        link: HostLink | None = None,
        meta: dict[str, Any] | None = None,
        profile: Profile = EVERYTHING,
    ) -> ToolResult:
        """Serve a tools/call: a meta-tool or a namespaced upstream tool. `client` (any object that lives as
        long as the client's connection) keys `run`'s engine session; `link` is the host side of the call
        (progress, logs and requests for input from the upstream go there) and `meta` the `_meta` to forward.
        `profile` is the client's: nothing outside it is listed, found, described, called or run."""
        arguments = arguments or {}
        try:
            return await self._serve(name, arguments, client, link, meta, profile)
        except UpstreamNeedsAuthorization as exc:
            if link is None or not await self.gateway.sign_in_through(exc.server, link):
                return error_result(str(exc))
        try:
            return await self._serve(name, arguments, client, link, meta, profile)  # signed in meanwhile: again
        except UpstreamNeedsAuthorization as exc:
            return error_result(str(exc))

    async def _serve(
        self,
        name: str,
        arguments: dict[str, Any],
        client: object,
        link: HostLink | None,
        meta: dict[str, Any] | None,
        profile: Profile,
    ) -> ToolResult:
        """`call_tool`, with an upstream that waits for a sign-in raised as such (the rest as error results)."""
        try:
            gateway = self.gateway
            upstream_tool = self.mode(profile) == "passthrough" and self._allowed(name, profile) is not None
            if name in definitions.NAMES and not upstream_tool:  # `prefix: ""` and an upstream tool `run`
                if name == definitions.SEARCH_TOOLS and (problem := _k_problem(arguments)) is not None:
                    return error_result(problem)
                validate_arguments(name, definitions.input_schema(name), arguments, key=f"meta-tool:{name}")
                if name == definitions.RUN:
                    return await (await self._run_tool()).run(arguments, client, profile=profile)
                return await self._call_meta(name, arguments, link, meta, profile)
            return await gateway.call_upstream(self.resolve(name, profile), arguments, link=link, meta=meta)
        except UpstreamNeedsAuthorization:
            raise
        except NexusError as exc:
            return error_result(str(exc))

    async def _run_tool(self) -> Runner:
        if not self.settings.run:
            raise NexusError("run is turned off here (nexus.run is false): use search_tools, then call_tool.")
        return await self._runner_of()

    async def _runner_of(self) -> Runner:
        async with self._runner_lock:
            if self._runner is None:
                from nexus_gateway.meta.run import Runner  # the engine and the generator load on the first run

                self._runner = Runner(self.gateway)
                self.gateway.on_close(self._runner.aclose)
            return self._runner

    async def _call_meta(
        self,
        name: str,
        arguments: dict[str, Any],
        link: HostLink | None,
        meta: dict[str, Any] | None,
        profile: Profile,
    ) -> ToolResult:
        gateway = self.gateway
        if name == definitions.CALL_TOOL:
            target = str(arguments.get("name", ""))
            inner = arguments.get("arguments") or {}
            if not isinstance(inner, dict):
                return error_result("call_tool's 'arguments' must be an object of the tool's parameters.")
            return await gateway.call_upstream(self.resolve(target, profile), inner, link=link, meta=meta)
        if name == definitions.SEARCH_TOOLS:
            query = str(arguments.get("query", "")).strip()
            if not query:
                return error_result("search_tools needs a non-empty 'query': say what you want to do.")
            k = max(1, min(int(arguments.get("k") or self.settings.search_k), 50))
            lag = gateway.index_lag()  # before the search: an index that finishes during it was partial for it
            results = await gateway.search(query, k, allows=None if profile.everything else profile.allows)
            gateway.metrics.searches += 1
            lines = [result.signature for result in results]
            structured: dict[str, Any] = {"tools": [result.__dict__ for result in results]}
            if arguments.get("rerank", self.settings.search_rerank) and results and not results[0].automatic:
                reranked = await (await self._runner_of()).rerank(query, results)
                structured["rerank"] = reranked.trace()
                structured["chosen"] = reranked.choice
                lines.append(
                    f"(Re-ranked with the local model: {reranked.choice} fits this request best.)"
                    if reranked.choice
                    else "(The local model found none of these fits the request.)"
                )
            if lag:  # a cold start: say how much of the catalog was searched (at most; it only grows)
                lines.append(
                    f"(The tool index is still being built: {lag[0]} of {lag[1]} tools indexed so far. "
                    "Search again in a few seconds to search them all.)"
                )
                structured["indexed"], structured["total"] = lag
            lines = lines or [f"No tool matches {query!r}; try other words."]
            return types.CallToolResult(
                content=[types.TextContent(type="text", text="\n".join(lines))], structured_content=structured
            )
        if name == definitions.DESCRIBE_TOOL:
            record = self.resolve(str(arguments.get("name", "")), profile)
            described = record.to_wire() | {"server": record.server, "signature": record.signature}
            if record.quarantine is not None:
                described["quarantine"] = record.quarantine.to_json()
                described["warning"] = (
                    f"{record.quarantine.why} This is the definition a person approved; the upstream's new one is "
                    f"not shown until someone runs `nexus-gateway tools approve {record.name}`."
                )
            text = json.dumps(described, indent=2)
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=text)], structured_content=described
            )
        raise AssertionError(name)
