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
import weakref
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types

from nexus_gateway.errors import NexusError
from nexus_gateway.gateway import GatewayCore, ToolResult
from nexus_gateway.meta import definitions
from nexus_gateway.upstream_callbacks import HostLink
from nexus_gateway.validation import validate_arguments

if TYPE_CHECKING:
    from nexus_gateway.meta.run import Runner


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
    def engine_loaded(self) -> bool:
        """Whether `run` has started the local model."""
        return self._runner is not None and self._runner.engine_loaded

    def list_tools(self) -> list[dict[str, Any]]:
        gateway = self.gateway
        if gateway.mode == "passthrough":
            return [record.to_wire() for record in gateway.catalog]
        pinned = [record.to_wire() for name in self.settings.pinned if (record := gateway.catalog.get(name))]
        return definitions.definitions(len(gateway.catalog), gateway.servers(), run=self.settings.run) + pinned

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        client: object = None,
        link: HostLink | None = None,
        meta: dict[str, Any] | None = None,
    ) -> ToolResult:
        """Serve a tools/call: a meta-tool or a namespaced upstream tool. `client` (any object that lives as
        long as the client's connection) keys `run`'s engine session; `link` is the host side of the call
        (progress, logs and requests for input from the upstream go there) and `meta` the `_meta` to forward."""
        arguments = arguments or {}
        try:
            gateway = self.gateway
            upstream_tool = gateway.mode == "passthrough" and name in gateway.catalog  # `prefix: ""` and a tool `run`
            if name in definitions.NAMES and not upstream_tool:
                validate_arguments(name, definitions.input_schema(name), arguments, key=f"meta-tool:{name}")
                if name == definitions.RUN:
                    return await (await self._run_tool()).run(arguments, client)
                return await self._call_meta(name, arguments, link, meta)
            return await self.gateway.call_upstream(self.gateway.resolve(name), arguments, link=link, meta=meta)
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
        self, name: str, arguments: dict[str, Any], link: HostLink | None, meta: dict[str, Any] | None
    ) -> ToolResult:
        gateway = self.gateway
        if name == definitions.CALL_TOOL:
            target = str(arguments.get("name", ""))
            inner = arguments.get("arguments") or {}
            if not isinstance(inner, dict):
                return error_result("call_tool's 'arguments' must be an object of the tool's parameters.")
            return await gateway.call_upstream(gateway.resolve(target), inner, link=link, meta=meta)
        if name == definitions.SEARCH_TOOLS:
            query = str(arguments.get("query", "")).strip()
            if not query:
                return error_result("search_tools needs a non-empty 'query': say what you want to do.")
            k = max(1, min(int(arguments.get("k") or self.settings.search_k), 50))
            results = await gateway.search(query, k)
            gateway.metrics.searches += 1
            lines = [result.signature for result in results]
            structured: dict[str, Any] = {"tools": [result.__dict__ for result in results]}
            if arguments.get("rerank", self.settings.search_rerank) and results and not results[0].automatic:
                reranked = await (await self._runner_of()).rerank(query, results)
                structured["rerank"] = reranked.trace()
                structured["chosen"] = reranked.choice
                lines.append(
                    f"(The local model chose {reranked.choice} for this request.)"
                    if reranked.choice
                    else "(The local model found none of these fits the request.)"
                )
            if lag := gateway.index_lag():  # a cold start: say how much of the catalog was searched
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
            record = gateway.resolve(str(arguments.get("name", "")))
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
