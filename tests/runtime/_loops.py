"""Both serving loops for tests of the hot path's timers: import `anyio_backend` into a test module."""

import sys

import pytest


@pytest.fixture(params=[("asyncio", {}), ("asyncio", {"use_uvloop": True})], ids=["asyncio", "uvloop"])
def anyio_backend(request: pytest.FixtureRequest) -> tuple[str, dict[str, bool]]:
    """The serving loop (uvloop, where the gateway runs: `cli/_run.py`) and asyncio's own."""
    if request.param[1] and sys.platform == "win32":
        pytest.skip("uvloop does not run on Windows")
    return request.param
