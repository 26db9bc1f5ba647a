"""The dashboard's pages, over a real `serve --transport http` process: auth, Host/Origin, and what they show."""

from __future__ import annotations

import html
import json
import re
from urllib.parse import urlsplit

import anyio
import httpx
import pytest

from tests.dashboard.conftest import BEARER, QUARANTINED, TOKEN, Activity, Served, mcp_client, signed_in, wait_until

PAGES = ["/ui/", "/ui/upstreams", "/ui/catalog", "/ui/quarantine", "/ui/calls", "/ui/runs", "/ui/clients"]


def _text(page: str) -> str:
    """The page's visible text, tags dropped, entities and whitespace undone."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def _row(page: str, attribute: str, name: str) -> str:
    match = re.search(rf'<tr {attribute}="{re.escape(name)}">(.*?)</tr>', page, re.S)
    assert match is not None, f"no row for {name}"
    return _text(match.group(1))


@pytest.mark.parametrize("path", PAGES)
def test_every_page_needs_the_token(served: Served, path: str):
    assert httpx.get(f"{served.url}{path}").status_code == 401
    assert httpx.get(f"{served.url}{path}", params={"token": "wrong"}).status_code == 401
    assert httpx.get(f"{served.url}{path}", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert httpx.get(f"{served.url}{path}", headers=BEARER).status_code == 200


def test_a_token_in_the_address_signs_a_browser_in_with_a_strict_httponly_cookie_and_leaves_the_address(served: Served):
    answer = httpx.get(f"{served.url}/ui/catalog", params={"token": TOKEN, "q": "time"})
    cookie = answer.headers["set-cookie"]
    assert answer.status_code == 200 and cookie.startswith("nexus_ui=")
    assert {"httponly", "samesite=strict", "path=/ui"} <= {part.strip().lower() for part in cookie.split(";")}
    assert TOKEN not in cookie  # a random session id, not the token
    assert answer.headers["refresh"] == "0; url=/ui/catalog?q=time" and TOKEN not in answer.text
    session = {"nexus_ui": answer.cookies["nexus_ui"]}
    assert httpx.get(f"{served.url}/ui/upstreams", cookies=session).status_code == 200
    assert httpx.get(f"{served.url}/ui/upstreams", cookies={"nexus_ui": "forged"}).status_code == 401
    # the cookie and the address token are the dashboard's only: the MCP endpoints still want the bearer header
    assert httpx.get(f"{served.url}/healthz", cookies=session).status_code == 401
    assert httpx.post(f"{served.url}/mcp", params={"token": TOKEN}, json={}).status_code == 401


def test_the_dashboard_refuses_a_foreign_host_or_origin(served: Served):
    port = urlsplit(served.url).port
    assert httpx.get(f"{served.url}/ui/", headers=BEARER | {"Host": f"evil.example:{port}"}).status_code == 421
    foreign = BEARER | {"Origin": "http://evil.example"}
    assert httpx.get(f"{served.url}/ui/", headers=foreign).status_code == 403
    own = BEARER | {"Origin": f"http://127.0.0.1:{port}"}
    assert httpx.get(f"{served.url}/ui/", headers=own).status_code == 200


def test_pages_forbid_framing_and_foreign_scripts(served: Served):
    policy = httpx.get(f"{served.url}/ui/", headers=BEARER).headers["content-security-policy"]
    assert "frame-ancestors 'none'" in policy and "script-src 'self'" in policy


def _healthy(served: Served, names: list[str], unhealthy: tuple[str, ...] = ()) -> str:
    """The upstreams page once `names` are healthy and `unhealthy` have failed (they start in the background)."""

    def health(text: str, name: str) -> str:
        return _row(text, "data-upstream", name).split()[2]

    def page() -> str | None:
        text = httpx.get(f"{served.url}/ui/upstreams", headers=BEARER).text
        settled = all(health(text, name) == "healthy" for name in names)
        return text if settled and all(health(text, name) == "unhealthy" for name in unhealthy) else None

    return wait_until(page)


def test_the_upstreams_page_shows_each_upstreams_health_tools_restarts_and_last_error(served: Served):
    page = _healthy(served, ["local", "mirror", "time"], unhealthy=("broken",))
    name, transport, health, tools, restarts = _row(page, "data-upstream", "time").split()
    assert (name, transport, health, tools, restarts) == ("time", "stdio", "healthy", "2", "0")
    assert _row(page, "data-upstream", "local").split()[:4] == ["local", "stdio", "healthy", "4"]
    broken = _row(page, "data-upstream", "broken")
    assert broken.split()[2] == "unhealthy" and "no-such-server" in broken  # the last error names the command


def test_the_event_stream_sends_every_upstreams_health(served: Served):
    _healthy(served, [], unhealthy=("broken",))
    with httpx.stream("GET", f"{served.url}/ui/events", headers=BEARER, timeout=10) as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        lines = stream.iter_lines()
        assert next(lines) == "event: health"
        rows = {row["name"]: row for row in json.loads(next(lines).removeprefix("data: "))}
    assert set(rows) == {"local", "mirror", "time", "broken"}
    assert rows["broken"]["health"] == "unhealthy" and rows["broken"]["last_error"]


@pytest.mark.parametrize("era", ["legacy", "auto"])
def test_catalog_search_shows_the_search_tools_ranking_with_its_scores_and_the_gates_decision(served: Served, era: str):
    async def search_tools() -> list[dict]:
        with anyio.fail_after(30):
            async with mcp_client(served.url, era=era) as client:
                result = await client.call_tool("search_tools", {"query": "current time in a timezone", "k": 5})
        assert result.structured_content is not None
        return result.structured_content["tools"]

    expected = anyio.run(search_tools)
    page = signed_in(served.url).get("/ui/catalog", params={"q": "current time in a timezone", "k": 5}).text
    shown = re.findall(r'<tr data-tool="([^"]+)">.*?<td class="score">([^<]+)</td>', page, re.S)
    assert shown == [(tool["name"], str(tool["score"])) for tool in expected]
    decided = expected[0]["automatic"]
    assert ("the gate decided" in page) is decided and ("the gate did not decide" in page) is not decided
    assert "Margin top-1" in page and "gate τ" in _text(page)


def test_the_catalog_lists_every_served_tool_and_marks_the_quarantined(served: Served):
    _healthy(served, ["local", "mirror", "time"])
    page = httpx.get(f"{served.url}/ui/catalog", headers=BEARER).text
    assert "time__get_current_time" in page and "local__pid" in page
    assert "quarantined" in _row(page, "data-tool", "mirror__echo")


def test_a_quarantined_tool_is_shown_with_its_diff_and_approved_by_its_button(served: Served):
    _healthy(served, ["local", "mirror"])
    browser = signed_in(served.url)
    page = browser.get("/ui/quarantine").text
    assert all(f'data-tool="{name}"' in page for name in QUARANTINED)
    assert "+  &#34;description&#34;: &#34;Return the text unchanged. &lt;IMPORTANT&gt;" in page  # escaped, diffed
    csrf = re.search(r'name="csrf" value="([^"]+)"', page)
    assert csrf is not None
    origin = {"Origin": served.url}
    section = page[page.index('data-tool="local__echo"') :]
    shown = re.search(r'name="hash" value="([0-9a-f]{16})"', section)
    assert shown is not None and f"Definition hash: <code>{shown.group(1)}</code>" in section
    form = {"name": "local__echo", "csrf": csrf.group(1), "hash": shown.group(1)}
    for stale in ("", "0" * 16):  # no hash, or another definition's: refused, the current diff shown again
        refused = browser.post("/ui/quarantine/approve", data=form | {"hash": stale}, headers=origin)
        assert refused.status_code == 409 and 'data-tool="local__echo"' in refused.text
    assert "changed since it was reviewed" in _text(refused.text) and shown.group(1) in _text(refused.text)
    assert browser.post("/ui/quarantine/approve", data=form).status_code == 403  # no Origin
    assert browser.post("/ui/quarantine/approve", data=form | {"csrf": "forged"}, headers=origin).status_code == 403
    other = httpx.post(f"{served.url}/ui/quarantine/approve", data=form, headers=BEARER | origin)  # another session
    assert other.status_code == 403
    approved = browser.post("/ui/quarantine/approve", data=form, headers=origin)
    assert approved.status_code == 303 and approved.headers["location"] == "/ui/quarantine?approved=local__echo"
    after = browser.get(approved.headers["location"]).text
    assert "Approved local__echo" in after and 'data-tool="local__echo"' not in after
    assert 'data-tool="mirror__echo"' in after  # only the one approved

    async def described() -> dict:
        async with mcp_client(served.url) as client:
            result = await client.call_tool("describe_tool", {"name": "local__echo"})
        assert result.structured_content is not None
        return result.structured_content

    # the running gateway serves the approved definition within a second
    tool = wait_until(lambda: None if "quarantine" in (found := anyio.run(described)) else found, 10)
    assert "<IMPORTANT>" in tool["description"]


def test_approving_a_tool_that_is_not_quarantined_says_so(served: Served):
    browser = signed_in(served.url)
    csrf = re.search(r'name="csrf" value="([^"]+)"', browser.get("/ui/quarantine").text)
    assert csrf is not None
    answer = browser.post(
        "/ui/quarantine/approve",
        data={"name": "time__get_current_time", "csrf": csrf.group(1), "hash": "0" * 16},
        headers={"Origin": served.url},
    )
    assert answer.status_code == 409 and "not quarantined: time__get_current_time" in _text(answer.text)


def test_recent_calls_show_each_tool_with_its_latency_and_error(served: Served, activity: Activity):
    page = httpx.get(f"{served.url}/ui/calls", headers=BEARER).text
    ok, failed = _row(page, "data-tool", "local__pid"), _row(page, "data-tool", "local__echo")
    assert re.fullmatch(r"\S+ local__pid ok \d+(\.\d+)? ms", ok), ok
    assert "invalid_arguments" in failed and "text" in failed, failed  # the validation error names what is missing
    assert "time__get_current_time" in page  # the call `run` made


def test_run_traces_show_route_margin_arguments_grammar_and_ttft(served: Served, activity: Activity):
    trace = activity.run["trace"]
    page = httpx.get(f"{served.url}/ui/runs", headers=BEARER).text
    text = _text(page)
    assert "what time is it in Tokyo?" in text and activity.run["status"] in text
    assert trace["routing"] in text and f"{trace['ttft_ms']} ms" in text
    assert str(trace["margin"]) in text and trace["tool"] in text
    assert html.escape(json.dumps(trace["arguments"])) in page or json.dumps(trace["arguments"]) in text
    assert '"grammar"' in html.unescape(page)  # the full trace


def test_the_clients_page_lists_connected_clients_of_both_eras_and_transports(served: Served):
    async def while_connected() -> str:
        with anyio.fail_after(30):
            async with (
                mcp_client(served.url) as legacy,
                mcp_client(served.url, transport="sse") as sse,
                mcp_client(served.url, era="auto") as modern,
                httpx.AsyncClient(headers=BEARER) as http,
            ):
                for client in (legacy, sse, modern):
                    await client.list_tools()
                return (await http.get(f"{served.url}/ui/clients")).text

    page = anyio.run(while_connected)
    rows = [_text(row).split() for row in re.findall(r"<tr>(.*?)</tr>", page, re.S)]
    seen = {(row[2], row[3], row[4]) for row in rows if row[0] == "mcp"}  # the SDK client names itself `mcp`
    assert {("streamable-http", "legacy"), ("sse", "legacy"), ("streamable-http", "modern")} <= {s[:2] for s in seen}
    assert all(row[-5:-3] == ["token-0", "-"] for row in rows if row[0] == "mcp")  # owner, and no profile
    # a closed connection's row goes as the connection winds down
    wait_until(lambda: "<td>sse</td>" not in httpx.get(f"{served.url}/ui/clients", headers=BEARER).text or None, 10)
