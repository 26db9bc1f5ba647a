"""An upstream that uses every MCP feature a proxy must carry beyond tools/list and tools/call.

Tools:
    progress(steps, delay)   reports `steps` progress notifications, `delay` seconds apart
    slow(seconds)            sleeps without progress; a cancelled call is counted (see `cancelled`)
    cancelled()              how many calls of `slow` were cancelled
    log(level, text)         sends notifications/message with logger "features"
    sample(prompt)           asks the client for sampling, returns the reply's text
    sample_then_give_up()    asks for sampling and cancels that request after 0.5 s
    elicit_form(message)     asks for a form elicitation (a "name" string), returns "action:name"
    elicit_url(url)          asks for a URL elicitation, returns the action
    roots()                  asks for roots/list, returns the URIs, one a line
    touch(uri, always)       sends notifications/resources/updated for `uri` if it is subscribed (or `always`)
    elicit_then_complete(url) asks for a URL elicitation (id "e-2"), then sends elicitation/complete for it
    pid()                    the server's process id
    grow()                   adds a tool `grown_N` and sends tools/list_changed; returns its name
Resources: features://status (subscribable), template features://items/{name} (completions for name),
features://sampled (reading it asks the client for sampling: "read?").
Prompts: greet(name) (completions for name), sampled (getting it asks for sampling: "prompt?").
The last logging/setLevel is readable as features://level.
With --plain the server declares no logging, completions or resource subscriptions.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.message import ServerMessageMetadata

NAMES = ["alpha", "alpine", "beta"]
state: dict[str, Any] = {"cancelled": 0, "level": "unset", "subscribed": []}


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def _tool(name: str, **properties: str) -> types.Tool:
    schema = {"type": "object", "properties": {key: {"type": kind} for key, kind in properties.items()}}
    return types.Tool(name=name, description=f"The {name} feature.", input_schema=schema)


TOOLS = [
    _tool("progress", steps="integer", delay="number"),
    _tool("slow", seconds="number"),
    _tool("cancelled"),
    _tool("log", level="string", text="string"),
    _tool("sample", prompt="string"),
    _tool("sample_then_give_up"),
    _tool("elicit_form", message="string"),
    _tool("elicit_url", url="string"),
    _tool("roots"),
    _tool("touch", uri="string", always="boolean"),
    _tool("elicit_then_complete", url="string"),
    _tool("pid"),
    _tool("grow"),
    _tool("request_id"),
]


async def _sample(ctx: ServerRequestContext[Any], prompt: str) -> str:
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))
    request = types.CreateMessageRequest(params=types.CreateMessageRequestParams(messages=[message], max_tokens=50))
    related = ServerMessageMetadata(related_request_id=ctx.request_id)
    reply = await ctx.session.send_request(request, types.CreateMessageResult, metadata=related)
    return reply.content.text if isinstance(reply.content, types.TextContent) else str(reply.content)


async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    session = ctx.session
    related = ServerMessageMetadata(related_request_id=ctx.request_id)
    name = params.name
    if name == "progress":
        for step in range(int(args.get("steps", 3))):
            await anyio.sleep(float(args.get("delay", 0.0)))
            await session.report_progress(step + 1, int(args.get("steps", 3)), f"step {step + 1}")
        return _text("done")
    if name == "slow":
        try:
            await anyio.sleep(float(args.get("seconds", 60)))
        except anyio.get_cancelled_exc_class():
            state["cancelled"] += 1
            raise
        return _text("slept")
    if name == "cancelled":
        return _text(str(state["cancelled"]))
    if name == "log":
        notification = types.LoggingMessageNotification(
            params=types.LoggingMessageNotificationParams(level=args["level"], data=args["text"], logger="features")
        )
        await session.send_notification(notification, related_request_id=ctx.request_id)
        return _text("logged")
    if name in ("sample", "sample_then_give_up"):
        request = types.CreateMessageRequest(
            params=types.CreateMessageRequestParams(
                messages=[
                    types.SamplingMessage(
                        role="user", content=types.TextContent(type="text", text=args.get("prompt", "hi"))
                    )
                ],
                max_tokens=50,
            )
        )
        if name == "sample_then_give_up":
            with anyio.move_on_after(0.5):
                await session.send_request(request, types.CreateMessageResult, metadata=related)
            return _text("gave up")
        reply = await session.send_request(request, types.CreateMessageResult, metadata=related)
        content = reply.content
        return _text(content.text if isinstance(content, types.TextContent) else str(content))
    if name == "elicit_form":
        schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        result = await session.elicit_form(args.get("message", "Who are you?"), schema, ctx.request_id)
        return _text(f"{result.action}:{(result.content or {}).get('name', '')}")
    if name == "elicit_url":
        result = await session.elicit_url(
            "Open this page", args.get("url", "https://example.com"), "e-1", ctx.request_id
        )
        return _text(result.action)
    if name == "roots":
        listed = await session.send_request(types.ListRootsRequest(), types.ListRootsResult, metadata=related)
        return _text("\n".join(str(root.uri) for root in listed.roots))
    if name == "touch":
        if args.get("always") or args["uri"] in state["subscribed"]:
            await session.send_resource_updated(args["uri"])
            return _text("touched")
        return _text("not subscribed")
    if name == "elicit_then_complete":
        result = await session.elicit_url(
            "Open this page", args.get("url", "https://example.com"), "e-2", ctx.request_id
        )
        await session.send_elicit_complete("e-2")
        return _text(result.action)
    if name == "grow":
        grown = f"grown_{sum(tool.name.startswith('grown_') for tool in TOOLS) + 1}"
        TOOLS.append(_tool(grown))
        await session.send_tool_list_changed()
        return _text(grown)
    if name == "pid":
        return _text(str(os.getpid()))
    if name == "request_id":  # the JSON-RPC id the call came with: the gateway's fast path has ids of its own
        return _text(str(ctx.request_id))
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"no tool {name}")], is_error=True)


async def list_resources(ctx: ServerRequestContext[Any], params: Any) -> types.ListResourcesResult:
    resources = [
        types.Resource(uri="features://status", name="status"),
        types.Resource(uri="features://level", name="level"),
        types.Resource(uri="features://sampled", name="sampled"),
    ]
    return types.ListResourcesResult(resources=resources)


async def list_templates(ctx: ServerRequestContext[Any], params: Any) -> types.ListResourceTemplatesResult:
    template = types.ResourceTemplate(uri_template="features://items/{name}", name="item")
    return types.ListResourceTemplatesResult(resource_templates=[template])


async def read_resource(ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams) -> Any:
    uri = str(params.uri)
    text = state["level"] if uri == "features://level" else f"contents of {uri}"
    if uri == "features://sampled":
        text = await _sample(ctx, "read?")
    return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, text=text)])


async def subscribe(ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams) -> types.EmptyResult:
    state["subscribed"].append(str(params.uri))
    return types.EmptyResult()


async def unsubscribe(ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams) -> types.EmptyResult:
    if str(params.uri) in state["subscribed"]:
        state["subscribed"].remove(str(params.uri))
    return types.EmptyResult()


async def list_prompts(ctx: ServerRequestContext[Any], params: Any) -> types.ListPromptsResult:
    prompt = types.Prompt(name="greet", arguments=[types.PromptArgument(name="name", required=True)])
    return types.ListPromptsResult(prompts=[prompt, types.Prompt(name="sampled")])


async def get_prompt(ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams) -> types.GetPromptResult:
    if params.name == "sampled":
        reply = types.TextContent(type="text", text=await _sample(ctx, "prompt?"))
        return types.GetPromptResult(messages=[types.PromptMessage(role="user", content=reply)])
    name = (params.arguments or {}).get("name", "you")
    message = types.PromptMessage(role="user", content=types.TextContent(type="text", text=f"Hello, {name}!"))
    return types.GetPromptResult(messages=[message])


async def complete(ctx: ServerRequestContext[Any], params: types.CompleteRequestParams) -> types.CompleteResult:
    prefix = params.argument.value
    if isinstance(params.ref, types.PromptReference):
        values = [f"{name} (prompt {params.ref.name})" for name in NAMES if name.startswith(prefix)]
    else:
        values = [f"{name} (template {params.ref.uri})" for name in NAMES if name.startswith(prefix)]
    return types.CompleteResult(completion=types.Completion(values=values, total=len(values)))


async def set_level(ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams) -> types.EmptyResult:
    state["level"] = params.level
    return types.EmptyResult()


def build(plain: bool = False) -> Server[Any]:
    server: Server[Any] = Server(
        "features",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_subscribe_resource=None if plain else subscribe,
        on_unsubscribe_resource=None if plain else unsubscribe,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_completion=None if plain else complete,
    )
    if not plain:
        server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
    server.middleware.clear()
    return server


async def main() -> None:
    server = build(plain="--plain" in sys.argv)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
