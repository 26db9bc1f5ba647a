"""An upstream with tools, resources, resource templates and prompts, for front-end tests.

    --start-delay SECONDS   sleep before serving (an upstream that is slow to start)
    --many N                also serve N numbered tools, resources, templates and prompts
Serves tools `echo` and `shelve` (adds a resource and a prompt, and says so), the resource
`library://readme`, the template `library://book/{slug}` and the prompt `review(topic)`.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from mcp.server import MCPServer
from mcp.server.mcpserver import Context


def _constant(text: str) -> Callable[[], str]:
    def constant() -> str:
        return text

    return constant


def build_server(many: int = 0) -> MCPServer:
    server = MCPServer("library")

    @server.tool()
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.resource("library://readme", description="What the library holds.", mime_type="text/plain")
    def readme() -> str:
        return "The library lends books."

    @server.resource("library://book/{slug}", description="One book by its slug.", mime_type="text/plain")
    def book(slug: str) -> str:
        return f"The book {slug}."

    @server.prompt(description="Ask for a review of a topic.")
    def review(topic: str) -> str:
        return f"Please review {topic}."

    @server.tool()
    async def shelve(slug: str, ctx: Context) -> str:
        """Add a resource and a prompt named after `slug`, and tell the client both lists changed."""
        server.resource(f"library://shelved/{slug}", name=f"shelved_{slug}")(_constant(slug))
        server.prompt(f"about_{slug}")(review)
        await ctx.session.send_resource_list_changed()
        await ctx.session.send_prompt_list_changed()
        return f"shelved {slug}"

    for n in range(many):
        tag = f"{n:04d}"

        server.add_tool(_constant(tag), name=f"tool_{tag}", description=f"Numbered tool {tag}.")
        server.resource(f"library://item/{tag}", name=f"item_{tag}")(_constant(tag))
        server.resource(f"library://shelf{tag}/{{slug}}", name=f"shelf_{tag}")(book)
        server.prompt(f"prompt_{tag}")(review)
    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--start-delay", type=float, default=0.0)
    parser.add_argument("--many", type=int, default=0)
    args = parser.parse_args()
    if args.start_delay:
        time.sleep(args.start_delay)  # before reading stdin: initialize waits for it
    build_server(args.many).run()


if __name__ == "__main__":
    main()
