"""`nexus.oauth` (the gateway as an OAuth resource server): a wrong setting is an error, never a looser check."""

from __future__ import annotations

from typing import Any

import pytest

from nexus_gateway.config import parse_config
from nexus_gateway.errors import ConfigError

ISSUER = "https://auth.example.com/realms/acme"


def _settings(**oauth: Any) -> Any:
    nexus = {"profiles": {"readers": {}}, "oauth": {"issuer": ISSUER, **oauth}}
    return parse_config({"mcpServers": {}, "nexus": nexus}).nexus.oauth


def test_the_defaults_accept_asymmetric_algorithms_only_with_a_little_leeway():
    settings = _settings()
    assert settings.issuer == ISSUER and settings.audience is None and settings.required_scopes == []
    assert "RS256" in settings.algorithms and not any(name.startswith("HS") for name in settings.algorithms)
    assert settings.leeway == 30


@pytest.mark.parametrize(
    ("oauth", "message"),
    [
        ({"required_scope": ["mcp"]}, "required_scope"),  # misspelt: it would have required nothing
        ({"algorithms": ["HS256"]}, "algorithms"),
        ({"algorithms": ["none"]}, "algorithms"),
        ({"algorithms": []}, "algorithms"),
        ({"audience": "https://gateway.example.com/mcp"}, "audience"),
        ({"profiles": [{"claim": "groups", "value": "x", "profile": "nobody"}]}, "nobody"),
        ({"default_profile": "nobody"}, "nobody"),
        ({"leeway": 3600}, "leeway"),
    ],
)
def test_a_wrong_oauth_setting_is_an_error_that_names_it(oauth: dict[str, Any], message: str):
    with pytest.raises(ConfigError, match=message):
        _settings(**oauth)


def test_no_issuer_is_an_error():
    with pytest.raises(ConfigError, match="issuer"):
        parse_config({"mcpServers": {}, "nexus": {"oauth": {}}})
