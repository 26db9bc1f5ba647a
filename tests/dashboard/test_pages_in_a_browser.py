"""The dashboard in a real browser: headless Chromium (Debian's `chromium`) driven by Playwright.

Signs in with the token once, reads every upstream's name and health, watches a restart arrive over the
event stream, searches, approves a quarantined tool, and saves a screenshot of each page to
docs/screenshots/ (the README shows them). Without Chromium this test fails: CI installs it (.ci/run).
"""

from __future__ import annotations

import os
import re
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest

from tests.conftest import ROOT, text_of
from tests.dashboard.conftest import TOKEN, Activity, Served, mcp_client, wait_until

CHROMIUM = Path("/usr/bin/chromium")
SHOTS = ROOT / "docs" / "screenshots"
TIMEOUT_MS = 30_000
T = TypeVar("T")


def _off_loop(func: Callable[[], T]) -> T:
    """`func()` in a thread of its own: Playwright's sync API keeps an event loop running in this one."""
    results: list[T] = []
    thread = threading.Thread(target=lambda: results.append(func()), daemon=True)
    thread.start()
    thread.join(60)
    assert results, "the call in a thread did not finish"
    return results[0]


def _call(url: str, name: str, arguments: dict[str, Any]) -> Any:
    async def call() -> Any:
        with anyio.fail_after(30):
            async with mcp_client(url) as client:
                return await client.call_tool("call_tool", {"name": name, "arguments": arguments})

    return _off_loop(lambda: anyio.run(call))


def _describe(url: str, name: str) -> dict[str, Any]:
    async def describe() -> dict[str, Any]:
        with anyio.fail_after(30):
            async with mcp_client(url) as client:
                result = await client.call_tool("describe_tool", {"name": name})
        assert result.structured_content is not None, text_of(result)
        return result.structured_content

    return _off_loop(lambda: anyio.run(describe))


def _released(url: str, name: str) -> dict[str, Any] | None:
    """The tool as hosts see it, once it is no longer quarantined."""
    described = _describe(url, name)
    return None if "quarantine" in described else described


@contextmanager
def connected_client(url: str) -> Iterator[None]:
    """A legacy-era MCP client connected (in a thread of its own) while the block runs."""
    ready, done = threading.Event(), threading.Event()

    async def hold() -> None:
        async with mcp_client(url) as client:
            await client.list_tools()
            ready.set()
            await anyio.to_thread.run_sync(done.wait)

    thread = threading.Thread(target=anyio.run, args=(hold,), daemon=True)
    thread.start()
    try:
        assert ready.wait(30), "the MCP client did not connect"
        yield
    finally:
        done.set()
        thread.join(30)


def _browser() -> Any:
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: the browser test needs Debian's chromium (apt-get install -y chromium)",
            pytrace=False,
        )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("playwright is missing: pip install -e '.[dev]' installs it", pytrace=False)
    return sync_playwright()


def test_a_browser_signs_in_sees_each_upstreams_health_live_searches_and_approves_a_tool(
    served: Served, activity: Activity
):
    from playwright.sync_api import expect

    SHOTS.mkdir(parents=True, exist_ok=True)
    with _browser() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM))
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 760})
            page.set_default_timeout(TIMEOUT_MS)
            expect.set_options(timeout=TIMEOUT_MS)

            # sign in once with the token; the address no longer holds it
            page.goto(f"{served.url}/ui?token={TOKEN}")
            page.wait_for_url(re.compile(r"/ui/$"))
            assert TOKEN not in page.url
            expect(page.locator("#live")).to_have_text("live")

            # every upstream's name and health
            rows = page.locator("#upstreams tbody tr")
            expect(rows).to_have_count(4)
            for name, health in (
                ("broken", "unhealthy"),
                ("local", "healthy"),
                ("mirror", "healthy"),
                ("time", "healthy"),
            ):
                row = page.locator(f'tr[data-upstream="{name}"]')
                expect(row.locator(".name")).to_have_text(name)
                expect(row.locator('[data-field="health"]')).to_have_text(health)
            expect(page.locator('tr[data-upstream="broken"] [data-field="last_error"]')).to_contain_text(
                "no-such-server"
            )

            # a crash and restart of `local` arrives over the event stream, without a reload
            local = page.locator('tr[data-upstream="local"]')
            restarts = int(local.locator('[data-field="restarts"]').inner_text())
            os.kill(int(text_of(_call(served.url, "local__pid", {}))), signal.SIGKILL)
            expect(local.locator('[data-field="restarts"]')).to_have_text(str(restarts + 1))
            expect(local.locator('[data-field="health"]')).to_have_text("healthy")
            page.screenshot(path=SHOTS / "upstreams.png", full_page=True)

            # search: the search_tools ranking, with scores and the gate's decision
            page.get_by_role("link", name="Catalog").click()
            page.get_by_role("searchbox").fill("current time in a timezone")
            page.get_by_role("button", name="Search").click()
            first = page.locator("#results tbody tr").first
            expect(first.locator(".name")).to_have_text(re.compile(r"^time__"))
            expect(first.locator(".score")).to_have_text(re.compile(r"^-?\d+(\.\d+)?$"))
            expect(page.locator("#gate")).to_contain_text(re.compile(r"the gate (did not )?decide"))
            page.screenshot(path=SHOTS / "catalog.png", full_page=True)

            # approve a quarantined tool, after reading its diff
            page.get_by_role("link", name="Quarantine").click()
            section = page.locator('section[data-tool="mirror__echo"]')
            expect(section.locator(".diff")).to_contain_text("<IMPORTANT>")
            page.screenshot(path=SHOTS / "quarantine.png", full_page=True)
            section.get_by_role("button", name="Approve mirror__echo").click()
            expect(page.get_by_role("status")).to_contain_text("Approved mirror__echo")
            expect(page.locator('section[data-tool="mirror__echo"]')).to_have_count(0)
            described = _off_loop(lambda: wait_until(lambda: _released(served.url, "mirror__echo"), 10))
            assert "<IMPORTANT>" in described["description"]  # hosts now see the definition approved

            # recent calls, run traces, clients
            page.get_by_role("link", name="Recent calls").click()
            expect(page.locator('#calls tr[data-tool="local__pid"]').first).to_contain_text("ok")
            page.screenshot(path=SHOTS / "calls.png", full_page=True)
            page.get_by_role("link", name="Run traces").click()
            expect(page.locator("#runs")).to_contain_text("what time is it in Tokyo?")
            expect(page.locator("#runs")).to_contain_text(activity.run["trace"]["tool"])
            page.screenshot(path=SHOTS / "runs.png", full_page=True)
            with connected_client(served.url):
                page.get_by_role("link", name="Clients").click()
                expect(page.locator("#clients")).to_contain_text("streamable-http")
                page.screenshot(path=SHOTS / "clients.png", full_page=True)
        finally:
            browser.close()
