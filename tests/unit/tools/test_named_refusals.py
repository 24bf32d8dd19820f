"""Findings of the adversarial probe, pinned: every caller error names its argument and writes nothing.

A store and its ``associations`` rider are one transaction; a ref whose id is past 64 bits is refused by
name before SQL sees it; a NUL character is refused in any string argument on every backend (PostgreSQL text
cannot hold one, so SQLite takes none either); a null where null is accepted is the argument left out; the
explorer names a page offset past 64 bits. Run on PostgreSQL with CUEDRECALL_TEST_BACKEND=postgres.
"""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from cuedrecall.api import Memory
from cuedrecall.store.base import split_ref
from cuedrecall.ui.app import TOKEN_HEADER, make_app
from tests.conftest import failed, snapshot
from tests.contract.test_associations import graph_rows

A = "agent-a"
AUTH = {TOKEN_HEADER: "t"}
TOO_BIG = "mem:99999999999999999999"
JUST_PAST = f"mem:{2**63}"


def test_a_failure_inside_the_rider_rolls_the_memory_back(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rider runs in the store's transaction: when declaring fails, the memory is not there either."""

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("the graph is broken")

    monkeypatch.setattr(memory.store_, "add_mention", broken)
    answer = memory.store(agent_id=A, content="Ana runs the Osaka office", associations={"entities": [{"name": "Ana"}]})
    assert answer["ok"] is False and answer["result"] == "rejected"
    assert memory.list_memories(agent_id=A)["memories"] == []
    assert graph_rows(memory)["entities"] == []


def test_a_rider_naming_a_ref_past_64_bits_is_named_and_declares_nothing(memory: Memory) -> None:
    answer = memory.store(
        agent_id=A,
        content="hello world",
        associations={"relations": [{"subject": TOO_BIG, "predicate": "is", "object": "x"}]},
    )
    assert answer["result"] == "stored"  # a malformed rider never fails the store, and says so truthfully
    assert failed(answer["associations"], "associations.relations[0].subject")
    assert [m["ref"] for m in memory.list_memories(agent_id=A)["memories"]] == [answer["ref"]]
    assert graph_rows(memory)["entities"] == [] and graph_rows(memory)["relations"] == []


@pytest.mark.parametrize(
    ("arguments", "argument"),
    [
        ({"anchor_ref": JUST_PAST, "associations": {"entities": [{"name": "Ana"}]}}, "anchor_ref"),
        (
            {"associations": {"relations": [{"subject": "Ana", "predicate": "knows", "object": TOO_BIG}]}},
            "associations.relations[0].object",
        ),
        ({"retract": {"mentions": [{"entity": 1, "ref": JUST_PAST}]}}, "retract.mentions[0].ref"),
        ({"retract": {"relations": [2**63]}}, "retract"),
    ],
)
def test_declare_names_a_ref_or_id_past_64_bits(memory: Memory, arguments: dict[str, Any], argument: str) -> None:
    before = graph_rows(memory)
    answer = memory.declare_associations(agent_id=A, **arguments)
    assert failed(answer, argument), answer
    assert "failed inside the server" not in answer["error"]
    assert graph_rows(memory) == before


def test_a_ref_past_64_bits_is_no_ref() -> None:
    with pytest.raises(ValueError):
        split_ref(JUST_PAST)
    assert split_ref(f"mem:{2**63 - 1}") == ("mem", 2**63 - 1)


def test_a_null_where_null_is_accepted_is_the_argument_left_out(memory: Memory) -> None:
    answer = memory.archive_episode(agent_id=A, summary="we met", resolved=None)
    assert answer["ok"] is True, answer


def _seeded(memory: Memory) -> int:
    return memory.store(agent_id=A, content="the kettle is on the stove")["id"]


NUL_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("store", {"agent_id": A, "content": "tea\x00time"}, "content"),
    ("store", {"agent_id": A, "content": "tea", "metadata": {"k": "v\x00"}}, "metadata.k"),
    ("store", {"agent_id": A, "content": "tea", "metadata": {"k\x00": 1}}, "metadata"),
    (
        "store",
        {"agent_id": A, "content": "tea", "associations": {"entities": [{"name": "A\x00na"}]}},
        "associations.entities[0].name",
    ),
    ("recall", {"agent_id": A, "query": "kettle\x00"}, "query"),
    ("reconstruct", {"agent_id": A, "query": "kettle\x00"}, "query"),
    ("update_profile", {"agent_id": A, "profile": "likes\x00tea"}, "profile"),
    ("archive_episode", {"agent_id": A, "summary": "we\x00met"}, "summary"),
    (
        "declare_associations",
        {"agent_id": A, "associations": {"entities": [{"name": "A\x00na"}]}},
        "associations.entities[0].name",
    ),
    ("update_memory", {"agent_id": A, "memory_id": "{id}", "content": "the\x00kettle"}, "content"),
    ("import_memories", {"input_path": "x.jsonl", "target_agent_id": "M\x00"}, "target_agent_id"),
    ("merge_memories", {"source_agent_id": A, "target_agent_id": "M\x00"}, "target_agent_id"),
    ("merge_memories", {"source_agent_id": "M\x00", "target_agent_id": A}, "source_agent_id"),
    ("calibrate_threshold", {"agent_id": "M\x00"}, "agent_id"),
    ("traverse", {"agent_id": A, "entity": "A\x00na"}, "entity"),
]


@pytest.mark.parametrize(("tool", "arguments", "argument"), NUL_CALLS, ids=[f"{t}-{a}" for t, _, a in NUL_CALLS])
def test_a_nul_character_is_refused_by_name_on_every_backend(
    memory: Memory,
    tool: str,
    arguments: dict[str, Any],
    argument: str,
) -> None:
    memory_id = _seeded(memory)
    arguments = {key: memory_id if value == "{id}" else value for key, value in arguments.items()}
    before = snapshot(memory, agents=(A, "M\x00"))
    answer = memory.call(tool, arguments)
    assert failed(answer, f"argument '{argument}") and "NUL" in answer["error"], answer
    assert snapshot(memory, agents=(A, "M\x00")) == before
    assert all("\x00" not in agent["agent_id"] for agent in memory.agents()["agents"])


def test_the_explorer_names_an_offset_past_64_bits(memory: Memory) -> None:
    _seeded(memory)
    client = TestClient(make_app(memory, "t"), base_url="http://127.0.0.1")
    for name in ("offset", "before_id"):
        response = client.get("/api/records", params={"agent_id": A, name: "9" * 20}, headers=AUTH)
        assert response.status_code == 400 and name in response.json()["error"], response.text
    response = client.get("/api/records", params={"agent_id": A, "channel": "c\x00"}, headers=AUTH)
    assert response.status_code == 400 and "channel" in response.json()["error"]


def test_the_explorer_still_pages(memory: Memory) -> None:
    _seeded(memory)
    client = TestClient(make_app(memory, "t"), base_url="http://127.0.0.1")
    response = client.get("/api/records", params={"agent_id": A, "offset": "0"}, headers=AUTH)
    assert response.status_code == 200 and len(response.json()["rows"]) == 1
