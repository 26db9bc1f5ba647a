"""Variables in config strings, in the dialects of the hosts whose files the gateway reads.

    ${VAR}  ${VAR:-default}      the environment (unset or empty: the default, else an error);
                                 ${PYTHON} and ${CONFIG_DIR} when the environment has no such variable
    ${env:NAME}                  Cursor / VS Code: the environment variable, "" when unset (as they do);
                                 in a header, unset or empty is an error naming the header and the
                                 variable (the header would go out broken: `Authorization: Bearer `)
    ${userHome}                  the user's home folder
    ${workspaceFolder}           `nexus.workspace_folder` / NEXUS_WORKSPACE_FOLDER, else the current folder
    ${workspaceFolderBasename}   its last component
    ${pathSeparator}  ${/}       the OS path separator
    ${input:ID}                  VS Code's prompted inputs: the environment variable NEXUS_INPUT_<ID>
                                 (upper-cased, anything but letters and digits as `_`), else the input's
                                 declared `default`, else an error naming the input and the variable

Any other `${word:...}` (VS Code's `${command:...}`, `${config:...}`) is an error: it needs the editor.
Text that is not one of these forms (`${1}`, `$HOME`) is left as it is.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nexus_gateway.errors import ConfigError

_REFERENCE = re.compile(r"\$\{([^{}]*)\}")
_PLAIN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?", re.DOTALL)
_SCOPED = re.compile(r"([A-Za-z]+):(.*)", re.DOTALL)
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]")


def input_variable(input_id: str) -> str:
    """The environment variable that answers `${input:ID}`: `NEXUS_INPUT_` + ID upper-cased, with
    anything but letters and digits as `_` (`api-key` -> `NEXUS_INPUT_API_KEY`)."""
    return "NEXUS_INPUT_" + _NOT_ALNUM.sub("_", input_id).upper()


def host_variables(workspace: Path | None) -> dict[str, str]:
    """The predefined variables of Cursor and VS Code that mean something outside an editor."""
    folder = workspace or Path.cwd()
    return {
        "userHome": str(Path.home()),
        "workspaceFolder": str(folder),
        "workspaceFolderBasename": folder.name,
        "pathSeparator": os.sep,
        "/": os.sep,
    }


@dataclass(frozen=True)
class Variables:
    environ: Mapping[str, str]
    builtins: Mapping[str, str] = field(default_factory=dict)
    """`${PYTHON}`, `${CONFIG_DIR}`: used when the environment has no variable of that name."""
    host: Mapping[str, str] = field(default_factory=dict)
    inputs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """VS Code's declared `inputs`, by id (for their `default` and `description`)."""

    def expand(self, value: Any, where: str, key: str = "") -> Any:
        """Expand every string in a JSON value; errors name `where` and the key path (`env.TOKEN`)."""
        if isinstance(value, str):
            return _REFERENCE.sub(lambda match: self._resolve(match.group(1), where, key), value)
        if isinstance(value, list):
            return [
                self.expand(item, where, f"{key}.{index}" if key else str(index)) for index, item in enumerate(value)
            ]
        if isinstance(value, dict):
            return {name: self.expand(item, where, f"{key}.{name}" if key else name) for name, item in value.items()}
        return value

    def _resolve(self, body: str, where: str, key: str) -> str:
        at = f"{where}, key {key!r}" if key else where
        if body in self.host:
            return self.host[body]
        if plain := _PLAIN.fullmatch(body):
            name, default = plain.group(1), plain.group(2)
            value = self.environ.get(name) or self.builtins.get(name)
            if value:
                return value
            if default is not None:
                return default
            raise ConfigError(f"{at}: environment variable ${{{name}}} is not set (use ${{{name}:-default}})")
        scoped = _SCOPED.fullmatch(body)
        if scoped is None:
            return "${" + body + "}"
        scope, name = scoped.groups()
        if scope == "env":
            value = self.environ.get(name, "")
            if not value and key.startswith("headers."):
                header = key.removeprefix("headers.")
                raise ConfigError(
                    f"{where}: header {header!r} uses ${{env:{name}}}, and the environment variable {name} is "
                    f"{'empty' if name in self.environ else 'not set'}: set it (or use ${{{name}:-default}}), "
                    "or remove the header"
                )
            return value
        if scope == "input":
            return self._input(name, at)
        raise ConfigError(
            f"{at}: ${{{body}}} needs the editor that defined it; outside an editor only ${{env:NAME}}, "
            "${input:ID}, ${userHome}, ${workspaceFolder}, ${workspaceFolderBasename} and ${pathSeparator} work"
        )

    def _input(self, input_id: str, at: str) -> str:
        variable = input_variable(input_id)
        if variable in self.environ:
            return self.environ[variable]
        declared = self.inputs.get(input_id, {})
        if isinstance(declared.get("default"), str):
            return str(declared["default"])
        about = f" ({declared['description']})" if isinstance(declared.get("description"), str) else ""
        raise ConfigError(f"{at}: input {input_id!r}{about} has no value here: set the environment variable {variable}")


def _join(path: str, part: str) -> str:
    return f"{path}.{part}" if path else part
