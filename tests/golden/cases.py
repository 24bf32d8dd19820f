"""The golden's cases, how each is run, and how two goldens are compared.

A case is a recall over the corpus of ``corpus.py``: settings overrides (the
CPERSONA_ variable lower-cased without its prefix), calibrated thresholds set
directly (``memory.calibration.set``, so nothing depends on the calibration's
sampling), and the recall tool's arguments. The golden holds each case's request
and full response (without the trace) under the case's name.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

from .corpus import ATLAS, BOREALIS, CYGNUS, LONG_NOTE, build, open_memory, replace_gate

GOLDEN_FILE = Path(__file__).with_name("recall_golden.json")

# The calibrated thresholds a case sets: (agent, signal, value).
LOW_GATE = [(ATLAS, "cosine", 0.2), (ATLAS, "rrf", 0.012)]
HIGH_GATE = [(ATLAS, "cosine", 0.95), (ATLAS, "rrf", 0.9), (ATLAS, "rsf", 2.0)]
FAR = {"max_memories": 10, "vector_reach": 80}


def _case(
    name: str,
    query: str,
    *,
    settings: dict[str, Any] | None = None,
    thresholds: list[tuple[str, str, float]] | None = None,
    agent: str = ATLAS,
    **arguments: Any,
) -> dict[str, Any]:
    return {
        "name": name,
        "settings": settings or {},
        "thresholds": [list(t) for t in thresholds or []],
        "arguments": {"agent_id": agent, "query": query, "limit": arguments.pop("limit", 10), **arguments},
    }


CASES: list[dict[str, Any]] = [
    # rrf (the default), identifiers, scripts, scopes
    _case("rrf_version", "what changed in v2.4.1"),
    _case("rrf_bug_identifier", "what about bug-218"),
    _case("rrf_issue_number", "#354 status"),
    _case("rrf_path", "where is src/app.py"),
    _case("rrf_japanese", "データベースの移行"),
    _case("rrf_japanese_minutes", "会議の議事録"),
    _case("rrf_english", "database migration plan"),
    _case("rrf_login", "login crash"),
    _case("rrf_count_cut_3", "login crash", limit=3),
    _case("rrf_limit_0", "login crash", limit=0),
    _case("rrf_project_web", "login crash", project_id="web"),
    _case("rrf_project_global_only", "login crash", project_id=""),
    _case("rrf_project_mobile", "push notification gateway", project_id="mobile"),
    _case("rrf_channel_dev", "bug-218 session store", channel="dev"),
    _case("rrf_channel_ops_project_web", "deploy src/app.py", channel="ops", project_id="web"),
    _case("rrf_other_agent", "release v2.4.1", agent=BOREALIS),
    _case("rrf_other_agent_japanese", "データベースの移行", agent=BOREALIS),
    _case("rrf_small_agent", "cache warmup", agent=CYGNUS),
    _case("rrf_unknown_agent", "release v2.4.1", agent="nobody"),
    _case("rrf_no_match", "quantum teleportation recipe"),
    _case("rrf_short_query_like_fallback", "ok"),
    _case("rrf_depth_floor", "database migration", limit=3, settings={"recall_depth_floor": 20}),
    _case("rrf_k_10", "release v2.4.1 login crash", settings={"rrf_k": 10}),
    _case("rrf_autocut_off", "database migration plan", settings={"autocut_enabled": False}),
    _case("rrf_confidence", "login crash", settings={"confidence_enabled": True}),
    # rsf
    _case("rsf_version", "what changed in v2.4.1", settings={"recall_mode": "rsf"}),
    _case("rsf_english", "database migration plan", settings={"recall_mode": "rsf"}),
    _case("rsf_japanese", "データベースの移行", settings={"recall_mode": "rsf"}),
    _case("rsf_login_project_web", "login crash", settings={"recall_mode": "rsf"}, project_id="web"),
    _case("rsf_bug_identifier", "what about bug-218", settings={"recall_mode": "rsf"}),
    # deep
    _case("deep_cache", "cache warmup", deep=True),
    _case("deep_bug_identifier", "what about bug-218", deep=True),
    _case("deep_rsf_session", "session store eviction", deep=True, settings={"recall_mode": "rsf"}),
    # far reach: the window holds the 10 newest rows of the scope, the far list reaches to 80
    _case("far_standup", "standup note search index", settings=FAR),
    _case("far_standup_rsf", "standup note search index", settings={**FAR, "recall_mode": "rsf"}),
    _case("far_half_weight", "standup note billing export", settings={**FAR, "prior_far_weight": 0.5}),
    _case("far_weight_zero", "standup note billing export", settings={**FAR, "prior_far_weight": 0.0}),
    _case("far_limit_2", "standup note metrics dashboard", settings={**FAR, "vector_far_limit": 2}),
    _case("window_only", "standup note search index", settings={"max_memories": 10}),
    # episode boundary penalty
    _case("penalty_english", "database migration plan", settings={"episode_penalty_enabled": True}),
    _case("penalty_login", "login crash", settings={"episode_penalty_enabled": True}),
    _case(
        "penalty_rsf_bug",
        "bug-218 session store eviction",
        settings={"episode_penalty_enabled": True, "recall_mode": "rsf"},
    ),
    # the prior (age weight)
    _case("prior_login", "login crash", settings={"prior_age_rate": 0.05}),
    _case("prior_release", "release v2.4.1 v2.4.2", settings={"prior_age_rate": 0.05}),
    _case("prior_anchor_now", "database migration", settings={"prior_age_rate": 0.01, "prior_age_anchor": "now"}),
    _case("prior_rsf", "login crash", settings={"prior_age_rate": 0.05, "recall_mode": "rsf"}),
    # calibrated thresholds (set directly) and not
    _case("calibrated_low_login", "login crash", thresholds=LOW_GATE),
    _case("calibrated_low_english", "database migration plan", thresholds=LOW_GATE),
    _case("calibrated_low_deep", "database migration plan", thresholds=LOW_GATE, deep=True),
    _case("calibrated_high_fallback", "what about bug-218", thresholds=HIGH_GATE),
    _case("calibrated_high_no_identifier", "database migration plan", thresholds=HIGH_GATE),
    _case("calibrated_global", "login crash", thresholds=[("", "cosine", 0.4)]),
    _case("calibrated_gate_disabled", "login crash", thresholds=HIGH_GATE, settings={"fused_gate_enabled": False}),
    # the blank query: the newest memories, the last is the newest
    _case("blank", "", limit=5),
    _case("blank_limit_0", "", limit=0),
    _case("blank_project_web", "   ", project_id="web"),
    _case("blank_channel_ops", "", channel="ops"),
    _case("blank_source_mio", "", source_id="user-mio"),
    _case("blank_exclude", "", limit=4, exclude_contents=["ok", "  MIO ASKED FOR THE BILLING REPORT EVERY MONDAY. "]),
    # exclude_contents
    _case("exclude_exact", "login crash", exclude_contents=["Login crash in v2.4.1 reappeared on the staging server."]),
    _case("exclude_short_prefix_kept", "login crash", exclude_contents=["Login crash in v2.4.1"]),
    _case("exclude_long_prefix", "design review ranking stage gate", exclude_contents=[LONG_NOTE[:40]]),
    _case(
        "exclude_episode",
        "database migration plan",
        exclude_contents=["[Episode] Planning meeting for the database migration to PostgreSQL and its rehearsal."],
    ),
    # source_id filter
    _case("source_ken", "login crash", source_id="user-ken"),
    _case("source_prefix", "login crash release", source_id="user-"),
    _case("source_case_differs", "login crash", source_id="USER-KEN"),
    _case("source_mio_channel_dev", "bug-218 login", source_id="user-mio", channel="dev"),
    _case("source_bot_episodes_hidden", "database migration", source_id="atlas-bot"),
    # previews and full content
    _case("preview_long_row", "design review ranking stage gate"),
    _case("full_content", "design review ranking stage gate", full_content=True),
    _case("preview_off", "design review ranking stage gate", settings={"recall_preview_chars": 0}),
    _case("preview_120", "design review ranking stage gate", settings={"recall_preview_chars": 120}),
    # lexical arms off / vector arms off
    _case("fts_off_autocut", "database migration plan", settings={"fts_enabled": False}),
    _case("fts_off_login", "login crash", settings={"fts_enabled": False}),
    _case("embedding_none", "database migration plan", settings={"embedding_mode": "none"}),
    _case("embedding_none_identifier", "what about bug-218", settings={"embedding_mode": "none"}),
    _case(
        "embedding_none_calibrated", "database migration plan", settings={"embedding_mode": "none"}, thresholds=LOW_GATE
    ),
]


def run_case(db_path: Path | str, case: dict[str, Any], *, trace: bool = False) -> dict[str, Any]:
    """The recall response of one case over the corpus at ``db_path``."""
    with open_memory(db_path, **case["settings"]) as memory:
        replace_gate(memory, case["thresholds"])
        return memory.recall(**case["arguments"], trace=trace)


def request_of(case: dict[str, Any]) -> dict[str, Any]:
    return {"settings": case["settings"], "thresholds": case["thresholds"], "arguments": case["arguments"]}


def generate(workdir: Path) -> dict[str, Any]:
    """Build the corpus in ``workdir`` and run every case: the golden's content."""
    db_path = workdir / "golden.db"
    build(db_path)
    return {case["name"]: {"request": request_of(case), "response": run_case(db_path, case)} for case in CASES}


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=1)


def load() -> dict[str, Any]:
    return json.loads(GOLDEN_FILE.read_text(encoding="utf-8")) if GOLDEN_FILE.exists() else {}


def save(golden: dict[str, Any]) -> None:
    GOLDEN_FILE.write_text(dumps(golden) + "\n", encoding="utf-8")


def differences(expected: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    """Names of the cases that differ (missing, extra or changed), in case order."""
    names = list(dict.fromkeys([*actual, *expected]))
    return [name for name in names if dumps(expected.get(name)) != dumps(actual.get(name))]


def diff_text(
    expected: dict[str, Any], actual: dict[str, Any], names: list[str], *, first: int | None = 3, context: int = 8
) -> str:
    """A readable unified diff of the named cases (the first ``first`` of them; None for all)."""
    out = []
    shown = names if first is None else names[:first]
    for name in shown:
        if name not in expected:
            out.append(f"+++ case {name}: new, not in the golden ({len(actual[name]['response']['messages'])} rows)")
            continue
        if name not in actual:
            out.append(f"--- case {name}: in the golden, no longer a case")
            continue
        lines = difflib.unified_diff(
            dumps(expected.get(name)).splitlines(),
            dumps(actual.get(name)).splitlines(),
            f"golden/{name}",
            f"now/{name}",
            n=context,
            lineterm="",
        )
        out.append("\n".join(lines))
    if len(shown) < len(names):
        out.append(f"... and {len(names) - len(shown)} more: {', '.join(names[len(shown) :])}")
    return "\n".join(out)
