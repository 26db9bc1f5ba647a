"""Signing in to a remote upstream: a person opens the authorization URL, and the redirect comes back.

    sign_in(...)        the whole sign-in: listen on the loopback redirect URI, connect with a fresh `UpstreamAuth`
                        (the server's 401 starts the SDK's flow), show the URL, take the redirect, exchange the code,
                        list the tools to prove it; the tokens go to the store. `auth login` runs it.
    Redirects           where redirects arrive: the loopback listener (`http://127.0.0.1:PORT/callback`, what the
                        browser follows) and, headless, the redirect URL a person pastes (`deliver`).
    GatewaySignIn       a sign-in the running gateway starts for a link it hands out (the dashboard's button, a URL
                        elicitation): `begin()` returns the URL; the rest runs in the background.

The loopback listener answers only `GET /callback` on 127.0.0.1, once; the page it shows carries no secret.
"""

from __future__ import annotations

import contextlib
import html
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import anyio
import anyio.abc
import mcp_types as types
from mcp import Client
from mcp.client.auth import OAuthFlowError
from mcp.shared.auth import AuthorizationCodeResult
from mcp.shared.exceptions import MCPError

from nexus_gateway.config import RemoteServer
from nexus_gateway.errors import NexusError
from nexus_gateway.upstreams.callbacks import HostLink
from nexus_gateway.upstreams.oauth._storage import settings_of
from nexus_gateway.upstreams.oauth.provider import UpstreamAuth
from nexus_gateway.upstreams.oauth.store import SignInStore
from nexus_gateway.upstreams.remote import open_remote

logger = logging.getLogger(__name__)

SIGN_IN_TIMEOUT = 300.0
"""How long a sign-in waits for the person (the browser, the pasted URL) by default."""
HOST_SIGN_IN_WAIT = 300.0
"""How long a call whose host accepted a sign-in elicitation waits for the upstream to connect."""
_REQUEST_LIMIT = 16 * 1024
_READ_TIMEOUT = 10.0


class SignInFailed(NexusError):
    """A sign-in did not complete: the authorization server refused, the person did not finish, the port was taken."""


@dataclass(frozen=True)
class SignedIn:
    """The outcome of a sign-in: whether the server asked for one at all, and what it gave."""

    asked: bool
    tools: int
    scope: str | None = None
    expires_in: int | None = None
    refreshable: bool = False


class Redirects:
    """The redirects a sign-in waits for, from the loopback listener or pasted by a person."""

    def __init__(self) -> None:
        self._send, self._receive = anyio.create_memory_object_stream[dict[str, str]](8)

    def deliver(self, url: str) -> bool:
        """Take a redirect URL a person pasted; False when it holds neither a code nor an error."""
        params = dict(parse_qsl(urlsplit(url.strip()).query))
        if "code" not in params and "error" not in params:
            return False
        try:
            self._send.send_nowait(params)
        except anyio.WouldBlock:
            return False
        return True

    async def next(self) -> AuthorizationCodeResult:
        params = await self._receive.receive()
        if "error" in params:
            detail = params.get("error_description")
            raise SignInFailed(
                f"the authorization server refused the sign-in: {params['error']}" + (f" ({detail})" if detail else "")
            )
        return AuthorizationCodeResult(code=params["code"], state=params.get("state"), iss=params.get("iss"))

    async def listen(self, port: int, name: str, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        """Serve `GET /callback` on 127.0.0.1:`port` until cancelled (`task_status` once listening)."""
        try:
            listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=port)
        except OSError as exc:
            raise SignInFailed(
                f"cannot listen for the sign-in's redirect on 127.0.0.1:{port} ({exc.strerror}); is another sign-in "
                "running? Set another port with the server's oauth.redirect_port."
            ) from None
        async with listener:
            task_status.started()
            await listener.serve(lambda stream: self._answer(stream, name))

    async def _answer(self, stream: anyio.abc.SocketStream, name: str) -> None:
        async with stream:
            head = b""
            with anyio.move_on_after(_READ_TIMEOUT):
                while b"\r\n\r\n" not in head and len(head) < _REQUEST_LIMIT:
                    try:
                        head += await stream.receive(4096)
                    except (anyio.EndOfStream, anyio.BrokenResourceError):
                        break
            parts = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
            target = urlsplit(parts[1]) if len(parts) == 3 and parts[0] == "GET" else None
            if target is None or target.path != "/callback":
                await _reply(stream, 404, "Not found", "This address only takes a sign-in's redirect.")
                return
            params = dict(parse_qsl(target.query))
            if "code" not in params and "error" not in params:
                await _reply(stream, 400, "Not a sign-in", "The redirect carries neither a code nor an error.")
                return
            with contextlib.suppress(anyio.WouldBlock):
                self._send.send_nowait(params)
            if "error" in params:
                await _reply(stream, 200, "Sign-in refused", f"The authorization server refused: {params['error']}.")
            else:
                await _reply(
                    stream, 200, "Signed in", f"nexus-gateway received the sign-in for {name}. You can close this tab."
                )


async def _reply(stream: anyio.abc.SocketStream, status: int, title: str, text: str) -> None:
    page = (
        f"<!doctype html><meta charset=utf-8><title>{html.escape(title)}</title>"
        f"<h1>{html.escape(title)}</h1><p>{html.escape(text)}</p>"
    ).encode()
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}[status]
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {len(page)}\r\n"
        "Cache-Control: no-store\r\nReferrer-Policy: no-referrer\r\nConnection: close\r\n\r\n"
    ).encode()
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
        await stream.send(head + page)


class _Person:
    """The `Interaction` of a sign-in: the URL goes to `show`, the redirect comes from `redirects`."""

    def __init__(self, show: Callable[[str], Awaitable[None]], redirects: Redirects) -> None:
        self._show = show
        self._redirects = redirects
        self.asked = False

    async def show(self, url: str) -> None:
        self.asked = True
        await self._show(url)

    async def redirected(self) -> AuthorizationCodeResult:
        return await self._redirects.next()


async def sign_in(
    name: str,
    spec: RemoteServer,
    store: SignInStore,
    *,
    show: Callable[[str], Awaitable[None]],
    redirects: Redirects | None = None,
    lock_dir: Path | None,
    sign_in_command: str,
    timeout: float = SIGN_IN_TIMEOUT,
) -> SignedIn:
    """Sign in to upstream `name` afresh: `show(url)` hands the authorization URL to the person; the redirect comes
    back to the loopback listener (or through `redirects.deliver`). Raises `SignInFailed`."""
    redirects = redirects or Redirects()
    person = _Person(show, redirects)
    auth = UpstreamAuth(
        name, spec, store, lock_dir=lock_dir, sign_in_command=sign_in_command, interaction=person, fresh=True
    )
    try:
        with anyio.fail_after(timeout):
            async with anyio.create_task_group() as tg:
                await tg.start(redirects.listen, settings_of(spec).redirect_port, name)
                async with Client(open_remote(spec, timeout=timeout, auth=auth), mode="legacy", cache=None) as client:
                    tools = len((await client.list_tools()).tools)
                tg.cancel_scope.cancel()
    except TimeoutError:
        raise SignInFailed(f"the sign-in to {name} did not complete within {timeout:g}s") from None
    except Exception as exc:  # boundary: the SDK's flow, the transport, the server
        raise SignInFailed(f"the sign-in to {name} failed: {_reason(exc)}") from None
    token = auth.context.current_tokens
    return SignedIn(
        asked=person.asked,
        tools=tools,
        scope=token.scope if token else None,
        expires_in=token.expires_in if token else None,
        refreshable=bool(token and token.refresh_token),
    )


def _reason(exc: BaseException) -> str:
    """What went wrong, in words, from an exception that may be a group (never a token: the SDK's messages and
    ours carry none)."""
    if isinstance(exc, BaseExceptionGroup):
        leaves = [_reason(inner) for inner in exc.exceptions]
        return "; ".join(dict.fromkeys(leaves))
    if isinstance(exc, SignInFailed | OAuthFlowError | MCPError):
        return str(exc)
    text = str(exc) or type(exc).__name__
    return text if len(text) < 300 else text[:300] + "..."


class GatewaySignIn:
    """A sign-in the running gateway runs for a link it hands out. One at a time per upstream; `begin` returns the
    link of the one under way, or starts one (in `spawn`'s task group) and returns its link once known."""

    def __init__(
        self,
        name: str,
        spec: RemoteServer,
        store: SignInStore,
        *,
        lock_dir: Path | None,
        sign_in_command: str,
        signed_in: Callable[[], None],
    ) -> None:
        self._name = name
        self._spec = spec
        self._store = store
        self._lock_dir = lock_dir
        self._command = sign_in_command
        self._signed_in = signed_in
        self._url: str | None = None
        self._running = False
        self._shown = anyio.Event()
        self._scope = anyio.CancelScope()
        self.last_failure: str | None = None

    @property
    def pending(self) -> bool:
        return self._running

    async def begin(self, spawn: Callable[..., object], *, timeout: float = 30.0) -> str:
        """The authorization URL of a sign-in under way (started now if none is). Raises `SignInFailed`."""
        if not self._running:
            self._running = True
            self._url = None
            self._shown = anyio.Event()
            self._scope = anyio.CancelScope()
            self.last_failure = None
            spawn(self._run)
        with anyio.move_on_after(timeout):
            await self._shown.wait()
        if self._url is None:
            raise SignInFailed(
                f"could not start a sign-in to {self._name}: {self.last_failure or 'the server did not answer in time'}"
            )
        return self._url

    async def ask(self, link: HostLink, spawn: Callable[..., object], connected: Callable[[], bool]) -> bool:
        """Ask the host of a call to sign in: a URL elicitation with this sign-in's link (when the host takes URL
        elicitations: else its answer is an error and this returns False at once). True once `connected()`."""
        try:
            url = await self.begin(spawn)
        except SignInFailed as exc:
            logger.warning("upstream %s: %s", self._name, exc)
            return False
        elicitation = uuid.uuid4().hex
        params = types.ElicitRequestURLParams(
            mode="url",
            message=f"{self._name} asks you to sign in. nexus-gateway goes on with the call once you have.",
            url=url,
            elicitation_id=elicitation,
        )
        answer = await link.request(types.ElicitRequest(params=params))
        if not isinstance(answer, types.ElicitResult) or answer.action != "accept":
            self._scope.cancel()  # the host cannot or will not: free the redirect port for `auth login`
            return False
        with anyio.move_on_after(HOST_SIGN_IN_WAIT):
            while not connected():  # until the upstream has connected, or the sign-in failed
                if not self._running and self.last_failure is not None:
                    break
                await anyio.sleep(0.1)
        if not connected():
            return False
        with contextlib.suppress(Exception):  # a host that has gone must not fail the call
            await link.elicitation_complete(types.ElicitCompleteNotificationParams(elicitation_id=elicitation))
        return True

    async def _run(self) -> None:
        async def show(url: str) -> None:
            self._url = url
            self._shown.set()

        try:
            with self._scope:
                outcome = await sign_in(
                    self._name,
                    self._spec,
                    self._store,
                    show=show,
                    lock_dir=self._lock_dir,
                    sign_in_command=self._command,
                )
                if outcome.asked:
                    logger.info("upstream %s: signed in (%d tools)", self._name, outcome.tools)
                    self._signed_in()
        except SignInFailed as exc:
            self.last_failure = str(exc)
            logger.warning("upstream %s: %s", self._name, exc)
        finally:
            self._running = False
            self._shown.set()
