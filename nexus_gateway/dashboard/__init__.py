"""The web dashboard at `/ui` on the HTTP front: pages (pages.py) over a narrow view of the gateway
(source.py), browsers signed in by token once, then by cookie (auth.py)."""

from nexus_gateway.dashboard.auth import BrowserLogin
from nexus_gateway.dashboard.pages import dashboard_app
from nexus_gateway.dashboard.source import ClientRow, DashboardSource, GatewaySource

__all__ = ["BrowserLogin", "ClientRow", "DashboardSource", "GatewaySource", "dashboard_app"]
