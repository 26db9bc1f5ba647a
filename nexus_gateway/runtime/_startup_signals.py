"""SIGINT and SIGTERM from the command's first line on: none is lost before the event loop listens for them.

`serve` starts upstreams early (`_prelaunch.py`), imports the gateway for about a second, then runs the event
loop, and only then does `run_async` listen for signals (`anyio.open_signal_receiver`). Until it does, a
signal meets whatever the process inherited: SIGTERM ended it at once, leaving the upstreams it had started
to their own devices, and SIGINT, when the launcher had it ignored (a host, a script or a test runner that
runs the gateway in the background: shells ignore SIGINT for those), was lost: the gateway served on, and only
a second SIGINT, once the loop listened, ended it. `catch()`, the command's first line, takes both:

- before the event loop runs, start-up is interrupted at once (`KeyboardInterrupt`: `serve` ends the
  upstreams it started on its way out), except within `held()`, which defers it to its end (an upstream being
  started must be recorded before anything may end it);
- once the loop runs (`in_loop()`, the loop's first step), the signal is only noted: `run_async` reads it
  (`pending()`) as soon as it listens, and shuts down as for a signal it received itself.

A signal noted before `catch()` runs (while the interpreter starts) is beyond any program's reach.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class _State:
    caught = False
    interrupting = False
    """Whether a signal interrupts what runs (before the loop, outside `held()`)."""
    received: int | None = None
    deferred = False
    """A signal came within `held()`."""


_state = _State()


def _handle(signum: int, frame: FrameType | None) -> None:
    if _state.received is None:
        _state.received = signum
    if _state.interrupting:
        raise KeyboardInterrupt
    _state.deferred = True


def catch() -> None:
    """Take SIGINT and SIGTERM from now on (the main thread only: a CLI's first line)."""
    for signum in SIGNALS:
        signal.signal(signum, _handle)
    _state.caught = _state.interrupting = True


@contextmanager
def held() -> Iterator[None]:
    """A signal within this block interrupts at its end, not in its midst."""
    interrupting, _state.interrupting, _state.deferred = _state.interrupting, False, False
    try:
        yield
    finally:
        _state.interrupting = interrupting
        if interrupting and _state.deferred:
            raise KeyboardInterrupt


def in_loop() -> None:
    """The event loop runs: from now on a signal is noted, for `pending()`, never raised."""
    _state.interrupting = False


def pending() -> int | None:
    """The signal that came before the event loop listened, if `catch()` took one."""
    return _state.received if _state.caught else None
