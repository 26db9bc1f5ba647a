"""State files: written atomically, validated on load, never fatal.

The gateway keeps derived state (the description ledger, the routing index, calibration) under its
state directory. None of it is precious: all of it can be rebuilt from the upstreams. So:

- a file that cannot be written is a warning, and serving goes on (`save_json`, `save_bytes`);
- a file that is missing reads as `None`, and the caller rebuilds;
- a file that cannot be parsed or fails its validator is moved aside to `<name>.corrupt-<UTC time>`,
  logged once, and reads as `None` (`load_json`, `move_aside`).

State that is precious (the pin store: what a person approved) reads through `read_regular`, which tells a
missing file from an unusable one (a symbolic link, a directory, a file it may not read) and leaves the choice
of what to do to the caller, and is written with `save_bytes(..., durable=True)` (flushed to disk before the
rename, so a crash leaves the old file or the new one, never a torn one).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

logger = logging.getLogger(__name__)

T = TypeVar("T")


class StateInvalid(ValueError):
    """Raised by a validator passed to `load_json` when the data has the wrong shape."""


class StateUnusable(Exception):
    """A state file that is there but cannot be used as it is (`reason` says why, in words)."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path} {reason}")
        self.path = path
        self.reason = reason


_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


def read_regular(path: Path) -> bytes | None:
    """The bytes of the regular file at `path`, or `None` when nothing is there. Raises `StateUnusable` for
    anything else: a symbolic link (never followed), a directory, a FIFO or device, a file it may not read."""
    try:
        fd = os.open(path, os.O_RDONLY | _NO_FOLLOW)
    except (FileNotFoundError, NotADirectoryError):  # nothing there, or a file where its folder should be
        return None
    except OSError as exc:
        if os.path.islink(path):
            raise StateUnusable(path, "is a symbolic link, which is not followed") from None
        raise StateUnusable(path, f"cannot be read ({exc.strerror})") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
            raise StateUnusable(path, f"is {kind}")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise StateUnusable(path, f"cannot be read ({exc.strerror})") from None
    finally:
        os.close(fd)


def move_aside(path: Path, reason: str, *, then: str = "will rebuild it") -> Path | None:
    """Rename a bad state file to `<name>.corrupt-<UTC time>` so it is kept for inspection and rebuilt."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    try:
        os.replace(path, target)
    except OSError as exc:
        logger.warning("state file %s is unusable (%s) and could not be moved aside: %s", path, reason, exc)
        return None
    logger.warning("state file %s is unusable (%s); moved it to %s and %s", path, reason, target.name, then)
    return target


def load_json(path: Path, validate: Callable[[Any], T]) -> T | None:
    """The validated content of a JSON state file, or `None` when it is missing or bad (bad ones are moved
    aside). `validate` returns the value to use or raises `StateInvalid` / `ValueError` / `TypeError`."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        logger.warning("could not read state file %s: %s", path, exc)
        return None
    try:
        return validate(json.loads(raw.decode("utf-8")))
    except (ValueError, TypeError, KeyError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        move_aside(path, f"{type(exc).__name__}: {exc}"[:200])
        return None


def save_bytes(path: Path, data: bytes, *, durable: bool = False) -> bool:
    """Write `data` to `path` atomically (temporary file + rename; `durable`: flushed to disk first). On
    failure, log a warning and return False: state that cannot be written never stops the gateway."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o666)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        logger.warning("could not write state file %s (%s); going on without saving it", path, exc)
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        return False
    return True


def save_json(path: Path, value: Any) -> bool:
    """`save_bytes` of `value` as compact JSON. Not indented: `indent` turns off the json module's C encoder, and
    the pin store is written once per upstream listing (44 listings of the real catalog took 6.7 s of the event
    loop indented, 0.3 s compact)."""
    return save_bytes(path, json.dumps(value, sort_keys=True, separators=(",", ":")).encode("utf-8"))
