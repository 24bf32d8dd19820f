"""Settings: one typed object read once from ``CUEDRECALL_*`` (or ``CPERSONA_*``) environment variables.

Every setting has our name, ``CUEDRECALL_<NAME>``, and CPersona's, ``CPERSONA_<NAME>``,
so a configuration written for CPersona works as it is. Both may be set to the
same value; different values are a startup error naming both. A malformed value is
a startup error naming the variable and what it accepts; nothing falls back
silently to a default.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from cuedrecall.embedding_models import DEFAULT_MODEL, MODELS, accepted
from cuedrecall.errors import SettingsError

PREFIX = "CUEDRECALL_"
CPERSONA_PREFIX = "CPERSONA_"  # CPersona's names, read too
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _parse_bool(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise SettingsError(f"{name}={raw!r} is not valid: expected one of true, false, 1, 0, yes, no, on, off")


def _number(kind: type, low: float | None = None, high: float | None = None) -> Callable[[str, str], Any]:
    """A parser for an int or float setting within [low, high]."""
    word = "an integer" if kind is int else "a number"
    bounds = ""
    if low is not None and high is not None:
        bounds = f" between {low:g} and {high:g}"
    elif low is not None:
        bounds = f" >= {low:g}"

    def parse(name: str, raw: str) -> Any:
        try:
            value = kind(raw.strip())
        except ValueError:
            raise SettingsError(f"{name}={raw!r} is not valid: expected {word}{bounds}") from None
        if (low is not None and value < low) or (high is not None and value > high):
            raise SettingsError(f"{name}={raw!r} is out of range: expected {word}{bounds}")
        return value

    return parse


def _choice(*accepted: str) -> Callable[[str, str], str]:
    def parse(name: str, raw: str) -> str:
        value = raw.strip().lower()
        if value not in accepted:
            raise SettingsError(f"{name}={raw!r} is not valid: expected one of {', '.join(accepted)}")
        return value

    return parse


def _text(name: str, raw: str) -> str:
    return raw


def _setting(default: Any, parse: Callable[[str, str], Any], doc: str) -> Any:
    return field(default=default, metadata={"parse": parse, "doc": doc})


def default_db_path() -> str:
    return str(Path.home() / ".cuedrecall" / "memory.db")


@dataclass(frozen=True)
class Settings:
    """Every setting, its default and its meaning; CUEDRECALL_ (or CPERSONA_) + the field name upper-cased is the
    variable."""

    db_path: str = _setting("", _text, "SQLite database file (default ~/.cuedrecall/memory.db)")
    db_url: str = _setting(
        "",
        _text,
        "postgresql://... URL: the store is that PostgreSQL database (pgvector "
        "needed), never a SQLite file; unset = the SQLite file",
    )
    pg_hnsw: bool = _setting(
        False,
        _parse_bool,
        "PostgreSQL only: an HNSW index over the vectors (approximate "
        "nearest rows; off = exact scans, the same rows as SQLite)",
    )
    pg_vector_index: bool = _setting(
        True,
        _parse_bool,
        "PostgreSQL only: each server process keeps the vectors' int8 codes and follows the database's change "
        "log, so an exact vector arm is searched in the process (off = scanned in SQL; the same rows either way)",
    )
    embedding_mode: str = _setting("local", _choice("local", "http", "hash", "none"), "embedder")
    embedding_model: str = _setting(
        DEFAULT_MODEL,
        _text,
        "packaged model of embedding_mode=local, one of "
        f"{accepted()} (a change re-embeds the store in the "
        "background); other modes keep the value as it is",
    )
    embedding_url: str = _setting("", _text, "the /embed URL for embedding_mode=http")
    embedding_timeout_secs: float = _setting(30.0, _number(float, 0.1, 600), "http embedder timeout")
    embedding_cache_size: int = _setting(256, _number(int, 0), "query vectors kept in the LRU cache")
    max_content_length: int = _setting(16000, _number(int, 1), "memory/episode text cap (chars)")
    max_profile_length: int = _setting(2000, _number(int, 1), "profile text cap (chars)")
    max_metadata_length: int = _setting(8000, _number(int, 1), "source/metadata JSON cap (refused)")
    recall_preview_chars: int = _setting(500, _number(int, 0), "rows longer than this are cut (0 = off)")
    recall_excerpt_chars: int = _setting(
        800, _number(int, 0), "a cut row's excerpt of the passages matching the query (0 = off)"
    )
    recall_mode: str = _setting("rrf", _choice("rrf", "rsf"), "fusion of the arms")
    rrf_k: int = _setting(
        15,
        _number(int, 1),
        "reciprocal rank constant: an arm's vote is 1 / (k + rank + 1) (CPersona's default is 60, for lists as "
        "deep as the limit)",
    )
    rrf_threshold_factor: float = _setting(0.5, _number(float, 0, 1), "vector floor = threshold x factor")
    vector_min_similarity: float = _setting(0.3, _number(float, -1, 1), "vector threshold before calibration")
    max_memories: int = _setting(
        1_000_000,
        _number(int, 1),
        "scan window: newest embedded rows of each kind the vector arm scores (CPersona's default is 10000, which "
        "hides every memory older than the newest 10,000 from it)",
    )
    vector_reach: int = _setting(0, _number(int, 0), "far vector list up to this scan position (0 = off)")
    vector_far_limit: int = _setting(0, _number(int, 0), "far list length (0 = depth)")
    prior_far_weight: float = _setting(1.0, _number(float, 0, 1), "far list vote weight (0 = off)")
    prior_age_rate: float = _setting(0.0, _number(float, 0), "age weight rate per hour (0 = off)")
    prior_age_floor: float = _setting(0.3, _number(float, 0, 1), "age weight floor")
    prior_age_anchor: str = _setting("newest", _choice("newest", "now"), "age measured from")
    recall_depth_floor: int = _setting(
        100,
        _number(int, 0),
        "per-arm depth = max(limit, floor): each arm lists this many rows, so fusion and the episode context see "
        "the rows two arms agree on (0 = the limit, CPersona's default)",
    )
    recall_library_max_limit: int = _setting(10000, _number(int, 1), "library clamp for limit and depth")
    recall_cue_time_limit_ms: int = _setting(1000, _number(int, 0), "time limit for the cue revision")
    recall_cue_stages: int = _setting(
        2,
        _number(int, 2, 4),
        "most stages a time cue may run: 2 is cued-v0.3 (one "
        "revision); 3 or 4 add stages-v1 (widen while a stage adds nothing usable)",
    )
    fts_enabled: bool = _setting(True, _parse_bool, "lexical arms (FTS5 trigram)")
    keyword_common_ratio: float = _setting(
        0.1,
        _number(float, 0.0, 1.0),
        "keyword arms rank first without terms in more than this share of rows (1 = never)",
    )
    confidence_enabled: bool = _setting(False, _parse_bool, "display-only confidence per row")
    episode_penalty_enabled: bool = _setting(False, _parse_bool, "episode boundary penalty")
    episode_decay_rate: float = _setting(0.01, _number(float, 0), "penalty decay per hour")
    episode_decay_floor: float = _setting(0.5, _number(float, 0, 1), "penalty floor")
    fused_gate_enabled: bool = _setting(True, _parse_bool, "use calibrated thresholds in the gate")
    autocut_enabled: bool = _setting(True, _parse_bool, "cut at the largest relative score gap")
    autocut_min_gap_ratio: float = _setting(0.15, _number(float, 0, 1), "autocut gap ratio")
    autocut_min_results: int = _setting(3, _number(int, 2), "autocut needs this many rows")
    calibrate_on_model_change: bool = _setting(True, _parse_bool, "recalibrate at start when stale")
    calibrate_on_growth: bool = _setting(
        True,
        _parse_bool,
        "calibrate an agent's gate in the background as its "
        "memories reach 50, 200 and 1,000 (and, at a start, after a model change)",
    )
    recall_gate: str = _setting(
        "gate-v2",
        _choice("gate-v2", "gate-v1", "gate-v0"),
        "the gate's policy: gate-v1 had no rule for a row that repeats every informative word of the query; "
        "gate-v0 judged a row the vector arm reached on its cosine alone, with no common-word or small-pool rule",
    )
    gate_relief: bool = _setting(
        False,
        _parse_bool,
        "when rows sit just under the gate and the answer has room, "
        "fill it with them, one bounded step under (gate-v1)",
    )
    recall_precision: str = _setting("balanced", _choice("strict", "balanced", "lenient"), "gate beta")
    auth_token: str = _setting("", _text, "bearer token for the HTTP transport")
    allow_unauthenticated_http: bool = _setting(False, _parse_bool, "serve HTTP without a token")
    http_host: str = _setting("127.0.0.1", _text, "HTTP bind address")
    http_port: int = _setting(8402, _number(int, 1, 65535), "HTTP port")
    http_max_body: int = _setting(
        16 * 1024 * 1024,
        _number(int, 1024),
        "largest HTTP request body in bytes; a larger one is answered 413 before it is read",
    )
    http_allowed_hosts: str = _setting(
        "",
        _text,
        "comma-separated Host names the HTTP server answers to besides "
        "loopback names and the bound address (* = any; others get 421)",
    )
    http_allowed_origins: str = _setting(
        "",
        _text,
        "comma-separated browser origins (scheme://host:port) allowed "
        "besides loopback pages (* = any; others get 403); CORS stays closed",
    )
    trace_log: str = _setting(
        "",
        _text,
        "JSONL file every recall and reconstruct appends its trace and returned refs "
        "to (never stored text; unset = off)",
    )
    trace_log_max_bytes: int = _setting(
        64 * 1024 * 1024,
        _number(int, 1024),
        "the trace log's size bound: past it the file is rotated to <path>.1 (one rotated file kept)",
    )
    trace_log_max_age_days: float = _setting(
        0.0,
        _number(float, 0, 36500),
        "trace log entries older than this "
        "many days (by the recall's clock) are dropped, checked at most "
        "hourly by an append (0 = off: the size bound alone)",
    )
    export_dir: str = _setting(
        "", _text, "the only folder export/import read and write (default: exports/ beside the database)"
    )
    max_import_bytes: int = _setting(100 * 1024 * 1024, _number(int, 1), "largest file import_memories reads")
    strict_arguments: bool = _setting(
        False,
        _parse_bool,
        "refuse a call naming an argument the tool does not take (off: it is ignored, named in the answer's "
        "ignored_arguments and logged, as CPersona ignores it; on: the schemas say additionalProperties: false)",
    )
    # the tool list a client is answered (server/mcp.py, docs/tools.md#the-compact-tool-list)
    tool_list: str = _setting(
        "auto",
        _choice("auto", "full", "compact"),
        "the tools/list every client gets: auto (the compact list for the clients CUEDRECALL_COMPACT_TOOL_CLIENTS "
        "names, the full list for the rest), full or compact (every tool stays callable)",
    )
    compact_tool_clients: str = _setting(
        "codex",
        _text,
        "comma-separated client names answered the compact tool list: a name found (ignoring case) in "
        "initialize's clientInfo name over stdio or the User-Agent over HTTP",
    )
    # the operator's operating context (handlers/operating_context.py, docs/tools.md#the-operating-context)
    operating_context_path: str = _setting(
        "",
        _text,
        "TOML file of the operating context: instructions for every client, the project registry, each agent's "
        '@auto project, doctrine sections (unset = none: project_id "@auto" is refused)',
    )
    operating_context: bool = _setting(
        True, _parse_bool, "off: the operating context file is never read (CPersona's switch)"
    )
    # check_update (handlers/update_check.py): nothing is fetched at run time unless the operator allows it
    update_check: bool = _setting(
        False,
        _parse_bool,
        "let check_update ask the package index whether a newer release exists, and apply install it (off: "
        "nothing is fetched; check_update says it did not check)",
    )
    update_index_url: str = _setting(
        "https://pypi.org/simple/cuedrecall/",
        _text,
        "the package index page check_update reads (PEP 691 JSON)",
    )
    acl_file: str = _setting("", _text, "JSON file of HTTP clients and their grants per agent (deny by default)")
    # OAuth 2.1 resource server (server/oauth.py, docs/security.md#oauth): off unless the resource and an issuer
    # are set, and then only beside an ACL file
    oauth_resource: str = _setting(
        "",
        _text,
        "this server's URL as an OAuth resource (e.g. https://memory.example.com/mcp): the audience its access "
        "tokens must name; unset = OAuth off",
    )
    oauth_authorization_servers: str = _setting(
        "", _text, "issuer URLs whose access tokens are accepted (comma or space separated), exactly as their iss"
    )
    oauth_jwks_uri: str = _setting(
        "", _text, "the issuer's key set URL, when its metadata cannot be read (one issuer only; unset = discovered)"
    )
    oauth_scopes: str = _setting(
        "", _text, "scopes every access token must carry (comma or space separated), advertised in the metadata"
    )
    oauth_principal: str = _setting(
        "client",
        _choice("client", "subject"),
        "whom a token calls as in the ACL file: its client, oauth:<issuer>:<client_id>, or its subject, "
        "oauth:<issuer>#<sub>",
    )
    oauth_allow_delegation: bool = _setting(
        False, _parse_bool, "accept access tokens carrying a delegation (act) claim"
    )
    oauth_jwks_cache_secs: float = _setting(
        3600.0,
        _number(float, 60, 86400),
        "how long an issuer's fetched keys are trusted; refetched after half of it, and past it, with the "
        "issuer unreachable, tokens are refused",
    )
    block_build_enabled: bool = _setting(True, _parse_bool, "divide records into blocks and embed them (background)")
    block_retrieval_enabled: bool = _setting(True, _parse_bool, "recall's block arm and its held seats")
    keyword_seats: int = _setting(
        0,
        _number(int, 0, 10),
        "held places for lexical-only rows after the count (0 = off; CPersona's default under rrf is 2)",
    )
    far_seats_enabled: bool = _setting(
        False, _parse_bool, "up to 2 held places for memories beyond the scan window, found by sign bits"
    )
    recall_propagation_seat: bool = _setting(
        False, _parse_bool, "one held place for the row a deeper search ranks closest to the best row"
    )
    cue_propagation: bool = _setting(
        False,
        _parse_bool,
        "without a caller's time cue, a strong hit's day searched "
        "as a vague cue: its rows rise at most one place (off until measured to help)",
    )
    word_arm_enabled: bool = _setting(
        True, _parse_bool, "recall's word arm: the memories' stemmed words (porter) beside the trigram arm"
    )
    short_word_arm_enabled: bool = _setting(
        True,
        _parse_bool,
        "recall's short-word arm: memories holding a query word too short for the trigram index (two ideographs "
        "or two katakana, as 移転), matched as a substring",
    )
    lexical_coverage_enabled: bool = _setting(
        True,
        _parse_bool,
        "recall's lexical coverage: within each lexical arm, rows holding more of the question's content words first",
    )
    episode_context_enabled: bool = _setting(
        True,
        _parse_bool,
        "recall's episode context: a memory inside the span of an episode the arms reached takes a vote from "
        "that episode's place in the fused order",
    )
    time_context_enabled: bool = _setting(
        True,
        _parse_bool,
        "recall's time context: a memory the arms reached takes half the vote of the best placed other reached "
        "memory recorded within ten minutes of it",
    )
    reconstruct_default_count: int = _setting(10, _number(int, 0), "reconstruct's items when the call names no count")
    reconstruct_forced_count: int | None = _setting(
        None, _number(int, 0), "reconstruct's items whatever the call says (unset = off)"
    )
    reconstruct_max_count: int = _setting(
        10, _number(int, 0), "the most items one reconstruct returns (before held items)"
    )
    reconstruct_top_k: int = _setting(20, _number(int, 1, 100), "records reconstruct's recall reads by default")
    reconstruct_max_hops: int = _setting(2, _number(int, 0, 5), "association hops reconstruct walks by default")
    reconstruct_max_evidence: int = _setting(40, _number(int, 1, 100), "claims kept per reconstruct item by default")
    reconstruct_default_budget: int = _setting(
        4000,
        _number(int, 1),
        "characters of quotes reconstruct may return by default (at least one head quote per item of the window)",
    )
    reconstruct_forced_budget: int | None = _setting(
        None, _number(int, 1), "characters of quotes whatever the call says (unset = off)"
    )
    reconstruct_max_budget: int = _setting(
        20000, _number(int, 1), "the most characters of quotes a reconstruct returns"
    )
    reconstruct_quote_chars: int = _setting(
        800, _number(int, 0), "an item's head quote, in characters (0 = one passage of at most the preview size)"
    )
    reconstruct_adjacency_seconds: float = _setting(
        60.0, _number(float, 0), "records of one source this close in time form one reconstruct item"
    )
    reconstruct_episode_span_seconds: float = _setting(
        86_400.0,
        _number(float, 0),
        "an episode spanning at most this long (a session) forms one reconstruct item with the memories in its "
        "span; a longer one digests many sessions and bundles nothing by its span",
    )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Read every ``CUEDRECALL_*`` / ``CPERSONA_*`` variable; keyword overrides win over the environment."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in fields(cls):
            if f.name in overrides:
                values[f.name] = overrides[f.name]
                continue
            read = [
                (name, f.metadata["parse"](name, env[name])) for name in variables(f.name) if env.get(name, "") != ""
            ]
            if len(read) == 2 and read[0][1] != read[1][1]:
                raise SettingsError(
                    f"{read[0][0]} and {read[1][0]} are both set, to different values: they name "
                    "the same setting, so set one (or both to the same value)"
                )
            if read:
                values[f.name] = read[0][1]
        settings = cls(**values)
        if not settings.db_path:
            settings = cls(**{**values, "db_path": default_db_path()})
        _check_reconstruct(settings)
        settings = _checked_model(settings)
        if settings.block_retrieval_enabled and not settings.block_build_enabled:
            raise SettingsError(
                "CUEDRECALL_BLOCK_RETRIEVAL_ENABLED is on while CUEDRECALL_BLOCK_BUILD_ENABLED is "
                "off: blocks nobody builds cannot be searched (turn retrieval off too)"
            )
        return settings

    @classmethod
    def describe(cls) -> list[tuple[str, Any, str]]:
        """(variable, default, meaning) for every variable read: each setting's ``CUEDRECALL_*`` name, then its
        ``CPERSONA_*`` name (the same setting). The README table lists the first of each pair."""
        rows: list[tuple[str, Any, str]] = []
        for f in fields(cls):
            ours, theirs = variables(f.name)
            rows += [(ours, f.default, f.metadata["doc"]), (theirs, f.default, f"the same as {ours}")]
        return rows


def _checked_model(s: Settings) -> Settings:
    """A local model must be one this package ships (named in any case). Another mode keeps any name: a CPersona
    configuration names its API model there (text-embedding-3-small) and still starts."""
    if s.embedding_mode != "local":
        return s
    name = s.embedding_model.strip().lower()
    if name in MODELS:
        return replace(s, embedding_model=name)
    raise SettingsError(
        f"CUEDRECALL_EMBEDDING_MODEL / CPERSONA_EMBEDDING_MODEL={s.embedding_model!r} is not a "
        f"packaged model: expected one of {accepted()} (or another embedding_mode)"
    )


def _check_reconstruct(s: Settings) -> None:
    """A default or forced count or budget over its maximum, or a budget under one preview, cannot be honoured."""
    for name in ("default_count", "forced_count"):
        value = getattr(s, f"reconstruct_{name}")
        if value is not None and value > s.reconstruct_max_count:
            raise SettingsError(
                f"CUEDRECALL_RECONSTRUCT_{name.upper()}={value} is over "
                f"CUEDRECALL_RECONSTRUCT_MAX_COUNT={s.reconstruct_max_count}"
            )
    for name in ("default_budget", "forced_budget", "max_budget"):
        value = getattr(s, f"reconstruct_{name}")
        if value is None:
            continue
        if name != "max_budget" and value > s.reconstruct_max_budget:
            raise SettingsError(
                f"CUEDRECALL_RECONSTRUCT_{name.upper()}={value} is over "
                f"CUEDRECALL_RECONSTRUCT_MAX_BUDGET={s.reconstruct_max_budget}"
            )
        if value < s.recall_preview_chars:
            raise SettingsError(
                f"CUEDRECALL_RECONSTRUCT_{name.upper()}={value} is under one preview "
                f"(CUEDRECALL_RECALL_PREVIEW_CHARS={s.recall_preview_chars})"
            )


def variables(setting: str) -> tuple[str, str]:
    """The two variables a setting is read from: ours first, then CPersona's."""
    return PREFIX + setting.upper(), CPERSONA_PREFIX + setting.upper()
