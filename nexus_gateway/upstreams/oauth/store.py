"""Where the sign-ins to remote upstreams are kept: the OS keyring when there is a usable one, else encrypted files.

One record per upstream, keyed by its name *and* URL (a record is never sent to a URL it was not made for):
the tokens, when they expire, the OAuth client the gateway is registered as, and why a sign-in is needed when
it is. `SignInStore` is the Protocol; `open_store(state_dir)` picks the backend:

- `KeyringStore`: the OS keyring (`keyring`: macOS Keychain, Windows Credential Locker, the Secret Service),
  used when `keyring` reports a backend that stores something (not its `fail` or `null` backends);
- `EncryptedFileStore`: one file per upstream under `<state dir>/oauth/`, mode 0600, encrypted with Fernet
  (AES-128-CBC + HMAC-SHA256). The key is `NEXUS_TOKEN_KEY` when set (a Fernet key:
  `python -c "from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())"`), else a key file
  of its own, `<state dir>/oauth/key` (mode 0600), made on first use.

`NEXUS_TOKEN_STORE=file` or `keyring` chooses the backend instead of the detection. A record that cannot be read
back (damaged, or encrypted with another key) reads as no sign-in, with a warning that names the file, never its
content: the user signs in again (fail closed).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import logging
import os
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from nexus_gateway.errors import ConfigError, NexusError

logger = logging.getLogger(__name__)

KEYRING_SERVICE = "nexus-gateway"
_KEY_VARIABLE = "NEXUS_TOKEN_KEY"
_BACKEND_VARIABLE = "NEXUS_TOKEN_STORE"


@dataclass
class SignInRecord:
    """What is kept for one upstream. `tokens` and `client` are the SDK's `OAuthToken` and
    `OAuthClientInformationFull` in JSON form; `expires_at` is when the access token expires (Unix time)."""

    url: str
    tokens: dict[str, Any] | None = None
    expires_at: float | None = None
    client: dict[str, Any] | None = None
    needs: str | None = None
    """Why a sign-in is needed now (the server asked for one, a refresh was refused), or None."""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> bytes:
        data = {
            "url": self.url,
            "tokens": self.tokens,
            "expires_at": self.expires_at,
            "client": self.client,
            "needs": self.needs,
            **self.extra,
        }
        return json.dumps(data, separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> SignInRecord:
        data = json.loads(raw)
        if not isinstance(data, dict) or not isinstance(data.get("url"), str):
            raise ValueError("not a sign-in record")
        known = {"url", "tokens", "expires_at", "client", "needs"}
        return cls(
            url=data["url"],
            tokens=data.get("tokens") if isinstance(data.get("tokens"), dict) else None,
            expires_at=data.get("expires_at") if isinstance(data.get("expires_at"), int | float) else None,
            client=data.get("client") if isinstance(data.get("client"), dict) else None,
            needs=data.get("needs") if isinstance(data.get("needs"), str) else None,
            extra={key: value for key, value in data.items() if key not in known},
        )


class SignInStore(Protocol):
    """Keeps one `SignInRecord` per (upstream name, URL)."""

    @property
    def where(self) -> str:
        """Where records are kept, in words (for `auth status`; never a secret)."""
        ...

    def load(self, name: str, url: str) -> SignInRecord | None: ...

    def save(self, name: str, record: SignInRecord) -> None: ...

    def delete(self, name: str, url: str) -> bool:
        """Forget the record; whether there was one."""
        ...


def record_key(name: str, url: str) -> str:
    """A record's key: the upstream's name and a hash of its URL (a new URL starts with no sign-in)."""
    digest = hashlib.sha256(url.encode()).hexdigest()[:16]
    return f"{name}.{digest}"


class KeyringStore:
    """Records in the OS keyring, one password entry each (service `nexus-gateway`, user `<name>.<url hash>`)."""

    def __init__(self, keyring_module: Any) -> None:
        self._keyring = keyring_module

    @property
    def where(self) -> str:
        backend = self._keyring.get_keyring()
        return f"the OS keyring ({type(backend).__module__}.{type(backend).__name__})"

    def load(self, name: str, url: str) -> SignInRecord | None:
        with self._translated("read"):
            raw = self._keyring.get_password(KEYRING_SERVICE, record_key(name, url))
        if raw is None:
            return None
        try:
            record = SignInRecord.from_json(raw.encode())
        except ValueError:
            logger.warning("the keyring entry for upstream %s is damaged; sign in again", name)
            return None
        return record if record.url == url else None

    def save(self, name: str, record: SignInRecord) -> None:
        with self._translated("write"):
            self._keyring.set_password(KEYRING_SERVICE, record_key(name, record.url), record.to_json().decode())

    def delete(self, name: str, url: str) -> bool:
        try:
            with self._translated("write"):
                self._keyring.delete_password(KEYRING_SERVICE, record_key(name, url))
        except self._keyring.errors.PasswordDeleteError:
            return False
        return True

    @contextlib.contextmanager
    def _translated(self, doing: str) -> Iterator[None]:
        """A keyring failure (locked, its service gone) as an error that says what to do instead."""
        try:
            yield
        except self._keyring.errors.PasswordDeleteError:
            raise
        except self._keyring.errors.KeyringError as exc:
            raise NexusError(
                f"the OS keyring could not {doing} a sign-in ({type(exc).__name__}: {exc}); unlock it, or keep "
                f"sign-ins in encrypted files instead with {_BACKEND_VARIABLE}=file"
            ) from None


class EncryptedFileStore:
    """Records as Fernet-encrypted files of mode 0600 in `folder` (mode 0700)."""

    def __init__(self, folder: Path, key: bytes | None = None) -> None:
        self.folder = folder
        self._key = key

    @property
    def where(self) -> str:
        source = f"the key in ${_KEY_VARIABLE}" if os.environ.get(_KEY_VARIABLE) else f"the key in {self._key_path}"
        return f"encrypted files in {self.folder} ({source})"

    @property
    def _key_path(self) -> Path:
        return self.folder / "key"

    def _fernet(self, *, create: bool) -> Any:
        from cryptography.fernet import Fernet

        key = self._key or _key_from_environment()
        if key is None:
            key = _read_secret(self._key_path)
            if key is None:
                if not create:
                    return None
                key = Fernet.generate_key()
                _write_secret(self._key_path, key, exclusive=True)
                key = _read_secret(self._key_path) or key  # another process may have made it first
        try:
            return Fernet(key.strip())
        except ValueError:
            source = f"${_KEY_VARIABLE}" if self._key is None and os.environ.get(_KEY_VARIABLE) else self._key_path
            raise ConfigError(f"the token key ({source}) is not a Fernet key (32 bytes, URL-safe base64)") from None

    def path(self, name: str, url: str) -> Path:
        return self.folder / f"{record_key(name, url)}.token"

    def load(self, name: str, url: str) -> SignInRecord | None:
        from cryptography.fernet import InvalidToken

        path = self.path(name, url)
        sealed = _read_secret(path)
        if sealed is None:
            return None
        fernet = self._fernet(create=False)
        if fernet is None:
            logger.warning("the sign-in of upstream %s (%s) cannot be read: its key is gone; sign in again", name, path)
            return None
        try:
            record = SignInRecord.from_json(fernet.decrypt(sealed))
        except (InvalidToken, ValueError):
            logger.warning(
                "the sign-in of upstream %s (%s) cannot be read (damaged, or sealed with another key); sign in again",
                name,
                path,
            )
            return None
        return record if record.url == url else None

    def save(self, name: str, record: SignInRecord) -> None:
        fernet = self._fernet(create=True)
        _write_secret(self.path(name, record.url), fernet.encrypt(record.to_json()))

    def delete(self, name: str, url: str) -> bool:
        try:
            self.path(name, url).unlink()
        except FileNotFoundError:
            return False
        return True


def _key_from_environment() -> bytes | None:
    value = os.environ.get(_KEY_VARIABLE)
    return value.encode() if value else None


def _read_secret(path: Path) -> bytes | None:
    """The bytes of the regular file at `path` (links are not followed), or None when there is none."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        logger.warning("cannot read %s (%s)", path, exc.strerror)
        return None
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            return None
        return file.read()


def _write_secret(path: Path, data: bytes, *, exclusive: bool = False) -> None:
    """Write `data` to `path` as a file of mode 0600 (in a folder of mode 0700), atomically: a reader sees the
    old file or the new one. `exclusive`: leave a file that is already there as it is."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if sys.platform != "win32":
        os.chmod(path.parent, 0o700)
    if exclusive:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        return
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{base64.urlsafe_b64encode(os.urandom(6)).decode()}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        raise


def usable_keyring() -> Any | None:
    """The `keyring` module when its backend stores something (not `fail`, `null`, or a chain of neither), else
    None. Importing it and asking costs a few milliseconds; a broken install counts as none."""
    try:
        import keyring
        from keyring.backends import chainer, fail, null
    except Exception:  # boundary: a keyring that cannot even load is no keyring
        return None
    try:
        backend = keyring.get_keyring()
    except Exception:  # boundary: as above
        return None
    if isinstance(backend, fail.Keyring | null.Keyring):
        return None
    if isinstance(backend, chainer.ChainerBackend) and not backend.backends:
        return None
    return keyring


def open_store(state_dir: Path) -> SignInStore:
    """The store for this gateway's sign-ins: `NEXUS_TOKEN_STORE` when set, else the OS keyring when it is usable,
    else encrypted files under `state_dir/oauth`."""
    choice = os.environ.get(_BACKEND_VARIABLE, "").strip().lower()
    if choice not in ("", "file", "keyring"):
        raise ConfigError(f"${_BACKEND_VARIABLE} must be 'file' or 'keyring', not {choice!r}")
    folder = state_dir / "oauth"
    if choice == "file":
        return EncryptedFileStore(folder)
    keyring = usable_keyring()
    if keyring is not None:
        return KeyringStore(keyring)
    if choice == "keyring":
        raise ConfigError(f"${_BACKEND_VARIABLE} is 'keyring' but no usable OS keyring was found")
    return EncryptedFileStore(folder)
