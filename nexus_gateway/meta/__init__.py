"""The tools a host sees, one layer above the gateway core (which it reaches through `GatewayCore` only).

definitions.py  the meta-tools as MCP Tool objects: search_tools, call_tool, describe_tool, run
tools.py        `MetaTools`: tools/list and tools/call for one gateway, in passthrough or routed mode
run.py          `run`: route, fill the arguments with the local model, call; imported on the first `run`
"""
