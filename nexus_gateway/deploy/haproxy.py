"""The HAProxy config that balances gateway replicas: one source for the shipped file, the tests and the bench.

`render` writes it for a list of replicas (`host:port`, or a DNS name with `server-template` on Kubernetes).
What it does, per path:

- `/mcp` (streamable HTTP): round-robin over the replicas. A handshake-era session is pinned to the replica that
  created it: HAProxy learns the `Mcp-Session-Id` from the response that opens the session (`stick store-response`)
  and routes every later request carrying that header there (`stick match`). A 2026-07-28 request carries no
  session id, so it goes to any replica. When a session's replica is down the request is dispatched to another
  one, which answers 404: the client opens a new session (the spec's rule for a lost session).
- `/sse`, `/messages/` (the SSE transport) and `/ui` (the dashboard): affinity by a cookie HAProxy inserts, since
  an SSE session id travels in the stream's body where HAProxy cannot learn it.
- health: `GET /healthz` on each replica; with bearer tokens configured, the check sends the token in the
  `NEXUS_HEALTH_TOKEN` environment variable of the HAProxy process (HAProxy reads it when it loads the file).

Only a request whose connection to a replica failed is retried elsewhere (HAProxy's default `retry-on
conn-failure`): a call a replica may have started is never sent twice.

    python -m nexus_gateway.deploy.haproxy gateway-1:8765 gateway-2:8765 > haproxy.cfg
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass

SHIPPED_SERVERS = ("gateway-1:8765", "gateway-2:8765", "gateway-3:8765")
"""The replicas of `deploy/haproxy/haproxy.cfg`: docker-compose.yml's cluster profile's service names."""
_STICKY_PATHS = r"^(/p/[^/]+)?/(sse|messages/|ui)"
"""Paths whose session HAProxy cannot read from a header (SSE, the dashboard), with or without a `/p/NAME` profile."""


@dataclass(frozen=True, kw_only=True)
class Balancer:
    """How the balancer listens and watches the replicas."""

    bind: str = "*:8765"
    check_interval_ms: int = 2000
    fall: int = 2
    """Failed checks before a replica is taken out."""
    rise: int = 2
    """Passed checks before it is put back."""
    session_expire: str = "30m"
    """How long a session id is remembered without traffic (keep it at or above the gateways' session_idle_timeout)."""
    stats_bind: str | None = None
    """Where HAProxy's own stats page (`/stats`) and Prometheus exporter (`/metrics`) listen, if anywhere."""
    dns_template: int | None = None
    """With a DNS name as the only server: how many `server-template` slots to resolve it into (Kubernetes)."""


def render(servers: Sequence[str], balancer: Balancer = Balancer()) -> str:
    """The haproxy.cfg text for `servers` (each `host:port`)."""
    if not servers:
        raise ValueError("name at least one replica (host:port)")
    for server in servers:
        if not re.fullmatch(r"[A-Za-z0-9_.\-\[\]:]+:\d+", server):
            raise ValueError(f"a replica is host:port, not {server!r}")
    if balancer.dns_template is not None and len(servers) != 1:
        raise ValueError("a server-template resolves one DNS name: name exactly one")
    check = f"check inter {balancer.check_interval_ms}ms fall {balancer.fall} rise {balancer.rise}"
    names = any(not _is_address(server.rpartition(":")[0]) for server in servers)
    # A name is resolved at run time too (a restarted container's new address), and one that does not resolve
    # yet leaves its server down instead of stopping HAProxy from starting.
    resolve = " resolvers dns init-addr last,libc,none" if names else ""
    resolvers = ["resolvers dns", "    parse-resolv-conf", "    hold valid 10s", ""] if names else []

    def lines(sticky_cookie: bool) -> list[str]:
        if balancer.dns_template is not None:  # cookies derived from each address (`cookie ... dynamic`)
            return [f"    server-template gw {balancer.dns_template} {servers[0]} {check}{resolve}"]
        return [
            f"    server gw{n} {server} {check}{resolve}" + (f" cookie gw{n}" if sticky_cookie else "")
            for n, server in enumerate(servers, start=1)
        ]

    cookie = "    cookie NEXUS_REPLICA insert indirect nocache httponly"
    if balancer.dns_template is not None:
        cookie = f"{cookie} dynamic\n    dynamic-cookie-key nexus-gateway"
    stats = []
    if balancer.stats_bind is not None:
        stats = [
            "",
            "frontend stats",
            f"    bind {balancer.stats_bind}",
            "    http-request use-service prometheus-exporter if { path /metrics }",
            "    stats enable",
            "    stats uri /stats",
        ]
    health = [
        "    option httpchk",
        ".if defined(NEXUS_HEALTH_TOKEN)",
        '    http-check send meth GET uri /healthz ver HTTP/1.1 hdr Host localhost hdr Authorization "Bearer '
        '${NEXUS_HEALTH_TOKEN}"',
        ".else",
        "    http-check send meth GET uri /healthz ver HTTP/1.1 hdr Host localhost",
        ".endif",
        "    http-check expect status 200",
    ]
    text = [
        "# nexus-gateway replicas behind HAProxy. Generated by nexus_gateway/deploy/haproxy.py: change it there.",
        "global",
        "    # maxconn follows the process's file-descriptor limit (ulimit -n)",
        "",
        "defaults",
        "    mode http",
        "    timeout connect 2s",
        "    timeout client 1h  # SSE streams and long tool calls stay open",
        "    timeout server 1h",
        "    timeout http-request 10s",
        "    timeout http-keep-alive 30s",
        "    timeout queue 5s",
        "    retries 2",
        "    option redispatch 1  # a request whose replica is down (its connection failed) goes to another one",
        "",
        *resolvers,
        "frontend mcp",
        f"    bind {balancer.bind}",
        f"    acl sticky_path path_reg {_STICKY_PATHS}",
        "    use_backend by_cookie if sticky_path",
        "    default_backend by_session",
        "",
        "# /mcp: handshake-era sessions stay where they were created; 2026-07-28 requests go to any replica.",
        "backend by_session",
        "    balance roundrobin",
        f"    stick-table type string len 64 size 1m expire {balancer.session_expire}",
        "    stick store-response res.hdr(mcp-session-id)",
        "    stick match req.hdr(mcp-session-id)",
        *health,
        *lines(sticky_cookie=False),
        "",
        "# /sse + /messages/ and /ui: the SSE session id is in the stream's body, so a cookie keeps the client on one.",
        "backend by_cookie",
        "    balance roundrobin",
        cookie,
        *health,
        *lines(sticky_cookie=True),
        *stats,
    ]
    return "\n".join(text) + "\n"


def _is_address(host: str) -> bool:
    return host.startswith("[") or re.fullmatch(r"[0-9.]+", host) is not None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Print an HAProxy config for nexus-gateway replicas.")
    parser.add_argument("servers", nargs="*", default=list(SHIPPED_SERVERS), help="replicas, host:port")
    parser.add_argument("--bind", default=Balancer.bind, help="where HAProxy listens (default %(default)s)")
    parser.add_argument(
        "--dns-template", type=int, default=None, help="resolve the one server name into N slots (Kubernetes)"
    )
    parser.add_argument("--stats-bind", default=None, help="where HAProxy's stats page and /metrics listen")
    options = parser.parse_args(argv)
    try:
        text = render(
            options.servers,
            Balancer(bind=options.bind, dns_template=options.dns_template, stats_bind=options.stats_bind),
        )
    except ValueError as exc:
        parser.error(str(exc))
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
