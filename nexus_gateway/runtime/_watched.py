"""A client transport wrapper that tells when the connection has ended.

The SDK's dispatcher stops quietly when its read stream ends (an upstream process died, a socket
closed). The supervisor needs to know, so it can reconnect: `WatchedTransport` yields the inner
transport's streams with the read side wrapped, and sets `closed` on end of stream. Exceptions the
transport passes up as values (a line on stdout that is not JSON-RPC) are counted through
`on_garbage` and still delivered.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Any, Self

import anyio


class _WatchedReadStream:
    def __init__(self, inner: Any, closed: anyio.Event, on_garbage: Callable[[Exception], None]) -> None:
        self._inner = inner
        self._closed = closed
        self._on_garbage = on_garbage

    async def receive(self) -> Any:
        try:
            item = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._closed.set()
            raise
        if isinstance(item, Exception):
            self._on_garbage(item)
        return item

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self._closed.set()
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


class WatchedTransport:
    def __init__(
        self, inner: AbstractAsyncContextManager[Any], *, on_garbage: Callable[[Exception], None] | None = None
    ) -> None:
        self._inner = inner
        self._on_garbage = on_garbage or (lambda exc: None)
        self.closed = anyio.Event()

    async def __aenter__(self) -> tuple[Any, Any]:
        read_stream, write_stream = await self._inner.__aenter__()
        return _WatchedReadStream(read_stream, self.closed, self._on_garbage), write_stream

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        self.closed.set()
        return await self._inner.__aexit__(exc_type, exc, tb)
