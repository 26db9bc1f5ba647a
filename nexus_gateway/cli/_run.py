"""What every command shares: logging to stderr, the config file, running under anyio, and the one place
where user errors (`NexusError`) become an `error:` line on stderr and exit status 2 (`App` wraps every
command in `user_errors`; `run_async` unwraps them from task groups)."""

from __future__ import annotations

import functools
import logging
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, NoReturn, ParamSpec, TypeVar

import anyio
import typer
from rich.console import Console
from rich.markup import escape

from nexus_gateway.config import GatewayConfig, load_config
from nexus_gateway.errors import NexusError
from nexus_gateway.runtime import _startup_signals

err = Console(stderr=True)
logger = logging.getLogger("nexus_gateway")
T = TypeVar("T")
P = ParamSpec("P")


class App(typer.Typer):
    """A `typer.Typer` whose commands print user errors as `fail` does instead of a traceback."""

    def command(  # type: ignore[override]  # typer spells out a dozen keywords; all pass through unchanged
        self, name: str | None = None, **options: Any
    ) -> Callable[[Callable[P, T]], Callable[P, T]]:
        register = super().command(name, **options)
        return lambda command: register(user_errors(command))

    def callback(  # type: ignore[override]  # as for command: every keyword passes through unchanged
        self, **options: Any
    ) -> Callable[[Callable[P, T]], Callable[P, T]]:
        register = super().callback(**options)
        return lambda callback: register(user_errors(callback))


def user_errors(command: Callable[P, T]) -> Callable[P, T]:
    """`command`, with a `NexusError` it raises printed by `fail` (exit status 2)."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return command(*args, **kwargs)
        except NexusError as exc:
            fail(exc)

    return wrapper


def setup_logging(level: str) -> None:
    """Log to stderr only: in stdio mode stdout is the protocol."""
    logging.basicConfig(
        level=level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    for noisy in ("httpx", "httpx2", "mcp", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLogger().level))
    # The SDK logs every non-JSON-RPC stdout line of an upstream with a traceback; the pool counts them instead.
    logging.getLogger("mcp.client.stdio").addFilter(lambda record: "Failed to parse JSONRPC" not in record.getMessage())


def run_async(main: Callable[[], Awaitable[T]]) -> T:
    """Run `main` under anyio; user errors print cleanly, SIGINT and SIGTERM shut down in order."""
    try:
        return anyio.run(_with_signals, main, backend_options=_backend_options())
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    except Exception as exc:
        user_error = _user_error(exc)
        if user_error is None:
            raise
        fail(user_error)


def _backend_options() -> dict[str, Any]:
    """uvloop when it is installed (it is, on Linux and macOS): the proxy path is event-loop bound."""
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return {}
    return {"use_uvloop": True}


def _user_error(exc: BaseException) -> NexusError | None:
    """The `NexusError` inside `exc`, however deeply task groups wrapped it."""
    if isinstance(exc, NexusError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            if (found := _user_error(inner)) is not None:
                return found
    return None


async def _with_signals(main: Callable[[], Awaitable[T]]) -> T:
    _startup_signals.in_loop()
    result: list[T] = []

    async def run_main(scope: anyio.CancelScope) -> None:
        result.append(await main())
        scope.cancel()

    async def watch_signals(scope: anyio.CancelScope) -> None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            early = _startup_signals.pending()  # one that came before this listened (_startup_signals.py)
            signum = early if early is not None else await anext(signals)
            logger.info("received %s; shutting down", signal.Signals(signum).name)
            scope.cancel()

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch_signals, tg.cancel_scope)
        tg.start_soon(run_main, tg.cancel_scope)
    if not result:
        raise typer.Exit(0)
    return result[0]


def fail(exc: NexusError) -> NoReturn:
    """Print a user error, one `error:` line a problem (never wrapped), and exit with status 2."""
    for line in str(exc).splitlines() or [type(exc).__name__]:
        err.print(f"[bold red]error:[/] {escape(line)}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def load(path: Path, mode: str | None = None) -> GatewayConfig:
    """The config file, checked as `serve` checks it (`preflight`)."""
    from nexus_gateway.cli.preflight import preflight

    config = load_config(path)
    preflight(config)
    if mode is not None:
        config.nexus.mode = mode  # type: ignore[assignment]
    return config
