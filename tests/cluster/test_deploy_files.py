"""The cluster's deployment files: the shipped HAProxy config is what deploy/haproxy.py writes and HAProxy takes
it; docker-compose.yml's cluster profile and the Kubernetes manifests parse and refer to things that exist."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from nexus_gateway.bench.cluster.processes import MissingBinary, binary
from nexus_gateway.config import load_config, parse_config
from nexus_gateway.deploy.haproxy import SHIPPED_SERVERS, Balancer, main, render
from tests.conftest import ROOT

K8S = ROOT / "deploy" / "k8s"
K8S_BALANCER = Balancer(dns_template=3, stats_bind=":8404")
K8S_SERVICE = "nexus-gateway.default.svc.cluster.local:8765"


def haproxy_check(config: Path, **env: str) -> subprocess.CompletedProcess[str]:
    try:
        haproxy = binary("haproxy", "haproxy")
    except MissingBinary as exc:
        pytest.fail(str(exc))
    return subprocess.run(
        [haproxy, "-c", "-f", str(config)], capture_output=True, text=True, timeout=30, env={"PATH": "/usr/bin", **env}
    )


def manifests() -> list[dict[str, Any]]:
    return [doc for path in sorted(K8S.glob("*.yaml")) for doc in yaml.safe_load_all(path.read_text()) if doc]


def test_the_shipped_haproxy_config_is_what_the_module_writes_and_haproxy_accepts_it(capsys: pytest.CaptureFixture):
    shipped = ROOT / "deploy" / "haproxy" / "haproxy.cfg"
    assert shipped.read_text() == render(SHIPPED_SERVERS)
    assert main([]) == 0 and capsys.readouterr().out == shipped.read_text()
    for env in ({}, {"NEXUS_HEALTH_TOKEN": "secret"}):
        checked = haproxy_check(shipped, **env)
        assert checked.returncode == 0 and "Configuration file is valid" in checked.stdout, checked.stderr


def test_the_health_check_sends_the_token_only_when_one_is_given(tmp_path: Path):
    text = render(["127.0.0.1:1"])
    assert 'hdr Authorization "Bearer ${NEXUS_HEALTH_TOKEN}"' in text and ".if defined(NEXUS_HEALTH_TOKEN)" in text
    assert "stick store-response res.hdr(mcp-session-id)" in text and "stick match req.hdr(mcp-session-id)" in text
    config = tmp_path / "haproxy.cfg"
    config.write_text(text)
    assert haproxy_check(config).returncode == 0


def test_a_replica_that_is_not_host_and_port_is_refused():
    with pytest.raises(ValueError, match="host:port"):
        render(["gateway-1"])
    with pytest.raises(ValueError, match="one DNS name"):
        render(["a:1", "b:1"], Balancer(dns_template=3))


def test_the_compose_cluster_profile_runs_three_replicas_haproxy_redis_and_an_inference_server():
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    cluster = {name for name, service in services.items() if "cluster" in service.get("profiles", [])}
    assert cluster == {"gateway-1", "gateway-2", "gateway-3", "haproxy", "redis", "inference"}
    replicas = [services[f"gateway-{n}"] for n in (1, 2, 3)]
    assert all(replica == replicas[0] for replica in replicas)
    command = replicas[0]["command"]
    assert command[:2] == ["nexus-gateway", "serve"] and command[command.index("--port") + 1] == "8765"
    config = load_config(ROOT / command[command.index("--config") + 1].removeprefix("/app/"), environ={})
    assert config.nexus.cluster is not None and config.nexus.cluster.redis_url == "redis://redis:6379/0"
    engine = (config.nexus.model_extra or {})["engine"]
    assert engine["backend"] == "openai" and engine["base_url"] == "http://inference:8080/v1"
    assert f"--model_alias {engine['model']}" in services["inference"]["command"][-1]
    assert "llama_cpp.server" in services["inference"]["command"][-1]
    assert "llama-cpp-python[server]" in replicas[0]["build"]["args"]["EXTRA_PACKAGES"]
    assert "--logits_all true" in services["inference"]["command"][-1]
    redis = services["redis"]
    assert redis["command"][redis["command"].index("--appendonly") + 1] == "yes"
    assert redis["volumes"][0].split(":")[0] in yaml.safe_load((ROOT / "docker-compose.yml").read_text())["volumes"]
    volume = services["haproxy"]["volumes"][0].split(":")
    assert (ROOT / volume[0]).resolve() == ROOT / "deploy" / "haproxy" / "haproxy.cfg"
    assert volume[1] == "/usr/local/etc/haproxy/haproxy.cfg"  # where the haproxy image reads it
    shipped = {server.split(":")[0] for server in SHIPPED_SERVERS}
    assert shipped == {"gateway-1", "gateway-2", "gateway-3"} and set(services["haproxy"]["depends_on"]) == shipped
    assert services["haproxy"]["ports"] == ["127.0.0.1:8770:8765"]  # beside the single gateway's 8765
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "ARG EXTRAS" in dockerfile and "ARG EXTRA_PACKAGES" in dockerfile


def test_the_kubernetes_manifests_parse_and_each_name_they_use_exists(tmp_path: Path):
    docs = manifests()
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    assert sorted(kustomization["resources"]) == sorted(p.name for p in K8S.glob("*.yaml") if p.stem != "kustomization")
    by_kind: dict[str, dict[str, dict[str, Any]]] = {}
    for doc in docs:
        if doc.get("kind") != "Kustomization" and "resources" not in doc:
            by_kind.setdefault(doc["kind"], {})[doc["metadata"]["name"]] = doc
    deployments, services, maps = by_kind["Deployment"], by_kind["Service"], by_kind["ConfigMap"]
    assert set(deployments) == {"nexus-gateway", "redis", "inference", "haproxy"}
    for service in services.values():  # every Service selects a Deployment's pods, on a port they name
        target = next(
            d
            for d in deployments.values()
            if d["spec"]["template"]["metadata"]["labels"] == service["spec"]["selector"]
        )
        names = {port["name"] for c in target["spec"]["template"]["spec"]["containers"] for port in c["ports"]}
        assert {port["targetPort"] for port in service["spec"]["ports"]} <= names
    for deployment in deployments.values():
        spec = deployment["spec"]
        assert spec["selector"]["matchLabels"] == spec["template"]["metadata"]["labels"]
        for volume in spec["template"]["spec"].get("volumes", []):
            if "configMap" in volume:
                assert volume["configMap"]["name"] in maps
            else:
                assert volume["persistentVolumeClaim"]["claimName"] in by_kind["PersistentVolumeClaim"]
    redis = deployments["redis"]["spec"]["template"]["spec"]["containers"][0]
    assert redis["args"][redis["args"].index("--appendonly") + 1] == "yes"  # approvals survive a restart

    gateway = deployments["nexus-gateway"]
    assert gateway["spec"]["replicas"] == 3
    container = gateway["spec"]["template"]["spec"]["containers"][0]
    for probe in ("readinessProbe", "livenessProbe"):
        assert "/healthz" in " ".join(container[probe]["exec"]["command"])
    assert services["nexus-gateway"]["spec"]["clusterIP"] == "None"  # headless, for HAProxy's server-template

    config_path = container["command"][container["command"].index("--config") + 1]
    mount = container["volumeMounts"][0]
    assert config_path == f"{mount['mountPath']}/gateway.json"
    raw = json.loads(maps["nexus-gateway-config"]["data"]["gateway.json"])
    raw["nexus"]["state_dir"] = str(tmp_path)
    config = parse_config(raw)
    assert config.nexus.cluster is not None and config.nexus.cluster.redis_url == "redis://redis:6379/0"
    for server in raw["mcpServers"].values():
        for arg in server["args"]:
            assert (ROOT / arg.removeprefix("/app/")).is_file(), arg
    assert "nexus-gateway-lb" in config.nexus.allowed_hosts

    cfg = maps["haproxy-config"]["data"]["haproxy.cfg"]
    assert cfg == render([K8S_SERVICE], K8S_BALANCER)
    assert K8S_SERVICE.split(".")[0] in services and ".default.svc." in K8S_SERVICE
    (tmp_path / "haproxy.cfg").write_text(cfg)
    checked = haproxy_check(tmp_path / "haproxy.cfg")
    assert checked.returncode == 0, checked.stderr
