"""The files a new user meets first: compose file, Dockerfile, example configs."""

import json
import shlex
from pathlib import Path

import yaml

from nexus_gateway.config import load_config
from tests.conftest import ROOT


def test_compose_file_parses_and_refers_to_things_that_exist():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert {"gateway", "weather"} <= services.keys()
    for service in services.values():
        if "build" not in service:  # a published image (the cluster profile's HAProxy and Redis)
            continue
        build = service["build"] if isinstance(service["build"], str) else service["build"]["context"]
        assert (ROOT / build / "Dockerfile").is_file()
        for arg in service["command"]:
            if arg.startswith("examples/"):
                assert (ROOT / arg).is_file(), arg
            if arg.startswith("/app/"):
                assert (ROOT / arg.removeprefix("/app/")).is_file(), arg
    gateway_config = ROOT / services["gateway"]["command"][3].removeprefix("/app/")
    config = load_config(gateway_config, environ={})
    weather = config.servers["weather"]
    assert weather.transport == "http" and weather.url == "http://weather:8766/mcp"  # type: ignore[union-attr]
    assert "8766" in services["weather"]["command"] and "0.0.0.0" in services["weather"]["command"]
    assert services["gateway"]["ports"] == ["127.0.0.1:8765:8765"]


def test_dockerfile_copies_what_the_image_needs():
    dockerfile = (ROOT / "Dockerfile").read_text()
    for copied in ("pyproject.toml", "nexus_gateway", "examples"):
        assert f"COPY {copied}" in dockerfile
    cmd = json.loads(next(line for line in dockerfile.splitlines() if line.startswith("CMD [")).removeprefix("CMD "))
    assert cmd[:2] == ["nexus-gateway", "serve"] and (ROOT / cmd[3].removeprefix("/app/")).is_file()


def test_example_configs_are_valid_and_point_at_real_files():
    for name in ("gateway.json", "real-servers.json", "docker-gateway.json", "docker-cluster.json"):
        config = load_config(ROOT / "examples" / name, environ={})
        for spec in config.servers.values():
            for arg in getattr(spec, "args", []):
                if arg.endswith(".py"):
                    assert Path(arg).is_file(), arg


def test_readme_commands_use_the_real_cli():
    readme = (ROOT / "README.md").read_text()
    assert "nexus-gateway serve --config examples/gateway.json" in readme
    assert "scripts/test.sh" in readme
    setup = (ROOT / "scripts" / "test.sh").read_text()
    commands = [line for line in setup.splitlines() if "pytest" in line and not line.lstrip().startswith("#")]
    assert commands and all(shlex.split(line) for line in commands)
