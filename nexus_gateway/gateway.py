"""The Gateway core: catalog, retrieval and upstream calls behind one object.

    search  -> Retriever -> signatures, the first marked automatic when it clears the margin gate
    resolve -> Catalog lookup (or why the tool is not there)
    call    -> validate arguments -> UpstreamPool -> result

The tools a host sees (meta-tools in routed mode, `run`) are a layer above (meta/), which reaches the
core through `GatewayCore` only. Failures raise domain errors (errors.py).
"""

from __future__ import annotations

import difflib
import logging
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

import anyio
import anyio.abc
import mcp_types as types

from nexus_gateway.activity import Activity
from nexus_gateway.catalog import Catalog, ToolRecord
from nexus_gateway.catalog.naming import item_name
from nexus_gateway.catalog.validation import validate_arguments
from nexus_gateway.config import GatewayConfig, NexusSettings, ServerSpec, default_state_dir
from nexus_gateway.config.switches import ServerSwitches
from nexus_gateway.errors import (
    ArgumentsInvalid,
    NexusError,
    ToolQuarantined,
    UnknownTool,
    UpstreamTimeout,
    UpstreamUnavailable,
)
from nexus_gateway.indexing import BackgroundIndexer, OpenWriter, UsageExamples, local_writer
from nexus_gateway.metrics import Metrics
from nexus_gateway.routing import gate
from nexus_gateway.routing.lazy import LazyRetriever
from nexus_gateway.routing.retriever import Retriever, TakesExamples
from nexus_gateway.state import Store, open_store
from nexus_gateway.upstreams.callbacks import HostLink
from nexus_gateway.upstreams.pool import OpenTransport, Upstream, UpstreamPool

logger = logging.getLogger(__name__)

Changed = frozenset[Literal["tools", "resources", "prompts"]]
"""Which of the lists the gateway serves changed."""
ChangeListener = Callable[[Changed], Awaitable[None]]
Background = Callable[[], Coroutine[Any, Any, None]]
T = TypeVar("T")
PIN_POLL_SECONDS = 0.5
"""How often a running gateway looks whether the CLI approved a tool (one stat of pins.json)."""
ToolResult = types.CallToolResult | dict[str, Any]
"""A tools/call result: a model for the gateway's own results, wire form for forwarded upstream ones."""
SEARCH_WAITS_FOR_INDEX = 2.0
"""A search waits this long at most for a stale index, then answers from what is indexed so far."""


@dataclass(frozen=True)
class SearchResult:
    name: str
    signature: str
    score: float
    automatic: bool


class GatewayCore(Protocol):
    """What the layer above (meta/: the tools a host sees) needs of the core, and all it may use."""

    config: GatewayConfig
    settings: NexusSettings
    catalog: Catalog
    metrics: Metrics
    activity: Activity

    @property
    def mode(self) -> Literal["passthrough", "routed"]: ...
    def servers(self) -> list[str]: ...
    async def search(
        self, query: str, k: int | None = None, *, allows: Callable[[ToolRecord], bool] | None = None
    ) -> list[SearchResult]: ...
    def resolve(self, name: str) -> ToolRecord: ...
    async def call_upstream(
        self,
        record: ToolRecord,
        arguments: dict[str, Any],
        *,
        link: HostLink | None = None,
        meta: dict[str, Any] | None = None,
    ) -> ToolResult: ...
    def index_lag(self) -> tuple[int, int] | None: ...
    def start_soon(self, task: Background, *, name: str | None = None) -> None: ...
    def on_close(self, closer: Background) -> None: ...
    async def sign_in_through(self, server: str, link: HostLink) -> bool: ...


class Gateway:
    def __init__(
        self,
        config: GatewayConfig,
        *,
        retriever: Retriever | None = None,
        state_dir: Path | None = None,
        transports: Mapping[str, OpenTransport] | None = None,
        example_writer: OpenWriter | None = None,
    ) -> None:
        """`transports`: per server, a transport to open in place of the configured one (in-process test upstreams);
        `example_writer`: what writes usage examples (the local model when unset)."""
        self.config = config
        self.settings = config.nexus
        state = state_dir or default_state_dir(config)
        self.store: Store = open_store(self.settings.cluster, state)
        """Pins, vectors, start times and recent activity: the state dir's files, or Redis (state/)."""
        pins = self.store.pins(
            mode=self.settings.quarantine,
            quarantine_new=self.settings.quarantine_new_servers,
            legacy_path=state / "descriptions.json",
        )
        prefixes = {name: spec.prefix for name, spec in config.enabled_servers.items()}
        self.catalog = Catalog(pins, prefixes=prefixes)
        self.switches = ServerSwitches(state / "servers.json")
        """Servers turned off at run time (`nexus-gateway servers disable`), remembered across restarts."""
        self._lazy: LazyRetriever | None = None
        if retriever is None:  # numpy and the embedder load on first use (routed mode: from the start, below)
            retriever = self._lazy = LazyRetriever(
                self.settings.embedder, state, method=self.settings.fusion, shared=self.store.blobs
            )
        self.retriever: Retriever = retriever
        self.pool = UpstreamPool(
            replace(config, servers=self.wanted_servers(config)),
            self._on_listing,
            transports,
            shared_starts=self.store.start_times(),
        )
        self._listeners: list[ChangeListener] = []
        self._resource_owner: dict[str, str] = {}
        self._template_prefixes: list[tuple[str, str]] = []
        self._listed: dict[str, tuple[Any, Any]] = {}
        """Per upstream, the (resources and templates, prompts) it listed last."""
        self._prompts: dict[str, tuple[Upstream, dict[str, Any]]] = {}
        self._reported: set[tuple[str, str]] = set()
        self._last_mode: str | None = None
        self._ready = False
        self._starts_settled = False
        self._warm = anyio.Event()
        self.indexer = BackgroundIndexer(self.retriever, lambda: list(self.catalog))
        self.examples: UsageExamples | None = None
        if self.settings.usage_examples and isinstance(self.retriever, TakesExamples):
            self.examples = UsageExamples(
                self.retriever,
                self.indexer,
                lambda: list(self.catalog),
                state / "usage_examples.json",
                example_writer or local_writer(config),
                active=lambda: self.mode == "routed",
                shared=self.store.blobs("examples"),
            )
        self.metrics = Metrics()
        self.activity: Activity = self.store.activity()
        self._tasks: anyio.abc.TaskGroup | None = None
        self._closers: list[Background] = []
        self.reconfiguring = anyio.Lock()
        """Held while the running upstreams are brought in line with the config (reload.py)."""

    async def __aenter__(self) -> Gateway:
        await self.store.connect()  # the pins before any listing is judged (bounded; a failure is reported)
        await self.pool.__aenter__()
        try:
            self._tasks = anyio.create_task_group()
            await self._tasks.__aenter__()
        except BaseException:
            await self.pool.__aexit__(None, None, None)
            raise
        self.start_soon(self.store.run, name="state-store")
        self.start_soon(self._watch_pins)
        self.start_soon(self.indexer.run, name="indexer")
        if self.examples is not None:
            self.start_soon(self.examples.run, name="usage-examples")
        self.start_soon(self._index_after_start, name="index-after-start")
        return self

    async def _index_after_start(self) -> None:
        """Routed: build the retriever and index once every upstream's first start has ended (connected or
        failed; a late one is waited for, up to START_GRACE x start_timeout), not meanwhile. Embedding a large
        catalog takes a core for minutes (837 tools, all-MiniLM-L6-v2, one thread: 3-5 minutes on 2 loaded
        cores), and importing the embedder holds the interpreter: during the start both would be taken from the
        upstreams and from this event loop. A search before then indexes at once."""
        await self.pool.wait_settled()
        self._starts_settled = True
        try:
            if self.mode == "routed":
                await self._load_retriever()
                self.indexer.request()
        finally:
            self._warm.set()

    async def wait_warm(self) -> None:
        """Wait until start-up's work is done: every upstream's first start has ended and, routed, the embedder
        is loaded (the index may still be building)."""
        await self._warm.wait()

    async def _load_retriever(self) -> None:
        """Build the retriever (embedder, saved index) in a worker thread, once."""
        if self._lazy is not None and self._lazy.built is None:
            await anyio.to_thread.run_sync(self._lazy.load)

    @property
    def ready(self) -> bool:
        """Whether `wait_ready` has returned: every upstream has connected or failed its first start."""
        return self._ready

    async def wait_ready(self) -> None:
        """Wait until every upstream has connected or failed its first start (each bounded by start_timeout)."""
        if not self._ready:
            await self.pool.wait_started()
            self._ready = True

    async def __aexit__(self, *exc_info: object) -> None:
        try:
            tasks, self._tasks = self._tasks, None
            if tasks is not None:
                tasks.cancel_scope.cancel()  # background work not yet done is dropped
                await tasks.__aexit__(None, None, None)
            while self._closers:
                await self._closers.pop()()
        finally:
            try:
                await self.pool.__aexit__(*exc_info)
            finally:
                self.store.close()

    def start_soon(self, task: Background, *, name: str | None = None) -> None:
        """Run `task()` in the background; it is cancelled if still running when the gateway closes."""
        if self._tasks is None:
            raise RuntimeError("the gateway is not running (use `async with Gateway(...)`)")
        self._tasks.start_soon(task, name=name)

    def on_close(self, closer: Background) -> None:
        """Await `closer()` when the gateway closes, after its background tasks and before its upstreams."""
        self._closers.append(closer)

    async def _after_start(self, find: Callable[[], T]) -> T:
        """`find()`; when it finds nothing while upstreams are still starting, again once they have."""
        try:
            return find()
        except NexusError:
            if self._ready:
                raise
        await self.wait_ready()
        return find()

    def on_change(self, listener: ChangeListener) -> None:
        """Call `listener` with what changed whenever the tools, resources or prompts the gateway serves change."""
        self._listeners.append(listener)

    async def _on_listing(self, upstream: Upstream) -> None:
        """Ingest an upstream's listing. Nothing here is the upstream's fault: a failure (a catalog or
        state problem) is logged and serving goes on, so the supervisor never counts it against the upstream."""
        try:
            await self._ingest(upstream)
        except Exception:  # boundary: see above
            logger.exception("gateway: ingesting the listing of %s failed; serving goes on", upstream.name)

    async def _ingest(self, upstream: Upstream) -> None:
        diff = self.catalog.replace_server(upstream.name, upstream.tools)
        if diff:
            self.indexer.mark_stale()
            if self.mode == "routed" and self._starts_settled:  # passthrough (auto with a small catalog too) indexes on
                self.indexer.request()  # its first search; during the start, `_index_after_start` asks
            logger.info(
                "catalog: %s +%d -%d ~%d (%d tools)",
                upstream.name,
                len(diff.added),
                len(diff.removed),
                len(diff.changed),
                len(self.catalog),
            )
        self._index_resources()
        mode = self.mode
        changed: set[Literal["tools", "resources", "prompts"]] = set()
        if diff and (mode == "passthrough" or mode != self._last_mode or diff.added or diff.removed):
            changed.add("tools")
        before = self._listed.get(upstream.name, (([], []), []))
        now = ((upstream.resources, upstream.resource_templates), upstream.prompts)
        self._listed[upstream.name] = now
        if now[0] != before[0]:
            changed.add("resources")
        if now[1] != before[1]:
            changed.add("prompts")
        if changed:
            await self.announce(frozenset(changed))
        self._last_mode = mode

    async def announce(self, changed: Changed) -> None:
        """Tell every listener (the fronts, hence their clients) that these lists changed."""
        for listener in list(self._listeners):
            try:
                await listener(changed)
            except Exception:  # boundary: one broken client session must not stop the others being told
                logger.exception("list-changed listener failed")

    async def _watch_pins(self) -> None:
        """Re-judge every upstream's tools when another process (`nexus-gateway tools approve`) changed the
        pin store; hosts are told through the usual tools/list_changed."""
        while True:
            await anyio.sleep(PIN_POLL_SECONDS)
            if not self.catalog.pins.changed_on_disk():
                continue
            for upstream in list(self.pool.upstreams.values()):
                try:
                    await self._on_listing(upstream)
                except Exception:  # boundary: a failed re-judging must not stop the gateway
                    logger.exception("re-reading the pin store for %s failed", upstream.name)

    # -- upstreams at run time (reload.py decides which) -----------------------------------------

    def wanted_servers(self, config: GatewayConfig) -> dict[str, ServerSpec]:
        """The servers of `config` that should run: enabled there and not switched off at run time."""
        return {name: spec for name, spec in config.enabled_servers.items() if name not in self.switches.disabled}

    def add_upstream(self, name: str, spec: ServerSpec) -> None:
        """Start one more upstream (its tools arrive through the usual listing, and hosts are told)."""
        self.catalog.set_prefixes({**self.catalog_prefixes(), name: spec.prefix})
        self.pool.add(name, spec)

    async def remove_upstream(self, name: str) -> None:
        """Stop one upstream and take its tools, resources and prompts out (hosts are told)."""
        upstream = await self.pool.remove(name)
        if upstream is None:
            return
        upstream.tools, upstream.resources, upstream.resource_templates, upstream.prompts = [], [], [], []
        await self._on_listing(upstream)
        self._listed.pop(name, None)

    def catalog_prefixes(self) -> dict[str, str | None]:
        """Each configured server's `prefix`, in config order."""
        return {name: spec.prefix for name, spec in self.config.enabled_servers.items()}

    # -- tools ---------------------------------------------------------------------------------

    @property
    def mode(self) -> Literal["passthrough", "routed"]:
        if self.settings.mode == "auto":
            return "passthrough" if len(self.catalog) <= self.settings.auto_threshold else "routed"
        return self.settings.mode

    def servers(self) -> list[str]:
        """The configured upstreams' names, sorted."""
        return sorted(self.pool.upstreams)

    async def search(
        self, query: str, k: int | None = None, *, allows: Callable[[ToolRecord], bool] | None = None
    ) -> list[SearchResult]:
        """The best tools for `query` (among those `allows` lets through, when given: a profile's); the first
        is marked automatic when its margin over the second clears the gate."""
        want = k or self.settings.search_k
        await self._load_retriever()  # the wait for the index below is for embedding, not for loading a model
        await self.indexer.settle(SEARCH_WAITS_FOR_INDEX)
        pool = max(want, 2) if allows is None else max(len(self.catalog), 2)
        hits = await anyio.to_thread.run_sync(self.retriever.search, query, pool)
        if allows is not None:
            hits = [hit for hit in hits if (record := self.catalog.get(hit.name)) is not None and allows(record)]
        automatic = gate.decide([hit.score for hit in hits], self.retriever.tau)
        results = []
        for rank, hit in enumerate(hits[:want]):
            record = self.catalog.get(hit.name)
            if record is not None:
                automatic_here = automatic and rank == 0
                results.append(SearchResult(record.name, record.signature, round(hit.score, 4), automatic_here))
        return results

    def index_lag(self) -> tuple[int, int] | None:
        """(searchable, total) while the index holds fewer tools than the catalog, else None."""
        searchable, total = min(self.indexer.searchable, len(self.catalog)), len(self.catalog)
        return (searchable, total) if searchable < total else None

    def index_status(self) -> dict[str, Any]:
        """For /healthz: whether the embedder is loaded, how many tools are searchable, whether that is all, and
        how many tools have usage examples (None when they are off)."""
        loaded = self._lazy is None or self._lazy.built is not None
        examples = None if self.examples is None else self.examples.status()
        return {
            "loaded": loaded,
            "searchable": self.indexer.searchable,
            "current": self.indexer.current,
            "usage_examples": examples,
        }

    def resolve(self, name: str) -> ToolRecord:
        record = self.catalog.get(name)
        if record is not None:
            return record
        if (quarantine := self.catalog.awaiting_approval(name)) is not None:
            raise ToolQuarantined(name, quarantine.why)
        for server in self.catalog.servers_for(name):  # a server that would serve it, not connected yet
            upstream = self.pool.get(server)
            if upstream is not None and not upstream.tools:
                upstream.ensure_connected()  # raises UpstreamUnavailable with the reason
        hint = None if self.mode == "routed" else "tools/list gives the name of every tool served here."
        raise UnknownTool(name, self.catalog.close_matches(name), hint=hint)

    async def call_upstream(
        self,
        record: ToolRecord,
        arguments: dict[str, Any],
        *,
        link: HostLink | None = None,
        meta: dict[str, Any] | None = None,
    ) -> ToolResult:
        started = time.perf_counter()
        result: dict[str, Any] | None = None
        try:
            validate_arguments(record.name, record.input_schema, arguments, key=record.content_hash)
            upstream = self.pool.get(record.server)
            if upstream is None:
                raise UpstreamUnavailable(record.server, f"Upstream server {record.server!r} is not configured.")
            result = await upstream.call_tool(record.upstream_name, arguments, link=link, meta=meta)
            return result
        finally:
            self.record_call(record, started, result, sys.exc_info()[1])

    def record_call(
        self, record: ToolRecord, started: float, result: dict[str, Any] | None, error: BaseException | None
    ) -> None:
        """Count a call to `record` that began at `started` (`time.perf_counter`) and ended with `result`
        or `error`, for /metrics and the dashboard."""
        elapsed = time.perf_counter() - started
        outcome = _outcome(result, error)
        self.metrics.observe_call(record.server, outcome, elapsed)
        self.activity.record_call(record.name, record.server, outcome, elapsed, error)

    def quarantined(self) -> list[dict[str, Any]]:
        """The quarantined tools upstreams list now (for /healthz and `nexus-gateway tools`)."""
        return [quarantine.to_json() | {"withheld": withheld} for quarantine, withheld in self.catalog.quarantined()]

    def trust(self) -> dict[str, str]:
        """Whether the pin store's approvals can be relied on (for /healthz, the dashboard and `tools`):
        `{"state": "ok"}`, or `degraded` with why and since when, until a person approves (pins.py)."""
        return self.catalog.pins.trust.to_json()

    def store_status(self) -> dict[str, Any]:
        """For /healthz: the state store's backend (`files` or `redis`), `ok` or `degraded`, its last error."""
        return self.store.status().to_json()

    # -- resources and prompts -----------------------------------------------------------------

    def _prefix(self, upstream: Upstream) -> str | None:
        return self.config.servers[upstream.name].prefix

    def _index_resources(self) -> None:
        owners: dict[str, str] = {}
        prefixes: list[tuple[str, str]] = []
        prompts: dict[str, tuple[Upstream, dict[str, Any]]] = {}
        for upstream in self.pool.upstreams.values():
            for prompt in upstream.prompts:
                name = item_name(upstream.name, prompt["name"], self._prefix(upstream))
                if name in prompts:
                    if (upstream.name, name) in self._reported:
                        continue
                    self._reported.add((upstream.name, name))
                    owner = prompts[name][0].name
                    logger.error(
                        "config error: server %r, key 'prefix': its prompt %r would be exposed as %r, which server "
                        "%r already exposes; it is withheld",
                        upstream.name,
                        prompt["name"],
                        name,
                        owner,
                    )
                    continue
                prompts[name] = (upstream, prompt)
            for resource in upstream.resources:
                owners.setdefault(resource["uri"], upstream.name)
            for template in upstream.resource_templates:
                prefixes.append((template["uriTemplate"].split("{", 1)[0], upstream.name))
        self._resource_owner = owners
        self._prompts = prompts
        self._template_prefixes = sorted(prefixes, key=lambda item: -len(item[0]))

    def list_resources(self, sees: Callable[[str], bool] = lambda server: True) -> list[dict[str, Any]]:
        """Every upstream's resources (of the servers `sees` lets through: a profile's), named for the host."""
        return [
            resource | {"name": item_name(upstream.name, resource.get("name", resource["uri"]), self._prefix(upstream))}
            for upstream in self.pool.upstreams.values()
            if sees(upstream.name)
            for resource in upstream.resources
        ]

    def list_resource_templates(self, sees: Callable[[str], bool] = lambda server: True) -> list[dict[str, Any]]:
        return [
            template
            | {"name": item_name(upstream.name, template.get("name", template["uriTemplate"]), self._prefix(upstream))}
            for upstream in self.pool.upstreams.values()
            if sees(upstream.name)
            for template in upstream.resource_templates
        ]

    def resource_upstream(self, uri: str) -> Upstream:
        """The upstream that serves `uri` (a listed resource, or one under a listed template)."""
        return self._resource_upstream(uri)

    def template_upstream(self, uri_template: str) -> Upstream:
        for upstream in self.pool.upstreams.values():
            if any(template["uriTemplate"] == uri_template for template in upstream.resource_templates):
                return upstream
        raise NexusError(f"No upstream lists the resource template {uri_template!r}.")

    def _resource_upstream(self, uri: str) -> Upstream:
        owner = self._resource_owner.get(uri)
        if owner is None:
            owner = next((server for prefix, server in self._template_prefixes if uri.startswith(prefix)), None)
        upstream = self.pool.get(owner) if owner else None
        if upstream is None:
            raise NexusError(f"No upstream serves the resource {uri!r}.")
        return upstream

    async def read_resource(self, uri: str, *, link: HostLink | None = None) -> types.ReadResourceResult:
        upstream = await self._after_start(lambda: self._resource_upstream(uri))
        return await upstream.read_resource(uri, link=link)

    def list_prompts(self, sees: Callable[[str], bool] = lambda server: True) -> list[dict[str, Any]]:
        return [prompt | {"name": name} for name, (upstream, prompt) in self._prompts.items() if sees(upstream.name)]

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None, *, link: HostLink | None = None
    ) -> types.GetPromptResult:
        upstream, prompt = await self._after_start(lambda: self.prompt_upstream(name))
        return await upstream.get_prompt(prompt, arguments, link=link)

    async def sign_in_through(self, server: str, link: HostLink) -> bool:
        """Ask the host of a call to sign in to `server`, an upstream waiting for an OAuth sign-in (a URL
        elicitation with the link of a sign-in the gateway runs); True once the upstream is connected."""
        upstream = self.pool.get(server)
        return upstream is not None and await upstream.sign_in_through(link, self.pool.spawn)

    def prompt_upstream(self, name: str) -> tuple[Upstream, str]:
        """The upstream that serves the exposed prompt `name`, and the prompt's name there."""
        found = self._prompts.get(name)
        if found is not None:
            return found[0], found[1]["name"]
        close = difflib.get_close_matches(name, self._prompts, n=3, cutoff=0.6)
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        raise NexusError(f"Unknown prompt {name!r}.{hint} prompts/list gives the name of every prompt served here.")


def _outcome(result: dict[str, Any] | None, error: BaseException | None) -> str:
    """A call's outcome as /metrics counts it."""
    if isinstance(error, ArgumentsInvalid):
        return "invalid_arguments"
    if isinstance(error, UpstreamUnavailable):
        return "unavailable"
    if isinstance(error, UpstreamTimeout):
        return "timeout"
    if error is not None or result is None:
        return "error"
    return "tool_error" if result.get("isError") else "ok"
