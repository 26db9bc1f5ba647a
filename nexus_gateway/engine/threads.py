"""How many CPU threads llama.cpp gets for its next decode: all it may use while the cores are quiet, fewer
while other processes keep them busy.

llama.cpp's threads spin-wait for each other at every layer, so a thread the scheduler has parked stalls
the others: on 2 cores that another process keeps busy, 6 scoring passes of 22 tokens took 24 s with 2
threads and 5 s with 1 (Qwen2.5-Coder-0.5B), while on 2 quiet cores 2 threads read 88 tokens/s against 55
with 1. So the number is chosen again from what the machine does (`ThreadGovernor.threads`): the CPU time
the whole system spent since the last look, less this process's own, is the other processes' demand in
cores; the engine takes the cores left over (at least 1, at most its ceiling).

    cores 2, others used 0.1 core  -> 2 threads
    cores 2, others used 0.8 core  -> 1 thread

The readings are `psutil`'s (system-wide and this process's CPU times); they are taken at most every
`WINDOW_S`, so a decode of a few milliseconds costs no system call. A configured thread count
(`nexus.engine.threads`) is taken as it is: no governor.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import psutil

WINDOW_S = 0.5
"""The shortest span the demand of other processes is measured over."""


def _system_busy() -> float:
    """CPU seconds every core of the machine has spent busy (not idle or waiting for I/O) since boot."""
    times = psutil.cpu_times()
    return float(sum(times)) - float(times.idle) - float(getattr(times, "iowait", 0.0))


def _own_busy() -> float:
    """CPU seconds this process (all its threads) has used."""
    times = psutil.Process().cpu_times()
    return float(times.user + times.system)


class ThreadGovernor:
    """The thread count for the next decode, from the other processes' recent CPU demand."""

    def __init__(
        self,
        ceiling: int,
        cores: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        system: Callable[[], float] = _system_busy,
        own: Callable[[], float] = _own_busy,
    ) -> None:
        self.ceiling, self.cores = max(1, ceiling), max(1, cores)
        self._clock, self._system, self._own = clock, system, own
        self._last = (clock(), system(), own())
        self._threads = self.ceiling
        self.others = 0.0
        """The other processes' demand in the last window, in cores."""

    def threads(self) -> int:
        """The threads to decode with now: the cores the other processes left over in the last window
        (rounded, at least 1, at most the ceiling); the last answer while the window is still open."""
        now = self._clock()
        began, system_then, own_then = self._last
        if now - began < WINDOW_S:
            return self._threads
        system, own = self._system(), self._own()
        self._last = (now, system, own)
        self.others = max(0.0, ((system - system_then) - (own - own_then)) / (now - began))
        free = self.cores - self.others
        self._threads = max(1, min(self.ceiling, math.floor(free + 0.5)))
        return self._threads
