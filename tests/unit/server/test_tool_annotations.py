"""Every tool's MCP annotations say what the tool does (docs/tools.md#annotations).

Hosts read them to decide what to ask a person first: ``readOnlyHint`` (changes nothing),
``destructiveHint`` (may remove or replace what is there; false means it only adds),
``idempotentHint`` (the same call again has no further effect). Each tool is called here on
a seeded store, and the store's state is compared before, after, and after the same call
again:

- a read-only tool changes nothing; a tool that is not read-only changes something in some call;
- a tool that is not destructive leaves every record, profile, declared relation and file it
  found as it was (only additions); a destructive one removes or replaces one in some call;
- an idempotent tool's second call changes nothing more; a tool that is not idempotent
  changes something on the second call of some case, or ``NOT_SHOWN`` says why not here.

The data a tool may only add to is the store's records, profiles, relations and export
files; calibrated thresholds and the pause are settings a tool may change without being
destructive.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cuedrecall.api import Memory
from cuedrecall.clock import Clock
from cuedrecall.handlers.rows import memory_row
from cuedrecall.server.mcp import _tool_list
from cuedrecall.tools import TOOLS
from tests.conftest import NOW, make_settings, open_memory

A, B = "agent-a", "agent-b"
SESSION = "s1"
ENTITY = "Osaka office"

# Each tool's calls, on a freshly seeded store each (seed() says what it holds; ids are the seed's).
CASES: dict[str, list[dict[str, Any]]] = {
    "store": [{"agent_id": A, "content": "a new fact about ferries", "id": "n1"}],
    "recall": [{"agent_id": A, "query": "tea"}],
    "recall_with_context": [{"agent_id": A, "query": "tea", "external_context": [{"role": "user", "content": "hi"}]}],
    "get_contents": [{"agent_id": A, "refs": ["mem:1", "ep:1"]}],
    "archive_episode": [{"agent_id": A, "summary": "a second session about ferries"}],
    "update_memory": [{"memory_id": 1, "content": "the tea note, corrected"}],
    "lock_memory": [{"memory_id": 1}],
    "unlock_memory": [{"memory_id": 2}],
    "delete_memory": [{"memory_id": 1}],
    "delete_episode": [{"episode_id": 1}],
    "delete_agent_data": [{"agent_id": A}],
    "list_memories": [{"agent_id": A}],
    "list_episodes": [{"agent_id": A}],
    "get_profile": [{"agent_id": A}],
    "update_profile": [{"agent_id": A, "profile": "prefers coffee now"}],
    "calibrate_threshold": [{"agent_id": A}],
    "set_recall_precision": [{"agent_id": A, "precision": "strict"}],
    "get_recall_precision": [{"agent_id": A}],
    "export_memories": [
        {"agent_id": A, "output_path": "fresh.jsonl"},
        {"agent_id": A, "output_path": "b.jsonl", "overwrite": True},  # replaces B's export
    ],
    "import_memories": [{"input_path": "b.jsonl", "target_agent_id": A}],
    "merge_memories": [
        {"source_agent_id": B, "target_agent_id": A},
        {"source_agent_id": B, "target_agent_id": A, "mode": "move"},
    ],
    "check_health": [{"agent_id": A}, {"agent_id": A, "fix": True}],
    "deep_check": [{"agent_id": A}, {"agent_id": A, "fix": True}],
    "get_queue_status": [{}],
    "get_session_findings": [{}],
    "pause_persistence": [{"ttl_seconds": 60, "session_key": SESSION}],
    "resume_persistence": [{"session_key": SESSION}],
    "persistence_status": [{"session_key": SESSION}],
    "declare_associations": [
        {"agent_id": A, "associations": {"entities": [{"name": "Kyoto office"}]}, "anchor_ref": "mem:1"},
        {"agent_id": A, "retract": {"relations": [1]}},
    ],
    "traverse": [{"agent_id": A, "entity": ENTITY}],
    "reconstruct": [{"agent_id": A, "query": "what do we know about the office"}],
    "get_operating_context": [{}, {"section": "notes"}],
    "check_update": [{}],
    "migrate_channel_axis": [{"agent_id": A}, {"agent_id": A, "dry_run": False, "globalize_unrecoverable": True}],
}

# Tools declared not idempotent whose second call changes nothing in the cases above, and why the claim stays.
NOT_SHOWN = {
    "calibrate_threshold": "it measures afresh each time (equal here only because nothing changed in between), "
    "and CPersona declares it so",
    "set_recall_precision": "it recalibrates, as calibrate_threshold does",
    "check_health": "a fix spends a bounded budget of rows per call: a large store is repaired over several calls",
    "deep_check": "as check_health",
}

# Tools whose writes land outside the store, where this test cannot look, and why the hints stay as they are.
OUTSIDE_THE_STORE = {
    "check_update": "apply: true installs a release into the Python environment (it replaces the installed one); "
    "it is never run here (tests/unit/handlers/test_check_update.py replaces the installer)",
}
# The operating context every seeded store runs with (get_operating_context reads it; no case names "@auto").
CONTEXT = 'version = 1\ncontext_revision = "r1"\n[[doctrine]]\nname = "notes"\nbody = "keep it short"\n'


def ticking(start: str) -> Clock:
    """A clock one second further on at each reading (a pause repeated later ends later)."""
    moment = datetime.fromisoformat(start)
    count = iter(range(10**9))
    return lambda: moment + timedelta(seconds=next(count))


def seed(memory: Memory) -> None:
    """Agent A: 12 memories (mem:1 about tea, mem:2 locked), an episode, a profile, a relation mem:1 declares,
    B's memories and B's export file b.jsonl; rows a fix changes (written past the tools); SESSION paused."""
    memory.store(agent_id=A, content="Ana prefers green tea in the morning", id="m1")
    memory.store(agent_id=A, content="the office safe code changes monthly", lock=True)
    for i, topic in enumerate(["garden", "taxes", "piano", "cycling", "bread", "chess", "rust", "birds", "maps"]):
        memory.store(agent_id=A, content=f"note {i}: a thought about {topic}")
    memory.archive_episode(agent_id=A, summary="a session about tea and the office")
    memory.update_profile(agent_id=A, profile="likes tea")
    declared = memory.declare_associations(
        agent_id=A,
        anchor_ref="mem:1",
        associations={
            "entities": [{"name": ENTITY, "aliases": ["Kansai branch"]}, {"name": "Ana"}],
            "relations": [{"subject": "Ana", "predicate": "runs", "object": ENTITY}],
        },
    )
    assert declared.get("ok") is not False, declared
    memory.store(agent_id=B, content="B keeps the ferry timetable")
    memory.store(agent_id=B, content="B's second note about harbours")
    assert memory.export_memories(agent_id=B, output_path="b.jsonl")["ok"] is True
    for content in ("   ", "  stray   spacing  "):  # check_health's fix deletes the first, deep_check's rewrites
        _row(memory, content)
    memory.pause_persistence(ttl_seconds=600, session_key=SESSION)


def _row(memory: Memory, content: str) -> None:
    """A memory of A's written straight through the store, past the tools' checks."""
    row = memory_row(
        agent_id=A,
        project_id="",
        channel="",
        msg_id="",
        content=content,
        source={},
        timestamp=NOW,
        metadata={},
        created_at=NOW,
        vector=None,
        model="",
    )
    with memory.store_.write() as conn:
        memory.store_.insert_memory(conn, row)


def data(memory: Memory, folder: Path) -> dict[str, Any]:
    """What a non-destructive tool may only add to: each record, profile, relation and export file by its key."""
    out: dict[str, Any] = {}
    for agent in (A, B):
        for row in memory.list_memories(agent_id=agent, limit=500)["memories"]:
            row.pop("locked", None)  # a lock is a setting of the row (settings_state), not what it holds
            out[f"mem:{row['id']}"] = json.dumps(row, sort_keys=True)
        for row in memory.list_episodes(agent_id=agent, limit=200)["episodes"]:
            out[f"ep:{row['id']}"] = json.dumps(row, sort_keys=True)
        out[f"profile:{agent}"] = memory.get_profile(agent_id=agent).get("profile")
        for relation in memory.traverse(agent_id=agent, entity=ENTITY, max_hops=2).get("relations", []):
            out[f"relation:{agent}:{relation.get('id')}"] = json.dumps(relation, sort_keys=True)
    for path in sorted(folder.glob("*")):
        out[f"file:{path.name}"] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def settings_state(memory: Memory) -> str:
    """What a tool may change without destroying anything: calibration, precision, the session's pause, locks."""
    status = memory.persistence_status(session_key=SESSION)
    status.pop("ttl_remaining_seconds", None)  # the clock moves on: when it ends is what a tool may change
    locks = [row.get("locked") for row in memory.list_memories(agent_id="", limit=500)["memories"]]
    return repr((memory.store_.thresholds(), memory.store_.betas(), status, locks))


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[Callable[[], tuple[Memory, Path]]]:
    opened: list[Memory] = []

    def make() -> tuple[Memory, Path]:
        path = tmp_path / f"m{len(opened)}" / "a.db"
        path.parent.mkdir()
        context = tmp_path / "operating-context.toml"
        context.write_text(CONTEXT, encoding="utf-8")
        settings = make_settings(operating_context_path=str(context))
        memory = open_memory(path, settings=settings, clock=ticking(NOW))
        opened.append(memory)
        seed(memory)
        return memory, path.parent / "exports"

    yield make
    for memory in opened:
        memory.close()


def _runs(fresh: Callable[[], tuple[Memory, Path]], tool: str) -> Iterator[tuple[dict[str, Any], list[Any]]]:
    """Each case of the tool on its own seeded store: (arguments, [data, settings] before, after, after again)."""
    for arguments in CASES[tool]:
        memory, folder = fresh()
        states = []
        for _ in range(3):
            states.append((data(memory, folder), settings_state(memory)))
            if len(states) < 3:
                answer = memory.call(tool, arguments)
                # the first call must succeed; the same call again may be refused (a row already deleted)
                assert len(states) == 2 or answer.get("ok") is not False, (tool, arguments, answer)
        yield arguments, states


def test_every_tool_has_cases_here() -> None:
    assert set(CASES) == set(TOOLS), "a tool without a case here has annotations nobody checked: add its calls"


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_the_annotations_say_what_the_tool_does(tool: str, fresh: Callable[[], tuple[Memory, Path]]) -> None:
    spec = TOOLS[tool]
    wrote = destroyed = repeated = False
    for arguments, ((data0, set0), (data1, set1), (data2, set2)) in _runs(fresh, tool):
        changed = (data0, set0) != (data1, set1)
        lost = [key for key, value in data0.items() if data1.get(key) != value]
        if spec.read_only:
            assert not changed and (data1, set1) == (data2, set2), f"{tool} is read-only but wrote ({arguments})"
        if not spec.destructive:
            assert not lost, f"{tool} is not destructive but removed or replaced {lost[:3]} ({arguments})"
        if spec.idempotent:
            assert (data1, set1) == (data2, set2), f"{tool} is idempotent but its second call changed more"
        wrote |= changed
        destroyed |= bool(lost)
        repeated |= (data1, set1) != (data2, set2)
    if tool in OUTSIDE_THE_STORE:
        return  # what it writes is not in the store: the hints are checked by reading what it does
    if not spec.read_only:
        assert wrote, f"{tool} is not read-only, yet none of its cases changed anything: a case is missing"
    if spec.destructive:
        assert destroyed, f"{tool} is destructive, yet none of its cases removed or replaced anything"
    if not spec.idempotent and not spec.read_only:
        assert repeated or tool in NOT_SHOWN, f"{tool} is not idempotent, yet a second call never changed more"


def test_the_published_annotations_are_the_declared_ones() -> None:
    """Read with MCP's defaults for a hint left out (readOnly false, destructive true, idempotent false); a
    read-only tool's other two hints mean nothing, and a tool that is not read-only always says destructiveHint."""
    for listed in _tool_list():
        spec, hints = TOOLS[listed.name], listed.annotations
        assert hints is not None
        assert bool(hints.readOnlyHint) is spec.read_only, listed.name
        if spec.read_only:
            continue
        assert hints.destructiveHint is spec.destructive, listed.name
        assert bool(hints.idempotentHint) is spec.idempotent, listed.name
    assert TOOLS["merge_memories"].destructive  # mode move deletes the source's rows: a host asks first
