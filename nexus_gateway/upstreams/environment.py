"""The environment a stdio upstream starts with: the one place that decides what it inherits.

The gateway does not hand its whole environment to every upstream (a token meant for one server
would reach all of them). An upstream gets, from the gateway's environment:

- what the MCP SDK passes (`mcp.client.stdio.DEFAULT_INHERITED_ENV_VARS`): HOME, LOGNAME, PATH,
  SHELL, TERM, USER (on Windows: APPDATA, HOMEDRIVE, HOMEPATH, LOCALAPPDATA, PATH, PATHEXT,
  PROCESSOR_ARCHITECTURE, SYSTEMDRIVE, SYSTEMROOT, TEMP, USERNAME, USERPROFILE);
- `INHERITED` below: proxies (both spellings), certificate bundles, locale, time zone, temp and XDG
  folders, so an upstream behind a corporate proxy or TLS-inspecting firewall works as it does
  from a shell;
- the names in `nexus.inherit_env` (`NAME`, `PREFIX*`, or `*` for everything);

then the server entry's `env` (with its `envFile` merged under it) on top; an `env` value of
null removes the variable. Values that start with `()` (exported shell functions) are never inherited,
as the SDK does.
"""

from __future__ import annotations

import fnmatch
import os
import sys
from collections.abc import Iterable, Mapping

SDK_INHERITED = (
    (
        "APPDATA",
        "HOMEDRIVE",
        "HOMEPATH",
        "LOCALAPPDATA",
        "PATH",
        "PATHEXT",
        "PROCESSOR_ARCHITECTURE",
        "SYSTEMDRIVE",
        "SYSTEMROOT",
        "TEMP",
        "USERNAME",
        "USERPROFILE",
    )
    if sys.platform == "win32"
    else ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")
)
"""`mcp.client.stdio.DEFAULT_INHERITED_ENV_VARS`, copied so that `serve` can start upstreams before it
imports the SDK (`_prelaunch.py`); tests/test_environment.py checks the copy against the SDK."""

PROXIES = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy")
CERTIFICATES = (
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "NODE_USE_SYSTEM_CA",
    "GIT_SSL_CAINFO",
    "GIT_SSL_CAPATH",
)
LOCALE = ("LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ")
FOLDERS = ("TMPDIR", "TMP", "TEMP", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME")
INHERITED: tuple[str, ...] = (*SDK_INHERITED, *PROXIES, *CERTIFICATES, *LOCALE, *FOLDERS)


def upstream_environment(
    spec_env: Mapping[str, str | None] | None,
    *,
    inherit: Iterable[str] = (),
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The full environment of a stdio upstream: inherited variables, then the entry's `env`."""
    source = os.environ if environ is None else environ
    patterns = [pattern for pattern in inherit if pattern]
    env = {
        name: value
        for name, value in source.items()
        if not value.startswith("()")
        and (name in INHERITED or any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns))
    }
    for name, value in (spec_env or {}).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env
