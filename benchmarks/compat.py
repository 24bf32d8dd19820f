"""Compatibility: one scripted client session, run against our server and against CPersona 2.6.14.

    python -m benchmarks.compat                 # both servers; writes benchmarks/results/compat.md
    python -m benchmarks.compat --ours-only     # our server only (tests/benchmarks/test_compat.py runs the same)
    python -m benchmarks.compat --peer-only     # CPersona only (installed into benchmarks/.peer/ if needed)

The session is data (``SESSION``): a list of steps ``(label, tool, arguments, expectations)``.
It calls every tool of our surface with every argument form a CPersona 2.6 client uses
(store's top-level and ``message`` forms, a source given as a word, refs for ids, a
time cue as an object and as JSON text, session keys, a pause, ...), and each step states
the response fields such a client reads: the keys it looks up (``ok``, ``result``, ``id``,
``messages``, ``items``, ``missing``, ``episode_id``, ``persisted``, ...) and simple value
rules (equals, is a list, non-empty, "the last message is the best match X"). A step whose
expectation differs by design for one server (the associative tools ours has not built)
carries that server's rules beside the shared ones.

Arguments and rules may name values of earlier responses with a placeholder,
``${<step label>.<path>}`` (``${store top-level.id}``, ``mem:${store long.id}``): a placeholder
that is the whole string is replaced by the value itself (an integer id stays an integer),
one inside a longer string by its text.

Both servers are driven the same way, over MCP stdio with the official client
(``benchmarks.peer.ToolServer``), each with an empty database and its own export folder
(``CPERSONA_EXPORT_DIR``); file names in the session are plain names inside that folder.
Ours runs with the hash embedder; CPersona with ``CPERSONA_EMBEDDING_MODE=none`` (it has no
in-process embedder; ranking is not what this suite compares).

The report lists every step with each server's outcome, then every difference between the
two answers (the outcome, the form of a refusal, a key only one side answers, a key answered
as another JSON type) with its reason from ``REASONS`` (written after reading each actual
difference; one no reason matches is "unexplained"), then every CPersona tool argument next
to ours, derived from CPersona's tools/list and ``cuedrecall.tools.TOOLS``, with ``NOTES`` for
the deliberate differences.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import re
import shlex
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio

from benchmarks import peer as peer_mod

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = HERE / "results"
REFERENCE_TOOLS = REPO / "tests" / "fixtures" / "cpersona-2.6.14-tools.json"  # tests/fixtures/README.md
CALL_TIMEOUT = 60.0

A = "compat-agent"  # the agent of the session
B = "compat-target"  # merge's target
IMPORTED = "compat-imported"  # the import's target, deleted again by delete_agent_data
SESSION_KEY = "compat-session"
PAUSED_KEY = "compat-paused"
C = "compat-cases"  # the agent of the cases of CPersona's behaviour kept (issue 28), apart from A's counts
D = "compat-plain"  # the agent a plain JSONL file names
E = "compat-operator"  # the agent of the server tools' cases (issue 28): the operating context, "@auto"
PREVIEW_KEY = "compat-previews"  # the session paused while dry runs preview
PLAIN_NAME = "compat-plain.jsonl"
ODD = "A note whose client keeps its own time format"
EXPORT_NAME = "compat-export.jsonl"

TEA = "Ana prefers green tea in the morning, never coffee"
HIKE = "The team hike to Mount Takao is planned for the first Saturday of April"
BUDGET = "The quarterly budget review moved to Thursday afternoon"
SAILS = "Order new sails for the boat before the summer regatta"
OTHER_CHANNEL = "The build server password rotates every ninety days"
LOCKED = "Ana's passport number is stored in the office safe"
LONG = "Meeting notes of the architecture review. " + " ".join(
    f"Point {i}: the storage layer keeps one SQLite file per deployment and the index is rebuilt on start."
    for i in range(1, 9)
)
RIDER = "Ana runs the Osaka office, also called the Kansai branch"
TEA_UPDATED = "Ana prefers green tea with honey in the morning, never coffee"
PAUSED_TEXT = "This sentence was said off the record and must not be kept"
AFTER_RESUME = "The regatta starts at nine in the harbour"
PROFILE = "The user is Ana. She leads the Osaka office and prefers short answers."

ANA = {"type": "User", "id": "discord:ana", "name": "Ana"}
BOB = {"type": "User", "id": "discord:bob", "name": "Bob"}
SELF = {"type": "Agent", "id": "self"}


# -- expectations --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """One thing a CPersona client reads from a response: ``op`` applied at ``path`` (dotted; list indexes allowed)."""

    op: str
    path: str = ""
    value: Any = None

    def __str__(self) -> str:
        shown = "" if self.value is None else f" {self.value!r}"
        return f"{self.op} {self.path}{shown}".strip()

    def brief(self) -> str:
        """The rule in a few words, for the report."""
        path, value = f"`{self.path}`", _short(self.value, 28)
        if self.op == "every":
            return f"every {path} row's `{self.value[0]}` = {_short(self.value[1], 28)}"
        if self.op == "some":
            return f"a {path} row's `{self.value[0]}` = {_short(self.value[1], 28)}"
        if self.op == "at_most":
            return f"{path} ≤ {self.value} rows"
        return {
            "has": path,
            "eq": f"{path} = {value}",
            "list": f"{path} list",
            "non_empty": f"{path} non-empty",
            "int": f"{path} integer",
            "bool": f"{path} boolean",
            "one_of": f"{path} in {value}",
            "best_is": f"last of {path} is {value}",
            "includes": f"{path} holds {value}",
            "excludes": f"{path} lacks {value}",
            "contains": f"{path} mentions {value}",
            "absent": f"no {path}",
            "refused": "refused (ok:false or an MCP error)",
            "succeeded": "no error",
        }[self.op]


def has(*paths: str) -> list[Rule]:
    """The keys are present (any value, null included)."""
    return [Rule("has", path) for path in paths]


def eq(path: str, value: Any) -> Rule:
    return Rule("eq", path, value)


def is_list(path: str) -> Rule:
    return Rule("list", path)


def non_empty(path: str) -> Rule:
    return Rule("non_empty", path)


def is_int(path: str) -> Rule:
    """An integer (not a boolean)."""
    return Rule("int", path)


def is_bool(path: str) -> Rule:
    return Rule("bool", path)


def one_of(path: str, *values: Any) -> Rule:
    return Rule("one_of", path, list(values))


def at_most(path: str, size: int) -> Rule:
    """A list of at most ``size`` items."""
    return Rule("at_most", path, size)


def best_is(path: str, content: str) -> Rule:
    """The last row of the list (recall's best match) has this content."""
    return Rule("best_is", path, content)


def includes(path: str, content: str) -> Rule:
    """Some row of the list has this content."""
    return Rule("includes", path, content)


def excludes(path: str, content: str) -> Rule:
    """No row of the list has this content."""
    return Rule("excludes", path, content)


def every(path: str, field_path: str, value: Any) -> Rule:
    """Every row of the (non-empty) list has ``field_path`` equal to ``value``."""
    return Rule("every", path, [field_path, value])


def contains_text(path: str, text: str) -> Rule:
    """The string at ``path`` contains ``text`` (case-insensitive)."""
    return Rule("contains", path, text)


def absent(path: str) -> Rule:
    return Rule("absent", path)


def some(path: str, field_path: str, value: Any) -> Rule:
    """Some row of the list has ``field_path`` equal to ``value``."""
    return Rule("some", path, [field_path, value])


def refused() -> Rule:
    """The call was refused: ``ok`` is false, or the MCP layer answered an error (isError)."""
    return Rule("refused")


def succeeded() -> Rule:
    """Not a failure: no ``error`` key and ``ok`` (when present) is not false. Reads carry no ``ok``."""
    return Rule("succeeded")


_MISSING = object()


def lookup(response: Any, path: str) -> Any:
    """The value at a dotted path (``messages.-1.content``), or ``_MISSING``."""
    value = response
    for part in path.split(".") if path else []:
        if isinstance(value, dict):
            value = value.get(part, _MISSING)
        elif isinstance(value, list) and re.fullmatch(r"-?\d+", part):
            index = int(part)
            value = value[index] if -len(value) <= index < len(value) else _MISSING
        else:
            return _MISSING
        if value is _MISSING:
            return _MISSING
    return value


def _content(row: Any) -> Any:
    return row.get("content", row.get("summary")) if isinstance(row, dict) else row


def check(rule: Rule, response: dict[str, Any] | None, mcp_error: str | None) -> str | None:
    """None when the response keeps the rule, else what is wrong."""
    if rule.op == "refused":
        if mcp_error is not None or (response is not None and response.get("ok") is False):
            return None
        return "expected a refusal (ok:false or an MCP error), got a success"
    if mcp_error is not None or response is None:
        return f"MCP error: {mcp_error}"
    if rule.op == "succeeded":
        if "error" in response or response.get("ok") is False:
            return f"failed: {str(response.get('error') or response.get('reason'))[:160]}"
        return None
    value = lookup(response, rule.path)
    if rule.op == "absent":
        return None if value is _MISSING else f"{rule.path} is present ({_short(value)})"
    if value is _MISSING:
        return f"{rule.path} is missing"
    if rule.op == "has":
        return None
    if rule.op == "eq":
        return (
            None
            if value == rule.value and type(value) is type(rule.value)
            else f"{rule.path} is {_short(value)}, expected {_short(rule.value)}"
        )
    if rule.op == "one_of":
        return None if value in rule.value else f"{rule.path} is {_short(value)}, expected one of {rule.value}"
    if rule.op == "int":
        return (
            None
            if isinstance(value, int) and not isinstance(value, bool)
            else f"{rule.path} is {_short(value)}, expected an integer"
        )
    if rule.op == "bool":
        return None if isinstance(value, bool) else f"{rule.path} is {_short(value)}, expected a boolean"
    if rule.op == "contains":
        return (
            None
            if isinstance(value, str) and rule.value.lower() in value.lower()
            else f"{rule.path} is {_short(value)}, expected it to contain {rule.value!r}"
        )
    if not isinstance(value, list):
        return f"{rule.path} is {_short(value)}, expected a list"
    if rule.op == "list":
        return None
    if rule.op == "non_empty":
        return None if value else f"{rule.path} is empty"
    if rule.op == "at_most":
        return (
            None if len(value) <= rule.value else f"{rule.path} has {len(value)} items, expected at most {rule.value}"
        )
    contents = [_content(row) for row in value]
    if rule.op == "best_is":
        if not value:
            return f"{rule.path} is empty, expected {_short(rule.value)} last"
        return (
            None
            if contents[-1] == rule.value
            else f"{rule.path} ends with {_short(contents[-1])}, expected {_short(rule.value)}"
        )
    if rule.op == "includes":
        return None if rule.value in contents else f"{rule.path} lacks {_short(rule.value)} ({len(value)} rows)"
    if rule.op == "excludes":
        return None if rule.value not in contents else f"{rule.path} holds {_short(rule.value)}"
    if rule.op == "some":
        field_path, wanted = rule.value
        found = [lookup(row, field_path) for row in value]
        return None if wanted in found else f"no row of {rule.path} has {field_path} {_short(wanted)}"
    if rule.op == "every":
        field_path, wanted = rule.value
        if not value:
            return f"{rule.path} is empty"
        wrong = [lookup(row, field_path) for row in value if lookup(row, field_path) != wanted]
        return (
            None
            if not wrong
            else f"{len(wrong)} of {len(value)} rows of {rule.path} have {field_path} "
            f"{_short(wrong[0] if wrong[0] is not _MISSING else 'missing')}"
        )
    raise ValueError(f"unknown rule {rule.op!r}")


def _short(value: Any, limit: int = 70) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


# -- the session ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One call: the tool, its arguments (placeholders allowed) and the rules its response keeps.

    ``expect`` applies to both servers; ``ours`` / ``cpersona``, when given, replace it for one
    server: a step whose expectation differs by design says so there (and REASONS says why).
    """

    label: str
    tool: str
    arguments: dict[str, Any]
    expect: list[Rule]
    ours: list[Rule] | None = None
    cpersona: list[Rule] | None = None

    def rules(self, server: str) -> list[Rule]:
        own = self.ours if server == "ours" else self.cpersona
        return own if own is not None else self.expect


def step(
    label: str,
    tool: str,
    arguments: dict[str, Any],
    *expect: Rule | list[Rule],
    ours: list[Rule] | None = None,
    cpersona: list[Rule] | None = None,
) -> Step:
    rules: list[Rule] = []
    for item in expect:
        rules.extend(item if isinstance(item, list) else [item])
    return Step(label, tool, arguments, rules, ours, cpersona)


S = {"session_key": SESSION_KEY}
STORED = [eq("ok", True), eq("result", "stored"), is_int("id")]
RECALLED = [succeeded(), is_list("messages")]
MESSAGE_KEYS = ["messages.-1.content", "messages.-1.source", "messages.-1.timestamp"]
CUE = {"after": "2025-03-01", "before": "2025-04-01", "confidence": "likely"}

SESSION: list[Step] = [
    # store: every form a client writes
    step(
        "store top-level",
        "store",
        {
            "agent_id": A,
            "content": TEA,
            "id": "msg-1",
            "source": ANA,
            "timestamp": "2025-03-01T09:00:00+00:00",
            "metadata": {"topic": "drinks"},
            **S,
        },
        STORED,
        is_bool("embedded"),
    ),
    step(
        "store message form",
        "store",
        {
            "agent_id": A,
            "message": {"content": HIKE, "id": "msg-2", "source": BOB, "timestamp": "2025-03-02T10:00:00+00:00"},
            "channel": "chan-1",
            "project_id": "proj-x",
            **S,
        },
        STORED,
    ),
    step(
        "store source as a word",
        "store",
        {
            "agent_id": A,
            "message": {"content": BUDGET, "id": "msg-3", "source": "user", "timestamp": "2025-03-03T11:00:00+00:00"},
            **S,
        },
        STORED,
    ),
    step(
        "store agent source",
        "store",
        {
            "agent_id": A,
            "message": {"content": SAILS, "id": "msg-4", "source": SELF, "timestamp": "2025-03-04T12:00:00+00:00"},
            **S,
        },
        STORED,
    ),
    step(
        "store other channel",
        "store",
        {
            "agent_id": A,
            "content": OTHER_CHANNEL,
            "id": "msg-5",
            "source": BOB,
            "timestamp": "2025-03-05T13:00:00+00:00",
            "channel": "chan-2",
            **S,
        },
        STORED,
    ),
    step(
        "store long",
        "store",
        {"agent_id": A, "content": LONG, "id": "msg-6", "source": SELF, "timestamp": "2025-03-06T14:00:00+00:00", **S},
        STORED,
    ),
    step(
        "store duplicate id",
        "store",
        {"agent_id": A, "content": "A different text under an id already stored", "id": "msg-1", **S},
        eq("ok", True),
        eq("result", "skipped"),
        has("reason"),
        eq("id", "${store top-level.id}"),
    ),
    step(
        "store duplicate content",
        "store",
        {"agent_id": A, "content": TEA, "id": "msg-1-again", "source": ANA, **S},
        eq("ok", True),
        eq("result", "skipped"),
        has("reason"),
        eq("id", "${store top-level.id}"),
    ),
    step(
        "store lock",
        "store",
        {
            "agent_id": A,
            "content": LOCKED,
            "id": "msg-7",
            "source": ANA,
            "timestamp": "2025-03-07T15:00:00+00:00",
            "lock": True,
            **S,
        },
        STORED,
    ),
    step(
        "store associations rider",
        "store",
        {
            "agent_id": A,
            "content": RIDER,
            "id": "msg-8",
            "source": ANA,
            "timestamp": "2025-03-08T16:00:00+00:00",
            "associations": {"entities": [{"name": "Osaka office", "aliases": ["Kansai branch"]}]},
            **S,
        },
        STORED,
        has("associations"),
    ),
    step(
        "store empty content",
        "store",
        {"agent_id": A, "content": "   ", **S},
        eq("ok", False),
        eq("result", "rejected"),
    ),
    # recall: every argument
    step(
        "recall query",
        "recall",
        {"agent_id": A, "query": "green tea", **S},
        RECALLED,
        best_is("messages", TEA),
        has(*MESSAGE_KEYS),
    ),
    step("recall empty query", "recall", {"agent_id": A, "query": "", **S}, RECALLED, non_empty("messages")),
    step(
        "recall limit",
        "recall",
        {"agent_id": A, "query": "", "limit": 2, **S},
        RECALLED,
        non_empty("messages"),
        at_most("messages", 2),
    ),
    step("recall limit out of range", "recall", {"agent_id": A, "query": "tea", "limit": 1000, **S}, refused()),
    step(
        "recall deep",
        "recall",
        {"agent_id": A, "query": "sails regatta", "deep": True, **S},
        RECALLED,
        best_is("messages", SAILS),
    ),
    step(
        "recall channel",
        "recall",
        {"agent_id": A, "query": "", "channel": "chan-1", "limit": 20, **S},
        RECALLED,
        includes("messages", HIKE),
        includes("messages", TEA),
        excludes("messages", OTHER_CHANNEL),
    ),
    step(
        "recall project",
        "recall",
        {"agent_id": A, "query": "", "project_id": "proj-x", "limit": 20, **S},
        RECALLED,
        includes("messages", HIKE),
        includes("messages", TEA),
    ),
    step(
        "recall global pool only",
        "recall",
        {"agent_id": A, "query": "", "project_id": "", "limit": 20, **S},
        RECALLED,
        includes("messages", TEA),
        excludes("messages", HIKE),
    ),
    step(
        "recall source_id",
        "recall",
        {"agent_id": A, "query": "", "source_id": "discord:bob", "limit": 20, **S},
        RECALLED,
        includes("messages", HIKE),
        every("messages", "source.id", "discord:bob"),
    ),
    step(
        "recall exclude_contents",
        "recall",
        {"agent_id": A, "query": "green tea", "exclude_contents": [TEA], **S},
        RECALLED,
        excludes("messages", TEA),
    ),
    step(
        "recall preview",
        "recall",
        {"agent_id": A, "query": "architecture review storage layer", "deep": True, **S},
        RECALLED,
        best_is("messages", LONG[:500]),
        eq("messages.-1.content_truncated", True),
        eq("messages.-1.ref", "mem:${store long.id}"),
    ),
    step(
        "recall full_content",
        "recall",
        {"agent_id": A, "query": "architecture review storage layer", "deep": True, "full_content": True, **S},
        RECALLED,
        best_is("messages", LONG),
    ),
    step(
        "recall trace",
        "recall",
        {"agent_id": A, "query": "green tea", "trace": True, **S},
        RECALLED,
        best_is("messages", TEA),
        has("trace"),
    ),
    step(
        "recall time_cue object",
        "recall",
        {"agent_id": A, "query": "budget review", "time_cue": CUE, **S},
        RECALLED,
        best_is("messages", BUDGET),
        eq("time_cue.confidence", "likely"),
    ),
    step(
        "recall time_cue JSON text",
        "recall",
        {"agent_id": A, "query": "budget review", "time_cue": json.dumps(CUE), **S},
        RECALLED,
        best_is("messages", BUDGET),
        eq("time_cue.confidence", "likely"),
    ),
    step(
        "recall time_cue ago",
        "recall",
        {"agent_id": A, "query": "budget review", "time_cue": {"ago": "long_ago", "confidence": "vague"}, **S},
        RECALLED,
        best_is("messages", BUDGET),
        has("time_cue"),
    ),
    step(
        "recall_with_context",
        "recall_with_context",
        {
            "agent_id": A,
            "query": "green tea",
            "limit": 10,
            **S,
            "external_context": [
                {
                    "role": "user",
                    "content": TEA,
                    "name": "Ana",
                    "user_id": "ana",
                    "timestamp": "2025-03-10T09:00:00+00:00",
                },
                {"role": "assistant", "content": "Noted: green tea, no coffee."},
                {"role": "system", "content": "Be brief."},
            ],
        },
        RECALLED,
        includes("messages", "Noted: green tea, no coffee."),
        excludes("messages", "Be brief."),
        includes("messages", TEA),
        has("context_filter_only"),
    ),
    # reading whole texts
    step(
        "get_contents",
        "get_contents",
        {"agent_id": A, "refs": ["mem:${store long.id}", "mem:999999"]},
        succeeded(),
        is_list("items"),
        eq("items.0.content", LONG),
        eq("items.0.ref", "mem:${store long.id}"),
        eq("missing", ["mem:999999"]),
        eq("count", 1),
    ),
    # episodes
    step(
        "archive_episode",
        "archive_episode",
        {
            "agent_id": A,
            "summary": "Planned the April hike and the regatta; Ana wants tea at the stops.",
            "keywords": "hike regatta tea",
            "resolved": True,
            **S,
            "history": [
                {"role": "user", "content": "Shall we plan the hike?", "timestamp": "2025-03-10T10:30:00+00:00"},
                {
                    "role": "assistant",
                    "content": "Yes: first Saturday of April.",
                    "timestamp": "2025-03-10T09:15:00+00:00",
                },
                {"role": "user", "content": "And the regatta.", "timestamp": "2025-03-10T11:45:00+00:00"},
            ],
        },
        eq("ok", True),
        is_int("episode_id"),
    ),
    step(
        "list_episodes",
        "list_episodes",
        {"agent_id": A},
        succeeded(),
        is_list("episodes"),
        eq("count", 1),
        eq("episodes.0.id", "${archive_episode.episode_id}"),
        eq("episodes.0.start_time", "2025-03-10T09:15:00+00:00"),
        eq("episodes.0.end_time", "2025-03-10T11:45:00+00:00"),
        has("episodes.0.summary", "episodes.0.keywords"),
    ),
    # correcting, protecting, deleting
    step(
        "update_memory by id",
        "update_memory",
        {"memory_id": "${store top-level.id}", "content": TEA_UPDATED, "agent_id": A, **S},
        eq("ok", True),
        eq("updated_id", "${store top-level.id}"),
    ),
    step(
        "update_memory by ref",
        "update_memory",
        {"memory_id": "mem:${store source as a word.id}", "content": BUDGET + " (confirmed)", "agent_id": A, **S},
        eq("ok", True),
        eq("updated_id", "${store source as a word.id}"),
    ),
    step(
        "update_memory locked",
        "update_memory",
        {"memory_id": "${store lock.id}", "content": "changed", "agent_id": A, **S},
        eq("ok", False),
        contains_text("error", "locked"),
    ),
    step(
        "recall after update",
        "recall",
        {"agent_id": A, "query": "green tea honey", **S},
        RECALLED,
        includes("messages", TEA_UPDATED),
        excludes("messages", TEA),
    ),
    step(
        "lock_memory",
        "lock_memory",
        {"memory_id": "${store agent source.id}", "agent_id": A, **S},
        eq("ok", True),
        eq("locked_id", "${store agent source.id}"),
    ),
    step(
        "delete_memory locked",
        "delete_memory",
        {"memory_id": "${store agent source.id}", "agent_id": A, **S},
        eq("ok", False),
        has("error"),
    ),
    step(
        "unlock_memory",
        "unlock_memory",
        {"memory_id": "${store agent source.id}", "agent_id": A, **S},
        eq("ok", True),
        eq("unlocked_id", "${store agent source.id}"),
    ),
    step(
        "delete_memory",
        "delete_memory",
        {"memory_id": "${store agent source.id}", "agent_id": A, **S},
        eq("ok", True),
        eq("deleted_id", "${store agent source.id}"),
    ),
    step(
        "delete_memory again",
        "delete_memory",
        {"memory_id": "${store agent source.id}", "agent_id": A, **S},
        eq("ok", False),
        has("error"),
    ),
    # browsing
    step(
        "list_memories",
        "list_memories",
        {"agent_id": A, "limit": 1000},
        succeeded(),
        is_list("memories"),
        eq("count", 7),
        at_most("memories", 500),
        excludes("memories", SAILS),
        includes("memories", TEA_UPDATED),
        has(
            "memories.0.id",
            "memories.0.agent_id",
            "memories.0.project_id",
            "memories.0.content",
            "memories.0.source",
            "memories.0.timestamp",
            "memories.0.created_at",
            "memories.0.locked",
            "memories.0.channel",
        ),
    ),
    step(
        "list_memories project",
        "list_memories",
        {"agent_id": A, "project_id": "proj-x", "limit": 1},
        succeeded(),
        eq("count", 1),
        at_most("memories", 1),
    ),
    # profile
    step("get_profile empty", "get_profile", {"agent_id": A}, succeeded(), eq("profile", "")),
    step(
        "update_profile",
        "update_profile",
        {"agent_id": A, "profile": PROFILE, **S},
        eq("ok", True),
        eq("profiles_updated", 1),
    ),
    step("get_profile", "get_profile", {"agent_id": A}, succeeded(), eq("profile", PROFILE)),
    # retrieval quality
    step("calibrate_threshold", "calibrate_threshold", {"agent_id": A, "sample_size": 50, **S}, is_bool("ok")),
    # with too few embedded memories the gate cannot be recalibrated: set_recall_precision answers ok:false
    # (echoing what was asked) and the precision stays as it was
    step(
        "set_recall_precision",
        "set_recall_precision",
        {"agent_id": A, "precision": "strict", **S},
        is_bool("ok"),
        eq("agent_id", A),
        eq("precision", "strict"),
        has("beta", "cleared"),
    ),
    step(
        "get_recall_precision",
        "get_recall_precision",
        {"agent_id": A},
        eq("ok", True),
        eq("agent_id", A),
        one_of("precision", "strict", "balanced", "lenient", "custom"),
        has("beta", "overridden"),
    ),
    step(
        "set_recall_precision clear",
        "set_recall_precision",
        {"agent_id": A, **S},
        is_bool("ok"),
        eq("agent_id", A),
        eq("cleared", True),
    ),
    # portability
    step(
        "export_memories",
        "export_memories",
        {"agent_id": A, "output_path": EXPORT_NAME},
        eq("ok", True),
        eq("memories", 7),
        eq("episodes", 1),
        has("path", "profiles"),
    ),
    step(
        "import_memories dry_run",
        "import_memories",
        {"input_path": EXPORT_NAME, "target_agent_id": IMPORTED, "dry_run": True, **S},
        eq("ok", True),
        eq("dry_run", True),
        eq("imported_memories", 7),
    ),
    step(
        "import_memories",
        "import_memories",
        {"input_path": EXPORT_NAME, "target_agent_id": IMPORTED, **S},
        eq("ok", True),
        eq("imported_memories", 7),
        eq("imported_episodes", 1),
        has("skipped_memories"),
    ),
    step(
        "import_memories again",
        "import_memories",
        {"input_path": EXPORT_NAME, "target_agent_id": IMPORTED, **S},
        eq("ok", True),
        eq("imported_memories", 0),
        eq("skipped_memories", 7),
    ),
    step("export outside the folder", "export_memories", {"agent_id": A, "output_path": "../escape.jsonl"}, refused()),
    step(
        "merge_memories dry_run",
        "merge_memories",
        {"source_agent_id": A, "target_agent_id": B, "strategy": "skip", "mode": "copy", "dry_run": True, **S},
        eq("ok", True),
        eq("dry_run", True),
        eq("merged_memories", 7),
        has("skipped_memories", "merged_episodes"),
    ),
    step("list_memories after dry_run", "list_memories", {"agent_id": B}, succeeded(), eq("count", 0)),
    step(
        "delete_agent_data",
        "delete_agent_data",
        {"agent_id": IMPORTED, **S},
        eq("ok", True),
        eq("deleted_memories", 7),
        eq("deleted_episodes", 1),
        has("deleted_profiles", "agent_id"),
    ),
    # health and housekeeping
    step(
        "check_health",
        "check_health",
        {"agent_id": A, **S},
        succeeded(),
        one_of("status", "healthy", "degraded", "unhealthy"),
        is_list("issues"),
        has("checks_run"),
    ),
    step(
        "deep_check", "deep_check", {"agent_id": A, **S}, succeeded(), eq("agent_id", A), has("checks_run", "results")
    ),
    step("get_queue_status", "get_queue_status", {}, is_bool("enabled"), is_int("pending")),
    step(
        "get_session_findings",
        "get_session_findings",
        {"per_kind_limit": 3, "include_summary": True, **S},
        succeeded(),
        has("findings", "summary"),
    ),
    # session controls
    step("persistence_status", "persistence_status", {"session_key": PAUSED_KEY}, eq("paused", False)),
    step(
        "pause_persistence",
        "pause_persistence",
        {"ttl_seconds": 600, "session_key": PAUSED_KEY},
        eq("paused", True),
        eq("ttl_seconds", 600),
        eq("scope", "session"),
        has("expires_at"),
    ),
    step(
        "persistence_status paused",
        "persistence_status",
        {"session_key": PAUSED_KEY},
        eq("paused", True),
        has("ttl_remaining_seconds", "expires_at"),
    ),
    step(
        "store while paused",
        "store",
        {"agent_id": A, "content": PAUSED_TEXT, "session_key": PAUSED_KEY},
        eq("ok", True),
        eq("persisted", False),
        eq("id", "no-persist"),
    ),
    step(
        "update_profile while paused",
        "update_profile",
        {"agent_id": A, "profile": "off the record", "session_key": PAUSED_KEY},
        eq("ok", True),
        eq("persisted", False),
    ),
    step("store other session", "store", {"agent_id": A, "content": AFTER_RESUME, **S}, STORED),
    step(
        "recall while paused",
        "recall",
        {"agent_id": A, "query": "", "limit": 20, "session_key": PAUSED_KEY},
        RECALLED,
        excludes("messages", PAUSED_TEXT),
        includes("messages", AFTER_RESUME),
    ),
    step(
        "resume_persistence",
        "resume_persistence",
        {"session_key": PAUSED_KEY},
        eq("paused", False),
        eq("was_active", True),
    ),
    step("get_profile after pause", "get_profile", {"agent_id": A}, eq("profile", PROFILE)),
    # reconstruct and the associative tools
    step(
        "reconstruct",
        "reconstruct",
        {"agent_id": A, "query": "the April hike", "count": 3, **S},
        is_list("items"),
        has("returned_count"),
        has("effective_count"),
    ),
    step(
        "declare_associations",
        "declare_associations",
        {
            "agent_id": A,
            "anchor_ref": "mem:${store associations rider.id}",
            **S,
            "associations": {
                "entities": [{"name": "Ana", "aliases": ["Ana K."]}],
                "relations": [{"subject": "Ana", "predicate": "leads", "object": "Osaka office"}],
            },
        },
        eq("ok", True),
        eq("result", "declared"),
        is_list("entities"),
    ),
    step(
        "traverse",
        "traverse",
        {"agent_id": A, "entity": "Ana", "max_hops": 2, "limit": 10},
        succeeded(),
        is_list("entities"),
        is_list("relations"),
    ),
    # CPersona's behaviour kept (issue 28; docs/tools.md#cpersonas-behaviour-kept), on agents of their own
    step(
        "store odd timestamp",
        "store",
        {"agent_id": C, "message": {"content": ODD, "source": ANA, "timestamp": "t"}, **S},
        STORED,
    ),
    step(
        "store utc timestamp",
        "store",
        {"agent_id": C, "content": TEA, "timestamp": "2025-03-01T09:00:00+00:00", **S},
        STORED,
    ),
    step(
        "list_memories odd timestamp",
        "list_memories",
        {"agent_id": C},
        succeeded(),
        some("memories", "timestamp", "t"),
    ),
    step(
        "check_health timestamp drift",
        "check_health",
        {"agent_id": C, **S},
        succeeded(),
        some("issues", "type", "timestamp_format_drift"),
        eq("fixed", False),
    ),
    step("check_health fix echo", "check_health", {"agent_id": C, "fix": True, **S}, succeeded(), eq("fixed", True)),
    step("deep_check fix echo", "deep_check", {"agent_id": C, "fix": True, **S}, succeeded(), eq("fixed", True)),
    step(
        "recall_with_context roles",
        "recall_with_context",
        {
            "agent_id": C,
            "query": "",
            "external_context": [
                {"content": "a note without a role", "timestamp": "2025-03-01T09:00:00+00:00"},
                {"role": 7, "content": "a note with a numeric role", "timestamp": "2025-03-01T09:00:01+00:00"},
                {"role": "system", "content": "a system note", "timestamp": "2025-03-01T09:00:02+00:00"},
            ],
            **S,
        },
        succeeded(),
        eq("context_filter_only.roles", ["(unset)", "7", "system"]),
    ),
    step(
        "recall unknown argument",
        "recall",
        {"agent_id": C, "query": "tea", "future_option": 1, **S},
        RECALLED,
        ours=[*RECALLED, eq("ignored_arguments", ["future_option"])],
    ),
    step(
        "import plain JSONL dry_run",
        "import_memories",
        {"input_path": PLAIN_NAME, "dry_run": True, **S},
        eq("ok", True),
        eq("imported_memories", 2),
        eq("skipped_memories", 1),
        eq("imported_episodes", 1),
    ),
    step(
        "import plain JSONL",
        "import_memories",
        {"input_path": PLAIN_NAME, **S},
        eq("ok", True),
        eq("imported_memories", 2),
        eq("imported_episodes", 1),
    ),
    step(
        "pause past a day",
        "pause_persistence",
        {"ttl_seconds": 10_000_000, "session_key": PREVIEW_KEY},
        refused(),
        ours=[eq("paused", True), eq("ttl_seconds", 86_400)],
    ),
    step(
        "pause for previews",
        "pause_persistence",
        {"ttl_seconds": 600, "session_key": PREVIEW_KEY},
        eq("paused", True),
        eq("ttl_seconds", 600),
    ),
    step(
        "merge dry_run while paused",
        "merge_memories",
        {"source_agent_id": C, "target_agent_id": D, "dry_run": True, "session_key": PREVIEW_KEY},
        eq("ok", True),
        eq("merged_memories", 2),
    ),
    step(
        "import dry_run while paused",
        "import_memories",
        {"input_path": PLAIN_NAME, "target_agent_id": C, "dry_run": True, "session_key": PREVIEW_KEY},
        eq("ok", True),
        eq("imported_memories", 2),
    ),
    step(
        "delete_agent_data while paused",
        "delete_agent_data",
        {"agent_id": D, "session_key": PREVIEW_KEY},
        eq("ok", True),
        eq("persisted", False),
        eq("agent_id", D),
        has("deleted_memories", "deleted_episodes", "deleted_profiles", "deleted_pending_tasks"),
    ),
    step(
        "calibrate_threshold while paused",
        "calibrate_threshold",
        {"agent_id": C, "session_key": PREVIEW_KEY},
        eq("persisted", False),
        eq("scope", "per_agent"),
        has("agent_id", "method", "percentile", "z_factor", "old_threshold", "new_threshold", "sidecar_persisted"),
    ),
    step(
        "calibrate percentile out of range while paused",
        "calibrate_threshold",
        {"agent_id": C, "percentile": 200, "session_key": PREVIEW_KEY},
        refused(),
        contains_text("error", "percentile must be in"),
    ),
    step("resume after previews", "resume_persistence", {"session_key": PREVIEW_KEY}, eq("paused", False)),
    step(
        "get_contents more than 20",
        "get_contents",
        {"agent_id": C, "refs": [f"mem:{i}" for i in range(1, 23)]},
        refused(),
        ours=[refused(), contains_text("error", "max 20")],
    ),
    step(
        "set_recall_precision unknown",
        "set_recall_precision",
        {"agent_id": C, "precision": "bogus", **S},
        refused(),
        contains_text("error", "Unknown precision"),
    ),
    step(
        "delete_agent_data cases",
        "delete_agent_data",
        {"agent_id": C, **S},
        eq("ok", True),
        eq("deleted_memories", 2),
    ),
    # the server's own tools (issue 28): the operating context and "@auto" without one, the release running, the
    # channel axis; CPersona runs with its operating context off and its update check off (PEER_SETTINGS)
    step(
        "get_operating_context dormant",
        "get_operating_context",
        {},
        eq("ok", False),
        eq("enabled", False),
        contains_text("error", "dormant"),
    ),
    step(
        "store project @auto without a context",
        "store",
        {"agent_id": E, "content": "A note filed under the agent's default project", "project_id": "@auto", **S},
        STORED,
        ours=[refused(), eq("result", "rejected"), contains_text("error", "@auto")],
    ),
    step(
        "check_update",
        "check_update",
        {},
        eq("enabled", False),
        eq("state", "disabled"),
        eq("available", None),
        eq("checked_at", None),
        has("running", "kind", "reason", "refreshed", "install.method", "install.command", "install.restart_required"),
    ),
    step(
        "check_update refresh not allowed",
        "check_update",
        {"refresh": True},
        eq("state", "disabled"),
        eq("checked_at", None),
        ours=[refused(), eq("state", "disabled"), eq("refreshed", False), eq("checked", False)],
    ),
    step(
        "check_update apply not allowed",
        "check_update",
        {"apply": True},
        eq("apply_result.applied", False),
        has("apply_result.reason"),
        ours=[refused(), eq("apply_result.applied", False), *has("apply_result.reason")],
    ),
    step(
        "migrate_channel_axis",
        "migrate_channel_axis",
        {"agent_id": A, **S},
        eq("dry_run", True),
        eq("recoverable_total", 0),
        eq("unrecoverable_total", 0),
        eq("migrated", 0),
        eq("globalized", 0),
        is_list("recoverable_by_channel"),
        is_list("samples"),
        has("invalid_metadata_total", "globalize_unrecoverable"),
    ),
    step(
        "migrate_channel_axis not a dry run",
        "migrate_channel_axis",
        {"agent_id": A, "dry_run": False, **S},
        eq("migrated", 0),
        eq("recoverable_total", 0),
        eq("dry_run", False),
        ours=[eq("ok", True), eq("migrated", 0), eq("recoverable_total", 0), eq("dry_run", True)],
    ),
    # deleting an episode and an agent
    step(
        "delete_episode",
        "delete_episode",
        {"episode_id": "${archive_episode.episode_id}", "agent_id": A, **S},
        eq("ok", True),
        eq("deleted_id", "${archive_episode.episode_id}"),
    ),
    step("list_episodes after delete", "list_episodes", {"agent_id": A}, succeeded(), eq("count", 0)),
    step(
        "delete_agent_data session agent",
        "delete_agent_data",
        {"agent_id": A, **S},
        eq("ok", True),
        eq("deleted_memories", 8),
        eq("deleted_episodes", 0),
        eq("deleted_profiles", 1),
    ),
    step("list_memories after delete", "list_memories", {"agent_id": A}, succeeded(), eq("count", 0)),
]


# -- running it ----------------------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"\$\{([^}.]+)\.([^}]+)\}")


class Unresolved(LookupError):
    pass


def resolve(value: Any, responses: dict[str, Any]) -> Any:
    """``value`` with every ``${label.path}`` replaced by that earlier response's value."""
    if isinstance(value, dict):
        return {key: resolve(item, responses) for key, item in value.items()}
    if isinstance(value, list):
        return [resolve(item, responses) for item in value]
    if not isinstance(value, str) or "${" not in value:
        return value

    def find(match: re.Match[str]) -> Any:
        label, path = match.group(1), match.group(2)
        found = lookup(responses.get(label, {}), path)
        if found is _MISSING or found is None:
            raise Unresolved(f"${{{label}.{path}}} has no value (that step did not answer it)")
        return found

    whole = _PLACEHOLDER.fullmatch(value)
    if whole:
        return find(whole)
    return _PLACEHOLDER.sub(lambda m: str(find(m)), value)


@dataclass
class StepResult:
    label: str
    tool: str
    arguments: dict[str, Any]
    response: dict[str, Any] | None
    mcp_error: str | None
    failures: list[str] = field(default_factory=list)
    ms: float = 0.0

    @property
    def passed(self) -> bool:
        return not self.failures

    def keys(self) -> set[str]:
        """The response's key set: top-level keys, plus ``key[].field`` for every row of a list of objects."""
        if self.mcp_error is not None or self.response is None:
            return {"(MCP error)"}
        out = set()
        for key, value in self.response.items():
            out.add(key)
            if isinstance(value, list):
                out.update(f"{key}[].{name}" for row in value if isinstance(row, dict) for name in row)
        return out


async def call(
    server: peer_mod.ToolServer, tool: str, arguments: dict[str, Any]
) -> tuple[dict[str, Any] | None, str | None, float]:
    """(the JSON answer, or None with the MCP error's text, milliseconds)."""
    import time

    start = time.perf_counter()
    with anyio.fail_after(CALL_TIMEOUT):
        result = await server.session.call_tool(tool, arguments)
    ms = (time.perf_counter() - start) * 1000
    text = "".join(getattr(part, "text", "") for part in result.content)
    try:
        answer = json.loads(text)
    except ValueError:
        if result.isError:
            return None, text or "(empty)", ms
        return None, f"answer is not JSON: {text[:200]!r}", ms
    if result.isError and isinstance(answer, dict) and answer.get("ok") is not False:
        return None, f"isError set on an answer that is not ok: false: {text[:200]!r}", ms
    if not isinstance(answer, dict):
        return None, f"answer is not a JSON object: {text[:200]!r}", ms
    return answer, None, ms


async def run_session(
    server: peer_mod.ToolServer, steps: Sequence[Step] = SESSION, name: str = "ours"
) -> list[StepResult]:
    """Call every step in order over the server's MCP session and check its rules (``name``: ours | cpersona)."""
    responses: dict[str, Any] = {}
    results = []
    for item in steps:
        try:
            arguments = resolve(item.arguments, responses)
            rules = [Rule(rule.op, rule.path, resolve(rule.value, responses)) for rule in item.rules(name)]
        except Unresolved as exc:
            results.append(StepResult(item.label, item.tool, item.arguments, None, None, [str(exc)]))
            continue
        response, mcp_error, ms = await call(server, item.tool, arguments)
        responses[item.label] = response if response is not None else {}
        if mcp_error is not None and not any(rule.op == "refused" for rule in rules):
            failures = [f"MCP error: {mcp_error[:300]}"]  # once, not once per rule
        else:
            failures = [f"{rule}: {problem}" for rule in rules if (problem := check(rule, response, mcp_error))]
        results.append(StepResult(item.label, item.tool, arguments, response, mcp_error, failures, ms))
    return results


# -- the two servers -----------------------------------------------------------------------------


# Files each server's export folder holds before the session: a plain JSONL file of CPersona's records, no header.
FILES = {
    PLAIN_NAME: "".join(
        json.dumps(record) + "\n"
        for record in (
            {"_type": "memory", "agent_id": D, "content": "The ferry leaves at seven", "msg_id": "p1"},
            {"_type": "memory", "agent_id": D, "content": "The ferry leaves at seven", "msg_id": "p1"},
            {"_type": "memory", "agent_id": D, "content": "Tickets are sold at the pier", "timestamp": "t"},
            {"_type": "episode", "agent_id": D, "summary": "A trip to the islands"},
        )
    )
}


def place_files(exports: Path) -> None:
    exports.mkdir(parents=True, exist_ok=True)
    for name, text in FILES.items():
        (exports / name).write_text(text, encoding="utf-8")


def our_environment(folder: Path) -> dict[str, str]:
    return {
        "CPERSONA_EMBEDDING_MODE": "hash",
        "CPERSONA_DB_PATH": str(folder / "memory.db"),
        "CPERSONA_EXPORT_DIR": str(folder / "exports"),
    }


def our_compat_server(folder: Path, client_name: str | None = None) -> peer_mod.ToolServer:
    """``cuedrecall serve`` over stdio: hash embedder, its own database and export folder under ``folder``."""
    place_files(folder / "exports")
    return peer_mod.ToolServer(
        "cuedrecall",
        sys.executable,
        ["-m", "cuedrecall.cli", "serve"],
        our_environment(folder),
        folder / "server.log",
        cwd=REPO,
        start_timeout=120,
        client_name=client_name,
    )


def peer_compat_environment(folder: Path) -> dict[str, str]:
    """CPersona's environment: no embedder, no update check, no operator sidecar, its own database, home and
    export folder (``PEER_SETTINGS`` below, each with why); everything else at its defaults."""
    home = folder / "home"
    home.mkdir(parents=True, exist_ok=True)
    return {
        "CPERSONA_EMBEDDING_MODE": "none",
        "CPERSONA_UPDATE_CHECK": "false",
        "CPERSONA_OPERATING_CONTEXT": "off",
        "CPERSONA_TRANSPORT": "stdio",
        "CPERSONA_DB_PATH": str(folder / "cpersona.db"),
        "CPERSONA_EXPORT_DIR": str(folder / "exports"),
        "HOME": str(home),
    }


def peer_compat_server(folder: Path, venv: Path, client_name: str | None = None) -> peer_mod.ToolServer:
    place_files(folder / "exports")
    # started in its export folder: CPersona reads a relative output_path/input_path against its working
    # directory (started anywhere else it refuses a plain file name as outside CPERSONA_EXPORT_DIR)
    return peer_mod.ToolServer(
        "cpersona",
        str(peer_mod.peer_python(venv)),
        ["-m", peer_mod.PEER_PACKAGE],
        peer_compat_environment(folder),
        folder / "server.log",
        cwd=folder / "exports",
        start_timeout=300,
        client_name=client_name,
    )


def find_peer(log: Path) -> tuple[Path, str]:
    """A virtual environment holding CPersona 2.6.14 (``benchmarks/.peer`` or ``benchmarks/.peer/venv``), installed
    with ``ensure_peer()`` when neither has it; (venv, what happened)."""
    for venv in (peer_mod.PEER_VENV, peer_mod.PEER_VENV / "venv"):
        if peer_mod.installed_peer_version(venv) == peer_mod.PEER_VERSION:
            return venv, f"reused {venv.relative_to(REPO)}"
    return peer_mod.PEER_VENV, peer_mod.ensure_peer(log=log)


# -- comparing the two runs ----------------------------------------------------------------------

# Inner keys not compared: the trace is a diagnostic with its own documented layout
# (tests/contract/test_trace_schema.py).
NOT_DESCENDED = {"trace"}


def _row_key(row: dict[str, Any], index: int) -> Any:
    """How rows of the two answers are paired: by their text (or name), else by position."""
    for name in ("content", "summary", "name", "ref"):
        if isinstance(row.get(name), str):
            return (name, row[name])
    return ("index", index)


def key_differences(ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, str]:
    """``+key`` for a key only ours answered, ``-key`` for one only CPersona did.

    Top-level keys; ``key.field`` inside an object both answered; ``key[].field`` of rows both answered (rows
    paired by their text, so that an optional row field is compared on the same record only).
    """
    found: dict[str, str] = {}

    def note(mine: dict[str, set[str]], yours: dict[str, set[str]], prefix: str) -> None:
        """Keys (each with the JSON types it was answered with) only one side has, or answered as another type."""
        for key in sorted(set(mine) - set(yours)):
            found[f"+{prefix}{key}"] = f"only ours answers `{prefix}{key}`"
        for key in sorted(set(yours) - set(mine)):
            found[f"-{prefix}{key}"] = f"only CPersona answers `{prefix}{key}`"
        for key in sorted(set(mine) & set(yours)):
            if mine[key] != yours[key]:
                found[f"~{prefix}{key}"] = (
                    f"`{prefix}{key}` is {'/'.join(sorted(mine[key]))} in ours, "
                    f"{'/'.join(sorted(yours[key]))} in CPersona"
                )

    def typed(*rows: dict[str, Any]) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for row in rows:
            for key, value in row.items():
                out.setdefault(key, set()).add(json_type(value))
        return out

    note(typed(ours), typed(theirs), "")
    for key in sorted(set(ours) & set(theirs) - NOT_DESCENDED):
        mine, yours = ours[key], theirs[key]
        if isinstance(mine, dict) and isinstance(yours, dict):
            note(typed(mine), typed(yours), f"{key}.")
        elif isinstance(mine, list) and isinstance(yours, list):
            left = {_row_key(row, i): row for i, row in enumerate(mine) if isinstance(row, dict)}
            right = {_row_key(row, i): row for i, row in enumerate(yours) if isinstance(row, dict)}
            pairs = [(left[k], right[k]) for k in left if k in right]
            note(typed(*(a for a, _ in pairs)), typed(*(b for _, b in pairs)), f"{key}[].")
    return found


def json_type(value: Any) -> str:
    """The JSON type of a value (an integer and a float are both a number)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def outcome(result: StepResult) -> str:
    if result.passed:
        return "pass"
    return "fail (MCP error)" if result.mcp_error is not None else "fail"


def differences(ours: StepResult, theirs: StepResult) -> dict[str, str]:
    """What differs between the two servers' answers to one step: ``{item: description}``.

    ``outcome`` when one passes and the other does not; ``form`` when both keep the step's rules but one
    answered a JSON object and the other an MCP error; otherwise the key differences (``+key`` only ours,
    ``-key`` only CPersona, ``~key`` answered by both as different JSON types).
    """
    if ours.passed != theirs.passed:
        failing = ours if not ours.passed else theirs
        who = "ours" if failing is ours else "CPersona"
        return {"outcome": f"ours {outcome(ours)}, CPersona {outcome(theirs)} ({who}: {failing.failures[0][:220]})"}
    if (ours.mcp_error is None) != (theirs.mcp_error is None):
        if ours.mcp_error is None:
            text = f"ours answers {_short(ours.response, 120)}; CPersona an MCP error: {str(theirs.mcp_error)[:160]}"
        else:
            text = f"ours an MCP error: {ours.mcp_error[:160]}; CPersona answers {_short(theirs.response, 120)}"
        return {"form": text}
    if ours.response is None or theirs.response is None:
        return {}
    return key_differences(ours.response, theirs.response)


@dataclass
class Comparison:
    step: Step
    ours: StepResult
    theirs: StepResult
    items: dict[str, str]  # item -> what differs

    def reasons(self) -> dict[str, str | None]:
        """Each item's reason from REASONS (an item may be matched by a pattern such as ``-advisory*``)."""
        given = REASONS.get(self.step.label, {})
        out: dict[str, str | None] = {}
        for item in self.items:
            out[item] = given.get(item) or next(
                (reason for pattern, reason in given.items() if fnmatch.fnmatchcase(item, pattern)), None
            )
        return out

    @property
    def unexplained(self) -> list[str]:
        return [item for item, reason in self.reasons().items() if reason is None]


def compare(steps: Sequence[Step], ours: Sequence[StepResult], theirs: Sequence[StepResult]) -> list[Comparison]:
    return [Comparison(item, mine, yours, differences(mine, yours)) for item, mine, yours in zip(steps, ours, theirs)]


# -- the tool surface, CPersona's declarations next to ours ---------------------------------------------


@dataclass
class ArgumentRow:
    tool: str
    argument: str  # "(tool)" for a tool as a whole
    theirs: str  # CPersona's declaration, in short
    mine: str  # ours, in short
    facets: list[str]  # what differs: type, required, default, minimum, maximum, clamp, maxLength, enum, absent
    verdict: str  # same | clamped differently | deliberately different | different (no note)
    note: str


def _their_types(schema: dict[str, Any]) -> set[str]:
    kind = schema.get("type")
    if kind is None:
        return {"any"}
    return set(kind) if isinstance(kind, list) else {kind}


def _our_types(param: Any) -> set[str]:
    kinds = {param.type, *param.also}
    if param.ref:
        kinds.add("string")
    if param.nullable:
        kinds.add("null")
    return kinds


def _describe_theirs(schema: dict[str, Any], required: bool) -> str:
    parts = ["|".join(sorted(_their_types(schema)))]
    if required:
        parts.append("required")
    for key in ("default", "minimum", "maximum", "maxLength"):
        if key in schema:
            parts.append(f"{key} {json.dumps(schema[key])}")
    if "enum" in schema:
        parts.append("enum " + "/".join(map(str, schema["enum"])))
    return ", ".join(parts)


def _describe_mine(param: Any) -> str:
    parts = ["|".join(sorted(_our_types(param)))]
    if param.required:
        parts.append("required")
    if param.default is not None:
        parts.append(f"default {json.dumps(param.default)}")
    for key in ("minimum", "maximum"):
        if _declared(param, key) is not None:
            parts.append(f"{key} {_declared(param, key):g}")
    if param.clamp:
        parts.append("clamped")
    if param.max_length is not None:
        parts.append(f"maxLength {param.max_length}")
    if param.ref:
        parts.append(f"or {param.ref}:<id>")
    if _declared(param, "enum"):
        parts.append("enum " + "/".join(_declared(param, "enum")))
    return ", ".join(parts)


def argument_facets(schema: dict[str, Any], required: bool, param: Any) -> list[str]:
    """What differs between CPersona's declaration of an argument and ours."""
    facets = []
    if _their_types(schema) != _our_types(param) and "any" not in _their_types(schema):
        facets.append("type")
    if required != param.required:
        facets.append("required")
    if "default" in schema and param.default is not None and schema["default"] != param.default:
        facets.append("default")
    for key in ("minimum", "maximum"):
        if schema.get(key) != _declared(param, key):
            facets.append(key)
    if param.clamp and ("minimum" in schema or "maximum" in schema):
        facets.append("clamp")  # CPersona's SDK refuses a value outside its declared bounds; ours moves it in
    if schema.get("maxLength") != param.max_length:
        facets.append("maxLength")
    if set(schema.get("enum", ())) != set(_declared(param, "enum") or ()):
        facets.append("enum")
    return facets


def _declared(param: Any, key: str) -> Any:
    """A bound or enum ours declares: the Param's own field, else the schema keyword it publishes as is (a bound
    its handler checks, in words a CPersona client matches: percentile, precision)."""
    own = getattr(param, key)
    return own if own not in (None, ()) else param.extra.get(key)


_BOUNDS = {"minimum", "maximum", "clamp"}


def _noted(tool: str, argument: str) -> tuple[str, str] | None:
    return NOTES.get((tool, argument)) or NOTES.get(("*", argument))


def argument_table(reference: dict[str, Any]) -> list[ArgumentRow]:
    """Every CPersona tool and argument next to ours (and every argument only ours has)."""
    from cuedrecall.tools import TOOLS

    rows: list[ArgumentRow] = []
    for tool, schema in reference.items():
        theirs_props: dict[str, Any] = schema.get("properties", {})
        required = set(schema.get("required") or ())
        spec = TOOLS.get(tool)
        if spec is None:
            noted = _noted(tool, "(tool)")
            rows.append(
                ArgumentRow(
                    tool,
                    "(tool)",
                    f"{len(theirs_props)} arguments",
                    "absent",
                    ["absent"],
                    noted[0] if noted else "different (no note)",
                    noted[1] if noted else "",
                )
            )
            continue
        for name in [*theirs_props, *(n for n in spec.params if n not in theirs_props)]:
            theirs, mine = theirs_props.get(name), spec.params.get(name)
            if theirs is None or mine is None:
                facets = ["absent"]
                shown_theirs = "absent" if theirs is None else _describe_theirs(theirs, name in required)
                shown_mine = "absent" if mine is None else _describe_mine(mine)
            else:
                facets = argument_facets(theirs, name in required, mine)
                shown_theirs, shown_mine = _describe_theirs(theirs, name in required), _describe_mine(mine)
            verdict = (
                "same" if not facets else "clamped differently" if set(facets) <= _BOUNDS else "different (no note)"
            )
            noted = _noted(tool, name)
            if noted and facets:
                verdict, note = noted
            else:
                note = ""
            rows.append(ArgumentRow(tool, name, shown_theirs, shown_mine, facets, verdict, note))
    return rows


# -- the report ----------------------------------------------------------------------------------


@dataclass
class Run:
    """One server's run of the session."""

    name: str  # ours | cpersona
    version: str
    settings: dict[str, str]  # what the server was started with beyond its defaults, each with why
    results: list[StepResult]
    seconds: float
    # tools/list as each client is answered it: client name -> (tools, characters of the JSON result as sent)
    tool_lists: dict[str, tuple[int, int]] = field(default_factory=dict)


OUR_SETTINGS = {
    "CPERSONA_EMBEDDING_MODE": "hash: the deterministic in-process embedder (no model download)",
    "CPERSONA_DB_PATH": "a new database in a temporary folder",
    "CPERSONA_EXPORT_DIR": "a new temporary folder",
}
PEER_SETTINGS = {
    "CPERSONA_EMBEDDING_MODE": "none: CPersona has no in-process embedder; without one it runs keyword/FTS-only "
    "(its documented degraded mode)",
    "CPERSONA_UPDATE_CHECK": "false: no request to the package index",
    "CPERSONA_OPERATING_CONTEXT": "off: no operator sidecar read from a home directory",
    "CPERSONA_DB_PATH": "a new database in a temporary folder",
    "CPERSONA_EXPORT_DIR": "a new temporary folder, which is also its working directory (it reads a relative "
    "path against the working directory)",
    "HOME": "a new temporary folder",
}


def _list_size(run: Run, client: str) -> str:
    tools, chars = run.tool_lists.get(client, (0, 0))
    return f"{tools} tools / {chars:,} characters" if tools else "not measured"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _mark(result: StepResult) -> str:
    return "pass" if result.passed else ("**fail** (MCP error)" if result.mcp_error is not None else "**fail**")


def render(argv: Sequence[str], ours: Run, theirs: Run, reference: dict[str, Any]) -> str:
    comparisons = compare(SESSION, ours.results, theirs.results)
    same = [c for c in comparisons if not c.items]
    explained = [c for c in comparisons if c.items and not c.unexplained]
    unexplained = [c for c in comparisons if c.unexplained]
    items_unexplained = sum(len(c.unexplained) for c in comparisons)
    table = argument_table(reference)
    missing_arguments = [f"`{r.tool}.{r.argument}`" for r in table if r.argument != "(tool)" and r.mine == "absent"]
    verdicts: dict[str, int] = {}
    for row in table:
        verdicts[row.verdict] = verdicts.get(row.verdict, 0) + 1
    from importlib.metadata import version

    from cuedrecall.tools import TOOLS

    out = [
        "# Compatibility with CPersona 2.6.14",
        "",
        f"Command: `{' '.join(['python -m benchmarks.compat', *map(shlex.quote, argv)])}`",
        "",
        f"Run {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}; Python {sys.version.split()[0]}; "
        f"mcp {version('mcp')} (the official client drives both servers over stdio). "
        f"Ours: cuedrecall {ours.version}, {len(TOOLS)} tools. CPersona: {theirs.version}, {len(reference)} tools "
        f"(`python -m cpersona` from PyPI, installed into benchmarks/.peer/).",
        "",
        "One scripted client session (`benchmarks/compat.py`, `SESSION`: every tool of our surface with every "
        "argument form a CPersona 2.6 client sends) is run against each server, each with an empty database "
        "and its own export folder. Each step states the response fields a CPersona client reads; a step passes "
        "when the answer keeps all of them. `make test` runs the same session against ours "
        "(`tests/benchmarks/test_compat.py`).",
        "",
        "Settings beyond each server's defaults:",
        "",
        *[f"- ours `{k}`: {v}" for k, v in OUR_SETTINGS.items()],
        *[f"- CPersona `{k}`: {v}" for k, v in PEER_SETTINGS.items()],
        "",
        "## Summary",
        "",
        f"- {len(SESSION)} steps; ours passes {sum(r.passed for r in ours.results)}, CPersona passes "
        f"{sum(r.passed for r in theirs.results)} ({ours.seconds:.1f} s and {theirs.seconds:.1f} s, "
        "start-up included).",
        f"- Same outcome and the same response keys: **{len(same)}** steps.",
        f"- Different, every difference with a reason: **{len(explained)}** steps.",
        f'- Different with a difference no reason explains ("unexplained"): **{len(unexplained)}** steps '
        f"({items_unexplained} differences).",
        f"- The {sum(c.items.__len__() for c in comparisons)} differences by kind of reason: "
        + ", ".join(f"{n} {k}" for k, n in sorted(reason_kinds(comparisons).items(), key=lambda kv: -kv[1]))
        + ' ("gap": ours lacks what CPersona 2.6.14 answers; "deliberate": a design choice; "ours adds": a '
        'key a CPersona client can ignore; "environment": how the benchmark runs CPersona).',
        f"- Tools and arguments ({len(table)} rows: CPersona's tools and arguments, and the arguments only ours "
        "has): " + ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items(), key=lambda kv: -kv[1])) + ".",
        "- The tool list each answers (tools, characters of the tools/list result as sent): "
        + "; ".join(
            f"{label} {_list_size(run, 'mcp')} to the mcp client, {_list_size(run, COMPACT_CLIENT)} to "
            f"`{COMPACT_CLIENT}` (Codex)"
            for label, run in (("ours", ours), ("CPersona", theirs))
        )
        + ". Ours answers the clients CUEDRECALL_COMPACT_TOOL_CLIENTS names (Codex by default) the session's tools "
        "only (docs/tools.md#the-compact-tool-list).",
        "",
        "A difference is either the outcome (one server keeps the step's rules, the other does not), the form (both "
        "refuse, one as a JSON answer, the other as an MCP protocol error), or a response key only one server "
        "answers: `+key` only ours, `-key` only CPersona; `key.field` inside an object both answered, "
        "`key[].field` in the rows both answered for the same record. The trace's inner layout is not compared. "
        "Values (ids, scores, times, row order) are compared only where a step's rules name them.",
        "",
        "## Steps",
        "",
        "What each step reads is in short (`benchmarks/compat.py` has the arguments); where a step's rules differ "
        "by design for one server, both are shown.",
        "",
        "| # | step | tool | what the client reads | ours | CPersona | differences |",
        "|---:|---|---|---|---|---|---|",
    ]
    for number, c in enumerate(comparisons, 1):
        diff = (
            "same"
            if not c.items
            else f"{len(c.items)}" + (f" ({len(c.unexplained)} unexplained)" if c.unexplained else "")
        )
        reads = "; ".join(rule.brief() for rule in c.step.expect)
        if c.step.ours is not None:
            reads = f"CPersona: {reads}; ours: " + "; ".join(rule.brief() for rule in c.step.ours)
        out.append(
            f"| {number} | {_cell(c.step.label)} | `{c.step.tool}` | {_cell(reads)} | {_mark(c.ours)} | "
            f"{_mark(c.theirs)} | {diff} |"
        )
    out += ["", "## Differences and their reasons", "", "| step | difference | reason |", "|---|---|---|"]
    for c in comparisons:
        for item, reason in c.reasons().items():
            out.append(
                f"| {_cell(c.step.label)} | `{_cell(item)}`: {_cell(c.items[item])} | "
                f"{_cell(reason) if reason else '**unexplained**'} |"
            )
    failed = [(run, r) for run in (ours, theirs) for r in run.results if not r.passed]
    if failed:
        out += ["", "## Failed steps", "", "| server | step | what the client read |", "|---|---|---|"]
        for run, r in failed:
            out.append(
                f"| {'ours' if run is ours else 'CPersona'} | {_cell(r.label)} | "
                f"{_cell('; '.join(f[:300] for f in r.failures))} |"
            )
    out += [
        "",
        "## Tools and arguments",
        "",
        "CPersona 2.6.14's declarations (`tests/fixtures/cpersona-2.6.14-tools.json`, its exact tools/list) "
        "next to ours (`cuedrecall.tools.TOOLS`): type, required, default, minimum/maximum, clamp, maxLength "
        'and enum; an argument only one side has is listed too. "clamped differently" means only the bounds '
        "differ; the note says what each side does with a value outside them (CPersona's SDK refuses a value "
        "outside the bounds its schema declares; its handlers clamp some others). Ours also refuses an "
        "argument it does not declare (CPersona's schemas allow extra properties); "
        + (
            "every argument of a CPersona tool ours has is declared by ours."
            if not missing_arguments
            else f"{len(missing_arguments)} arguments of CPersona's tools are not declared by ours: "
            + ", ".join(missing_arguments)
            + "."
        ),
        "",
        "| tool | argument | CPersona | ours | differs in | verdict | note |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in table:
        out.append(
            f"| `{row.tool}` | `{row.argument}` | {_cell(row.theirs)} | {_cell(row.mine)} | "
            f"{', '.join(row.facets) or '—'} | {row.verdict} | {_cell(row.note)} |"
        )
    return "\n".join(out) + "\n"


def print_results(run: Run) -> None:
    print(
        f"{run.name} ({run.version}): {sum(r.passed for r in run.results)}/{len(run.results)} steps pass "
        f"in {run.seconds:.1f} s"
    )
    for r in run.results:
        if not r.passed:
            print(f"  FAIL {r.label}: " + "; ".join(f[:200] for f in r.failures))


async def _timed(server: peer_mod.ToolServer, name: str) -> tuple[list[StepResult], float, tuple[int, int]]:
    """The session's results, its seconds (start-up included), and the tool list this client was answered."""
    import time

    start = time.perf_counter()
    async with server:
        results = await run_session(server, name=name)
        seconds = time.perf_counter() - start
        listed = await _listed(server)
    return results, seconds, listed


# The client a compact tool list is for (docs/tools.md#the-compact-tool-list): Codex's initialize name.
COMPACT_CLIENT = "codex-mcp-client"


async def _listed(server: peer_mod.ToolServer) -> tuple[int, int]:
    """(tools, characters of the tools/list result as the server sent it)."""
    with anyio.fail_after(CALL_TIMEOUT):
        result = await server.session.list_tools()
    return len(result.tools), len(result.model_dump_json(by_alias=True, exclude_none=True))


async def _listed_alone(server: peer_mod.ToolServer) -> tuple[int, int]:
    async with server:
        return await _listed(server)


def run_ours(workdir: Path) -> Run:
    from cuedrecall.version import __version__

    folder = Path(tempfile.mkdtemp(prefix="ours-", dir=workdir))  # always a new, empty database
    results, seconds, listed = anyio.run(_timed, our_compat_server(folder), "ours")
    named = Path(tempfile.mkdtemp(prefix="ours-codex-", dir=workdir))
    compact = anyio.run(_listed_alone, our_compat_server(named, client_name=COMPACT_CLIENT))
    lists = {"mcp": listed, COMPACT_CLIENT: compact}
    return Run("ours", __version__, dict(OUR_SETTINGS), results, seconds, lists)


def run_peer(workdir: Path) -> Run:
    venv, how = find_peer(workdir / "peer-install.log")
    print(f"CPersona: {how}", file=sys.stderr)
    folder = Path(tempfile.mkdtemp(prefix="cpersona-", dir=workdir))
    results, seconds, listed = anyio.run(_timed, peer_compat_server(folder, venv), "cpersona")
    named = Path(tempfile.mkdtemp(prefix="cpersona-codex-", dir=workdir))
    compact = anyio.run(_listed_alone, peer_compat_server(named, venv, client_name=COMPACT_CLIENT))
    lists = {"mcp": listed, COMPACT_CLIENT: compact}
    version = peer_mod.installed_peer_version(venv) or "?"
    return Run("cpersona", version, dict(PEER_SETTINGS), results, seconds, lists)


def _without_workdir(argv: Sequence[str]) -> list[str]:
    """The command line as the report shows it: a scratch folder is nobody's business."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--workdir":
            skip = True
        elif not arg.startswith("--workdir="):
            out.append(arg)
    return out


def reason_kinds(comparisons: Sequence[Comparison]) -> dict[str, int]:
    """How many differences each kind of reason explains (the word before the reason's first colon)."""
    kinds: dict[str, int] = {}
    for c in comparisons:
        for reason in c.reasons().values():
            if reason:
                kind = reason.split(":", 1)[0]
                kinds[kind] = kinds.get(kind, 0) + 1
    return kinds


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.compat",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--ours-only", action="store_true", help="run the session against our server only")
    only.add_argument("--peer-only", action="store_true", help="run the session against CPersona 2.6.14 only")
    parser.add_argument(
        "--out", type=Path, default=RESULTS / "compat.md", help="the report (written when both servers ran)"
    )
    parser.add_argument(
        "--reference",
        type=Path,
        default=REFERENCE_TOOLS,
        help="CPersona 2.6.14's tools/list (input schemas), for the table of arguments",
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="where the databases, export folders and server logs go (default: a temporary folder)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="compat-") as scratch:
        workdir = args.workdir or Path(scratch)
        workdir.mkdir(parents=True, exist_ok=True)
        ours = None if args.peer_only else run_ours(workdir)
        theirs = None if args.ours_only else run_peer(workdir)
    for run in (ours, theirs):
        if run is not None:
            print_results(run)
    if ours is None or theirs is None:  # a run of one server writes no report; ours must pass every step
        return 0 if ours is None or all(r.passed for r in ours.results) else 1
    reference = json.loads(args.reference.read_text(encoding="utf-8"))
    report_argv = _without_workdir(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(report_argv, ours, theirs, reference), encoding="utf-8")
    comparisons = compare(SESSION, ours.results, theirs.results)
    print(
        f"{sum(not c.items for c in comparisons)} steps the same, "
        f"{sum(bool(c.items) and not c.unexplained for c in comparisons)} different with reasons, "
        f"{sum(bool(c.unexplained) for c in comparisons)} with unexplained differences; wrote {args.out}"
    )
    return 0


# -- why each difference is there --------------------------------------------------------------------
#
# REASONS: step label -> {difference item (or an fnmatch pattern of items) -> why}. Written after reading each
# actual difference of a run against CPersona 2.6.14. A difference no entry matches is reported "unexplained",
# so a reason never outlives the difference it was written for. Each reason starts with what kind it is:
# "deliberate" (a design choice of ours), "ours adds" (a key a CPersona client can ignore), "environment"
# (how the benchmark runs CPersona), "gap" (ours lacks what CPersona 2.6.14 answers: work to do).

_REF = "ours adds: `ref` (mem:<id>), the form recall rows carry and get_contents and the id arguments take"
_ADVISORY = (
    "environment: CPersona runs without an embedder here and attaches its degraded-mode `advisory` to "
    "every recall; ours runs with the hash embedder (ours too answers an `advisory` when its embedding "
    "mode is none)"
)
_NO_GRAPH = (
    "deliberate: the associative layer is not built yet, so ours has no entities, mentions or relations "
    "to count; CPersona 2.6.14 carries them through export, import and merge"
)
_PROFILE_COUNT = (
    "gap: ours answers `profile_updated` as a count (0/1, with `skipped_profiles`), CPersona as a "
    "boolean; a truth test reads both alike, a comparison with true does not"
)
_ALIASES = (
    "ours adds: `associations.aliases`, the aliases carried, counted apart from the entities they name "
    "(CPersona counts entities, mentions and relations)"
)
_IMPORT = {
    "+skipped_profiles": _PROFILE_COUNT,
    "~profile_updated": _PROFILE_COUNT,
    "-associations": _NO_GRAPH,
    "+associations.aliases": _ALIASES,
}
_CALIBRATE = (
    "ours adds: with too little data to recalibrate, ours answers the refusal in `error` (as CPersona "
    "2.6.14) and also the calibration's own answer under `calibrate` (the key a successful answer uses). "
    "Both answer ok:false and echo agent_id, precision, beta, cleared"
)
_FUSED_GATE = (
    "ours adds: `fused_gate` (null here: nothing was measured), the key CPersona's answer carries once a "
    "calibration ran; ours holds its second gate's report there, the word scores'"
)
_FIXED_COUNT = "ours adds: `fixed_count`, the rows the repairs changed (`fixed` is CPersona's boolean echo)"
_RIDER = (
    "ours adds: the rider answers what declare_associations answers, `ok` and `result` included; CPersona's "
    "rider leaves them out"
)

REASONS: dict[str, dict[str, str]] = {
    **{
        label: {"+ref": _REF}
        for label in (
            "store top-level",
            "store message form",
            "store source as a word",
            "store agent source",
            "store other channel",
            "store long",
            "store other session",
            "store odd timestamp",
            "store utc timestamp",
        )
    },
    "store lock": {"+ref": _REF},
    "store associations rider": {"+ref": _REF, "+associations.ok": _RIDER, "+associations.result": _RIDER},
    "store empty content": {
        "+error": "ours adds: the refusal is also in `error`, the key every other failure "
        "carries (CPersona's store refusals carry only `reason`)"
    },
    **{
        label: {"-advisory": _ADVISORY}
        for label in (
            "recall query",
            "recall empty query",
            "recall limit",
            "recall deep",
            "recall channel",
            "recall project",
            "recall global pool only",
            "recall source_id",
            "recall exclude_contents",
            "recall trace",
            "recall time_cue object",
            "recall time_cue ago",
            "recall_with_context",
            "recall after update",
            "recall while paused",
            "reconstruct",
        )
    },
    "recall limit out of range": {
        "form": "deliberate: ours checks arguments itself and answers in the tool's own shape (ok:false, an error "
        "naming the argument, messages: []); CPersona's MCP SDK refuses the call against its schema with a "
        "protocol error"
    },
    "recall preview": {"-advisory": _ADVISORY},
    "recall full_content": {
        "-advisory": _ADVISORY,
        "+full_content_budget_chars": "ours adds: it names the full_content budget (200,000 characters) on every "
        "full_content answer; CPersona 2.6.14 left it out of this one (the spec lists "
        "it among recall's optional keys)",
    },
    "recall time_cue JSON text": {
        "outcome": "deliberate: ours reads an object sent as JSON text (for clients that can only send strings); "
        "CPersona's MCP SDK refuses a string where its schema declares an object"
    },
    "get_contents": {
        "-items[].source": "gap: ours' items carry ref, content, timestamp and id but not the row's `source`"
    },
    "archive_episode": {
        "+ref": "ours adds: `ref` (ep:<id>), the form recall rows carry",
        "+embedded": "ours adds: `embedded`, whether the summary got a vector (as store answers)",
    },
    "list_episodes": {
        "+episodes[].*": "ours adds: each episode's channel, resolved flag, ref (ep:<id>) and `time` (its start, "
        "else when it was recorded: the instant recall files it under)"
    },
    "update_memory by id": {"+embedded": "ours adds: `embedded`, whether the new text got a vector"},
    "update_memory by ref": {
        "outcome": "deliberate: ours takes a ref (mem:<id>) wherever a memory id is declared; CPersona's schema "
        "declares an integer and its MCP SDK refuses the string"
    },
    "list_memories": {
        "+memories[].ref": "ours adds: `ref` on every row (CPersona adds it only to a row its character budget cut)"
    },
    "calibrate_threshold": {"+agent_id": "ours adds: the refusal echoes agent_id"},
    "set_recall_precision": {"+calibrate*": _CALIBRATE, "-error": _CALIBRATE, "+fused_gate": _FUSED_GATE},
    "set_recall_precision clear": {"+calibrate*": _CALIBRATE, "-error": _CALIBRATE, "+fused_gate": _FUSED_GATE},
    "get_recall_precision": {
        "+default_precision": "ours adds: the server's default level (CPERSONA_RECALL_PRECISION)",
        "+thresholds": "ours adds: the agent's calibrated thresholds, one per signal",
        "-global_*": "gap: ours answers no `global_precision`/`global_beta` (its server-wide level is "
        "`default_precision`)",
    },
    "export_memories": {"-associations": _NO_GRAPH},
    "import_memories dry_run": _IMPORT,
    "import_memories": _IMPORT,
    "import_memories again": _IMPORT,
    "merge_memories dry_run": {"-associations": _NO_GRAPH},
    "check_health": {
        "+fixed_count": _FIXED_COUNT,
        "-issues[].*": "gap: CPersona's issue entries also carry whether a fix repairs it, whether a person "
        "should look, and a hint; ours name the check (under `type` too), its severity, count and a sentence",
        "+issues[].*": "ours adds: each issue's sentence (`detail`), a few refs it concerns, and check-specific counts",
        "+stats.embedded_*": "ours adds: how many memories and episodes have a vector",
        "-stats.*": "gap: ours' stats count memories and episodes (and the embedded ones); CPersona's add the "
        "database size, profiles, pending tasks, the distribution over the axes and the agent's own "
        "counts",
    },
    "deep_check": {
        "+fixed_count": _FIXED_COUNT,
        "-results.stale_profile": "gap: ours has no stale_profile check (CPersona's: a profile not updated for "
        "30 days)",
    },
    "get_queue_status": {
        "+pending_by_kind": "ours adds: the pending tasks by kind (block builds, re-embedding, calibration)",
        "-max_retries": "gap: ours answers no retry settings (a task is tried 3 times, a fixed policy)",
        "-retry_delay": "gap: as max_retries",
    },
    "get_session_findings": {
        "-_meta": "gap: ours answers no `_meta` (CPersona: its server version and auditor version)",
        "-counts_by_kind.*": "deliberate: the kinds are each server's own check names (ours: check_health's), "
        "so the kinds found differ",
        "+counts_by_severity.*": "ours adds: every severity is counted, zeros included",
        "+counts_by_kind.*": "deliberate: the kinds are each server's own check names (ours: check_health's), "
        "so the kinds found differ",
    },
    "persistence_status": {
        "~ttl_remaining_seconds": "gap: not paused, ours answers ttl_remaining_seconds 0, CPersona null"
    },
    "reconstruct": {
        "-advisory": _ADVISORY,
        "-reserved_count": (
            "deliberate: CPersona holds one more item after the count here, a row of its keyword "
            "seats (on by default under rrf; it runs without an embedder, so no block seat); ours "
            "keeps keyword seats off by default (CUEDRECALL_KEYWORD_SEATS, measured in seats.md)"
        ),
        "+items[].quote_basis": (
            "ours adds: every head quote says how it was chosen (`quote_basis`: whole, blocks, "
            "lexical or start); CPersona 2.6.14 leaves the key out"
        ),
        "-shortfall_reason": (
            "environment: CPersona runs without an embedder here and its lexical arms find two "
            "items for the three asked, so it says why (exhausted_candidates); ours, with the hash "
            "embedder, fills the three"
        ),
    },
}

# Ours says how deep each arm looked when that is deeper than the limit (CUEDRECALL_RECALL_DEPTH_FLOOR).
_DEPTH = (
    "ours adds: `depth`, the rows each arm listed when that differs from the limit (the depth floor, "
    "CUEDRECALL_RECALL_DEPTH_FLOOR); CPersona's arms list the limit"
)
for _label in (
    "recall query",
    "recall deep",
    "recall exclude_contents",
    "recall preview",
    "recall full_content",
    "recall trace",
    "recall time_cue object",
    "recall time_cue JSON text",
    "recall time_cue ago",
    "recall_with_context",
    "recall after update",
    "recall empty query",
    "recall limit",
    "recall channel",
    "recall project",
    "recall global pool only",
    "recall source_id",
    "recall while paused",
):
    REASONS.setdefault(_label, {})["+depth"] = _DEPTH

# The cases of CPersona's behaviour kept (issue 28) differ where the steps they repeat differ.
REASONS["list_memories odd timestamp"] = {"+memories[].ref": REASONS["list_memories"]["+memories[].ref"]}
REASONS["check_health timestamp drift"] = REASONS["check_health fix echo"] = dict(REASONS["check_health"])
REASONS["deep_check fix echo"] = dict(REASONS["deep_check"])
REASONS["recall_with_context roles"] = dict(REASONS["recall_with_context"])
REASONS["recall unknown argument"] = dict(REASONS["recall query"])
REASONS["recall unknown argument"]["+ignored_arguments"] = (
    "ours adds: `ignored_arguments`, the arguments the tool does not take (ignored by both; ours names them)"
)
for _label in ("import plain JSONL dry_run", "import plain JSONL", "import dry_run while paused"):
    REASONS[_label] = {"+skipped_profiles": _PROFILE_COUNT, "~profile_updated": _PROFILE_COUNT}
REASONS["pause past a day"] = {
    "form": "deliberate: ours moves a time past a day to a day and says so in ttl_seconds (as CPersona's handler "
    "does); CPersona's MCP SDK refuses the call against its schema's maximum before its handler sees it"
}
REASONS["get_contents more than 20"] = {
    "form": "deliberate: ours checks arguments itself and answers in the tool's own shape (ok:false naming refs, "
    "max 20); CPersona's MCP SDK refuses the call against its schema's maxItems"
}

# The server's own tools (issue 28; docs/tools.md#the-servers-own-tools).
REASONS["get_operating_context dormant"] = {
    "+dormant": "ours adds: `dormant`, why in one word (not_configured, off, missing, unusable); the error says it "
    "in words in both"
}
REASONS["store project @auto without a context"] = {
    "*": 'deliberate: with no operating context, ours refuses project_id "@auto" (nothing says what it stands for, '
    'and the error says so); CPersona stores the row under the literal project "@auto", where no later '
    '"@auto" read of a context in use finds it'
}
_CHECKED = (
    "ours adds: `checked` (whether the index was asked in this process), `not_checked` (why not) and `index` (its "
    "URL and whether the operator allows asking it): an answer that never reads as a check that did not happen"
)
_META = "gap: ours answers no `_meta` (CPersona: its server version, the same as `running`)"
_INSTALL_VERSION = "ours adds: `install.version`, the installed distribution's version (null when none is installed)"
REASONS["check_update"] = {
    "+ok": "ours adds: `ok`, true for a report, false when an asked refresh or apply was not done",
    "+checked": _CHECKED,
    "+not_checked": _CHECKED,
    "+index": _CHECKED,
    "-_meta": _META,
    "+install.version": _INSTALL_VERSION,
}
REASONS["check_update refresh not allowed"] = {
    **REASONS["check_update"],
    "+error": "deliberate: ours answers ok:false naming why the asked refresh was not done (the operator has not "
    "allowed asking the index); CPersona answers the disabled verdict with refreshed: true",
}
REASONS["check_update apply not allowed"] = {
    **REASONS["check_update refresh not allowed"],
    "+error": "deliberate: ours answers ok:false naming why the asked install was not done; CPersona's apply_result "
    "says applied: false without a failure",
    "+apply_result.restart_required": "ours adds: `restart_required` on every apply_result, done or not",
}
_CHANNEL_AXIS = (
    "ours adds: what the schema holds (`needed`, `schema`) and the counts looked at (agents, memories, episodes, "
    "channels)"
)
REASONS["migrate_channel_axis"] = {
    key: _CHANNEL_AXIS for key in ("+ok", "+needed", "+schema", "+agents", "+memories", "+episodes", "+channels")
}
REASONS["migrate_channel_axis not a dry run"] = dict(REASONS["migrate_channel_axis"])

# Ours builds blocks in the background and says so on every write that queues one; CPersona answers the same key
# only when it has an embedder to build them with, and here it runs without one.
_BLOCKS = (
    "environment: ours answers `blocks: {status: queued}` on a write (its blocks are built in the "
    "background); CPersona answers the same only when it has an embedder, and here it runs without one"
)
for _label in (
    "store top-level",
    "store message form",
    "store source as a word",
    "store agent source",
    "store other channel",
    "store long",
    "store other session",
    "store lock",
    "store associations rider",
    "archive_episode",
    "update_memory by id",
    "store odd timestamp",
    "store utc timestamp",
):
    REASONS.setdefault(_label, {})["+blocks"] = _BLOCKS

# NOTES: (tool, argument) -> (verdict, why), for every argument whose declaration differs from CPersona's;
# ("*", argument) applies to that argument of every tool, (tool, "(tool)") to a tool ours does not have.
_NAME_CAP = (
    "deliberately different",
    "ours refuses a name longer than 256 characters (the cap CPersona declares "
    "for session_key, channel and project_id on store); CPersona declares none",
)
_TEXT_CAP = (
    "deliberately different",
    "ours refuses a text over 1,000,000 characters outright; shorter texts are "
    "cut to the stored cap (16,000; the profile 2,000) as CPersona cuts them",
)
_NULLABLE_SCOPE = (
    "deliberately different",
    "omitted means every project in both (ours also declares an explicit "
    "null, meaning the same); ours refuses a name over 256 characters, "
    "CPersona declares no cap on a read",
)
_REF_ID = (
    "deliberately different",
    "ours also takes the ref recall rows carry (mem:<id> / ep:<id>) and refuses an id below 1, which no row has",
)
_PATH = (
    "deliberately different",
    "ours confines the path to CPERSONA_EXPORT_DIR (default exports/ beside the "
    "database) and reads a relative name inside it; CPersona reads a relative path "
    "against its working directory and refuses it when that is outside the export "
    "folder (seen: a plain name refused with CPersona started elsewhere). Ours caps "
    "the path at 1024 characters",
)
NOTES: dict[tuple[str, str], tuple[str, str]] = {
    ("get_operating_context", "section"): (
        "deliberately different",
        "ours refuses a section name over 256 characters; a name is looked up, never read as a path",
    ),
    **{
        ("*", name): _NAME_CAP
        for name in ("agent_id", "target_agent_id", "source_agent_id", "channel", "project_id", "source_id", "entity")
    },
    ("declare_associations", "anchor_ref"): (
        "deliberately different",
        "ours refuses an anchor_ref over 64 characters (a ref is mem:<id> or ep:<id>)",
    ),
    **{("*", name): _TEXT_CAP for name in ("content", "summary", "profile", "keywords")},
    ("export_memories", "overwrite"): (
        "deliberately different",
        "ours only: an export never replaces a file this agent's export did not write unless overwrite is true "
        "(and the caller may write what the file holds); CPersona declares no such argument",
    ),
    ("*", "query"): (
        "deliberately different",
        "ours refuses a query over 16,000 characters (the stored-text cap); CPersona declares none",
    ),
    ("store", "source"): (
        "deliberately different",
        'ours also reads a word ("user", "assistant") or null at the top level, as CPersona reads them inside message',
    ),
    **{
        (tool, "project_id"): _NULLABLE_SCOPE
        for tool in ("recall", "recall_with_context", "list_memories", "list_episodes", "traverse", "reconstruct")
    },
    ("*", "time_cue"): (
        "same",
        "ours also declares an explicit null, which means no cue (as omitting it); a cue sent as JSON text is read too",
    ),
    ("reconstruct", "mode"): (
        "deliberately different",
        "ours sizes lite and pro in characters of quotes (lite "
        "2,800; pro the largest budget and 15 items, lowered to the "
        "maximum), not in cl100k tokens: no used_tokens",
    ),
    ("archive_episode", "resolved"): ("same", "null reads as false in both; ours declares it"),
    ("archive_episode", "start_time"): (
        "deliberately different",
        "ours only: the start given directly (overrides history's earliest timestamp)",
    ),
    ("archive_episode", "end_time"): (
        "deliberately different",
        "ours only: the end given directly (overrides history's latest timestamp)",
    ),
    ("list_memories", "limit"): (
        "same",
        "clamped to [0, 500] in both: CPersona in its handler (its schema declares no bounds), ours in its declaration",
    ),
    ("list_episodes", "limit"): (
        "same",
        "clamped to [0, 200] in both: CPersona in its handler, ours in its declaration",
    ),
    ("calibrate_threshold", "sample_size"): (
        "clamped differently",
        "0 means 200 and 5,000 is the ceiling in both; CPersona clamps the floor to 1, ours "
        "to 10 (both need 10 vectors to calibrate)",
    ),
    ("calibrate_threshold", "z_factor"): (
        "same",
        "0 means 1.0 and the value is clamped to [-10, 10] in both (CPersona in its handler)",
    ),
    ("calibrate_threshold", "percentile"): (
        "same",
        "0 means 0.95 and a value above 1 is a percent in both; CPersona refuses in its handler what ends "
        "outside (0, 1], ours refuses a value outside 0..100 as an argument error",
    ),
    ("set_recall_precision", "precision"): (
        "same",
        'both accept strict, balanced, lenient or "" (clear); CPersona refuses another word in its '
        "handler, ours as an argument error",
    ),
    ("pause_persistence", "ttl_seconds"): (
        "same",
        "both move a time past 86,400 seconds to 86,400 (the answer's ttl_seconds says so); ours also moves one "
        "below 1 to 1",
    ),
    ("set_recall_precision", "beta"): (
        "clamped differently",
        "ours refuses a beta below 0 or above 100; CPersona reads a beta of 0 or less as none and declares no ceiling",
    ),
    **{(tool, "memory_id"): _REF_ID for tool in ("update_memory", "delete_memory", "lock_memory", "unlock_memory")},
    ("delete_episode", "episode_id"): _REF_ID,
    ("export_memories", "agent_id"): (
        "deliberately different",
        'ours lets it be omitted, meaning "" (every agent, as in CPersona); ours refuses a name over 256 characters',
    ),
    ("export_memories", "output_path"): _PATH,
    ("import_memories", "input_path"): _PATH,
    ("merge_memories", "strategy"): ("same", "skip is the only strategy in both; ours declares it as an enum"),
    ("merge_memories", "mode"): ("same", "copy or move in both; ours declares them as an enum"),
    ("get_session_findings", "per_kind_limit"): (
        "clamped differently",
        "CPersona's description says minimum 1 (its schema declares no bound); ours moves a smaller value up to 1",
    ),
    ("traverse", "max_hops"): (
        "clamped differently",
        "CPersona's schema declares 0..5, so its SDK refuses a value outside; ours moves it to the bound",
    ),
    ("traverse", "limit"): (
        "clamped differently",
        "CPersona's schema declares 1..100, so its SDK refuses a value outside; ours moves it to the bound",
    ),
}


if __name__ == "__main__":
    raise SystemExit(main())
