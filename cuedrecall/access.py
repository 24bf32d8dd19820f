"""Who may touch which agent: a caller's grants, and what each tool demands of them.

A principal holds grants per agent id (``"*"`` = every agent): ``read`` or
``read-write``. An exact grant beats ``"*"``. A demand on ``"*"`` (a read or a
write across every agent: listing all agents, an unscoped delete) needs ``"*"``
at that level and no narrower grant below it. Without an ACL file the one
caller of a process (stdio, the library, the single HTTP token) is ``LOCAL``:
read-write on every agent.

An ACL file (``load_acl``) names the HTTP clients: each one's bearer token and
grants. A client is granted nothing it is not named for (deny by default). A
client named ``oauth:<issuer>:<client_id>`` or ``oauth:<issuer>#<sub>`` has no
token: it signs in with its issuer's access tokens (``server/oauth.py``,
docs/security.md#oauth) and gets the same kind of grants.
"""

from __future__ import annotations

import hmac
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from cuedrecall.errors import SettingsError

NONE, READ, WRITE = "none", "read", "read-write"
LEVELS = {NONE: 0, READ: 1, WRITE: 2}
EVERY_AGENT = "*"


@dataclass(frozen=True)
class Demand:
    agent: str  # an agent id, or "*" for every agent
    need: str  # READ | WRITE


@dataclass(frozen=True)
class Principal:
    client_id: str
    grants: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def level(self, agent: str) -> int:
        if agent == EVERY_AGENT:
            if EVERY_AGENT not in self.grants:
                return 0
            return min(LEVELS[g] for g in self.grants.values())
        return LEVELS[self.grants.get(agent, self.grants.get(EVERY_AGENT, NONE))]

    def allows(self, demand: Demand) -> bool:
        return self.level(demand.agent) >= LEVELS[demand.need]

    def sole_agent(self, need: str) -> str | None:
        """The one agent this principal may act on at ``need``, when there is exactly one (and no ``"*"``)."""
        if LEVELS[self.grants.get(EVERY_AGENT, NONE)] > LEVELS[NONE]:
            return None
        agents = [agent for agent, grant in self.grants.items() if LEVELS[grant] >= LEVELS[need]]
        return agents[0] if len(agents) == 1 else None


LOCAL = Principal("local", MappingProxyType({EVERY_AGENT: WRITE}))


def denied(tool: str, demand: Demand, principal: Principal) -> dict[str, object]:
    """The refusal a caller gets: what was needed on which agent, and who asked."""
    return {
        "ok": False,
        "error": "permission_denied",
        "tool": tool,
        "agent_id": demand.agent,
        "required": demand.need,
        "client_id": principal.client_id,
    }


# -- the ACL file ---------------------------------------------------------------------------------

LOCAL_CLIENT = "local"  # the reserved client stdio runs as; it never holds a token
OAUTH_PREFIX = "oauth:"  # an OAuth caller's client_id: oauth:<issuer>:<client_id> or oauth:<issuer>#<sub>
_CLIENT_KEYS = {"client_id", "token", "grants"}
_ENV_TOKEN = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_TOKEN_CHARS = re.compile(r"[!-~]+")  # printable ASCII, no space: what a bearer header carries intact


@dataclass(frozen=True)
class Client:
    principal: Principal
    token: bytes | None  # None: cannot log in over HTTP


@dataclass(frozen=True)
class Acl:
    """The clients of an ACL file; ``authenticate`` maps a bearer token to its client's principal."""

    clients: tuple[Client, ...]

    @property
    def local(self) -> Principal | None:
        """The ``local`` client's principal (what stdio runs as), when the file names one."""
        return next((c.principal for c in self.clients if c.principal.client_id == LOCAL_CLIENT), None)

    def authenticate(self, given: bytes) -> Principal | None:
        """The principal whose token is ``given`` (UTF-8 bytes), else None.

        Every client's token is compared, in constant time, whichever matches, so the time taken
        says nothing about which client (or how much of a token) was right.
        """
        found: Principal | None = None
        for client in self.clients:
            if client.token is not None and hmac.compare_digest(given, client.token):
                found = client.principal
        return found

    def named(self, client_id: str) -> Principal | None:
        """The principal of the client named ``client_id`` (how an OAuth caller is found), else None."""
        return next((c.principal for c in self.clients if c.principal.client_id == client_id), None)


def load_acl(path: str | Path, environ: Mapping[str, str] | None = None) -> Acl:
    """Read and check an ACL file; any problem is a SettingsError naming the file and the client or key.

    ``{"clients": [{"client_id": "...", "token": "..." | "${ENV_VAR}" | null,
    "grants": {"<agent_id>" | "*": "read" | "read-write" | "none"}}]}``
    """
    env = os.environ if environ is None else environ
    where = f"ACL file {str(path)!r}"
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{where} cannot be read: {exc}") from None
    try:
        document = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except ValueError as exc:
        raise SettingsError(f"{where} is not valid JSON: {exc}") from None
    if not isinstance(document, dict):
        raise SettingsError(f'{where}: expected an object {{"clients": [...]}}')
    _known_keys(document, {"clients"}, where)
    entries = document.get("clients")
    if not isinstance(entries, list):
        raise SettingsError(f'{where}: "clients" must be a list of clients')
    clients: list[Client] = []
    ids: set[str] = set()
    tokens: dict[bytes, str] = {}
    for number, entry in enumerate(entries):
        client = _client(entry, f"{where}: clients[{number}]", env)
        client_id = client.principal.client_id
        if client_id in ids:
            raise SettingsError(f"{where}: client_id {client_id!r} appears twice")
        ids.add(client_id)
        if client.token is not None:
            if client.token in tokens:
                raise SettingsError(f"{where}: clients {tokens[client.token]!r} and {client_id!r} have the same token")
            tokens[client.token] = client_id
        clients.append(client)
    return Acl(tuple(clients))


def _client(entry: Any, where: str, env: Mapping[str, str]) -> Client:
    if not isinstance(entry, dict):
        raise SettingsError(f"{where} must be an object with client_id, token and grants")
    client_id = entry.get("client_id")
    if not isinstance(client_id, str) or not client_id.strip():
        raise SettingsError(f'{where}: "client_id" must be a non-empty string')
    where = f"{where} (client {client_id!r})"
    _known_keys(entry, _CLIENT_KEYS, where)
    token = _token(entry.get("token"), where, env)
    if client_id == LOCAL_CLIENT and token is not None:
        raise SettingsError(f"{where}: the client {LOCAL_CLIENT!r} (stdio) must not have a token; use token null")
    if client_id.startswith(OAUTH_PREFIX) and token is not None:
        raise SettingsError(
            f"{where}: an OAuth client signs in with its issuer's access tokens and must not have a token; "
            "use token null"
        )
    grants = entry.get("grants", {})
    if not isinstance(grants, dict):
        raise SettingsError(f'{where}: "grants" must be an object {{agent_id or "*": permission}}')
    for agent, permission in grants.items():
        if not agent.strip():
            raise SettingsError(f'{where}: grants has an empty agent id (use "*" for every agent)')
        if permission not in LEVELS:
            raise SettingsError(
                f"{where}: grants[{agent!r}] = {permission!r} is not a permission: expected one of {', '.join(LEVELS)}"
            )
    return Client(Principal(client_id, MappingProxyType(dict(grants))), token)


def _token(value: Any, where: str, env: Mapping[str, str]) -> bytes | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise SettingsError(f'{where}: "token" must be a string, "${{ENV_VAR}}" or null')
    named = _ENV_TOKEN.fullmatch(value)
    if named:
        variable = named.group(1)
        if variable not in env:
            raise SettingsError(f"{where}: the token names ${{{variable}}}, which is not set")
        value, where = env[variable], f"{where}: ${{{variable}}}"
    if not value:
        raise SettingsError(f"{where}: the token is empty")
    if not _TOKEN_CHARS.fullmatch(value):
        raise SettingsError(
            f"{where}: the token must be printable ASCII without spaces (a bearer header carries nothing else intact)"
        )
    return value.encode("utf-8")


def _known_keys(obj: dict[str, Any], known: set[str], where: str) -> None:
    unknown = sorted(set(obj) - known)
    if unknown:
        raise SettingsError(
            f"{where}: unknown key(s) {', '.join(map(repr, unknown))} (known: {', '.join(sorted(known))})"
        )


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise ValueError(f"the key {key!r} appears twice in one object")
        obj[key] = value
    return obj
