"""nexus-gateway: one MCP server in front of many, with semantic tool routing."""

__version__ = "0.1.0"
