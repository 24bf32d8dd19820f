"""Properties of the single pass over random stores, scopes, queries and settings (hypothesis).

- Isolation is never widened on any arm: every returned ref, and every ref on every
  arm of the trace, lies in the read scope (agent exact; project None = all, "" = the
  global pool only, "X" = X and the global pool; channel "" = all, "C" = C and "";
  source_id ending in a letter or a digit names one memory source, matched exactly,
  any other a case-sensitive prefix of a memory's source id; episodes hidden by a
  source filter unless a channel is given).
- The response never holds more than ``limit`` rows (no cue; the profile counts).
- With the prior off the returned rows run in fused-score order (the penalised
  score where the episode penalty ran); with the prior on, in fused x prior order.
- With the prior on, the set of returned rows is the set without it when the limit
  holds every admitted row.
- A recall with a trace returns the same response plus the trace.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cuedrecall.api import Memory
from tests.conftest import NOW, make_settings, open_memory
from tests.golden.corpus import replace_gate

AGENTS = ["a", "b"]
PROJECTS = ["", "p", "q"]
CHANNELS = ["", "c", "d"]
SOURCES = ["", "u1", "u2", "U1", "u10", "u-1", "u-10"]
WORDS = [
    "zephyr",
    "quartz",
    "nebula",
    "amber",
    "basil",
    "cedar",
    "bug-218",
    "v2.4.1",
    "src/app.py",
    "#354",
    "データベース移行",
    "会議室の予約",
    "qa",
    "ok",
]

# Modest by default so the file runs in seconds; CUEDRECALL_PROPERTY_EXAMPLES=500 for a longer hunt.
PROPERTY_SETTINGS = settings(
    max_examples=int(os.environ.get("CUEDRECALL_PROPERTY_EXAMPLES", "25")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@dataclass(frozen=True)
class Row:
    kind: str  # "mem" | "ep"
    agent: str
    project: str
    channel: str
    source: str
    words: tuple[str, ...]
    hours_ago: int


rows_strategy = st.lists(
    st.builds(
        Row,
        kind=st.sampled_from(["mem", "mem", "mem", "ep"]),
        agent=st.sampled_from(AGENTS),
        project=st.sampled_from(PROJECTS),
        channel=st.sampled_from(CHANNELS),
        source=st.sampled_from(SOURCES),
        words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(tuple),
        hours_ago=st.integers(0, 3000),
    ),
    min_size=1,
    max_size=18,
)
scope_strategy = st.fixed_dictionaries(
    {
        "agent_id": st.sampled_from([*AGENTS, "z"]),
        "project_id": st.sampled_from([None, "", "p", "q", "x"]),
        "channel": st.sampled_from(["", "c", "d", "x"]),
        "source_id": st.sampled_from(["", "", "u1", "u", "U", "u2", "u-", "u-1"]),
    }
)
query_strategy = st.one_of(
    st.just(""),
    st.lists(st.sampled_from([*WORDS, "what", "about", "notes"]), min_size=1, max_size=4).map(" ".join),
)
settings_strategy = st.fixed_dictionaries(
    {
        "recall_mode": st.sampled_from(["rrf", "rsf"]),
        "episode_penalty_enabled": st.booleans(),
        "fts_enabled": st.booleans(),
        "recall_depth_floor": st.sampled_from([0, 0, 5, 30]),
        "max_memories": st.sampled_from([10000, 4]),
        "vector_reach": st.sampled_from([0, 12]),
        "prior_far_weight": st.sampled_from([1.0, 0.5, 0.0]),
    }
)
# None: the heuristic gate; else the calibrated thresholds the agent gets
gate_strategy = st.sampled_from([None, {"cosine": 0.05, "rrf": 0.0, "rsf": 0.0}, {"cosine": 0.3}])


def _at(hours_ago: int) -> str:
    return (datetime.fromisoformat(NOW) - timedelta(hours=hours_ago)).isoformat()


@contextmanager
def populated(rows: list[Row], profile_agents: tuple[str, ...] = ("a",)) -> Iterator[tuple[Path, dict[str, Row]]]:
    """A store holding ``rows`` (and a profile for some agents); yields its path and each stored ref's row."""
    with tempfile.TemporaryDirectory() as workdir:
        path = Path(workdir) / "p.db"
        stored: dict[str, Row] = {}
        with open_memory(path) as memory:
            for i, row in enumerate(rows):
                text = " ".join(row.words) + f" n{i}"
                if row.kind == "mem":
                    message: dict[str, Any] = {"content": text, "timestamp": _at(row.hours_ago)}
                    if row.source:
                        message["source"] = {"type": "User", "id": row.source}
                    result = memory.store(
                        agent_id=row.agent, message=message, project_id=row.project, channel=row.channel
                    )
                else:
                    result = memory.archive_episode(
                        agent_id=row.agent,
                        summary=text,
                        keywords=" ".join(row.words),
                        start_time=_at(row.hours_ago),
                        project_id=row.project,
                        channel=row.channel,
                    )
                assert result.get("ok"), result
                stored[result["ref"]] = row
            for agent in profile_agents:
                memory.update_profile(agent_id=agent, profile=f"profile of {agent}")
        yield path, stored


def in_scope(row: Row, scope: dict[str, Any]) -> bool:
    if row.agent != scope["agent_id"]:
        return False
    project = scope["project_id"]
    if project is not None and row.project not in ({"", project} if project else {""}):
        return False
    if scope["channel"] and row.channel not in ("", scope["channel"]):
        return False
    if scope["source_id"]:
        if row.kind == "ep":
            return bool(scope["channel"])
        if scope["source_id"][-1:].isalnum():  # one source, matched exactly
            return row.source == scope["source_id"]
        return row.source.startswith(scope["source_id"])  # a namespace prefix
    return True


def recall(
    path: Path, config: dict[str, Any], gate: dict[str, float] | None, agent: str, **arguments: Any
) -> dict[str, Any]:
    with open_memory(path, settings=make_settings(**config)) as memory:
        replace_gate(memory, [(agent, signal, value) for signal, value in (gate or {}).items()])
        return _call(memory, agent_id=agent, **arguments)


def _call(memory: Memory, **arguments: Any) -> dict[str, Any]:
    response = memory.recall(**arguments)
    assert "messages" in response and response.get("ok") is not False, response
    return response


def returned(response: dict[str, Any]) -> list[str]:
    return [message.get("ref", "profile") for message in response["messages"]]


DEFAULTS = {
    "recall_mode": "rrf",
    "episode_penalty_enabled": False,
    "fts_enabled": True,
    "recall_depth_floor": 0,
    "max_memories": 10000,
    "vector_reach": 0,
    "prior_far_weight": 1.0,
}
OPEN_GATE = {"cosine": 0.05, "rrf": 0.0, "rsf": 0.0}
# Rows in every project/channel combination of agent a (and one of agent b), all matching "zephyr".
EVERY_AXIS = [
    Row(kind, agent, project, channel, source, ("zephyr", "quartz"), 10 * i)
    for i, (kind, agent, project, channel, source) in enumerate(
        [(k, "a", p, c, s) for k in ("mem", "ep") for p in PROJECTS for c in CHANNELS for s in ("u1", "U1")]
        + [("mem", "b", "", "", "u1"), ("ep", "b", "p", "c", "")]
    )
]


@PROPERTY_SETTINGS
@given(
    rows=rows_strategy,
    scope=scope_strategy,
    query=query_strategy,
    config=settings_strategy,
    gate=gate_strategy,
    limit=st.integers(0, 12),
    deep=st.booleans(),
)
# source ids differing only in case: a case-folding prefix match (SQL LIKE) once widened the keyword arm
@example(
    rows=EVERY_AXIS,
    scope={"agent_id": "a", "project_id": None, "channel": "", "source_id": "u1"},
    query="zephyr",
    config=DEFAULTS,
    gate=OPEN_GATE,
    limit=12,
    deep=False,
)
@example(
    rows=EVERY_AXIS,
    scope={"agent_id": "a", "project_id": "p", "channel": "c", "source_id": "u"},
    query="zephyr quartz",
    config={**DEFAULTS, "recall_depth_floor": 30},
    gate=OPEN_GATE,
    limit=12,
    deep=True,
)
@example(
    rows=EVERY_AXIS,
    scope={"agent_id": "a", "project_id": "", "channel": "d", "source_id": ""},
    query="zephyr",
    config={**DEFAULTS, "max_memories": 4, "vector_reach": 12, "recall_mode": "rsf"},
    gate=OPEN_GATE,
    limit=12,
    deep=False,
)
@example(
    rows=EVERY_AXIS,
    scope={"agent_id": "b", "project_id": "q", "channel": "", "source_id": ""},
    query="",
    config=DEFAULTS,
    gate=None,
    limit=12,
    deep=False,
)
def test_isolation_is_never_widened_on_any_arm(
    rows: list[Row],
    scope: dict[str, Any],
    query: str,
    config: dict[str, Any],
    gate: dict[str, float] | None,
    limit: int,
    deep: bool,
) -> None:
    with populated(rows) as (path, stored):
        response = recall(
            path,
            config,
            gate,
            scope["agent_id"],
            query=query,
            limit=limit,
            deep=deep,
            trace=True,
            project_id=scope["project_id"],
            channel=scope["channel"],
            source_id=scope["source_id"],
        )
    trace = response["trace"]
    seen = {ref for hits in trace["arms"].values() for ref in (hit["ref"] for hit in hits)}
    seen |= {row["ref"] for row in trace["fusion"]} | {d["ref"] for d in trace["gate"]["decisions"]}
    seen |= set(returned(response))
    seen.discard("profile")
    outside = sorted(ref for ref in seen if not in_scope(stored[ref], scope))
    assert not outside, (outside, scope)
    # the profile row is the read agent's own
    if "profile" in returned(response):
        message = response["messages"][returned(response).index("profile")]
        assert message["content"] == f"[Profile] profile of {scope['agent_id']}"
    # and the arms did see everything in scope that they should: a blank query lists the scope's newest memories
    if not query.strip():
        expected = sorted(
            (ref for ref, row in stored.items() if row.kind == "mem" and in_scope(row, scope)),
            key=lambda ref: int(ref.split(":")[1]),
            reverse=True,
        )[:limit]
        assert [hit["ref"] for hit in trace["arms"]["newest"]] == expected


@PROPERTY_SETTINGS
@given(
    rows=rows_strategy,
    scope=scope_strategy,
    query=query_strategy,
    config=settings_strategy,
    gate=gate_strategy,
    limit=st.integers(0, 12),
    deep=st.booleans(),
    full=st.booleans(),
)
def test_response_never_holds_more_than_limit_rows_and_each_says_its_rank_best_last(
    rows: list[Row],
    scope: dict[str, Any],
    query: str,
    config: dict[str, Any],
    gate: dict[str, float] | None,
    limit: int,
    deep: bool,
    full: bool,
) -> None:
    with populated(rows, profile_agents=tuple(AGENTS)) as (path, _):
        response = recall(
            path,
            config,
            gate,
            scope["agent_id"],
            query=query,
            limit=limit,
            deep=deep,
            full_content=full,
            project_id=scope["project_id"],
            channel=scope["channel"],
            source_id=scope["source_id"],
        )
    assert len(response["messages"]) <= limit
    assert len(set(returned(response))) == len(response["messages"])  # and never a row twice
    # worst to best on the wire, each row's rank its place from the best (docs/tools.md#recall-rows-order-and-rank)
    count = len(response["messages"])
    assert [message["rank"] for message in response["messages"]] == list(range(count, 0, -1))


def _order_scores(trace: dict[str, Any], refs: list[str], prior: bool) -> list[float]:
    fused = {row["ref"]: row["score"] for row in trace["fusion"]}
    penalty = trace["scoring"].get("episode_penalty", {})
    weights = trace["scoring"].get("prior", {}) if prior else {}
    return [fused[ref] * penalty.get(ref, 1.0) * weights.get(ref, 1.0) for ref in refs]


def _non_increasing(scores: list[float], tolerance: float = 1e-5) -> bool:
    return all(scores[i] >= scores[i + 1] - tolerance for i in range(len(scores) - 1))


@PROPERTY_SETTINGS
@given(
    rows=rows_strategy,
    scope=scope_strategy,
    query=query_strategy.filter(str.strip),
    config=settings_strategy,
    gate=gate_strategy,
    limit=st.integers(1, 12),
    deep=st.booleans(),
)
@example(
    rows=EVERY_AXIS,
    scope={"agent_id": "a", "project_id": None, "channel": "", "source_id": ""},
    query="zephyr quartz",
    config={**DEFAULTS, "episode_penalty_enabled": True, "recall_depth_floor": 30},
    gate=OPEN_GATE,
    limit=12,
    deep=False,
)
def test_without_the_prior_rows_run_in_fused_score_order(
    rows: list[Row],
    scope: dict[str, Any],
    query: str,
    config: dict[str, Any],
    gate: dict[str, float] | None,
    limit: int,
    deep: bool,
) -> None:
    with populated(rows) as (path, _):
        response = recall(
            path,
            config,
            gate,
            scope["agent_id"],
            query=query,
            limit=limit,
            deep=deep,
            trace=True,
            project_id=scope["project_id"],
            channel=scope["channel"],
            source_id=scope["source_id"],
        )
    trace = response["trace"]
    best_first = [ref for ref in reversed(returned(response)) if ref != "profile"]
    assert "prior" not in trace["scoring"]
    assert _non_increasing(_order_scores(trace, best_first, prior=False)), (best_first, trace["fusion"])
    if "episode_penalty" not in trace["scoring"]:  # then the plain fused scores of the trace, exactly
        scores = [row["score"] for row in trace["fusion"] if row["ref"] in best_first]
        assert [row["ref"] for row in trace["fusion"] if row["ref"] in best_first] == best_first
        assert scores == sorted(scores, reverse=True)


@PROPERTY_SETTINGS
@given(
    rows=rows_strategy,
    scope=scope_strategy,
    query=query_strategy.filter(str.strip),
    config=settings_strategy,
    gate=gate_strategy,
    rate=st.sampled_from([0.001, 0.05, 1.0]),
    anchor=st.sampled_from(["newest", "now"]),
    deep=st.booleans(),
)
@example(
    rows=EVERY_AXIS,
    scope={"agent_id": "a", "project_id": None, "channel": "", "source_id": ""},
    query="zephyr quartz",
    config={**DEFAULTS, "episode_penalty_enabled": True},
    gate=OPEN_GATE,
    rate=0.05,
    anchor="newest",
    deep=False,
)
def test_the_prior_changes_the_order_never_the_set(
    rows: list[Row],
    scope: dict[str, Any],
    query: str,
    config: dict[str, Any],
    gate: dict[str, float] | None,
    rate: float,
    anchor: str,
    deep: bool,
) -> None:
    arguments = {
        "query": query,
        "limit": 100,
        "deep": deep,
        "trace": True,
        "project_id": scope["project_id"],
        "channel": scope["channel"],
        "source_id": scope["source_id"],
    }
    with populated(rows) as (path, _):
        plain = recall(path, config, gate, scope["agent_id"], **arguments)
        weighted = recall(
            path, {**config, "prior_age_rate": rate, "prior_age_anchor": anchor}, gate, scope["agent_id"], **arguments
        )
    assert plain["trace"]["gate"]["decisions"] == weighted["trace"]["gate"]["decisions"]
    admitted = plain["trace"]["order"]["before_cut"]
    assert len(admitted) <= 100  # the limit holds every admitted row
    assert sorted(returned(plain)) == sorted(returned(weighted))
    assert plain.get("gate_fallback") == weighted.get("gate_fallback")
    best_first = [ref for ref in reversed(returned(weighted)) if ref != "profile"]
    weights = weighted["trace"]["scoring"].get("prior")
    if weights:  # the prior ran: every returned row has its weight, and the order is fused x weight
        assert set(best_first) <= set(weights)
    assert _non_increasing(_order_scores(weighted["trace"], best_first, prior=True))


@PROPERTY_SETTINGS
@given(
    rows=rows_strategy,
    scope=scope_strategy,
    query=query_strategy,
    config=settings_strategy,
    gate=gate_strategy,
    limit=st.integers(0, 12),
    exclude=st.lists(st.sampled_from(WORDS), max_size=2),
)
def test_a_trace_adds_the_trace_key_and_changes_nothing_else(
    rows: list[Row],
    scope: dict[str, Any],
    query: str,
    config: dict[str, Any],
    gate: dict[str, float] | None,
    limit: int,
    exclude: list[str],
) -> None:
    arguments = {
        "query": query,
        "limit": limit,
        "project_id": scope["project_id"],
        "channel": scope["channel"],
        "source_id": scope["source_id"],
        "exclude_contents": exclude,
    }
    with populated(rows) as (path, _):
        plain = recall(path, config, gate, scope["agent_id"], **arguments)
        traced = recall(path, config, gate, scope["agent_id"], trace=True, **arguments)
    traced.pop("trace")
    assert json.dumps(traced, ensure_ascii=False) == json.dumps(plain, ensure_ascii=False)


@PROPERTY_SETTINGS
@given(
    rows=rows_strategy,
    scope=scope_strategy,
    query=query_strategy.filter(str.strip),
    mode=st.sampled_from(["rrf", "rsf"]),
)
@example(
    rows=EVERY_AXIS,
    scope={"agent_id": "a", "project_id": None, "channel": "c", "source_id": "u1"},
    query="zephyr",
    mode="rrf",
)
def test_the_vector_arm_sees_the_whole_scope_and_nothing_else(
    rows: list[Row], scope: dict[str, Any], query: str, mode: str
) -> None:
    """Isolation is not narrowed either: with no floor and depth enough, the near arm holds every row in scope."""
    config = {**DEFAULTS, "recall_mode": mode, "recall_depth_floor": 100}
    with populated(rows) as (path, stored):
        response = recall(
            path,
            config,
            {"cosine": -4.0},
            scope["agent_id"],
            query=query,
            limit=1,
            trace=True,
            project_id=scope["project_id"],
            channel=scope["channel"],
            source_id=scope["source_id"],
        )
    near = sorted(hit["ref"] for hit in response["trace"]["arms"]["vector_near"])
    assert near == sorted(ref for ref, row in stored.items() if in_scope(row, scope))


def test_rows_run_worst_to_best_and_each_rank_counts_from_the_best(tmp_path: Path) -> None:
    """The property above, on a store where the answer surely holds several rows: rank 1 is the last row."""
    with open_memory(tmp_path / "ranked.db") as memory:
        for i in range(6):
            memory.store(agent_id="ranker", content=f"the harbour ferry timetable changed in week {i}")
        response = memory.recall(agent_id="ranker", query="harbour ferry timetable", limit=5)
    messages = response["messages"]
    assert len(messages) == 5
    assert [message["rank"] for message in messages] == [5, 4, 3, 2, 1]
    best = min(messages, key=lambda message: message["rank"])
    assert best is messages[-1]
