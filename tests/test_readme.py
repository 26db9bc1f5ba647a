"""Every command the README and the guide show is one the code has.

Each `nexus-gateway ...` line in a fenced block of README.md or docs/ (not the changelog, which keeps the commands of
its time) names real subcommands and options (read from the same command tree `--help` prints); repository paths
on those lines exist; every JSON block parses, the host config snippets pass `nexus-gateway config check` as a
user would run it, and the README's two commands are what `.ci/run` and a fresh user run.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer

from nexus_gateway.cli.main import app
from nexus_gateway.config import load_config
from tests.conftest import ROOT, cli

PAGES = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").rglob("*.md") if p.name != "changelog.md")]
FENCE = re.compile(r"^( *)```(\w*)\n(.*?)^\1```", re.S | re.M)
SHELL = ("bash", "sh", "console", "")
ENVIRON = {"TRACKER_TOKEN": "t", "ADMIN_TOKEN": "admin", "AGENT_TOKEN": "agent"}
"""Values for the variables the docs' configs use (a user has their own)."""


@dataclass(frozen=True)
class Block:
    page: Path
    lang: str
    text: str

    def where(self) -> str:
        return str(self.page.relative_to(ROOT))


def blocks() -> Iterator[Block]:
    for page in PAGES:
        for match in FENCE.finditer(page.read_text(encoding="utf-8")):
            indent = len(match.group(1))
            text = "\n".join(line[indent:] for line in match.group(3).splitlines())
            yield Block(page, match.group(2), text)


def shell_lines(block: Block) -> Iterator[str]:
    """Logical lines of a shell block: continuations joined, prompts and comments dropped."""
    pending = ""
    for raw in block.text.splitlines():
        line = raw.strip()
        if line.startswith("$ "):
            line = line[2:]
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line, pending = pending + line, ""
        if line and not line.startswith("#"):
            yield line


def _tokens(line: str) -> list[str]:
    try:
        return shlex.split(line, comments=True)
    except ValueError:  # an unbalanced quote in prose-like usage: fall back to whitespace
        return line.split("#")[0].split()


def gateway_invocations(line: str) -> Iterator[list[str]]:
    """The arguments after each `nexus-gateway` in command position (after `&&`, `--`, or env assignments)."""
    tokens = _tokens(line)
    for index, token in enumerate(tokens):
        if token != "nexus-gateway":
            continue
        before = tokens[:index]
        if not before or before[-1] in ("--", "&&", ";") or all(re.match(r"^[A-Z_]+=", t) for t in before):
            rest = tokens[index + 1 :]
            end = next((i for i, t in enumerate(rest) if t in ("&&", ";")), len(rest))
            yield rest[:end]


COMMAND = typer.main.get_command(app)


def _options(command: Any) -> set[str]:
    names: set[str] = {"--help"}
    for param in command.params:
        names.update(o for o in [*param.opts, *getattr(param, "secondary_opts", [])] if o.startswith("-"))
    return names


def check_invocation(args: list[str]) -> list[str]:
    """Problems with `nexus-gateway ARGS` read as usage text: `[optional]`, `a|b` alternatives, metavariables."""
    words: list[str] = []
    for token in args:
        words.extend(part for part in re.split(r"[\[\]()|]", token) if part)
    path = [COMMAND]
    named: list[Any] = []
    flags: list[str] = []
    for word in words:
        if word.startswith("-"):
            flag = word.split("=", 1)[0]
            if re.fullmatch(r"--?[A-Za-z][\w-]*", flag):
                flags.append(flag)
            continue
        for depth in range(len(path) - 1, -1, -1):
            sub = getattr(path[depth], "commands", {}).get(word)
            if sub is not None:
                path = [*path[: depth + 1], sub]
                named.append(path[:])
                break
    if not named and not set(flags) & {"--help", "--version"}:
        return [f"`nexus-gateway {' '.join(args)}` names no command"]
    allowed = _options(COMMAND)
    for chain in named:
        for command in chain:
            allowed |= _options(command)
    return [f"`nexus-gateway {' '.join(args)}`: no option {flag}" for flag in flags if flag not in allowed]


def repository_paths(line: str) -> Iterator[str]:
    for token in _tokens(line):
        for part in token.split("="):
            if re.match(r"^(examples|scripts|tests|docs|nexus_gateway)/[\w./-]+$", part) and "*" not in part:
                yield part


def test_the_command_checker_catches_an_invented_option_and_command():
    assert check_invocation(["serve", "--config", "F", "--transport", "http"]) == []
    assert check_invocation(["daemon", "[status", "[--json]", "|", "stop]", "--config", "F"]) == []
    assert check_invocation(["serve", "--colour"]) == ["`nexus-gateway serve --colour`: no option --colour"]
    assert check_invocation(["launch", "--config", "F"]) == ["`nexus-gateway launch --config F` names no command"]
    assert list(gateway_invocations("claude mcp add nexus-gateway -- nexus-gateway connect --config F")) == [
        ["connect", "--config", "F"]
    ]


def test_every_command_shown_exists_with_the_options_shown():
    problems, seen = [], 0
    for block in blocks():
        if block.lang not in SHELL:
            continue
        for line in shell_lines(block):
            for args in gateway_invocations(line):
                seen += 1
                problems += [f"{block.where()}: {problem}" for problem in check_invocation(args)]
            if re.match(r"^(python3? |[A-Z_]+=\S+ )", line) or line.startswith(("scripts/", "bash ")):
                problems += [
                    f"{block.where()}: {path} is missing"
                    for path in repository_paths(line)
                    if not (ROOT / path).exists()
                ]
            for module in re.findall(r"python3? -m (nexus_gateway[\w.]*)", line):
                if not (ROOT / (module.replace(".", "/") + ".py")).exists():
                    problems.append(f"{block.where()}: no module {module}")
    assert seen > 40, "the docs' commands were not found"
    assert problems == []


def test_every_top_level_command_shown_is_in_the_help():
    """The installed entry point's `--help` lists each command the docs use."""
    shown = set()
    for block in blocks():
        if block.lang in SHELL:
            for line in shell_lines(block):
                for args in gateway_invocations(line):
                    if args and not args[0].startswith("-"):
                        shown.add(args[0])
    helped = cli("--help")
    assert helped.returncode == 0, helped.stderr
    listed = set(re.findall(r"│ ([a-z][a-z-]+) ", helped.stdout))
    assert shown and sorted(shown - listed) == []


def json_blocks() -> Iterator[tuple[Block, Any]]:
    for block in blocks():
        if block.lang == "json":
            yield block, json.loads(block.text)


def test_every_json_block_is_json_and_every_config_in_the_guide_loads(tmp_path: Path):
    configs = 0
    for index, (block, data) in enumerate(json_blocks()):
        if isinstance(data, dict) and ({"mcpServers", "servers"} & data.keys()):
            path = tmp_path / f"config{index}.json"
            path.write_text(block.text, encoding="utf-8")
            load_config(path, environ={**os.environ, **ENVIRON})
            configs += 1
    assert configs >= 6


def host_snippets() -> Iterator[tuple[Block, dict[str, Any]]]:
    """The JSON a user pastes into a host: an entry that launches nexus-gateway."""
    for block, data in json_blocks():
        servers = data.get("mcpServers") or data.get("servers") or {}
        entry = servers.get("nexus-gateway") if isinstance(servers, dict) else None
        if entry and entry.get("command") == "nexus-gateway":
            yield block, entry


def test_the_host_config_snippets_pass_config_check_and_launch_real_commands(tmp_path: Path):
    snippets = list(host_snippets())
    pages = {block.page.name for block, _ in snippets}
    assert {"README.md", "getting-started.md", "daemon.md"} <= pages
    for index, (block, entry) in enumerate(snippets):
        path = tmp_path / f"host{index}.json"
        path.write_text(block.text, encoding="utf-8")
        checked = cli("config", "check", "--config", str(path))
        assert checked.returncode == 0 and "config is valid" in checked.stdout, (block.where(), checked.stderr)
        assert check_invocation(entry["args"]) == [], block.where()


def test_the_readme_gateway_config_passes_config_check(tmp_path: Path):
    readme = [block for block, data in json_blocks() if block.page.name == "README.md" and "nexus" in data]
    assert readme
    path = tmp_path / "nexus-gateway.json"
    path.write_text(readme[0].text, encoding="utf-8")
    checked = subprocess.run(
        [sys.executable, "-m", "nexus_gateway", "config", "check", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **ENVIRON},
    )
    assert checked.returncode == 0, checked.stderr


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## The two commands", 1)[1].split("\n## ", 1)[0]
    return [m.group(3).strip() for m in FENCE.finditer(section) if m.group(2) == "bash"]


def test_the_readme_test_command_is_what_ci_runs_and_sets_up_a_fresh_machine():
    install_and_serve, tests = _readme_commands()
    assert tests == "scripts/test.sh"
    script = ROOT / tests
    assert os.access(script, os.X_OK)
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True, timeout=30).returncode == 0
    body = script.read_text(encoding="utf-8")
    for needed in ("/usr/bin/chromium", "apt-get install", "npx", "pip install -e '.[dev]'", 'exec pytest "$@"'):
        assert needed in body, needed
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.strip() and not line.startswith("#")]
    assert any(line.startswith("export CMAKE_ARGS=") for line in ci)
    assert ci[-1].strip() == tests
    assert install_and_serve.startswith(
        'python3 -m venv .venv && . .venv/bin/activate && CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install -e . && '
    )


def test_the_readme_serve_command_serves_the_example_config_over_http(tmp_path: Path):
    """The README's first command, past its install: the example servers behind a real HTTP gateway (port 0 so a
    running gateway on 8765 does not matter; the state in a temporary folder)."""
    install_and_serve = _readme_commands()[0]
    args = next(gateway_invocations(install_and_serve))
    assert args[:3] == ["serve", "--config", "examples/gateway.json"] and "http" in args
    proc = subprocess.Popen(
        [sys.executable, "-m", "nexus_gateway", *args, "--port", "0"],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NEXUS_STATE_DIR": str(tmp_path / "state")},
    )
    found: list[str] = []
    listening = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            if not found and (match := re.search(r"listening on (http://\S+)", line)):
                found.append(match.group(1))
                listening.set()
        listening.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        assert listening.wait(60) and found, "the gateway did not log its address within 60 s"
        with urllib.request.urlopen(f"{found[0]}/healthz", timeout=10) as response:
            health = json.loads(response.read())
        assert set(health["upstreams"]) == {"calendar", "notes", "files", "weather", "issues"}
    finally:
        proc.terminate()
        proc.wait(timeout=30)


PORTABLE = sorted(
    p.relative_to(ROOT).as_posix()
    for folder in ("scripts", "examples")
    for p in (ROOT / folder).rglob("*")
    if p.is_file() and p.suffix in (".sh", ".py", ".json")
)


@pytest.mark.parametrize("name", PORTABLE)
def test_scripts_and_examples_name_no_one_machine_folder(name: str):
    """Paths come from arguments and environment variables with portable defaults, not one machine's folders."""
    path = ROOT / name
    assert not re.search(r"(?<![\w$}])/(work|root|home)/", path.read_text(encoding="utf-8"))
    if path.suffix == ".sh":
        assert subprocess.run(["bash", "-n", str(path)], capture_output=True, timeout=30).returncode == 0
