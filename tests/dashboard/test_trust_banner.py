"""Issue 28, item 2: the dashboard says, on every page, when the pin store was damaged and trust is degraded."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from nexus_gateway.catalog.pins import Trust
from nexus_gateway.dashboard.pages import Dashboard


class _Source:
    """Just enough of `DashboardSource` for the upstreams page."""

    mode = "passthrough"

    def __init__(self, trust: Trust) -> None:
        self._trust = trust

    def trust(self) -> Trust:
        return self._trust

    def upstreams(self) -> list[Any]:
        return []


class _Login:
    def csrf_token(self, scope: Any) -> str:
        return "csrf"


def _page(trust: Trust) -> str:
    dashboard = Dashboard(_Source(trust), _Login())  # type: ignore[arg-type]
    request = Request({"type": "http", "method": "GET", "path": "/ui/upstreams", "headers": [], "query_string": b""})
    return bytes(dashboard.render(request, "upstreams", upstreams=[]).body).decode()


def test_every_page_says_when_trust_is_degraded_and_why():
    why = "pins.json is empty; restored the last good copy (pins.json.bak, generation 7)"
    page = _page(Trust("degraded", why, "2026-12-03T10:00:00Z"))
    assert 'id="trust"' in page and "Trust degraded since 2026-12-03T10:00:00Z" in page and why in page
    assert 'id="trust"' not in _page(Trust("ok"))
