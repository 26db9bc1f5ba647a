"""Upstream MCP servers: one supervised session each, their processes, and the calls made to them."""
