"""The meta-tools the gateway serves in routed mode, as MCP Tool objects."""

from __future__ import annotations

from typing import Any

SEARCH_TOOLS = "search_tools"
CALL_TOOL = "call_tool"
DESCRIBE_TOOL = "describe_tool"
RUN = "run"
NAMES = frozenset({SEARCH_TOOLS, CALL_TOOL, DESCRIBE_TOOL, RUN})

_READ_ONLY = {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False}


RUN_DEFINITION: dict[str, Any] = {
    "name": RUN,
    "description": (
        "Do a request in one step: the gateway picks the tool, fills its arguments with a local model, checks "
        "them against the tool's schema and calls it. Read-only tools (and those the user allowed) run at once; "
        "for others the proposed call comes back to confirm with call_tool. When several tools fit equally, "
        "the candidates come back instead."
    ),
    "inputSchema": {
        "type": "object",
        "properties": {
            "request": {"type": "string", "description": "What to do, in plain words, with every value needed."},
            "context": {"type": "string", "description": "Anything from the conversation the request relies on."},
        },
        "required": ["request"],
    },
}


def definitions(tool_count: int, servers: list[str], *, run: bool = True) -> list[dict[str, Any]]:
    shown = ", ".join(servers[:12]) + (", ..." if len(servers) > 12 else "")
    where = f"{tool_count} tools from {len(servers)} servers ({shown})"
    return [
        {
            "name": SEARCH_TOOLS,
            "description": (
                f"Find tools by what you want to do, among {where}. Returns the best matches as one-line "
                "signatures `name(param: type, optional?: type) - summary` that are complete enough to call "
                "with call_tool. Search again with other words if nothing fits."
            ),
            "inputSchema": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What you want to do, in plain words."},
                    "k": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 50,
                        "default": 5,
                        "description": "How many tools to return.",
                    },
                    "rerank": {
                        "type": "boolean",
                        "description": (
                            "When no tool clearly wins, let the gateway's local model choose among the best few "
                            "(slower: a second or more). The choice is marked in the result."
                        ),
                    },
                },
                "required": ["query"],
            },
            "annotations": _READ_ONLY,
        },
        {
            "name": CALL_TOOL,
            "description": (
                "Call a tool found with search_tools, by its exact name. Arguments are checked against the "
                "tool's schema before the call; a mismatch comes back as an error that says what to fix."
            ),
            "inputSchema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The tool's name as search_tools returned it."},
                    "arguments": {"type": "object", "description": "The tool's arguments.", "default": {}},
                },
                "required": ["name"],
            },
        },
        {
            "name": DESCRIBE_TOOL,
            "description": "Full description and JSON Schema of one tool, for when its signature is not enough.",
            "inputSchema": {
                "type": "object",
                "properties": {"name": {"type": "string", "description": "The tool's exact name."}},
                "required": ["name"],
            },
            "annotations": _READ_ONLY,
        },
    ] + ([RUN_DEFINITION] if run else [])


def input_schema(name: str) -> dict[str, Any]:
    """The input schema of the meta-tool `name` (one of `NAMES`)."""
    schema: dict[str, Any] = next(tool["inputSchema"] for tool in definitions(0, []) if tool["name"] == name)
    return schema
