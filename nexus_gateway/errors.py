"""The exceptions nexus-gateway raises, all under one base class.

    NexusError
    ├── ConfigError              a config file is missing, unreadable or wrong (names file and key)
    ├── UnknownTool              a tool name the catalog does not hold
    ├── ArgumentsInvalid         arguments that do not match the tool's JSON Schema
    └── UpstreamError            anything that went wrong talking to an upstream server
        ├── UpstreamUnavailable  the upstream is not connected (starting, crashed, restarting)
        ├── UpstreamTimeout      the upstream did not answer within the per-call timeout
        └── UpstreamProtocolError the upstream answered with a JSON-RPC error

Third-party exceptions are translated once, where they are caught (`raise ... from exc`).
Messages are meant for people and models: they say what failed and what to do next.
"""

from __future__ import annotations


class NexusError(Exception):
    """Base class of every error nexus-gateway raises on purpose."""


class ConfigError(NexusError):
    """A config file is missing, unreadable, or holds a wrong value."""


class UnknownTool(NexusError):
    def __init__(self, name: str, suggestions: list[str] | None = None) -> None:
        self.name = name
        self.suggestions = suggestions or []
        hint = f" Did you mean: {', '.join(self.suggestions)}?" if self.suggestions else ""
        super().__init__(f"Unknown tool {name!r}.{hint} Use search_tools to find tools by what they do.")


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


class UpstreamTimeout(UpstreamError):
    """The upstream did not answer within the per-call timeout."""


class UpstreamProtocolError(UpstreamError):
    """The upstream answered a request with a JSON-RPC error."""
