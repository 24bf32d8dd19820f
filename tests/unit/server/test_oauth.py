"""OAuth resource server: every rule of docs/security.md#oauth against a local issuer run in the test session.

The issuer's RSA and EC keys are made here; its metadata (RFC 8414) and key set are served on loopback by a
tiny HTTP server, which can rotate its keys, go down and come back. Verification is the shipped code
(``server/oauth.py``) end to end: discovery, the fetch, the cache; only the clock is moved by the tests.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
import warnings
from collections import Counter
from collections.abc import Iterator
from contextlib import AsyncExitStack
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from cuedrecall.access import load_acl
from cuedrecall.config import Settings
from cuedrecall.errors import SettingsError
from cuedrecall.server.mcp import http_app
from cuedrecall.server.oauth import (
    MIN_REFETCH_SECS,
    OAuthConfig,
    TokenRefused,
    TokenVerifier,
    get_json,
    metadata_urls,
    oauth_config,
)
from tests.conftest import make_settings, open_memory, serving, snapshot

RESOURCE = "http://127.0.0.1:8402/mcp"  # a loopback resource may be http; anywhere else it must be https
STATIC_TOKEN = "static-token-of-reporting"


# -- the local issuer ---------------------------------------------------------------------------------


class Key:
    """A signing key made for the test, and its public JWK."""

    def __init__(self, kid: str, kind: str = "RSA") -> None:
        self.kid = kid
        if kind == "RSA":
            self.private: Any = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            self.alg = "RS256"
            self.jwk: dict[str, Any] = RSAAlgorithm.to_jwk(self.private.public_key(), as_dict=True)  # type: ignore[assignment]
        else:
            self.private = ec.generate_private_key(ec.SECP256R1())
            self.alg = "ES256"
            self.jwk = ECAlgorithm.to_jwk(self.private.public_key(), as_dict=True)  # type: ignore[assignment]
        self.jwk.update({"kid": kid, "use": "sig", "alg": self.alg})

    def public_pem(self) -> bytes:
        return self.private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )


@pytest.fixture(scope="module")
def keys() -> dict[str, Key]:
    return {"rsa-1": Key("rsa-1"), "rsa-2": Key("rsa-2"), "ec-1": Key("ec-1", "EC"), "foreign": Key("rsa-1")}


class Issuer:
    """An authorization server's public face on 127.0.0.1: its RFC 8414 metadata and its key set."""

    def __init__(self, keys: dict[str, Key], path: str = "", oidc_only: bool = False) -> None:
        self.keys = keys
        self.published = ["rsa-1", "ec-1"]
        self.up = True
        self.hits: Counter[str] = Counter()
        self.path, self.oidc_only = path, oidc_only
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                issuer.hits[self.path] += 1
                status, body = issuer.answer(self.path)
                data = json.dumps(body).encode()
                self.send_response(status)
                if status == 302:
                    self.send_header("Location", issuer.url + "/jwks")
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.url = self.origin + path  # the issuer identifier
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def answer(self, path: str) -> tuple[int, Any]:
        if not self.up:
            return 503, {"error": "down"}
        metadata = {"issuer": self.url, "jwks_uri": self.origin + "/jwks", "token_endpoint": self.url + "/token"}
        if path == "/.well-known/oauth-authorization-server" + self.path and not self.oidc_only:
            return 200, metadata
        if path == self.path + "/.well-known/openid-configuration" and self.oidc_only:
            return 200, metadata
        if path == "/jwks":
            return 200, {"keys": [self.keys[kid].jwk for kid in self.published]}
        if path == "/redirect":
            return 302, {}
        if path == "/big":
            return 200, {"keys": [], "padding": "x" * 300_000}
        return 404, {"error": "not found"}

    def token(self, key: str = "rsa-1", *, headers: dict[str, Any] | None = None, **claims: Any) -> str:
        signer = self.keys[key]
        now = int(time.time())
        body: dict[str, Any] = {
            "iss": self.url,
            "aud": RESOURCE,
            "sub": "user-1",
            "client_id": "agent-app",
            "iat": now,
            "exp": now + 300,
            "scope": "memory",
            **claims,
        }
        body = {name: value for name, value in body.items() if value is not None}
        return jwt.encode(body, signer.private, algorithm=signer.alg, headers={"kid": signer.kid, **(headers or {})})

    @property
    def jwks_fetches(self) -> int:
        return self.hits["/jwks"]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def issuer(keys: dict[str, Key]) -> Iterator[Issuer]:
    server = Issuer(keys)
    yield server
    server.close()


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _config(issuer: Issuer, **changes: Any) -> OAuthConfig:
    return replace(OAuthConfig(resource=RESOURCE, issuers=(issuer.url,), scopes=("memory",)), **changes)


def _verifier(issuer: Issuer, clock: Clock | None = None, **changes: Any) -> TokenVerifier:
    return TokenVerifier(_config(issuer, **changes), now=clock or Clock())


def _refused(verifier: TokenVerifier, token: str) -> TokenRefused:
    with pytest.raises(TokenRefused) as caught:
        verifier.verify(token)
    return caught.value


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unsigned(header: dict[str, Any], claims: dict[str, Any], signature: bytes = b"") -> str:
    return f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}.{_b64(signature)}"


# -- verification -------------------------------------------------------------------------------------


def test_a_valid_token_calls_as_its_issuer_namespaced_client_or_subject(issuer: Issuer) -> None:
    verifier = _verifier(issuer)
    identity = verifier.verify(issuer.token())
    assert identity.principal_id == f"oauth:{issuer.url}:agent-app"
    assert (identity.subject, identity.client, identity.scopes) == ("user-1", "agent-app", {"memory"})
    assert verifier.verify(issuer.token("ec-1")).principal_id == f"oauth:{issuer.url}:agent-app"  # EC keys too
    # azp stands for client_id (OpenID Connect providers); by subject the name is oauth:<issuer>#<sub>
    assert verifier.verify(issuer.token(client_id=None, azp="other-app")).principal_id.endswith(":other-app")
    assert verifier.verify(issuer.token(client_id=None, cid="okta-app")).client == "okta-app"  # Okta's claim
    assert issuer.jwks_fetches == 1  # discovered and fetched once, then cached
    by_subject = _verifier(issuer, principal="subject")
    assert by_subject.verify(issuer.token()).principal_id == f"oauth:{issuer.url}#user-1"
    # a token naming no client cannot call as one
    assert "no client" in _refused(verifier, issuer.token(client_id=None)).description


def test_an_expired_or_not_yet_valid_token_is_refused_within_a_small_leeway(issuer: Issuer) -> None:
    verifier = _verifier(issuer)
    now = int(time.time())
    assert _refused(verifier, issuer.token(exp=now - 120)).description == "the token has expired"
    verifier.verify(issuer.token(exp=now - 10))  # within the leeway (clock skew)
    assert _refused(verifier, issuer.token(nbf=now + 120)).description == "the token is not valid yet"
    verifier.verify(issuer.token(nbf=now + 10))
    assert "'exp'" in _refused(verifier, issuer.token(exp=None)).description  # a token that never expires


def test_a_token_for_another_audience_is_refused(issuer: Issuer) -> None:
    verifier = _verifier(issuer)
    for audience in ("https://other.example.com/mcp", RESOURCE + "/", ["https://other.example.com/mcp"]):
        refused = _refused(verifier, issuer.token(aud=audience))
        assert (refused.status, refused.error) == (401, "invalid_token")
        assert "not meant for this resource" in refused.description
    verifier.verify(issuer.token(aud=["https://other.example.com/mcp", RESOURCE]))  # one of several audiences
    assert "'aud'" in _refused(verifier, issuer.token(aud=None)).description


def test_a_token_from_another_issuer_is_refused_without_fetching_anything(issuer: Issuer, keys: dict[str, Key]) -> None:
    verifier = _verifier(issuer)
    other = Issuer(keys)
    try:
        refused = _refused(verifier, other.token())
        assert "issuer is not one this server accepts" in refused.description
        assert sum(other.hits.values()) == 0 and sum(issuer.hits.values()) == 0
    finally:
        other.close()
    # a key the issuer never published, with a kid it does publish, naming our issuer: the signature fails
    forged = issuer.token("foreign")
    assert _refused(verifier, forged).description == "the token's signature or claims do not verify"


def test_a_rotated_key_is_fetched_once_and_a_retired_one_is_refused(issuer: Issuer) -> None:
    clock = Clock()
    verifier = _verifier(issuer, clock)
    old = issuer.token("rsa-1")
    verifier.verify(old)
    assert issuer.jwks_fetches == 1
    issuer.published = ["rsa-2", "ec-1"]  # the issuer rotates: rsa-2 in, rsa-1 retired
    clock.t += MIN_REFETCH_SECS
    for _ in range(5):
        assert verifier.verify(issuer.token("rsa-2")).client == "agent-app"
    assert issuer.jwks_fetches == 2  # the new kid fetched the set once
    assert "does not publish" in _refused(verifier, old).description  # the retired key no longer verifies


def test_an_unknown_kid_triggers_one_refetch_rate_limited(issuer: Issuer) -> None:
    clock = Clock()
    verifier = _verifier(issuer, clock)
    verifier.verify(issuer.token())
    clock.t += MIN_REFETCH_SECS
    for number in range(20):
        token = issuer.token(headers={"kid": f"unknown-{number}"})
        refused = _refused(verifier, token)
        assert (refused.status, refused.error) == (401, "invalid_token") and "does not publish" in refused.description
    assert issuer.jwks_fetches == 2  # one refetch for twenty unknown kids
    clock.t += MIN_REFETCH_SECS / 2
    _refused(verifier, issuer.token(headers={"kid": "unknown-again"}))
    assert issuer.jwks_fetches == 2
    clock.t += MIN_REFETCH_SECS
    _refused(verifier, issuer.token(headers={"kid": "unknown-later"}))
    assert issuer.jwks_fetches == 3


def test_a_flood_of_unknown_kids_at_once_costs_one_fetch(issuer: Issuer) -> None:
    from concurrent.futures import ThreadPoolExecutor

    clock = Clock()
    verifier = _verifier(issuer, clock)
    verifier.verify(issuer.token())
    clock.t += MIN_REFETCH_SECS
    tokens = [issuer.token(headers={"kid": f"flood-{number}"}) for number in range(32)]
    with ThreadPoolExecutor(16) as pool:
        refused = list(pool.map(lambda token: _refused(verifier, token), tokens))
    assert {(r.status, r.error) for r in refused} == {(401, "invalid_token")}
    assert issuer.jwks_fetches == 2
    verifier.verify(issuer.token())  # the keys held still serve


def test_a_key_shorter_than_2048_bits_is_refused(keys: dict[str, Key]) -> None:
    short = Key("short")
    short.private = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    short.jwk = {**RSAAlgorithm.to_jwk(short.private.public_key(), as_dict=True), "kid": "short", "alg": "RS256"}  # type: ignore[dict-item]
    weak = Issuer({**keys, "short": short})
    try:
        weak.published = ["short"]
        with warnings.catch_warnings():  # PyJWT warns on signing with the short key: that is the point
            warnings.simplefilter("ignore")
            token = weak.token("short")
        assert _refused(_verifier(weak), token).description == "the token's signature or claims do not verify"
    finally:
        weak.close()


def test_a_token_without_a_required_scope_is_refused_403(issuer: Issuer) -> None:
    verifier = _verifier(issuer, scopes=("memory", "memory.write"))
    refused = _refused(verifier, issuer.token(scope="memory"))
    assert (refused.status, refused.error) == (403, "insufficient_scope") and "memory.write" in refused.description
    verifier.verify(issuer.token(scope="openid memory.write memory"))
    verifier.verify(issuer.token(scope=None, scp=["memory", "memory.write"]))  # Okta's and Entra's scp claim
    assert _refused(verifier, issuer.token(scope=None)).status == 403
    _verifier(issuer, scopes=()).verify(issuer.token(scope=None))  # no scope required: none needed


def test_alg_none_and_hmac_tokens_are_refused(issuer: Issuer, keys: dict[str, Key]) -> None:
    verifier = _verifier(issuer)
    claims = jwt.decode(issuer.token(), options={"verify_signature": False})
    unsigned = _unsigned({"alg": "none", "typ": "JWT", "kid": "rsa-1"}, claims)
    assert "'none'" in _refused(verifier, unsigned).description
    for alg, digest in (("HS256", hashlib.sha256), ("HS512", hashlib.sha512)):
        # the algorithm confusion: the issuer's public key used as an HMAC secret
        signing_input = _unsigned({"alg": alg, "typ": "JWT", "kid": "rsa-1"}, claims).rsplit(".", 1)[0]
        mac = hmac.new(keys["rsa-1"].public_pem(), signing_input.encode(), digest).digest()
        refused = _refused(verifier, f"{signing_input}.{_b64(mac)}")
        assert refused.error == "invalid_token" and alg in refused.description
    # an RSA-signed token relabelled as another RSA algorithm, or with a critical header, does not pass either
    assert _refused(verifier, issuer.token(headers={"crit": ["exp"]})).status == 401
    assert issuer.jwks_fetches == 0  # none of these reached the key set


@pytest.mark.parametrize(
    "token",
    ["", "garbage", "a.b.c", "a.b", "....", "eyJhbGciOiJSUzI1NiJ9.e30.", "é.é.é", "x" * 5000 + ".y.z"],
)
def test_a_malformed_token_is_refused_never_raising(issuer: Issuer, token: str) -> None:
    refused = _refused(_verifier(issuer), token)
    assert (refused.status, refused.error) == (401, "invalid_token")


def test_a_delegated_token_is_refused_unless_allowed(issuer: Issuer) -> None:
    delegated = issuer.token(act={"sub": "some-agent"})
    refused = _refused(_verifier(issuer), delegated)
    assert refused.error == "invalid_token" and "delegation (act)" in refused.description
    identity = _verifier(issuer, allow_delegation=True).verify(delegated)
    assert identity.actor == {"sub": "some-agent"} and identity.principal_id.endswith(":agent-app")


def test_an_issuer_outage_keeps_cached_keys_for_their_lifetime_then_fails_closed(issuer: Issuer) -> None:
    clock = Clock()
    verifier = _verifier(issuer, clock, jwks_cache_secs=600)
    verifier.verify(issuer.token())
    issuer.up = False
    clock.t += 400  # past the refresh point: a refetch is tried, fails, and the keys held still count
    verifier.verify(issuer.token())
    verifier.verify(issuer.token("ec-1"))
    attempts = sum(issuer.hits.values())
    clock.t += MIN_REFETCH_SECS / 2
    verifier.verify(issuer.token())  # within the rate limit: no new attempt
    assert sum(issuer.hits.values()) == attempts
    clock.t = 1000 + 601  # 601 s after the fetch: the keys' time is up, and the issuer is still down
    refused = _refused(verifier, issuer.token())
    assert (refused.status, refused.error) == (503, "temporarily_unavailable")
    assert _refused(verifier, issuer.token("ec-1")).status == 503
    issuer.up = True  # back: the next attempt (after the rate limit) fetches, and tokens pass again
    clock.t += MIN_REFETCH_SECS
    verifier.verify(issuer.token())


def test_an_issuer_that_cannot_be_reached_at_all_refuses_503(issuer: Issuer) -> None:
    issuer.close()  # connection refused from the first try
    refused = _refused(_verifier(issuer), issuer.token())
    assert (refused.status, refused.error) == (503, "temporarily_unavailable")


def test_keys_are_found_by_openid_discovery_or_the_configured_uri(keys: dict[str, Key]) -> None:
    oidc = Issuer(keys, path="/realms/team", oidc_only=True)  # Keycloak's shape: an issuer with a path
    try:
        assert metadata_urls(oidc.url)[0] == oidc.origin + "/.well-known/oauth-authorization-server/realms/team"
        _verifier(oidc).verify(oidc.token())
        assert oidc.hits["/realms/team/.well-known/openid-configuration"] == 1
        before = sum(oidc.hits.values())
        _verifier(oidc, jwks_uri=oidc.origin + "/jwks").verify(oidc.token())  # no discovery
        assert sum(oidc.hits.values()) == before + 1 and oidc.jwks_fetches == 2
    finally:
        oidc.close()


def test_metadata_naming_another_issuer_is_not_used(keys: dict[str, Key]) -> None:
    liar = Issuer(keys)
    try:
        liar.answer = lambda path: (200, {"issuer": "https://evil.example.com", "jwks_uri": liar.origin + "/jwks"})  # type: ignore[method-assign]
        assert _refused(_verifier(liar), liar.token()).status == 503
        assert liar.jwks_fetches == 0
    finally:
        liar.close()


def test_a_fetch_follows_no_redirect_reads_no_huge_document_and_reaches_no_plain_http_host(issuer: Issuer) -> None:
    assert get_json(issuer.origin + "/jwks")["keys"]
    assert get_json(issuer.origin + "/redirect") is None
    assert get_json(issuer.origin + "/big") is None
    assert get_json("http://example.com/jwks") is None  # plain http only to a loopback host, and nothing sent
    assert get_json("file:///etc/passwd") is None


# -- settings -----------------------------------------------------------------------------------------


def test_oauth_is_off_unless_configured_and_cpersonas_names_are_read() -> None:
    assert oauth_config(Settings.from_env({})) is None
    settings = Settings.from_env(
        {
            "CPERSONA_OAUTH_RESOURCE": "https://memory.example.com/mcp",
            "CPERSONA_OAUTH_AUTHORIZATION_SERVERS": "https://id.example.com/a, https://id.example.com/b",
            "CPERSONA_OAUTH_SCOPES": "memory openid",
            "CUEDRECALL_OAUTH_PRINCIPAL": "subject",
        }
    )
    config = oauth_config(settings)
    assert config is not None
    assert config.issuers == ("https://id.example.com/a", "https://id.example.com/b")
    assert config.scopes == ("memory", "openid") and config.principal == "subject"
    assert config.metadata_url == "https://memory.example.com/.well-known/oauth-protected-resource/mcp"


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"CUEDRECALL_OAUTH_RESOURCE": "https://m.example.com/mcp"}, "AUTHORIZATION_SERVERS"),
        ({"CUEDRECALL_OAUTH_AUTHORIZATION_SERVERS": "https://id.example.com"}, "OAUTH_RESOURCE"),
        ({"CUEDRECALL_OAUTH_SCOPES": "memory"}, "OAuth is off"),
        (
            {
                "CUEDRECALL_OAUTH_RESOURCE": "http://m.example.com/mcp",
                "CUEDRECALL_OAUTH_AUTHORIZATION_SERVERS": "https://i",
            },
            "https://",
        ),
        (
            {
                "CUEDRECALL_OAUTH_RESOURCE": "https://m/mcp",
                "CUEDRECALL_OAUTH_AUTHORIZATION_SERVERS": "http://id.example",
            },
            "https://",
        ),
        (
            {
                "CUEDRECALL_OAUTH_RESOURCE": "https://m/mcp",
                "CUEDRECALL_OAUTH_AUTHORIZATION_SERVERS": "https://a https://b",
                "CUEDRECALL_OAUTH_JWKS_URI": "https://a/keys",
            },
            "one key set URL",
        ),
        (
            {
                "CUEDRECALL_OAUTH_RESOURCE": "https://m/mcp",
                "CUEDRECALL_OAUTH_AUTHORIZATION_SERVERS": "https://a",
                "CUEDRECALL_OAUTH_SCOPES": 'mem"ory',
            },
            "is not a scope",
        ),
    ],
)
def test_half_or_unsafe_oauth_settings_stop_startup_naming_the_variable(environ: dict[str, str], named: str) -> None:
    with pytest.raises(SettingsError, match=named):
        oauth_config(Settings.from_env(environ))


def test_oauth_without_an_acl_file_stops_the_http_app(tmp_path: Path, issuer: Issuer) -> None:
    settings = make_settings(oauth_resource=RESOURCE, oauth_authorization_servers=issuer.url)
    with open_memory(tmp_path / "m.db", settings=settings) as memory, pytest.raises(SettingsError, match="ACL file"):
        http_app(memory)


def test_an_oauth_client_in_the_acl_file_has_no_token(tmp_path: Path) -> None:
    path = tmp_path / "acl.json"
    path.write_text(json.dumps({"clients": [{"client_id": "oauth:https://i:x", "token": "t", "grants": {}}]}))
    with pytest.raises(SettingsError, match="must not have a token"):
        load_acl(path)


# -- over HTTP ----------------------------------------------------------------------------------------


@pytest.fixture
def served(tmp_path: Path, issuer: Issuer) -> Iterator[tuple[Any, str, Issuer]]:
    """An OAuth server: agent-app may read and write agent "a"; a static-token client may read "b"."""
    acl = {
        "clients": [
            {"client_id": f"oauth:{issuer.url}:agent-app", "token": None, "grants": {"a": "read-write"}},
            {"client_id": "reporting", "token": STATIC_TOKEN, "grants": {"b": "read"}},
        ]
    }
    (tmp_path / "acl.json").write_text(json.dumps(acl))
    settings = make_settings(
        acl_file=str(tmp_path / "acl.json"),
        oauth_resource=RESOURCE,
        oauth_authorization_servers=issuer.url,
        oauth_scopes="memory",
    )
    with open_memory(tmp_path / "m.db", settings=settings) as memory:
        memory.call("store", {"agent_id": "b", "content": "the blue notebook is in the drawer"})
        with serving(memory) as url:
            yield memory, url, issuer


CALL = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "store", "arguments": {"agent_id": "a", "content": "sneaky"}},
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def test_the_metadata_document_is_served_without_a_token(served: tuple[Any, str, Issuer]) -> None:
    _, url, issuer = served
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        response = httpx.get(url + path, timeout=10)
        assert response.status_code == 200, path
        assert response.json() == {
            "resource": RESOURCE,
            "authorization_servers": [issuer.url],
            "bearer_methods_supported": ["header"],
            "resource_name": "cuedrecall",
            "scopes_supported": ["memory"],
        }
        assert "access-control-allow-origin" not in response.headers  # CORS stays closed
    assert httpx.post(url + "/.well-known/oauth-protected-resource", timeout=10).status_code == 405
    # only those exact paths are public
    assert httpx.get(url + "/.well-known/oauth-protected-resource/mcp/../x", timeout=10).status_code in (401, 404)
    assert httpx.get(url + "/.well-known/oauth-protected-resource/other", timeout=10).status_code == 401


def test_a_401_names_the_resource_metadata_and_the_error_where_it_applies(served: tuple[Any, str, Issuer]) -> None:
    memory, url, issuer = served
    before = snapshot(memory)
    metadata = 'resource_metadata="http://127.0.0.1:8402/.well-known/oauth-protected-resource/mcp"'
    response = httpx.post(url + "/mcp", json=CALL, headers=HEADERS, timeout=10)  # no token: no error code
    assert response.status_code == 401 and response.json() == {"error": "unauthorized"}
    assert response.headers["www-authenticate"] == f'Bearer scope="memory", {metadata}'
    cases = [
        ("wrong-static-token", 401, "invalid_token"),
        (issuer.token(exp=int(time.time()) - 600), 401, "invalid_token"),
        (issuer.token(aud="https://other.example.com"), 401, "invalid_token"),
        (issuer.token(scope="openid"), 403, "insufficient_scope"),
        (issuer.token(act={"sub": "x"}), 401, "invalid_token"),
        ("a.b.c", 401, "invalid_token"),
    ]
    for token, status, error in cases:
        response = httpx.post(url + "/mcp", json=CALL, headers={**HEADERS, "Authorization": f"Bearer {token}"})
        assert response.status_code == status, (token, response.text)
        challenge = response.headers["www-authenticate"]
        assert challenge.startswith(f'Bearer error="{error}", error_description="') and challenge.endswith(metadata)
        assert response.json()["error"] == error
    assert snapshot(memory) == before


def test_oauth_off_keeps_the_bare_challenge_and_no_metadata(tmp_path: Path) -> None:
    with open_memory(tmp_path / "m.db", settings=make_settings(auth_token="t")) as memory, serving(memory) as url:
        response = httpx.get(url + "/.well-known/oauth-protected-resource", timeout=10)
        assert response.status_code == 401 and response.headers["www-authenticate"] == "Bearer"


class _Session:
    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token

    async def __aenter__(self) -> ClientSession:
        self.stack = AsyncExitStack()
        http = await self.stack.enter_async_context(
            create_mcp_http_client(headers={"Authorization": f"Bearer {self.token}"})
        )
        read, write, _ = await self.stack.enter_async_context(
            streamable_http_client(self.url + "/mcp", http_client=http)
        )
        session = await self.stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        return session

    async def __aexit__(self, *exc: object) -> None:
        await self.stack.aclose()


async def _call(session: ClientSession, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    return json.loads(result.content[0].text)  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_an_mcp_call_with_a_valid_token_reaches_only_the_granted_agent(served: tuple[Any, str, Issuer]) -> None:
    memory, url, issuer = served
    principal = f"oauth:{issuer.url}:agent-app"
    async with _Session(url, issuer.token()) as app, _Session(url, STATIC_TOKEN) as reporting:
        stored = await _call(app, "store", {"agent_id": "a", "content": "the red kettle is on the stove"})
        assert stored["result"] == "stored"
        found = await _call(app, "recall", {"agent_id": "a", "query": "red kettle"})
        assert found["messages"][-1]["ref"] == stored["ref"]
        for tool, arguments in (
            ("recall", {"agent_id": "b", "query": "notebook"}),
            ("store", {"agent_id": "b", "content": "sneaky"}),
            ("list_memories", {"agent_id": ""}),
        ):
            refused = await _call(app, tool, arguments)
            assert (refused["error"], refused["client_id"]) == ("permission_denied", principal), (tool, refused)
        # the static-token client of the same file obeys the same rule
        listing = await _call(reporting, "list_memories", {"agent_id": "b"})
        assert [m["content"] for m in listing["memories"]] == ["the blue notebook is in the drawer"]
        assert (await _call(reporting, "recall", {"agent_id": "a", "query": "kettle"}))["error"] == "permission_denied"
    # a caller the issuer vouches for but the ACL file does not name is granted nothing
    async with _Session(url, issuer.token(client_id="stranger-app")) as stranger:
        refused = await _call(stranger, "recall", {"agent_id": "a", "query": "kettle"})
        assert (refused["error"], refused["client_id"]) == ("permission_denied", f"oauth:{issuer.url}:stranger-app")
    assert [m["content"] for m in memory.list_memories(agent_id="a")["memories"]] == ["the red kettle is on the stove"]
    assert [m["content"] for m in memory.list_memories(agent_id="b")["memories"]] == [
        "the blue notebook is in the drawer"
    ]


def test_the_explorer_keeps_its_own_token_whatever_oauth_accepts(served: tuple[Any, str, Issuer]) -> None:
    from starlette.testclient import TestClient

    from cuedrecall.ui.app import TOKEN_HEADER, make_app

    memory, _, issuer = served
    explorer = TestClient(make_app(memory, "explorer-token"), base_url="http://127.0.0.1")
    signed_in = {"Authorization": f"Bearer {issuer.token()}"}
    assert explorer.get("/api/agents", headers=signed_in).status_code == 403
    assert explorer.get("/api/agents", headers={TOKEN_HEADER: issuer.token()}).status_code == 403
    assert explorer.get("/api/agents", headers={TOKEN_HEADER: "explorer-token"}).status_code == 200
