"""An upstream whose tool, prompt and resource names are chosen by flags (for naming tests).

--label L          who answers: every tool returns {"server": L, "tool": NAME, "env": {...}}
--tool NAME        a tool (repeatable); its optional argument `env` lists environment variables to report
--prompt NAME      a prompt (repeatable)
--resource NAME    a resource test://NAME (repeatable)
--template NAME    a resource template test://NAME/{id} (repeatable)
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable

from mcp.server import MCPServer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--label", default="named")
    for flag in ("tool", "prompt", "resource", "template"):
        parser.add_argument(f"--{flag}", action="append", default=[])
    args = parser.parse_args()
    server = MCPServer(args.label)

    def tool(name: str) -> Callable[..., str]:
        def answer(env: list[str] | None = None) -> str:
            found = {key: os.environ.get(key) for key in env or []}
            return json.dumps({"server": args.label, "tool": name, "cwd": os.getcwd(), "env": found})

        return answer

    for name in args.tool:
        server.add_tool(tool(name), name=name, description=f"The tool {name} of {args.label}.")

    def prompt(name: str) -> Callable[[], str]:
        return lambda: f"prompt {name} of {args.label}"

    for name in args.prompt:
        server.prompt(name=name, description=f"The prompt {name}.")(prompt(name))

    def resource(name: str) -> Callable[[], str]:
        return lambda: f"resource {name} of {args.label}"

    for name in args.resource:
        server.resource(f"test://{name}", name=name)(resource(name))

    def template(name: str) -> Callable[[str], str]:
        def read(id: str) -> str:
            return f"template {name} item {id}"

        return read

    for name in args.template:
        server.resource(f"test://{name}/{{id}}", name=name)(template(name))
    server.run()


if __name__ == "__main__":
    main()
