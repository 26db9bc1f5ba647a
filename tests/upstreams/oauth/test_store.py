"""Where sign-ins are kept: the OS keyring when usable, else Fernet-encrypted files of mode 0600."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path
from typing import Any

import keyring
import pytest
from cryptography.fernet import Fernet
from keyring.backend import KeyringBackend
from keyring.backends import fail

from nexus_gateway.errors import ConfigError, NexusError
from nexus_gateway.upstreams.oauth.store import (
    EncryptedFileStore,
    KeyringStore,
    SignInRecord,
    open_store,
    usable_keyring,
)

URL = "https://mcp.example.com/mcp"
SECRET = "access-9f8e7d6c5b4a"


def record() -> SignInRecord:
    return SignInRecord(url=URL, tokens={"access_token": SECRET, "token_type": "Bearer"}, expires_at=123.0)


class MemoryKeyring(KeyringBackend):
    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.entries: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.entries.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.entries[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        if self.entries.pop((service, username), None) is None:
            raise keyring.errors.PasswordDeleteError(username)


@pytest.fixture
def memory_keyring() -> Any:
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(previous)


@pytest.fixture
def no_keyring() -> Any:
    previous = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    yield
    keyring.set_keyring(previous)


def test_without_a_usable_keyring_sign_ins_are_encrypted_files_of_mode_0600(
    tmp_path: Path, no_keyring: None, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv("NEXUS_TOKEN_KEY", raising=False)
    monkeypatch.delenv("NEXUS_TOKEN_STORE", raising=False)
    store = open_store(tmp_path)
    assert isinstance(store, EncryptedFileStore)
    store.save("github", record())
    folder = tmp_path / "oauth"
    files = sorted(folder.iterdir())
    assert sorted(path.suffix for path in files) == ["", ".token"]  # the key file, the sign-in
    for path in [folder, *files]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))
    for path in files:
        assert SECRET.encode() not in path.read_bytes()
    loaded = store.load("github", URL)
    assert loaded is not None and loaded.tokens == record().tokens and loaded.expires_at == 123.0


def test_a_sign_in_is_kept_for_its_url_only(tmp_path: Path):
    store = EncryptedFileStore(tmp_path / "oauth")
    store.save("github", record())
    assert store.load("github", "https://elsewhere.example.com/mcp") is None
    assert store.load("gitlab", URL) is None
    assert store.delete("github", URL) and store.load("github", URL) is None
    assert not store.delete("github", URL)


def test_the_key_may_come_from_the_environment_and_then_no_key_file_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    key = Fernet.generate_key()
    monkeypatch.setenv("NEXUS_TOKEN_KEY", key.decode())
    store = EncryptedFileStore(tmp_path / "oauth")
    store.save("github", record())
    assert not (tmp_path / "oauth" / "key").exists()
    sealed = store.path("github", URL).read_bytes()
    assert Fernet(key).decrypt(sealed).count(SECRET.encode()) == 1
    monkeypatch.setenv("NEXUS_TOKEN_KEY", "not a key")
    with pytest.raises(ConfigError, match="NEXUS_TOKEN_KEY"):
        store.save("github", record())


def test_a_sign_in_sealed_with_another_key_or_damaged_reads_as_none_and_says_so_without_its_content(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv("NEXUS_TOKEN_KEY", raising=False)
    store = EncryptedFileStore(tmp_path / "oauth")
    store.save("github", record())
    (tmp_path / "oauth" / "key").write_bytes(Fernet.generate_key())
    with caplog.at_level(logging.WARNING):
        assert store.load("github", URL) is None
    assert "sign in again" in caplog.text and SECRET not in caplog.text
    store.path("github", URL).write_bytes(b"garbage")
    assert store.load("github", URL) is None


def test_a_symbolic_link_in_place_of_a_sign_in_is_not_followed(tmp_path: Path):
    store = EncryptedFileStore(tmp_path / "oauth")
    store.save("github", record())
    path = store.path("github", URL)
    target = tmp_path / "elsewhere"
    os.replace(path, target)
    path.symlink_to(target)
    assert store.load("github", URL) is None


def test_a_usable_keyring_is_preferred_and_keeps_one_entry_per_upstream(tmp_path: Path, memory_keyring: MemoryKeyring):
    store = open_store(tmp_path)
    assert isinstance(store, KeyringStore)
    store.save("github", record())
    ((service, user),) = memory_keyring.entries
    assert service == "nexus-gateway" and user.startswith("github.")
    loaded = store.load("github", URL)
    assert loaded is not None and loaded.tokens == record().tokens
    assert not (tmp_path / "oauth").exists()
    assert store.delete("github", URL) and not store.delete("github", URL)


def test_the_fail_keyring_is_no_keyring_and_the_choice_can_be_forced(
    tmp_path: Path, no_keyring: None, monkeypatch: pytest.MonkeyPatch
):
    assert usable_keyring() is None
    monkeypatch.setenv("NEXUS_TOKEN_STORE", "keyring")
    with pytest.raises(ConfigError, match="no usable OS keyring"):
        open_store(tmp_path)
    monkeypatch.setenv("NEXUS_TOKEN_STORE", "file")
    assert isinstance(open_store(tmp_path), EncryptedFileStore)
    monkeypatch.setenv("NEXUS_TOKEN_STORE", "vault")
    with pytest.raises(ConfigError, match="'file' or 'keyring'"):
        open_store(tmp_path)


def test_a_locked_keyring_is_an_error_that_says_what_to_do(tmp_path: Path, memory_keyring: MemoryKeyring):
    def locked(service: str, username: str) -> str | None:
        raise keyring.errors.KeyringLocked("the collection is locked")

    memory_keyring.get_password = locked  # type: ignore[method-assign]
    store = open_store(tmp_path)
    with pytest.raises(NexusError, match=r"unlock it, or keep sign-ins in encrypted files .* NEXUS_TOKEN_STORE=file"):
        store.load("github", URL)
