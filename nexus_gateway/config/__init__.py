"""The gateway's config file: a Claude Desktop / Claude Code / Cursor `mcpServers` file, as it is.

Accepted shapes (one JSON object):

    {"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]},
                    "remote": {"type": "http", "url": "https://...", "headers": {...}}},
     "nexus": {"mode": "routed", "pinned": ["time__get_current_time"]}}

VS Code's `servers` key (with its `inputs`) is read the same way. Strings anywhere in a server entry
may use the variables of `variables.py` (`${VAR}`, `${VAR:-default}`, and Cursor's and VS Code's
`${env:NAME}`, `${userHome}`, `${workspaceFolder}`, `${input:ID}`, ...). A stdio entry's `envFile`
(a dotenv file; relative to the workspace folder) is read into its `env`, `env` winning; a relative
`cwd` is taken from the workspace folder too, as VS Code does. Gateway settings live under `nexus` and
may be overridden by `NEXUS_<SETTING>` environment variables. Unknown keys are kept (the file
round-trips); wrong values are a `ConfigError` naming the file, the server and the key.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)

from nexus_gateway.config._dotenv import parse_env_file
from nexus_gateway.config.variables import Variables, host_variables
from nexus_gateway.errors import ConfigError

ServeMode = Literal["passthrough", "routed", "auto"]
"""Which tools a host is shown: every upstream tool, the meta-tools, or by catalog size."""
ToolForm = Literal["signature", "splice", "prefill"]
"""How `run` shows the chosen tool to the local model: its signature, its compiled block, or its schema text."""
_SERVER_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
ProfileName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.-]{1,64}$")]


class _Entry(BaseModel):
    model_config = ConfigDict(extra="allow")

    disabled: bool = False
    call_timeout: float | None = Field(default=None, gt=0)
    """Per-call timeout in seconds for this server; the gateway's `call_timeout` when unset."""
    call_timeout_max: float | None = Field(default=None, gt=0)
    """Hard limit in seconds on one call to this server, however often it reports progress."""
    start_timeout: float | None = Field(default=None, gt=0)
    """Seconds this server gets to connect and list its tools; the gateway's `start_timeout` when unset."""
    prefix: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_-]{0,63}$")
    """What this server's tool, prompt and resource names start with; `<server>__` when unset, `""` for
    the upstream's own names (a collision with another server's names is reported, see catalog.py)."""


class StdioServer(_Entry):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    type: Literal["stdio"] | None = None
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str | None] = Field(default_factory=dict)
    """On top of the inherited environment (environment.py); null removes a variable, as in VS Code."""
    env_file: str | None = Field(default=None, alias="envFile")
    """VS Code's and Cursor's `envFile`: a dotenv file whose values are merged under `env`."""
    cwd: str | None = None
    max_result_bytes: int | None = Field(default=None, ge=1024)
    """The longest message this server may send, in bytes; the gateway's `max_result_bytes` when unset."""

    @field_validator("env", mode="before")
    @classmethod
    def _scalars_as_text(cls, value: Any) -> Any:
        """Numbers and booleans in `env` are taken as text (VS Code accepts them)."""
        if isinstance(value, dict):
            return {
                key: str(item).lower()
                if isinstance(item, bool)
                else str(item)
                if isinstance(item, int | float)
                else item
                for key, item in value.items()
            }
        return value


class UpstreamOAuth(BaseModel):
    """A remote server's `oauth` entry: how the gateway signs in to it (upstreams/oauth/). Without one, the
    gateway signs in on its own when the server asks (client ID metadata document, else dynamic registration).
    Unknown keys are an error here: a misspelt `client_secret` would go unnoticed."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    """False: never sign in to this server (`"oauth": false` says the same)."""
    client_id: str | None = Field(default=None, min_length=1)
    """A client registered with the server's authorization server beforehand (no dynamic registration)."""
    client_secret: SecretStr | None = Field(default=None, min_length=1)
    """That client's secret, for a confidential client (use `${VAR}`: the file is not a secret store)."""
    token_endpoint_auth_method: Literal["none", "client_secret_basic", "client_secret_post"] | None = None
    """How that client authenticates at the token endpoint: `client_secret_basic` when it has a secret, else `none`."""
    scopes: list[str] = Field(default_factory=list)
    """Scopes to ask for, besides those the server's challenge or metadata names."""
    redirect_port: int = Field(default=33418, ge=1, le=65535)
    """The loopback port of the redirect URI (`http://127.0.0.1:PORT/callback`) sign-in listens on."""
    client_metadata_url: str | None = Field(default=None, pattern=r"^https://[^/]+/.+")
    """An HTTPS URL of a client ID metadata document (CIMD) describing this gateway, used as its client ID where
    the authorization server supports it."""


class RemoteServer(_Entry):
    type: Literal["sse", "http", "streamable-http", "streamableHttp", "streamable_http"] | None = None
    url: str = Field(pattern=r"^https?://")
    headers: dict[str, str] = Field(default_factory=dict)
    oauth: UpstreamOAuth | None = None
    """How to sign in to this server when it asks for OAuth (see `UpstreamOAuth`); `false` never signs in."""
    connect_mode: Literal["legacy", "auto"] = "legacy"
    """How the gateway opens its session: the initialize handshake (`legacy`), or `auto`: the 2026-07-28 era's
    `server/discover` first, the handshake when the server does not know it (for servers of the stateless era)."""

    @field_validator("oauth", mode="before")
    @classmethod
    def _oauth_switch(cls, value: Any) -> Any:
        """`"oauth": false` turns sign-in off, `true` is the default."""
        return {"enabled": value} if isinstance(value, bool) else value

    @property
    def transport(self) -> Literal["sse", "http"]:
        """`sse` or `http` (streamable HTTP); an untyped URL ending in /sse is taken as SSE."""
        if self.type == "sse" or (self.type is None and self.url.rstrip("/").endswith("/sse")):
            return "sse"
        return "http"


ServerSpec = StdioServer | RemoteServer


def _as_text(item: Any) -> Any:
    if isinstance(item, bool):
        return "true" if item else "false"
    return str(item) if isinstance(item, int | float) else item


class ProfileSpec(BaseModel):
    """One entry of `nexus.profiles`: the part of the gateway one client sees (profiles.py applies it).
    Unknown keys are an error here, unlike elsewhere: a misspelt filter would show a client every tool."""

    model_config = ConfigDict(extra="forbid")

    servers: list[str] = Field(default_factory=lambda: ["*"])
    """Globs of the server names whose tools, resources and prompts this profile sees."""
    include_tools: list[str] = Field(default_factory=lambda: ["*"])
    """Globs of tool names (the exposed `server__tool` or the upstream's own name) this profile sees."""
    exclude_tools: list[str] = Field(default_factory=list)
    """Globs of tool names this profile never sees, whatever `include_tools` says."""
    mode: Literal["passthrough", "routed"] | None = None
    """Every tool directly, or the meta-tools; the gateway's mode when unset."""
    pinned_tools: list[str] = Field(default_factory=list)
    """Tools exposed beside the meta-tools in routed mode; `nexus.pinned` (those in the profile) when empty."""
    auto_execute: bool | None = None
    """Whether `run` calls the tool it chose without asking: always (true), never (false), or the gateway's
    rule (read-only tools and `nexus.auto_execute`) when unset."""
    tokens: list[str] = Field(default_factory=list)
    """Bearer tokens that choose this profile on HTTP (accepted besides `auth_tokens`)."""


_SIGNING_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]


class ClaimProfile(BaseModel):
    """One rule of `nexus.oauth.profiles`: a token whose `claim` holds `value` is served under `profile`."""

    model_config = ConfigDict(extra="forbid")

    claim: str = Field(min_length=1)
    """A claim name; a dotted path reaches into objects (`realm_access.roles`)."""
    value: str
    """Matches a string claim equal to it, a list claim holding it, or one word of a space-separated
    `scope`."""
    profile: ProfileName
    """A name of `nexus.profiles`."""


class OAuthSettings(BaseModel):
    """`nexus.oauth`: the gateway as an OAuth 2.1 resource server for remote agents (server/oauth/). JWT
    access tokens from `issuer` are accepted on `/mcp`, `/sse` and `/p/NAME/...` beside `auth_tokens`."""

    model_config = ConfigDict(extra="forbid")

    issuer: str = Field(pattern=r"^https?://")
    """The authorization server whose tokens are accepted (the tokens' `iss`)."""
    jwks_uri: str | None = Field(default=None, pattern=r"^https?://")
    """Where the issuer's signing keys are; read from its RFC 8414 / OpenID metadata when unset."""
    audience: str | None = Field(default=None, pattern=r"^https?://[^/?#]+/?$")
    """This gateway's resource identifier, its public origin, which tokens must name in `aud` (e.g.
    `https://gateway.example.com`); when unset, the origin a request came to (`scheme://host:port`)."""
    required_scopes: list[str] = Field(default_factory=list)
    """Scopes every token must carry; a token without one of them is refused with 403 insufficient_scope."""
    authorization_servers: list[str] = Field(default_factory=list)
    """The authorization servers advertised in the RFC 9728 metadata; `[issuer]` when empty."""
    profiles: list[ClaimProfile] = Field(default_factory=list)
    """Rules choosing a token's profile from its claims, the first match wins; no match: `default_profile`."""
    default_profile: ProfileName | None = None
    """The profile of a token no rule matches; the whole gateway when unset."""
    algorithms: list[str] = Field(default_factory=lambda: list(_SIGNING_ALGORITHMS))
    """Signature algorithms accepted (asymmetric only)."""
    leeway: float = Field(default=30.0, ge=0, le=300)
    """Seconds of clock skew allowed on `exp`, `nbf` and `iat`."""

    @field_validator("algorithms")
    @classmethod
    def _asymmetric_only(cls, algorithms: list[str]) -> list[str]:
        wrong = [name for name in algorithms if name not in _SIGNING_ALGORITHMS]
        if wrong or not algorithms:
            raise ValueError(f"accepted algorithms are {', '.join(_SIGNING_ALGORITHMS)}; got {wrong or 'none'}")
        return algorithms


class ClusterSettings(BaseModel):
    """`nexus.cluster`: replicas sharing their state (pins and approvals, vectors, start times, recent calls)
    through Redis instead of the state directory's files (nexus_gateway/state/, docs/state.md). Environment:
    `NEXUS_CLUSTER_REDIS_URL`, `NEXUS_CLUSTER_KEY_PREFIX`, `NEXUS_CLUSTER_TIMEOUT`, `NEXUS_CLUSTER_TOKEN_KEY`."""

    model_config = ConfigDict(extra="forbid")

    redis_url: str | None = Field(default=None, pattern=r"^(redis|rediss|unix)://")
    """`redis://host:6379/0` (or `rediss://`, `unix://`); unset: the state directory's files (one machine)."""
    key_prefix: str = Field(default="nexus:", min_length=1)
    """Every key and channel the gateway uses starts with this (one prefix per gateway deployment)."""
    timeout: float = Field(default=0.5, gt=0, le=30)
    """Seconds a Redis command or connection may take before the store is reported degraded."""
    token_key: SecretStr | None = None
    """The Fernet key (or several, comma-separated: the first seals, any opens) every replica seals upstream
    sign-ins with in Redis (`${env:NAME}`); unset or empty: `NEXUS_TOKEN_KEY`; neither: no sign-in is kept (error)."""


class TracingSettings(BaseModel):
    """`nexus.tracing` as an object: spans on, exported over OTLP/HTTP (nexus_gateway/tracing.py)."""

    model_config = ConfigDict(extra="allow")

    otlp_endpoint: str | None = None
    """The collector's OTLP/HTTP root (`http://127.0.0.1:4318`; `/v1/traces` is added); else the
    `OTEL_EXPORTER_OTLP_*ENDPOINT` variables; else spans go to the process's tracer provider as it is."""
    service_name: str = "nexus-gateway"
    headers: dict[str, str] = Field(default_factory=dict)
    """Sent with each export (a collector's API key: `${env:NAME}`)."""


class NexusSettings(BaseModel):
    """Gateway settings: the `nexus` key of the config file, then `NEXUS_*` environment variables."""

    model_config = ConfigDict(extra="allow")

    mode: ServeMode = "auto"
    auto_threshold: int = Field(default=40, ge=0)
    """In `auto` mode, serve every tool directly up to this many tools, meta-tools above it."""
    pinned: list[str] = Field(default_factory=list)
    """Namespaced tools exposed directly in routed mode, beside the meta-tools."""
    auto_execute: list[str] = Field(default_factory=list)
    """Tools `run` calls without asking, besides those annotated `readOnlyHint` (namespaced names)."""
    run: bool = True
    """Serve the `run` meta-tool (its local model loads on the first call); false turns it off."""
    run_mode: ToolForm = "splice"
    """How `run` shows the chosen tool to the local model: its full schema as a compiled KV block, spliced where
    the model's splice policy trusts it and prefilled elsewhere (`splice`); or its one-line signature
    (`signature`: fewest tokens, but 80 % exact arguments on Seal-Tools against 88 %); or the schema text
    prefilled every time (`prefill`)."""
    call_timeout: float = Field(default=30.0, gt=0)
    """Seconds a call may go without an answer or a progress notification (progress restarts it)."""
    call_timeout_max: float = Field(default=600.0, gt=0)
    """Hard limit in seconds on one call, however often the upstream reports progress."""
    start_timeout: float = Field(default=20.0, gt=0)
    """Seconds an upstream gets to connect and list its tools, counted from its start slot. Past it the
    upstream is reported as not started and frees its slot, but the start goes on: it is abandoned (and
    made again) only at four times this."""
    max_concurrent_starts: int = Field(default=64, ge=1)
    """Upstreams starting at once; the rest wait for a slot and their start clock runs from it. Upstreams
    starting together share the cores, but holding some back only makes the last one later (44 real servers
    on 2 cores: all healthy 2.3 s after the same servers started directly, against 24 s with 8 slots), so
    the limit is there for memory, not speed. They start slowest first (`start_order.py`)."""
    restart_backoff_initial: float = Field(default=0.25, gt=0)
    restart_backoff_max: float = Field(default=30.0, gt=0)
    search_k: int = Field(default=5, ge=1, le=50)
    rerank_k: int = Field(default=5, ge=1, le=20)
    """Below the margin gate, the local model scores this many of the best tools, fused with retrieval (`run`, and
    `search_tools` with `rerank`)."""
    warm_blocks: bool = True
    """Once the local model has started, compile every catalog tool's re-ranking block in the background (about
    60 tokens, 1 MB a tool in `compiled_schemas/`; 843 tools took 10 minutes on 2 cores), so re-ranking reads only
    the request; false: each block is compiled the first time its tool is re-ranked."""
    run_min_score: float | None = None
    """`run` calls a tool only when its retrieval score reaches this; below it, however sure the rest, the call is
    proposed (a request no tool matches closely). Unset: 0.40 with the default embedder (on the everyday development
    set every right call scored 0.45 or more, three of six wrong ones 0.27-0.37), 0 (off) with any other, whose
    scores are on another scale."""
    run_fallback_s: float | None = Field(default=None, ge=0)
    """When the best candidate cannot be filled from the request, `run` fills the next one (two in all); with this
    set, only while the model has worked less than this many seconds on the request (re-ranking and fills; not the
    engine's start), past it the candidates go back to the host at once. A fall-back can only be called or proposed,
    and the candidates hold it anyway: on the everyday sets requests that tried three fills (before session 19) took
    8-22 s. Unset (the default): no limit, so what `run` decides does not depend on how busy the machine is."""
    search_rerank: bool = False
    """`search_tools` re-ranks below the gate with the local model unless a call says `rerank: false`
    (the model loads on the first such search)."""
    list_page_size: int = Field(default=100, ge=1)
    """Items per page of tools/list, resources/list, resources/templates/list and prompts/list."""
    embedder: str = "default"
    """`default` (all-MiniLM-L6-v2 int8, offline), `hashing`, `gguf:/path/to/embedding-model.gguf`, or `bm25`."""
    fusion: Literal["linear", "rrf", "dense", "lexical"] = "linear"
    usage_examples: bool = False
    """true (routed): the local model writes a few example requests for each tool in the background (once per
    tool definition, kept in the state dir) and tools are also found by them (routing/usage.py). Off by default:
    with the packaged 0.5B model writing them, the whole 843-tool real catalog's examples (40 min of one core)
    lowered everyday top-1 by 1.2 points on average beside the description passages (docs/routing.md); a
    stronger writer (`nexus.engine`, an inference server) may do better."""
    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=0, le=65535)
    auth_tokens: list[str] = Field(default_factory=list)
    """Bearer tokens accepted on HTTP transports; none means no authentication."""
    allowed_hosts: list[str] = Field(default_factory=list)
    """Extra Host header values accepted on HTTP (loopback is always accepted)."""
    allowed_origins: list[str] = Field(default_factory=list)
    max_request_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)
    max_result_bytes: int = Field(default=32 * 1024 * 1024, ge=1024)
    """The longest message a stdio upstream may send (a tool result, say); a longer one becomes an error result."""
    max_sessions: int = Field(default=256, ge=1)
    """Open streamable-HTTP sessions at most; when full, a new client ends the oldest idle one."""
    session_idle_timeout: float = Field(default=300.0, gt=0)
    """Seconds a streamable-HTTP session may go without a request before it ends."""
    max_sessions_per_token: int | None = Field(default=128, ge=1)
    """Sessions one bearer token may hold (its oldest idle one ends first); null for no cap."""
    fast_path: bool = True
    """Serve the hot request (a tools/call of an upstream tool) without the SDK's dispatch where nothing
    unusual can happen during it (server/_fastpath.py, _direct.py); off: every request takes the SDK's path."""
    tracing: bool | TracingSettings = False
    """OpenTelemetry spans for every request served and every upstream call (nexus_gateway/tracing.py,
    docs/tracing.md): `true` (exported over OTLP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set), or
    `{"otlp_endpoint": "http://127.0.0.1:4318"}`. Off: no span is made and the fast paths stay on."""
    state_dir: str | None = None
    """Where the catalog state lives; `~/.cache/nexus-gateway/<config hash>` when unset."""
    # -- tool pinning (pins.py) --
    quarantine: Literal["pinned", "withhold"] = "pinned"
    """What the host sees of a tool whose definition changed since it was pinned, until a person runs
    `nexus-gateway tools approve`: the pinned definition (calls go on, checked against the pinned schema),
    or nothing (`withhold`: the tool is hidden and calls are refused)."""
    quarantine_new_servers: bool = False
    """Tools never seen before (a new server's, or one a known server adds) are withheld until approved."""
    workspace_folder: str | None = None
    """`${workspaceFolder}`, and where a relative `cwd` or `envFile` is taken from; the current folder
    when unset. Relative to the config file's folder."""
    inherit_env: list[str] = Field(default_factory=list)
    """More of the gateway's environment for stdio upstreams: names, `PREFIX*` patterns, or `*` for all."""
    # -- profiles (profiles.py) and hot reload (reload.py) --
    profiles: dict[ProfileName, ProfileSpec] = Field(default_factory=dict)
    """Named views of the gateway, chosen per client: `serve --profile`, a bearer token, or `/p/NAME/mcp`."""
    watch: bool = True
    """Reload the config file when it changes (servers added, removed and changed; profiles)."""
    cluster: ClusterSettings = Field(default_factory=ClusterSettings)
    """Shared state in Redis for replicas behind a load balancer (`cluster.redis_url`); off by default."""
    oauth: OAuthSettings | None = None
    """The gateway as an OAuth resource server for remote agents (JWT access tokens; server/oauth/)."""

    @field_validator("profiles")
    @classmethod
    def _one_profile_a_token(cls, profiles: dict[str, ProfileSpec]) -> dict[str, ProfileSpec]:
        owners: dict[str, str] = {}
        for name, profile in profiles.items():
            for token in profile.tokens:
                if not token:
                    raise ValueError(f"profile {name!r} has an empty token")
                if owners.setdefault(token, name) != name:
                    raise ValueError(f"profiles {owners[token]!r} and {name!r} share a token; give each its own")
        return profiles

    @model_validator(mode="after")
    def _oauth_profiles_exist(self) -> NexusSettings:
        if self.oauth is not None:
            named = [rule.profile for rule in self.oauth.profiles] + [self.oauth.default_profile or ""]
            unknown = sorted({name for name in named if name and name not in self.profiles})
            if unknown:
                raise ValueError(f"oauth names profiles {unknown} that nexus.profiles does not define")
        return self

    def profile_tokens(self) -> dict[str, str]:
        """Each profile's bearer tokens, mapped to the profile's name."""
        return {token: name for name, profile in self.profiles.items() for token in profile.tokens}


@dataclass(frozen=True)
class GatewayConfig:
    path: Path | None
    servers: dict[str, ServerSpec]
    nexus: NexusSettings
    raw: dict[str, Any] = field(repr=False, default_factory=dict)
    """The file as read (before `${VAR}` expansion), so tools that rewrite it keep every key."""

    @property
    def enabled_servers(self) -> dict[str, ServerSpec]:
        return {name: spec for name, spec in self.servers.items() if not spec.disabled}


def expand_env(value: Any, environ: Mapping[str, str] | None = None, *, where: str = "") -> Any:
    """Expand the variables of `variables.py` in every string of a JSON value."""
    env = os.environ if environ is None else environ
    return Variables(env, host=host_variables(None)).expand(value, where)


def _format_error(where: str, exc: ValidationError, from_env: Mapping[str, str] | None = None) -> str:
    problems = []
    for error in exc.errors():
        loc = ".".join(str(part) for part in error["loc"] if part not in ("spec", "StdioServer", "RemoteServer"))
        source = f" (from {from_env[loc]})" if from_env and loc in from_env else ""
        problems.append(f"{where}{f', key {loc!r}' if loc else ''}{source}: {error['msg']}")
    return "\n".join(dict.fromkeys(problems))


def _parse_server(label: str, name: str, entry: Any, variables: Variables, workspace: Path) -> ServerSpec:
    if not _SERVER_NAME.match(name):
        raise ConfigError(f"{label}: server name {name!r} must be 1-64 letters, digits, '_', '-' or '.'")
    if not isinstance(entry, dict):
        raise ConfigError(f"{label}: server {name!r} must be an object, got {type(entry).__name__}")
    where = f"{label}: server {name!r}"
    expanded = variables.expand(entry, where)
    if "url" in expanded:
        model: type[_Entry] = RemoteServer
    elif "command" in expanded:
        model = StdioServer
    else:
        raise ConfigError(f"{where}: needs either 'command' (a local stdio server) or 'url' (a remote server)")
    try:
        spec = model.model_validate(expanded)
    except ValidationError as exc:
        raise ConfigError(_format_error(where, exc)) from None
    assert isinstance(spec, StdioServer | RemoteServer)
    if isinstance(spec, StdioServer):
        if spec.cwd:
            spec.cwd = str(_under(workspace, spec.cwd))
        if spec.env_file:
            spec.env = _read_env_file(_under(workspace, spec.env_file), where) | spec.env
    return spec


def _under(folder: Path, path: str) -> Path:
    """`path` with `~` expanded, taken from `folder` when relative (how VS Code places `cwd`)."""
    return folder / Path(path).expanduser()


def _read_env_file(path: Path, where: str) -> dict[str, str | None]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise ConfigError(f"{where}, key 'envFile': cannot read {path} ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{where}, key 'envFile': {path} is not UTF-8 text (byte {exc.start})") from None
    return dict(parse_env_file(text))


def _settings_from_env(base: dict[str, Any], environ: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """The `nexus` settings with `NEXUS_<NAME>` variables on top, and which settings they set."""
    merged = dict(base)
    sources: dict[str, str] = {}
    for name, info in NexusSettings.model_fields.items():
        variable = f"NEXUS_{name.upper()}"
        if name == "cluster":  # a sub-model: NEXUS_CLUSTER_<KEY> each
            for key in ClusterSettings.model_fields:
                if (value := environ.get(f"{variable}_{key.upper()}")) is not None:
                    cluster = merged.get("cluster")
                    merged["cluster"] = {**(cluster if isinstance(cluster, dict) else {}), key: value}
                    sources["cluster"] = f"{variable}_{key.upper()}"
            continue
        raw = environ.get(variable)
        if raw is None:
            continue
        sources[name] = variable
        if info.annotation is not None and "list" in str(info.annotation):
            merged[name] = [item.strip() for item in raw.split(",") if item.strip()]
        else:
            merged[name] = raw
    return merged, sources


def builtin_variables(config_dir: Path | None) -> dict[str, str]:
    """`${PYTHON}` (this interpreter) and `${CONFIG_DIR}` (the config file's folder), for portable configs."""
    variables = {"PYTHON": sys.executable}
    if config_dir is not None:
        variables["CONFIG_DIR"] = str(config_dir)
    return variables


def _workspace_folder(label: str, raw_nexus: dict[str, Any], variables: Variables, config_dir: Path | None) -> Path:
    """`nexus.workspace_folder` (NEXUS_WORKSPACE_FOLDER first), relative to the config's folder; else the
    current folder."""
    raw = variables.environ.get("NEXUS_WORKSPACE_FOLDER") or raw_nexus.get("workspace_folder")
    if raw is None:
        return Path.cwd()
    if not isinstance(raw, str):
        raise ConfigError(f"{label}: nexus settings, key 'workspace_folder': must be a path, got {type(raw).__name__}")
    text = variables.expand(raw, f"{label}: nexus settings", "workspace_folder")
    return ((config_dir or Path.cwd()) / Path(text).expanduser()).resolve()


def _declared_inputs(label: str, data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """VS Code's `inputs` array, by id."""
    raw = data.get("inputs", [])
    if not isinstance(raw, list):
        raise ConfigError(f"{label}: 'inputs' must be an array of input definitions")
    inputs: dict[str, dict[str, Any]] = {}
    for index, item in enumerate(raw):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            raise ConfigError(f"{label}: key 'inputs.{index}': an input needs an 'id' (a string)")
        inputs[item["id"]] = item
    return inputs


def parse_config(
    data: Any, *, label: str = "<config>", environ: Mapping[str, str] | None = None, config_dir: Path | None = None
) -> GatewayConfig:
    """Validate an already-decoded config document."""
    env = dict(os.environ) if environ is None else dict(environ)
    if not isinstance(data, dict):
        raise ConfigError(f"{label}: the config must be a JSON object, got {type(data).__name__}")
    servers_key = "mcpServers" if "mcpServers" in data else "servers" if "servers" in data else None
    raw_servers = data.get(servers_key, {}) if servers_key else {}
    if not isinstance(raw_servers, dict):
        raise ConfigError(f"{label}: '{servers_key}' must be an object mapping server names to entries")
    raw_nexus = data.get("nexus", {})
    if not isinstance(raw_nexus, dict):
        raise ConfigError(f"{label}: 'nexus' must be an object of gateway settings")

    base = Variables(env, builtins=builtin_variables(config_dir), host=host_variables(None))
    workspace = _workspace_folder(label, raw_nexus, base, config_dir)
    variables = Variables(
        env, builtins=base.builtins, host=host_variables(workspace), inputs=_declared_inputs(label, data)
    )
    servers = {name: _parse_server(label, name, entry, variables, workspace) for name, entry in raw_servers.items()}

    settings, from_env = _settings_from_env(variables.expand(raw_nexus, f"{label}: nexus settings"), env)
    settings["workspace_folder"] = str(workspace)
    try:
        nexus = NexusSettings.model_validate(settings)
    except ValidationError as exc:
        raise ConfigError(_format_error(f"{label}: nexus settings", exc, from_env)) from None
    return GatewayConfig(path=None, servers=servers, nexus=nexus, raw=data)


def load_config(path: str | Path, *, environ: Mapping[str, str] | None = None) -> GatewayConfig:
    """Read and validate a config file; every problem is a `ConfigError` that names the file."""
    file = Path(path).expanduser().absolute()
    try:
        text = file.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ConfigError(f"{file}: config file not found") from None
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read config file ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        line = file.read_bytes()[: exc.start].count(b"\n") + 1
        raise ConfigError(
            f"{file}:{line}: not UTF-8 text (byte {exc.start} is {exc.object[exc.start]:#04x}); save the file as UTF-8"
        ) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{file}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    config = parse_config(data, label=str(file), environ=environ, config_dir=file.resolve().parent)
    return GatewayConfig(path=file.resolve(), servers=config.servers, nexus=config.nexus, raw=config.raw)


def default_state_dir(config: GatewayConfig) -> Path:
    """Per-config state under the user's cache directory, unless `nexus.state_dir` says otherwise."""
    if config.nexus.state_dir:
        return Path(config.nexus.state_dir).expanduser()
    key = hashlib.sha256(str(config.path or "<inline>").encode()).hexdigest()[:12]
    return Path.home() / ".cache" / "nexus-gateway" / key
