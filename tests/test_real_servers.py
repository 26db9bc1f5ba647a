"""Real upstream servers installed from PyPI and npm, through the gateway."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import make_config, running_gateway, text_of

pytestmark = pytest.mark.anyio

TIME = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}
CONVERT = {"source_timezone": "America/New_York", "time": "16:30", "target_timezone": "Asia/Tokyo"}


async def test_mcp_server_time_answers_the_same_through_the_gateway(tmp_path: Path):
    async with Client(StdioServerParameters(**TIME), mode="legacy", cache=None) as direct:
        expected = await direct.call_tool("convert_time", CONVERT)
    async with running_gateway(make_config(tmp_path, {"time": TIME}, mode="routed")) as (_, client):
        via_gateway = await client.call_tool("call_tool", {"name": "time__convert_time", "arguments": CONVERT})
    assert not via_gateway.is_error
    assert via_gateway.content == expected.content
    assert via_gateway.structured_content == expected.structured_content


async def test_mcp_server_git_reads_this_repository(tmp_path: Path):
    repo = Path(__file__).resolve().parent.parent
    assert (repo / ".git").exists(), "run the tests from a git checkout (CI runs them on a clone)"
    git = {"command": sys.executable, "args": ["-m", "mcp_server_git", "--repository", str(repo)]}
    async with running_gateway(make_config(tmp_path, {"git": git}, mode="passthrough")) as (_, client):
        result = await client.call_tool("git__git_log", {"repo_path": str(repo), "max_count": 1})
    assert not result.is_error and "Commit" in text_of(result)


@pytest.mark.npm
async def test_server_everything_from_npm_through_the_gateway(tmp_path: Path):
    npx = shutil.which("npx")
    assert npx, "npx is needed for this test (Node.js)"
    everything = {"command": npx, "args": ["-y", "@modelcontextprotocol/server-everything"]}
    config = make_config(tmp_path, {"everything": everything}, mode="passthrough", start_timeout=120)
    with anyio.fail_after(180):
        async with running_gateway(config) as (gateway, client):
            assert gateway.pool.get("everything").last_error is None  # type: ignore[union-attr]
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert "everything__echo" in names
            echoed = await client.call_tool("everything__echo", {"message": "through the gateway"})
            summed = await client.call_tool("everything__get-sum", {"a": 2, "b": 3})
            resources = await client.list_resources()
            prompts = await client.list_prompts()
    assert "through the gateway" in text_of(echoed)
    assert "5" in text_of(summed)
    assert resources.resources and all(r.name.startswith("everything__") for r in resources.resources)
    assert prompts.prompts and all(p.name.startswith("everything__") for p in prompts.prompts)


def _run_called(structured: dict | None, text: str) -> dict:
    assert structured is not None and structured["status"] == "called", text
    return structured["trace"]


@pytest.mark.npm
async def test_run_reads_a_file_by_its_absolute_path_with_the_npm_filesystem_server(tmp_path: Path):
    """The path keeps its leading `/` and every segment: grounding compares exact spans. The server has two tools
    that read a file alike (`read_text_file` and its older name `read_file`); when the re-ranking does not set one
    clear of the other (it depends on the temporary path's tokens), `run` proposes the first and names the other,
    as designed, and the host calls the proposal: the test does that too."""
    npx = shutil.which("npx")
    assert npx, "npx is needed for this test (Node.js)"
    root = tmp_path / "shared"
    root.mkdir()
    notes = root / "notes.txt"
    notes.write_text("buy oat milk\n")
    fs = {"command": npx, "args": ["-y", "@modelcontextprotocol/server-filesystem", str(root)]}
    reads = ["fs__read_text_file", "fs__read_file"]
    config = make_config(tmp_path, {"fs": fs}, mode="routed", start_timeout=120, auto_execute=reads)
    with anyio.fail_after(400):
        async with running_gateway(config) as (gateway, client):
            await gateway.indexer.settle(120)  # every tool searchable before the request (a loaded machine is slow)
            result = await client.call_tool("run", {"request": f"Show me what is in the file {notes}"})
            structured = result.structured_content
            assert structured is not None and structured["status"] in ("called", "proposed"), text_of(result)
            if structured["status"] == "proposed":  # the two readers fit alike: the other is among the candidates
                call = structured["call"]
                assert {c["name"] for c in structured["candidates"]} >= set(reads), structured
                tool, arguments = call["name"], call["arguments"]
                result = await client.call_tool("call_tool", {"name": tool, "arguments": arguments})
            else:
                tool, arguments = structured["trace"]["tool"], structured["trace"]["arguments"]
    assert tool in reads and arguments["path"] == str(notes), structured
    assert "buy oat milk" in text_of(result)


def _repository(path: Path, commits: int) -> Path:
    """A git repository at `path` with empty commits `change 1` .. `change N`."""
    env = {
        "GIT_AUTHOR_NAME": "A",
        "GIT_AUTHOR_EMAIL": "a@example.com",
        "GIT_COMMITTER_NAME": "A",
        "GIT_COMMITTER_EMAIL": "a@example.com",
        "PATH": os.environ.get("PATH", ""),
    }
    subprocess.run(["git", "init", "-q", str(path)], check=True, env=env)
    for n in range(1, commits + 1):
        subprocess.run(
            ["git", "-C", str(path), "commit", "-q", "--allow-empty", "-m", f"change {n}"], check=True, env=env
        )
    return path


async def test_run_shows_the_last_commits_of_a_repository_with_mcp_server_git(tmp_path: Path):
    repo = _repository(tmp_path / "repo", 4)
    git = {"command": sys.executable, "args": ["-m", "mcp_server_git", "--repository", str(repo)]}
    config = make_config(tmp_path, {"git": git}, mode="routed", auto_execute=["git__git_log"])
    with anyio.fail_after(400):
        async with running_gateway(config) as (gateway, client):
            await gateway.indexer.settle(120)  # every tool searchable before the request (a loaded machine is slow)
            result = await client.call_tool("run", {"request": f"Show the last 2 commits of the git repository {repo}"})
    trace = _run_called(result.structured_content, text_of(result))
    assert trace["tool"] == "git__git_log", trace
    assert trace["arguments"]["repo_path"] == str(repo) and trace["arguments"]["max_count"] == 2, trace
    log = text_of(result)
    assert "change 4" in log and "change 3" in log and "change 2" not in log, log


@pytest.mark.npm
async def test_run_adds_two_numbers_with_the_npm_everything_server(tmp_path: Path):
    npx = shutil.which("npx")
    assert npx, "npx is needed for this test (Node.js)"
    everything = {"command": npx, "args": ["-y", "@modelcontextprotocol/server-everything"]}
    config = make_config(
        tmp_path, {"everything": everything}, mode="routed", start_timeout=120, auto_execute=["everything__get-sum"]
    )
    with anyio.fail_after(400):
        async with running_gateway(config) as (gateway, client):
            await gateway.indexer.settle(120)  # every tool searchable before the request (a loaded machine is slow)
            result = await client.call_tool("run", {"request": "What is the sum of 1234 and 4321?"})
    trace = _run_called(result.structured_content, text_of(result))
    assert trace["tool"] == "everything__get-sum" and trace["arguments"] == {"a": 1234, "b": 4321}, trace
    assert "5555" in text_of(result)
