"""OAuth 2.1 resource server: protected-resource metadata (RFC 9728) and JWT access tokens from the team's issuer.

Off unless ``CUEDRECALL_OAUTH_RESOURCE`` and ``CUEDRECALL_OAUTH_AUTHORIZATION_SERVERS`` are set (CPersona's
``CPERSONA_OAUTH_*`` names too), and then only beside an ACL file: a verified token calls as the principal
``oauth:<issuer>:<client_id>`` (or ``oauth:<issuer>#<sub>``) with the grants the ACL file gives that name, none
when it names none. The rules, each with its test in ``tests/unit/server/test_oauth.py``, are in docs/security.md#oauth.

Nothing here reaches the network but to fetch a configured issuer's metadata and key set, over HTTPS (plain HTTP
to a loopback issuer only), with a timeout and a size bound; what a token names (``jku``, ``x5u``, an issuer
outside the list) is never fetched.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import jwt
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from cuedrecall.access import Acl, Principal
from cuedrecall.config import Settings
from cuedrecall.errors import SettingsError

log = logging.getLogger("cuedrecall")

# Asymmetric signatures only, named: PyJWT refuses any algorithm outside the list, which rules out "none" and the
# HMAC confusion (a public key replayed as a shared secret).
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
REQUIRED_CLAIMS = ("exp", "iss", "aud", "sub")
# where a token names its client, first found wins: RFC 9068, OpenID Connect, Okta, Entra ID v1
CLIENT_CLAIMS = ("client_id", "azp", "cid", "appid")
LEEWAY_SECS = 30.0  # clock skew allowed on exp, nbf and iat
MIN_REFETCH_SECS = 30.0  # at most one fetch of an issuer's keys this often, whatever unknown kid a caller sends
FETCH_TIMEOUT_SECS = 5.0
LOCK_WAIT_SECS = 30.0  # the longest a caller waits for another's fetch when no keys that count are held
MAX_DOCUMENT_BYTES = 256 * 1024  # a key set or metadata document is a few KiB
METADATA_PATH = "/.well-known/oauth-protected-resource"
CLIENT, SUBJECT = "client", "subject"
_SCOPE_CHARS = frozenset(chr(c) for c in range(0x21, 0x7F)) - {'"', "\\"}  # RFC 6749 scope-token characters


# -- configuration ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OAuthConfig:
    """The OAuth settings, checked: see ``oauth_config``."""

    resource: str
    issuers: tuple[str, ...]
    jwks_uri: str = ""
    scopes: tuple[str, ...] = ()
    principal: str = CLIENT
    allow_delegation: bool = False
    jwks_cache_secs: float = 3600.0

    @property
    def metadata_url(self) -> str:
        """Where the metadata document is (RFC 9728: the well-known path put before the resource's path)."""
        parts = urlsplit(self.resource)
        return urlunsplit((parts.scheme, parts.netloc, METADATA_PATH + parts.path.rstrip("/"), "", ""))

    @property
    def metadata_paths(self) -> frozenset[str]:
        """The request paths the document is served at: RFC 9728's, and the bare well-known path."""
        return frozenset({urlsplit(self.metadata_url).path, METADATA_PATH})

    def metadata(self) -> dict[str, Any]:
        """The protected-resource metadata document (RFC 9728), the configured strings as written."""
        document: dict[str, Any] = {
            "resource": self.resource,
            "authorization_servers": list(self.issuers),
            "bearer_methods_supported": ["header"],
            "resource_name": "cuedrecall",
        }
        if self.scopes:
            document["scopes_supported"] = list(self.scopes)
        return document

    def challenge(self, error: str = "", description: str = "") -> str:
        """The ``WWW-Authenticate`` value: where the metadata is, the scopes, and the error when there is one."""
        parts = []
        if error:
            parts.append(f'error="{error}"')
            if description:
                parts.append(f'error_description="{_quotable(description)}"')
        if self.scopes:
            parts.append(f'scope="{" ".join(self.scopes)}"')
        parts.append(f'resource_metadata="{self.metadata_url}"')
        return "Bearer " + ", ".join(parts)


def oauth_config(settings: Settings) -> OAuthConfig | None:
    """The checked OAuth settings, or None when OAuth is off (neither the resource nor an issuer set).

    Half a configuration, a URL that is not https (or http to a loopback host), a scope that cannot be written in
    a header, or a key set URL beside several issuers is a SettingsError naming the variable.
    """
    resource = settings.oauth_resource.strip()
    issuers = tuple(dict.fromkeys(_items(settings.oauth_authorization_servers)))
    if not resource and not issuers:
        for name in ("oauth_jwks_uri", "oauth_scopes"):
            if getattr(settings, name).strip():
                raise SettingsError(
                    f"{_var(name)} is set but OAuth is off: set {_var('oauth_resource')} and "
                    f"{_var('oauth_authorization_servers')} too"
                )
        return None
    if not resource:
        raise SettingsError(
            f"{_var('oauth_authorization_servers')} is set but {_var('oauth_resource')} is not: "
            "OAuth needs this server's resource URL (the audience its tokens name)"
        )
    if not issuers:
        raise SettingsError(
            f"{_var('oauth_resource')} is set but {_var('oauth_authorization_servers')} is not: "
            "OAuth needs the issuer URL(s) whose tokens are accepted"
        )
    _check_url(resource, "oauth_resource", resource_id=True)
    for issuer in issuers:
        _check_url(issuer, "oauth_authorization_servers")
    jwks_uri = settings.oauth_jwks_uri.strip()
    if jwks_uri:
        _check_url(jwks_uri, "oauth_jwks_uri")
        if len(issuers) != 1:
            raise SettingsError(
                f"{_var('oauth_jwks_uri')} is set beside {len(issuers)} authorization servers: one "
                "key set URL cannot be every issuer's (leave it unset: each issuer's is discovered)"
            )
    scopes = tuple(dict.fromkeys(_items(settings.oauth_scopes)))
    for scope in scopes:
        if not set(scope) <= _SCOPE_CHARS:
            raise SettingsError(
                f"{_var('oauth_scopes')}: {scope!r} is not a scope (printable ASCII, no quote or backslash)"
            )
    return OAuthConfig(
        resource=resource,
        issuers=issuers,
        jwks_uri=jwks_uri,
        scopes=scopes,
        principal=settings.oauth_principal,
        allow_delegation=settings.oauth_allow_delegation,
        jwks_cache_secs=settings.oauth_jwks_cache_secs,
    )


def _var(name: str) -> str:
    return f"CUEDRECALL_{name.upper()} (or CPERSONA_{name.upper()})"


def _items(raw: str) -> list[str]:
    """A comma- or space-separated setting (CPersona accepts both) as its items."""
    return raw.replace(",", " ").split()


def _quotable(text: str) -> str:
    return "".join(ch for ch in text if ch in _SCOPE_CHARS or ch == " ")


def _loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def allowed_url(url: str) -> bool:
    """https, or http to a loopback host (a test's or a sidecar's issuer); no credentials in it."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        _ = parts.port  # a malformed port raises
    except ValueError:
        return False
    if not host or parts.username is not None or parts.password is not None:
        return False
    return parts.scheme == "https" or (parts.scheme == "http" and _loopback(host))


def _check_url(url: str, name: str, resource_id: bool = False) -> None:
    if not allowed_url(url):
        raise SettingsError(
            f"{_var(name)}={url!r} is not valid: expected an https:// URL (http:// only to a loopback host)"
        )
    parts = urlsplit(url)
    if parts.fragment or (resource_id and parts.query):
        raise SettingsError(f"{_var(name)}={url!r} is not valid: an identifier has no fragment or query")


# -- verification -----------------------------------------------------------------------------------------


class TokenRefused(Exception):
    """Why a bearer token is not accepted: the HTTP status, the RFC 6750 error code and a short description."""

    def __init__(self, description: str, error: str = "invalid_token", status: int = 401) -> None:
        super().__init__(description)
        self.description, self.error, self.status = description, error, status


@dataclass(frozen=True)
class Identity:
    """Who a verified token speaks for."""

    principal_id: str  # the ACL file's client_id for it
    issuer: str
    subject: str
    client: str
    scopes: frozenset[str]
    actor: Mapping[str, Any] | None = None  # the delegation (act) claim, when allowed


@dataclass
class _KeySet:
    jwks: dict[str, list[dict[str, Any]]]  # kid ("" when none) -> the keys published under it
    fetched_at: float
    built: dict[tuple[str, str], jwt.PyJWK] = field(default_factory=dict)


@dataclass
class _Issuer:
    keys: _KeySet | None = None
    jwks_uri: str = ""  # discovered from its metadata (forgotten when the key set cannot be read)
    last_attempt: float = -math.inf
    lock: threading.Lock = field(default_factory=threading.Lock)


Fetch = Callable[[str], Any]  # a URL -> its JSON, or None when it cannot be read


class TokenVerifier:
    """Verifies JWT access tokens against the configured issuers' key sets, fetched and cached with rotation.

    Keys are trusted for ``jwks_cache_secs`` from their fetch; past half of that a refetch is tried (at most
    one per ``MIN_REFETCH_SECS``), and a token naming a ``kid`` not held triggers one too. Through an issuer
    outage the keys held keep working until their time is up; then every token is refused (503) until a fetch
    succeeds. ``now`` is the monotonic clock (tests move it); ``fetch`` the one way to the network.
    """

    def __init__(
        self,
        config: OAuthConfig,
        *,
        now: Callable[[], float] = time.monotonic,
        fetch: Fetch | None = None,
        min_refetch_secs: float = MIN_REFETCH_SECS,
    ) -> None:
        self.config = config
        self.now = now
        self.fetch: Fetch = fetch or get_json
        self.min_refetch_secs = min_refetch_secs
        self.issuers = {issuer: _Issuer() for issuer in config.issuers}

    def verify(self, token: str) -> Identity:
        """The identity a token speaks for, else TokenRefused saying why (nothing else is raised for a bad token)."""
        if token.count(".") != 2:
            raise TokenRefused("not a JWT access token")
        try:
            header = jwt.get_unverified_header(token)
            unverified = jwt.decode(token, options={"verify_signature": False})
        except jwt.PyJWTError:
            raise TokenRefused("the token cannot be read") from None
        alg = header.get("alg")
        if alg not in ALGORITHMS:
            raise TokenRefused(f"the signature algorithm {str(alg)[:16]!r} is not accepted (asymmetric ones only)")
        if "crit" in header:
            raise TokenRefused("the token names critical header parameters this server does not understand")
        issuer = unverified.get("iss")
        # read before the signature is checked, only to pick which configured issuer's keys to try
        if not isinstance(issuer, str) or issuer not in self.issuers:
            raise TokenRefused("the token's issuer is not one this server accepts")
        kid = header.get("kid", "")
        if not isinstance(kid, str):
            raise TokenRefused("the token's key id is not a string")
        key = self._signing_key(issuer, kid, alg)
        try:
            claims = jwt.decode(
                token,
                key=key,
                algorithms=[alg],
                audience=self.config.resource,
                issuer=issuer,
                leeway=LEEWAY_SECS,
                options={"require": list(REQUIRED_CLAIMS), "enforce_minimum_key_length": True},
            )
        except jwt.ExpiredSignatureError:
            raise TokenRefused("the token has expired") from None
        except jwt.ImmatureSignatureError:
            raise TokenRefused("the token is not valid yet") from None
        except jwt.InvalidAudienceError:
            raise TokenRefused("the token is not meant for this resource (aud)") from None
        except jwt.MissingRequiredClaimError as exc:
            raise TokenRefused(f"the token lacks the {exc.claim!r} claim") from None
        except jwt.PyJWTError:
            raise TokenRefused("the token's signature or claims do not verify") from None
        return self._identity(issuer, claims)

    def _identity(self, issuer: str, claims: dict[str, Any]) -> Identity:
        actor = claims.get("act")
        if actor is not None and not self.config.allow_delegation:
            raise TokenRefused("the token carries a delegation (act) claim, which this server does not accept")
        subject = claims.get("sub")
        client = next((claims[name] for name in CLIENT_CLAIMS if claims.get(name)), "")
        if not isinstance(subject, str) or not subject:
            raise TokenRefused("the token's subject (sub) is empty")
        if not isinstance(client, str):
            raise TokenRefused("the token's client_id is not a string")
        if self.config.principal == SUBJECT:
            principal_id = f"oauth:{issuer}#{subject}"
        elif client:
            principal_id = f"oauth:{issuer}:{client}"
        else:
            raise TokenRefused(f"the token names no client ({', '.join(CLIENT_CLAIMS)})")
        scopes = _scopes(claims)
        missing = [scope for scope in self.config.scopes if scope not in scopes]
        if missing:
            raise TokenRefused(
                f"the token lacks the scope(s) {' '.join(missing)}", error="insufficient_scope", status=403
            )
        return Identity(principal_id, issuer, subject, client, scopes, actor if isinstance(actor, dict) else None)

    # -- keys -------------------------------------------------------------------------------------------

    def _signing_key(self, issuer: str, kid: str, alg: str) -> jwt.PyJWK:
        entry, lifetime = self.issuers[issuer], self.config.jwks_cache_secs
        keys = entry.keys
        age = math.inf if keys is None else self.now() - keys.fetched_at
        if keys is not None and age < lifetime / 2:
            key = _pick(keys, kid, alg)
            if key is not None:
                return key
        # stale, expired, never fetched, or the kid is not held: one caller refetches (rate-limited). While keys
        # that still count are held nobody waits for another's fetch, so a flood of unknown kids costs one fetch.
        usable = keys is not None and age < lifetime
        acquired = entry.lock.acquire(blocking=False) if usable else entry.lock.acquire(timeout=LOCK_WAIT_SECS)
        if acquired:
            try:
                if self.now() - entry.last_attempt >= self.min_refetch_secs:
                    entry.last_attempt = self.now()
                    self._refresh(issuer, entry)
            finally:
                entry.lock.release()
        keys = entry.keys
        if keys is None or self.now() - keys.fetched_at >= lifetime:
            raise TokenRefused(
                "the issuer's signing keys cannot be fetched just now", error="temporarily_unavailable", status=503
            )
        key = _pick(keys, kid, alg)
        if key is None:
            raise TokenRefused("the token is signed with a key the issuer does not publish")
        return key

    def _refresh(self, issuer: str, entry: _Issuer) -> None:
        """Fetch the issuer's key set; on any failure keep what is held (until its time is up) and log why."""
        uri = self.config.jwks_uri or entry.jwks_uri or self._discover(issuer)
        if not uri:
            return
        document = self.fetch(uri)
        jwks = _key_set(document)
        if not jwks:
            log.warning("oauth: no usable signing keys at %s (issuer %s); keys held so far are kept", uri, issuer)
            entry.jwks_uri = ""  # read the metadata again next time: the issuer may have moved its keys
            return
        entry.jwks_uri = uri
        entry.keys = _KeySet(jwks, self.now())

    def _discover(self, issuer: str) -> str:
        """The issuer's ``jwks_uri`` from its metadata (RFC 8414, then OpenID Connect discovery), else ""."""
        for url in metadata_urls(issuer):
            document = self.fetch(url)
            if not isinstance(document, dict):
                continue
            if document.get("issuer") != issuer:
                log.warning(
                    "oauth: the metadata at %s names issuer %r, not %r: not used",
                    url,
                    str(document.get("issuer"))[:200],
                    issuer,
                )
                continue
            jwks_uri = document.get("jwks_uri")
            if isinstance(jwks_uri, str) and allowed_url(jwks_uri):
                return jwks_uri
            log.warning("oauth: the metadata at %s has no usable jwks_uri (https only)", url)
        log.warning("oauth: the signing keys of issuer %s cannot be found from its metadata", issuer)
        return ""


def metadata_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be, in the order tried: RFC 8414's path, then OpenID Connect's two forms."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    origin = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
    urls = [
        f"{origin}/.well-known/oauth-authorization-server{path}",
        f"{origin}{path}/.well-known/openid-configuration",
        f"{origin}/.well-known/openid-configuration{path}",
    ]
    return list(dict.fromkeys(urls))


def _key_set(document: Any) -> dict[str, list[dict[str, Any]]]:
    """A JWKS document's signing keys by kid: asymmetric keys only, none marked for encryption."""
    found: dict[str, list[dict[str, Any]]] = {}
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        return found
    for key in document["keys"]:
        if not isinstance(key, dict) or key.get("kty") not in ("RSA", "EC", "OKP") or key.get("use") == "enc":
            continue
        kid = key.get("kid", "")
        if isinstance(kid, str):
            found.setdefault(kid, []).append(key)
    return found


def _pick(keys: _KeySet, kid: str, alg: str) -> jwt.PyJWK | None:
    """The key published under ``kid`` that verifies ``alg`` (a kid-less token: the one key of a one-key set)."""
    candidates = keys.jwks.get(kid)
    if candidates is None and not kid and len(keys.jwks) == 1:
        candidates = next(iter(keys.jwks.values()))
    for index, jwk in enumerate(candidates or ()):
        if jwk.get("alg", alg) != alg:
            continue
        cached = keys.built.get((f"{kid}\x00{index}", alg))
        if cached is not None:
            return cached
        try:
            built = jwt.PyJWK(jwk, algorithm=alg)
        except jwt.PyJWTError:
            continue  # a key of another type or curve than the algorithm
        keys.built[(f"{kid}\x00{index}", alg)] = built
        return built
    return None


def _scopes(claims: Mapping[str, Any]) -> frozenset[str]:
    """``scope`` (RFC 9068, space-separated) and ``scp`` (Okta, Entra: a list or a string), together."""
    found: set[str] = set()
    for name in ("scope", "scp"):
        value = claims.get(name)
        if isinstance(value, str):
            found.update(value.split())
        elif isinstance(value, list):
            found.update(item for item in value if isinstance(item, str))
    return frozenset(found)


def get_json(url: str) -> Any:
    """GET ``url`` (an allowed URL only), with the timeout and size bound; its JSON, or None (logged) on failure."""
    if not allowed_url(url):
        log.warning("oauth: not fetching %s (https only, or http to a loopback host)", url)
        return None
    try:
        with (
            httpx.Client(timeout=FETCH_TIMEOUT_SECS, follow_redirects=False) as client,
            client.stream("GET", url, headers={"Accept": "application/json"}) as response,
        ):
            if response.status_code != 200:
                log.warning("oauth: %s answered %d", url, response.status_code)
                return None
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_DOCUMENT_BYTES:
                    log.warning("oauth: %s is over %d bytes: not read", url, MAX_DOCUMENT_BYTES)
                    return None
        return json.loads(body)
    except (httpx.HTTPError, ValueError, RecursionError) as exc:
        log.warning("oauth: %s cannot be read: %s", url, str(exc)[:200])
        return None


# -- the HTTP side ----------------------------------------------------------------------------------------


class ResourceMetadata:
    """``GET /.well-known/oauth-protected-resource[/<resource path>]`` without a token: the RFC 9728 document.
    Every other request goes on to ``app``. It sits inside the Host/Origin guard, like ``/health``."""

    def __init__(self, app: ASGIApp, config: OAuthConfig) -> None:
        self.app = app
        self.config = config
        self.paths = config.metadata_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") not in self.paths:
            await self.app(scope, receive, send)
            return
        response: Response
        if scope.get("method") not in ("GET", "HEAD"):
            response = JSONResponse({"error": "method not allowed"}, status_code=405, headers={"Allow": "GET"})
        else:
            response = JSONResponse(self.config.metadata(), headers={"Cache-Control": "public, max-age=300"})
        await response(scope, receive, send)


def refusal(config: OAuthConfig, refused: TokenRefused | None) -> Response:
    """The answer to a request without an accepted token: 401 (403 for a missing scope, 503 when the issuer's keys
    cannot be had) with the ``WWW-Authenticate`` challenge naming the metadata; no token sent, no error code."""
    if refused is None:
        return JSONResponse(
            {"error": "unauthorized"}, status_code=401, headers={"WWW-Authenticate": config.challenge()}
        )
    headers = {"WWW-Authenticate": config.challenge(refused.error, refused.description)}
    if refused.status == 503:
        headers["Retry-After"] = str(int(MIN_REFETCH_SECS))
    return JSONResponse(
        {"error": refused.error, "error_description": refused.description}, status_code=refused.status, headers=headers
    )


def describe_unknown(seen: set[str], principal_id: str, limit: int = 1000) -> None:
    """Log, once per name (at most ``limit`` names), a verified caller the ACL file grants nothing, with the
    ``client_id`` to add to it."""
    if principal_id in seen or len(seen) >= limit:
        return
    seen.add(principal_id)
    log.warning(
        "oauth: %r signed in but the ACL file grants it nothing (deny by default); give it grants under that client_id",
        principal_id,
    )


class OAuthGate:
    """A verified token's principal: the ACL file's client of that name, or (deny by default) one with no grants."""

    def __init__(self, config: OAuthConfig, acl: Acl, verifier: TokenVerifier | None = None) -> None:
        self.config = config
        self.acl = acl
        self.verifier = verifier or TokenVerifier(config)
        self._unknown: set[str] = set()

    def principal(self, token: str) -> Principal:
        """The principal ``token`` calls as; TokenRefused when it is not accepted."""
        identity = self.verifier.verify(token)
        principal = self.acl.named(identity.principal_id)
        if principal is None:
            describe_unknown(self._unknown, identity.principal_id)
            return Principal(identity.principal_id)
        return principal
