"""The exceptions nexus-gateway raises, all under one base class.

    NexusError
    ├── ConfigError              a config file is missing, unreadable or wrong (names file and key)
    ├── UnknownTool              a tool name the catalog does not hold
    ├── ToolQuarantined          a tool withheld until a person approves its changed (or new) definition
    ├── ArgumentsInvalid         arguments that do not match the tool's JSON Schema
    ├── UpstreamError            anything that went wrong talking to an upstream server
    │   ├── UpstreamUnavailable  the upstream is not connected (starting, crashed, restarting)
    │   │   └── UpstreamNeedsAuthorization  it waits for a person to sign in (OAuth)
    │   ├── UpstreamTimeout      the upstream did not answer within the per-call timeout
    │   └── UpstreamProtocolError the upstream answered with a JSON-RPC error
    ├── EngineError              the local model could not be loaded, or llama.cpp failed (full context, ...)
    │   └── BlockRejected        a compiled KV block failed validation; it is never spliced, the text is prefilled
    └── DaemonError              the shared daemon could not be reached, started or stopped
        └── DaemonRunning        a daemon already runs for this state folder (a second one refuses to start)

Third-party exceptions are translated once, where they are caught (`raise ... from exc`).
Messages are meant for people and models: they say what failed and what to do next.
"""

from __future__ import annotations


class NexusError(Exception):
    """Base class of every error nexus-gateway raises on purpose."""


class ConfigError(NexusError):
    """A config file is missing, unreadable, or holds a wrong value."""


class UnknownTool(NexusError):
    """A tool name the catalog does not hold. `hint` says where the names are: by default `search_tools`
    (routed mode); passthrough does not serve it, so there the gateway points at tools/list."""

    def __init__(self, name: str, suggestions: list[str] | None = None, *, hint: str | None = None) -> None:
        self.name = name
        self.suggestions = suggestions or []
        close = f" Did you mean: {', '.join(self.suggestions)}?" if self.suggestions else ""
        where = hint or "Use search_tools to find tools by what they do."
        super().__init__(f"Unknown tool {name!r}.{close} {where}")


class ToolQuarantined(NexusError):
    def __init__(self, name: str, why: str) -> None:
        self.name = name
        super().__init__(
            f"{why} A person must review it (`nexus-gateway tools diff {name}`) and approve it "
            f"(`nexus-gateway tools approve {name}`) before it can be used."
        )


class ArgumentsInvalid(NexusError):
    def __init__(self, tool: str, problems: list[str]) -> None:
        self.tool = tool
        self.problems = problems
        listed = "; ".join(problems)
        super().__init__(f"Arguments for {tool!r} do not match its input schema: {listed}")


class UpstreamError(NexusError):
    def __init__(self, server: str, message: str) -> None:
        self.server = server
        super().__init__(message)


class UpstreamUnavailable(UpstreamError):
    """The upstream is not connected right now; the pool keeps retrying in the background."""


class UpstreamNeedsAuthorization(UpstreamUnavailable):
    """The upstream asks for an OAuth sign-in that needs a person; the message says what to run."""


class UpstreamTimeout(UpstreamError):
    """The upstream did not answer within the per-call timeout."""


class UpstreamProtocolError(UpstreamError):
    """The upstream answered a request with a JSON-RPC error."""


class EngineError(NexusError):
    """The local model could not be loaded or run: a missing or corrupt GGUF, a full context, a llama.cpp failure."""


class GrammarRejected(EngineError):
    """llama.cpp could not parse a grammar the builder wrote (a repetition beyond its limits, an escape it does not
    read): the argument generator falls back to a looser grammar."""


class BlockRejected(EngineError):
    """A compiled KV block whose header, checksum, model fingerprint or tokens do not match (fail closed)."""

    def __init__(self, path: object, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"KV block {path} rejected: {reason}; the tool text is prefilled instead")


class DaemonError(NexusError):
    """The shared daemon (`nexus-gateway daemon`) could not be reached, started or stopped."""


class DaemonRunning(DaemonError):
    """A daemon already holds the lock of this state folder."""
