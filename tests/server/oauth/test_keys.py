"""The issuer's keys (server/oauth/_jwks.py) and what the front does when it cannot get them: fail closed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from nexus_gateway.config import load_config
from nexus_gateway.gateway import Gateway
from nexus_gateway.server.http import build_http_app
from nexus_gateway.server.oauth._jwks import JwksCache, KeysUnavailable, UnknownKey, metadata_urls
from tests.conftest import free_port
from tests.server.oauth._issuer import SCOPE, Issuer

ISSUER = "https://as.example.com/tenant"


class _Issuer:
    """An issuer's metadata and JWKS behind httpx.MockTransport, counting what is fetched."""

    def __init__(self, issuer: Issuer) -> None:
        self.issuer = issuer
        self.requests: list[str] = []
        self.metadata_issuer = ISSUER
        self.up = True

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request.url.path)
        if not self.up:
            return httpx.Response(503)
        if request.url.path == "/.well-known/oauth-authorization-server/tenant":
            return httpx.Response(200, json={"issuer": self.metadata_issuer, "jwks_uri": "https://as.example.com/k"})
        if request.url.path == "/k":
            from jwt.algorithms import RSAAlgorithm

            keys = [
                {**RSAAlgorithm.to_jwk(key.public_key(), as_dict=True), "kid": kid, "alg": "RS256"}
                for kid, key in self.issuer.keys.items()
            ]
            return httpx.Response(200, json={"keys": keys})
        return httpx.Response(404)

    def cache(self, **options: Any) -> JwksCache:
        return JwksCache(ISSUER, transport=httpx.MockTransport(self.handle), **options)


def test_metadata_is_looked_for_where_the_mcp_spec_says():
    assert metadata_urls("https://as.example.com/tenant") == [
        "https://as.example.com/.well-known/oauth-authorization-server/tenant",
        "https://as.example.com/.well-known/openid-configuration/tenant",
        "https://as.example.com/tenant/.well-known/openid-configuration",
    ]
    assert metadata_urls("https://as.example.com") == [
        "https://as.example.com/.well-known/oauth-authorization-server",
        "https://as.example.com/.well-known/openid-configuration",
    ]


@pytest.mark.anyio
async def test_keys_are_found_through_the_issuers_metadata_and_cached():
    served = _Issuer(Issuer())
    cache = served.cache()
    first = await cache.key("k1")
    again = await cache.key("k1")
    assert first is again
    assert served.requests == ["/.well-known/oauth-authorization-server/tenant", "/k"]


@pytest.mark.anyio
async def test_an_unknown_kid_refetches_the_keys_once_then_is_rate_limited():
    issuer = Issuer()
    served = _Issuer(issuer)
    cache = served.cache(min_refresh=3600)
    await cache.key("k1")
    issuer.rotate("k2")
    with pytest.raises(UnknownKey):
        await cache.key("k2")  # fetched a moment ago: a flood of made-up kids makes no fetches
    assert cache.fetches == 1
    rotated = served.cache(min_refresh=0)
    await rotated.key("k1")
    issuer.rotate("k3")
    assert (await rotated.key("k3")).jwk.key_id == "k3"  # the issuer rotated its keys: one fetch finds the new one
    with pytest.raises(UnknownKey):
        await rotated.key("made-up")
    assert rotated.fetches == 3


@pytest.mark.anyio
async def test_keys_out_of_reach_or_metadata_of_another_issuer_raise_keys_unavailable():
    served = _Issuer(Issuer())
    served.up = False
    with pytest.raises(KeysUnavailable, match="HTTP 503"):
        await served.cache().key("k1")
    served.up, served.metadata_issuer = True, "https://evil.example.com"
    with pytest.raises(KeysUnavailable, match="names issuer"):
        await served.cache().key("k1")
    dead = JwksCache(ISSUER, f"http://127.0.0.1:{free_port()}/jwks", timeout=2)
    with pytest.raises(KeysUnavailable, match="cannot reach"):
        await dead.key("k1")


@pytest.mark.anyio
async def test_expired_keys_that_cannot_be_refetched_fail_closed():
    served = _Issuer(Issuer())
    cache = served.cache(max_age=0, min_refresh=0)
    await cache.key("k1")
    served.up = False
    with pytest.raises(KeysUnavailable):
        await cache.key("k1")


@pytest.mark.anyio
async def test_the_front_answers_503_when_the_keys_are_out_of_reach_and_static_tokens_still_work(tmp_path: Path):
    issuer = Issuer()
    issuer.url = "http://127.0.0.1:1"
    oauth = {"issuer": issuer.url, "jwks_uri": f"http://127.0.0.1:{free_port()}/jwks", "required_scopes": [SCOPE]}
    nexus = {"state_dir": str(tmp_path / "state"), "embedder": "hashing", "auth_tokens": ["static"], "oauth": oauth}
    (tmp_path / "gateway.json").write_text(json.dumps({"mcpServers": {}, "nexus": nexus}))
    app = build_http_app(Gateway(load_config(tmp_path / "gateway.json")))
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as http:
        token = issuer.mint(aud="http://127.0.0.1")
        refused = await http.post("/mcp", json=body, headers={"Authorization": f"Bearer {token}"})
        again = await http.post("/mcp", json=body, headers={"Authorization": f"Bearer {token}"})
        static = await http.get("/healthz", headers={"Authorization": "Bearer static"})
    assert refused.status_code == again.status_code == 503
    assert refused.headers["retry-after"] == "10"
    assert refused.json()["error"] == "temporarily_unavailable"
    assert token not in refused.text
    assert static.status_code == 200


@pytest.mark.anyio
@pytest.mark.parametrize("algorithm", ["none", "HS256"])
async def test_a_token_of_an_unaccepted_algorithm_is_rejected_before_any_key_is_fetched(algorithm: str):
    import jwt
    from cryptography.hazmat.primitives import serialization

    from nexus_gateway.config import OAuthSettings
    from nexus_gateway.server.oauth import JwtVerifier, TokenRejected

    issuer = Issuer()
    served = _Issuer(issuer)
    public = issuer.keys["k1"].public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.PKCS1)
    claims = {"iss": ISSUER, "aud": "https://gw.example.com", "exp": 2**40, "scope": SCOPE}
    # the classic confusion: the issuer's public key used as an HMAC secret
    forged = jwt.encode(claims, None if algorithm == "none" else public.hex(), algorithm=algorithm)
    verifier = JwtVerifier(OAuthSettings(issuer=ISSUER), served.cache())
    with pytest.raises(TokenRejected, match="algorithm"):
        await verifier.verify(forged, ["https://gw.example.com"])
    assert served.requests == []
