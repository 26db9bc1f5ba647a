"""The front: the gateway as an MCP server, over stdio, SSE and streamable HTTP."""
