"""Issue 28, items 4 and 5: `connect` talks only to the user's own daemon, and a burst of connects waits.

A shim checks the daemon's folder and socket (the user's, writable by nobody else) and the listening process's
uid (SO_PEERCRED) before it sends a byte; the daemon refuses to serve from a folder that is not private to
the user. The socket listens with the system's longest queue, and a shim retries a full queue.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from nexus_gateway.config import load_config
from nexus_gateway.daemon import peer, shim
from nexus_gateway.daemon.locate import DaemonFiles
from nexus_gateway.daemon.service import Daemon
from nexus_gateway.errors import DaemonError
from nexus_gateway.gateway import Gateway
from nexus_gateway.server.unix import UnixFront, listen_unix

pytestmark = pytest.mark.anyio
NOBODY = 65534
AS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file or a process another user's uid")


@pytest.fixture
def state() -> Iterator[Path]:
    """A short state folder (a Unix socket path has at most 107 bytes) with a config beside it."""
    with tempfile.TemporaryDirectory(prefix="nxt", dir="/tmp") as folder:
        config = {"mcpServers": {}, "nexus": {"state_dir": f"{folder}/s"}}
        (Path(folder) / "gateway.json").write_text(json.dumps(config))
        yield Path(folder)


def _listener(files: DaemonFiles, *, folder_mode: int = 0o700, socket_mode: int = 0o600) -> socket.socket:
    """Someone listening on the daemon's socket path, accepting nothing (what reaches it stays queued)."""
    files.folder.mkdir(parents=True, exist_ok=True)
    files.folder.chmod(folder_mode)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(files.socket))
    files.socket.chmod(socket_mode)
    sock.listen(8)
    sock.setblocking(False)
    return sock


def _read(fd: int) -> bytes:
    """What the impostor reports, waited for 10 s at most."""
    readable, _, _ = select.select([fd], [], [], 10)
    assert readable, "the impostor said nothing within 10 s"
    return os.read(fd, 16)


def _nothing_reached(listener: socket.socket) -> bool:
    try:
        conn, _ = listener.accept()
    except BlockingIOError:
        return True
    conn.close()
    return False


async def _refused(files: DaemonFiles, config: Path, *words: str) -> None:
    with anyio.fail_after(10), pytest.raises(DaemonError) as refused:
        await shim.attach(files, config, wait=5)
    message = str(refused.value)
    assert message.startswith("refusing to connect to the daemon") and all(word in message for word in words)


@pytest.mark.parametrize(("folder_mode", "socket_mode", "wrong"), [(0o777, 0o600, "folder"), (0o700, 0o666, "socket")])
async def test_connect_refuses_a_daemon_folder_or_socket_others_can_write_and_sends_nothing(
    state: Path, folder_mode: int, socket_mode: int, wrong: str
):
    files = DaemonFiles.of(state / "s")
    listener = _listener(files, folder_mode=folder_mode, socket_mode=socket_mode)
    try:
        path = files.folder if wrong == "folder" else files.socket
        await _refused(files, state / "gateway.json", str(path), "writable by its group and others")
        assert _nothing_reached(listener)
        assert not files.running()  # and no daemon was started on it
    finally:
        listener.close()


async def test_connect_refuses_a_daemon_folder_that_is_a_symbolic_link(state: Path):
    elsewhere = DaemonFiles(state / "elsewhere")
    listener = _listener(elsewhere)
    (state / "s").mkdir()
    (state / "s" / "daemon").symlink_to(elsewhere.folder)
    try:
        await _refused(DaemonFiles.of(state / "s"), state / "gateway.json", "is a symbolic link")
        assert _nothing_reached(listener)
    finally:
        listener.close()


@AS_ROOT
@pytest.mark.parametrize("owned", ["folder", "socket"])
async def test_connect_refuses_a_daemon_folder_or_socket_another_user_owns(state: Path, owned: str):
    files = DaemonFiles.of(state / "s")
    listener = _listener(files)
    path = files.folder if owned == "folder" else files.socket
    os.chown(path, NOBODY, NOBODY)
    try:
        await _refused(files, state / "gateway.json", str(path), f"owned by uid {NOBODY}")
        assert _nothing_reached(listener)
    finally:
        listener.close()


@AS_ROOT
async def test_connect_refuses_a_listener_of_another_user_and_sends_it_nothing(state: Path):
    """The folder and socket look right; the process listening runs as another user (SO_PEERCRED)."""
    files = DaemonFiles.of(state / "s")
    files.folder.mkdir(parents=True, mode=0o700)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(files.socket))
    files.socket.chmod(0o600)
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the impostor: listens as `nobody` on the socket bound here, and reports the bytes it receives
        try:
            os.setuid(NOBODY)
            sock.listen(1)  # SO_PEERCRED tells a client the credentials of whoever called listen()
            os.write(ready_w, b"L")
            conn, _ = sock.accept()
            received = 0
            while chunk := conn.recv(65536):
                received += len(chunk)
            os.write(ready_w, str(received).encode())
        finally:
            os._exit(0)
    sock.close()
    os.close(ready_w)
    try:
        assert _read(ready_r) == b"L"
        await _refused(files, state / "gateway.json", f"runs as uid {NOBODY}", str(files.socket))
        assert _read(ready_r) == b"0"  # it was connected to, and sent nothing
    finally:
        os.close(ready_r)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)
        await anyio.to_thread.run_sync(os.waitpid, pid, 0)


@pytest.mark.parametrize("how", ["a symbolic link", "owned by another user"])
async def test_the_daemon_refuses_to_serve_from_a_folder_that_is_not_private(state: Path, how: str):
    files = DaemonFiles.of(state / "s")
    if how == "a symbolic link":
        (state / "elsewhere").mkdir(mode=0o700)
        (state / "s").mkdir()
        files.folder.symlink_to(state / "elsewhere")
    else:
        if os.geteuid() != 0:
            pytest.skip("only root can give a folder another user's uid")
        files.folder.mkdir(parents=True, mode=0o777)
        os.chown(files.folder, NOBODY, NOBODY)
    daemon = Daemon(load_config(state / "gateway.json"), files, port=0)
    with anyio.fail_after(10), pytest.raises(DaemonError, match=f"refusing to serve: {files.folder}"):
        await daemon.run()
    assert not files.socket.exists() and not files.token.exists()


# -- a burst of connects ----------------------------------------------------------------------------


def test_the_socket_listens_with_the_systems_longest_queue(state: Path):
    """Hundreds of connects before the daemon accepts one all wait in the queue (with 64, the 66th failed)."""
    path = state / "d.sock"
    listener = listen_unix(path)
    clients = []
    try:
        for _ in range(300):
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            client.setblocking(False)
            clients.append(client)
            client.connect(str(path))  # raises BlockingIOError (EAGAIN) once the queue is full
    finally:
        for client in clients:
            client.close()
        listener.close()


async def test_a_full_queue_is_waited_out_not_a_failure(state: Path, monkeypatch: pytest.MonkeyPatch):
    files = DaemonFiles.of(state / "s")
    listener = _listener(files)
    listener.listen(0)  # the shortest queue: filled below, so the shim's connect meets EAGAIN
    queued = []
    try:
        while True:
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            client.setblocking(False)
            try:
                client.connect(str(files.socket))
            except BlockingIOError:
                client.close()
                break
            queued.append(client)
        full = anyio.Event()
        connect = peer.connect

        def watched(files: DaemonFiles) -> socket.socket | None:
            sock = connect(files)
            if sock is None:
                full.set()
            return sock

        monkeypatch.setattr(peer, "connect", watched)
        monkeypatch.setattr(DaemonFiles, "running", lambda self: True)  # a daemon runs: the test's listener
        async with anyio.create_task_group() as tg:
            attached: list[Any] = []

            async def attach() -> None:
                attached.append(await shim.attach(files, state / "gateway.json", wait=20))

            tg.start_soon(attach)
            with anyio.fail_after(20):
                await full.wait()  # the shim met a full queue and did not give up
                while not attached:
                    try:
                        conn, _ = listener.accept()  # the daemon catches up
                        conn.close()
                    except BlockingIOError:
                        await anyio.sleep(0.01)
        attached[0][1].close()
    finally:
        for client in queued:
            client.close()
        listener.close()


async def test_three_hundred_hosts_connecting_at_once_are_all_served(state: Path):
    files = DaemonFiles.of(state / "s")
    files.make_folder()
    config = load_config(state / "gateway.json")
    numbers: list[int] = []

    async def one_host() -> None:
        reader, writer = await shim.attach(files, state / "gateway.json", wait=30)
        try:
            numbers.append(await shim.hello(reader, writer, None))
        finally:
            writer.close()

    async with Gateway(config) as gateway, anyio.create_task_group() as tg:
        front = UnixFront(gateway, files.socket)
        await tg.start(front.serve)
        with anyio.fail_after(60):
            async with anyio.create_task_group() as hosts:
                for _ in range(300):
                    hosts.start_soon(one_host)
        tg.cancel_scope.cancel()
    assert len(numbers) == 300 and len(set(numbers)) == 300
