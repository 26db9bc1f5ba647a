"""The bundled example config and servers."""

import re
import sys
from pathlib import Path

import pytest

from nexus_gateway.config import load_config
from tests.conftest import EXAMPLES, running_gateway, text_of

pytestmark = pytest.mark.anyio


async def test_example_config_serves_at_least_30_rich_tools(tmp_path: Path):
    config = load_config(EXAMPLES / "gateway.json")
    config.nexus.state_dir = str(tmp_path)
    config.nexus.mode = "passthrough"
    async with running_gateway(config) as (gateway, client):
        tools = (await client.list_tools()).tools
        assert all(status.state.value == "healthy" for status in gateway.pool.statuses())
        assert len(tools) >= 30 and all(re.match(r"^[a-zA-Z0-9_-]{1,64}$", tool.name) for tool in tools)
        with_enums = [t for t in tools if '"enum"' in str(t.input_schema).replace("'", '"')]
        assert len(with_enums) >= 5
        created = await client.call_tool(
            "calendar__create_event",
            {"title": "Design review", "start": "2025-06-03T10:00:00Z", "end": "2025-06-03T11:00:00Z"},
        )
        assert not created.is_error, text_of(created)
        forecast = await client.call_tool("weather__get_forecast", {"city": "Oslo", "days": 3})
        assert not forecast.is_error and "Oslo" in text_of(forecast)


def test_example_client_runs_against_the_gateway():
    import subprocess

    result = subprocess.run([sys.executable, str(EXAMPLES / "client.py")], capture_output=True, text=True, timeout=90)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "weather__get_current_weather" in result.stdout and '"name": "Lisbon"' in result.stdout
