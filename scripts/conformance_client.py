"""The gateway as the client under test of the MCP conformance suite's client scenarios (the auth ones).

    python scripts/conformance_client.py URL

The suite starts a server (with its authorization server) for a scenario and runs this command with the server's
URL last, the scenario in `MCP_CONFORMANCE_SCENARIO` and its data (a pre-registered client) in
`MCP_CONFORMANCE_CONTEXT`. This makes a gateway whose one upstream is URL (`type: http`, `oauth` from the context,
the suite's client ID metadata document URL for CIMD), runs it in this process, and, as a host would, lists the
tools through the gateway's front and calls the first one.

The upstream signs in with the gateway's own code (upstreams/oauth/: `UpstreamAuth` over the SDK's provider). The
one thing a test must stand in for is the person at the browser: `AutoApprove` opens the authorization URL as a
browser would and reads the code from the redirect the suite's authorization server answers with (it approves
at once). The gateway makes one connection attempt; the exit status says whether the call went through.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import anyio
import httpx2
from mcp import Client
from mcp.shared.auth import AuthorizationCodeResult
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from nexus_gateway.config import parse_config  # noqa: E402
from nexus_gateway.gateway import Gateway  # noqa: E402
from nexus_gateway.server.app import build_server  # noqa: E402

CIMD_URL = "https://conformance-test.local/client-metadata.json"
"""The client ID metadata document URL the suite's authorization servers accept."""
UPSTREAM = "conformance"
START = 20.0

logger = logging.getLogger("conformance-client")


class AutoApprove:
    """The person at the browser: the authorization URL is opened, the redirect's parameters are the answer."""

    def __init__(self) -> None:
        self._answer: dict[str, str] = {}

    async def show(self, url: str) -> None:
        async with httpx2.AsyncClient(timeout=10) as http:
            response = await http.get(url)
        location = response.headers.get("location")
        if response.status_code not in (301, 302, 303, 307, 308) or not location:
            raise RuntimeError(f"the authorization server answered {response.status_code}, not a redirect")
        self._answer = dict(parse_qsl(urlsplit(location).query))

    async def redirected(self) -> AuthorizationCodeResult:
        answer, self._answer = self._answer, {}
        if "code" not in answer:
            raise RuntimeError(f"the redirect carries no code: {answer.get('error', 'no error either')}")
        return AuthorizationCodeResult(code=answer["code"], state=answer.get("state"), iss=answer.get("iss"))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def gateway_config(url: str, context: dict[str, Any], state_dir: str) -> Any:
    oauth: dict[str, Any] = {"redirect_port": _free_port(), "client_metadata_url": CIMD_URL}
    if context.get("client_id"):
        oauth["client_id"] = context["client_id"]
        if context.get("client_secret"):
            oauth["client_secret"] = context["client_secret"]
    # The suite's mock speaks the era it runs at: the stateless one (2026-07-28) refuses the initialize handshake.
    modern = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION", "") in MODERN_PROTOCOL_VERSIONS
    entry = {"type": "http", "url": url, "oauth": oauth, "connect_mode": "auto" if modern else "legacy"}
    document = {
        "mcpServers": {UPSTREAM: entry},
        "nexus": {
            "mode": "passthrough",
            "run": False,
            "embedder": "hashing",
            "usage_examples": False,
            "watch": False,
            "state_dir": state_dir,
            "restart_backoff_initial": 30,  # one attempt: the exit status reports it
        },
    }
    return parse_config(document, label="conformance")


async def run(url: str) -> int:
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    with tempfile.TemporaryDirectory(prefix="nexus-conformance-") as state_dir:
        os.environ.setdefault("NEXUS_TOKEN_STORE", "file")
        gateway = Gateway(gateway_config(url, context, state_dir))
        upstream = gateway.pool.get(UPSTREAM)
        assert upstream is not None and upstream.auth is not None
        upstream.auth.interaction = AutoApprove()
        async with gateway:
            with anyio.fail_after(START):
                await upstream.wait_settled()
            if not upstream.connected:
                logger.error("the upstream did not connect: %s", upstream.last_error)
                return 1
            async with Client(build_server(gateway), mode="legacy", cache=None) as host:  # type: ignore[arg-type]
                tools = (await host.list_tools()).tools
                logger.info("tools through the gateway: %s", [tool.name for tool in tools])
                if tools:
                    result = await host.call_tool(tools[0].name, {})
                    logger.info("called %s: error=%s", tools[0].name, result.is_error)
                    if result.is_error:
                        return 1
    return 0


def main() -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    if len(sys.argv) < 2:
        sys.exit(f"usage: {sys.argv[0]} URL")
    logger.info("scenario %s against %s", os.environ.get("MCP_CONFORMANCE_SCENARIO"), sys.argv[-1])
    sys.exit(anyio.run(run, sys.argv[-1]))


if __name__ == "__main__":
    main()
