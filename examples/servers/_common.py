"""Shared command line, logging and transport logic for the example upstream servers."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from datetime import datetime, timedelta
from types import FrameType
from typing import Annotated

import anyio
import uvicorn
from mcp.server import MCPServer
from pydantic import Field

Email = Annotated[
    str,
    Field(
        pattern=r"^[^@\s]+@[^@\s]+\.[A-Za-z]{2,}$",
        json_schema_extra={"format": "email"},
    ),
]
"""An email address; advertised as JSON Schema `format: email` and checked by a pattern."""

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class LogicalClock:
    """Deterministic timestamps: starts at a fixed instant and ticks one minute per reading."""

    def __init__(self, start: datetime) -> None:
        self._now = start

    def now(self) -> datetime:
        self._now += timedelta(minutes=1)
        return self._now


def make_parser(description: str | None) -> argparse.ArgumentParser:
    """An argument parser with the options every example server shares."""
    parser = argparse.ArgumentParser(description=(description or "").strip() or None)
    parser.add_argument(
        "--transport",
        choices=("stdio", "http", "streamable-http", "sse"),
        default="stdio",
        help="stdio (default), streamable HTTP at /mcp, or SSE at /sse",
    )
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address")
    parser.add_argument("--port", type=int, default=8765, help="HTTP port")
    parser.add_argument("--log-level", choices=LOG_LEVELS, default="INFO")
    return parser


def configure_logging(level: str) -> None:
    """Send every log line to stderr: in stdio mode stdout carries the protocol."""
    logging.basicConfig(
        stream=sys.stderr,
        level=level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def serve(server: MCPServer, args: argparse.Namespace) -> None:
    """Run `server` on the transport chosen on the command line until stdin closes or it is interrupted.

    SIGTERM and Ctrl-C end it with a normal unwind, so callers' `with` blocks (a temporary root) clean up.
    """
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        _run(server, args)
    except KeyboardInterrupt:
        logging.getLogger(f"examples.servers.{server.name}").info("interrupted")


def _run(server: MCPServer, args: argparse.Namespace) -> None:
    if args.transport == "stdio":
        server.run("stdio")
        return
    if args.transport == "sse":
        app = server.sse_app(host=args.host)
        where = f"http://{args.host}:{args.port}/sse"
    else:
        app = server.streamable_http_app(host=args.host)
        where = f"http://{args.host}:{args.port}/mcp"
    # log_config=None keeps uvicorn on our stderr handlers (its default logs access to stdout).
    config = uvicorn.Config(
        app,
        host=args.host,
        port=args.port,
        log_config=None,
        log_level=args.log_level.lower(),
    )
    logging.getLogger(f"examples.servers.{server.name}").info("serving on %s", where)
    anyio.run(uvicorn.Server(config).serve)
