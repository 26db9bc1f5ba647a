"""A stdio proxy that does nothing but copy lines: the floor `bench proxy --peer floor` measures.

    host stdin --line--> upstream stdin        upstream stdout --line--> host stdout

No parsing, no validation, no bookkeeping: what any asyncio proxy in Python pays on this machine for two
pipe reads, two pipe writes and the wake-ups between them (on uvloop when it is installed, as the gateway
runs). A proxy's added latency is only meaningful next to it: on a slow or loaded machine the floor itself
can exceed a target set on a faster one. Run as a script (`python byte_relay.py UPSTREAM...`); it imports
nothing of nexus-gateway.
"""

from __future__ import annotations

import asyncio
import sys

LIMIT = 1 << 26
"""The longest line relayed (64 MiB)."""


async def relay(upstream: list[str]) -> None:
    process = await asyncio.create_subprocess_exec(
        *upstream, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=LIMIT
    )
    assert process.stdin is not None and process.stdout is not None
    loop = asyncio.get_running_loop()
    host_in = asyncio.StreamReader(limit=LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(host_in), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, sys.stdout)
    host_out = asyncio.StreamWriter(transport, protocol, None, loop)
    upstream_in, upstream_out = process.stdin, process.stdout

    async def up() -> None:
        while line := await host_in.readline():
            upstream_in.write(line)
        upstream_in.close()

    async def down() -> None:
        while line := await upstream_out.readline():
            host_out.write(line)

    await asyncio.gather(up(), down())
    await process.wait()


if __name__ == "__main__":
    try:
        import uvloop
    except ImportError:
        asyncio.run(relay(sys.argv[1:]))
    else:
        uvloop.run(relay(sys.argv[1:]))
