"""A serving process's heap, settled once start-up is over: what start-up built is left out of garbage collection.

Start-up leaves about 100,000 objects that live as long as the process (the SDK and the pydantic models of two
protocol eras, the catalog; routed, the embedder). The cyclic collector walks all of them on each full
collection: 60-70 ms with the event loop stalled, about once per 10,000 proxied calls (measured with
`gc.callbacks` under `bench proxy`, stdio). `settle()` collects once, then freezes what is left (`gc.freeze`):
those objects are never walked again, and reference counting still frees them. Garbage made afterwards is
collected as before. Only a process that serves calls it (`serve`, the daemon): in a process that runs
gateways one after another (the tests), frozen objects in reference cycles would never be freed.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Awaitable, Callable

logger = logging.getLogger(__name__)


def settle() -> None:
    """Collect start-up's garbage, then leave the objects that remain out of every later collection."""
    started = time.perf_counter()
    gc.collect()
    gc.freeze()
    logger.debug(
        "heap settled: %d objects frozen in %.0f ms", gc.get_freeze_count(), (time.perf_counter() - started) * 1e3
    )


async def settle_after(ready: Callable[[], Awaitable[None]]) -> None:
    """`settle()` once `ready()` returns (`Gateway.wait_warm`)."""
    await ready()
    settle()
