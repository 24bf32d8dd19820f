"""The write tools and what the read tools then show: store, archive_episode, update/delete, profile, listing."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cuedrecall.api import Memory
from cuedrecall.embed import EmbeddingError
from cuedrecall.embed.hashing import hash_vector
from tests.conftest import NOW, failed, open_memory, snapshot

A, B = "agent-a", "agent-b"


class BrokenEmbedder:
    """An embedder that is configured but fails on every call (a remote embedder that is down)."""

    mode = "http"
    model = "broken-model"
    available = True
    dimensions = 384

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        raise EmbeddingError("the embedding service is down")


def _contents(memory: Memory, agent: str, refs: list[str]) -> dict[str, str]:
    return {item["ref"]: item["content"] for item in memory.get_contents(agent_id=agent, refs=refs)["items"]}


def _episode_columns(memory: Memory, agent: str) -> dict[int, dict[str, Any]]:
    return {row["id"]: row for row in memory.store_.export_rows("ep", agent)}


# -- store ------------------------------------------------------------------------------------


def test_store_answers_stored_with_id_ref_and_embedded(memory: Memory) -> None:
    result = memory.store(agent_id=A, message={"content": "the kettle is in the left cupboard"})
    assert result == {
        "ok": True,
        "result": "stored",
        "id": result["id"],
        "ref": f"mem:{result['id']}",
        "embedded": True,
    }
    assert isinstance(result["id"], int) and result["id"] >= 1
    assert _contents(memory, A, [result["ref"]]) == {result["ref"]: "the kettle is in the left cupboard"}


def test_store_skips_a_repeated_msg_id_even_with_other_content_or_channel(memory: Memory) -> None:
    first = memory.store(agent_id=A, message={"content": "first version", "id": "msg-1"}, channel="c1")
    again = memory.store(agent_id=A, message={"content": "second version", "id": "msg-1"}, channel="c2")
    assert again == {"ok": True, "result": "skipped", "reason": "duplicate msg_id", "id": first["id"]}
    assert _contents(memory, A, [first["ref"]])[first["ref"]] == "first version"
    assert memory.list_memories(agent_id=A)["count"] == 1


def test_store_skips_identical_content_in_the_same_scope(memory: Memory) -> None:
    first = memory.store(agent_id=A, message={"content": "the door code is 4711"}, channel="c", project_id="p")
    for content in ("the door code is 4711", "  the door code is 4711  ", "[Memory from chat] the door code is 4711"):
        again = memory.store(agent_id=A, message={"content": content, "id": "new-id"}, channel="c", project_id="p")
        assert again == {"ok": True, "result": "skipped", "reason": "duplicate content", "id": first["id"]}
    assert memory.list_memories(agent_id=A)["count"] == 1


def test_content_stored_in_the_shared_channel_and_global_pool_is_a_duplicate_everywhere(memory: Memory) -> None:
    """A write probes its own channel/project plus the shared ones it would see on read."""
    first = memory.store(agent_id=A, message={"content": "shared fact"})
    again = memory.store(agent_id=A, message={"content": "shared fact"}, channel="c", project_id="p")
    assert again["result"] == "skipped" and again["id"] == first["id"]


@pytest.mark.parametrize(
    ("first_scope", "second_scope"),
    [
        ({"agent_id": A, "channel": "c1"}, {"agent_id": A, "channel": "c2"}),
        ({"agent_id": A, "project_id": "p1"}, {"agent_id": A, "project_id": "p2"}),
        ({"agent_id": A, "project_id": "p1"}, {"agent_id": A, "project_id": ""}),
        ({"agent_id": A, "channel": "c1"}, {"agent_id": A, "channel": ""}),
        ({"agent_id": A}, {"agent_id": B}),
    ],
)
def test_the_same_content_in_another_channel_project_or_agent_is_stored(
    memory: Memory, first_scope: dict[str, str], second_scope: dict[str, str]
) -> None:
    first = memory.store(message={"content": "same words", "id": "m1"}, **first_scope)
    second = memory.store(message={"content": "same words", "id": "m2"}, **second_scope)
    assert first["result"] == second["result"] == "stored"
    assert first["id"] != second["id"]


def test_the_same_msg_id_in_another_project_or_agent_is_stored(memory: Memory) -> None:
    assert memory.store(agent_id=A, message={"content": "one", "id": "x"}, project_id="p1")["result"] == "stored"
    assert memory.store(agent_id=A, message={"content": "two", "id": "x"}, project_id="p2")["result"] == "stored"
    assert memory.store(agent_id=B, message={"content": "three", "id": "x"}, project_id="p1")["result"] == "stored"
    # a global write only probes the global pool
    assert memory.store(agent_id=A, message={"content": "four", "id": "x"})["result"] == "stored"
    # ... and a project write probes its project and the global pool
    assert memory.store(agent_id=A, message={"content": "five", "id": "x"}, project_id="p3")["result"] == "skipped"


@pytest.mark.parametrize(
    "stamp",
    ["2025-03-04T05:06:07.123+09:00", "2025-03-04T05:06:07Z", "2025-03-04", "2024-12-31T23:59:59-08:00"],
)
def test_the_callers_timestamp_is_kept_verbatim(memory: Memory, stamp: str) -> None:
    result = memory.store(agent_id=A, message={"content": f"an event at {stamp}", "timestamp": stamp})
    assert result["result"] == "stored"
    assert memory.list_memories(agent_id=A)["memories"][0]["timestamp"] == stamp
    assert memory.get_contents(agent_id=A, refs=[result["ref"]])["items"][0]["timestamp"] == stamp
    rows = [row for row in memory.recall(agent_id=A, query="")["messages"] if row.get("ref") == result["ref"]]
    assert rows and rows[0]["timestamp"] == stamp


def test_without_a_timestamp_the_clock_time_is_stored(memory: Memory) -> None:
    memory.store(agent_id=A, message={"content": "no time given"})
    row = memory.list_memories(agent_id=A)["memories"][0]
    assert row["timestamp"] == NOW and row["created_at"] == NOW


def test_source_spellings_are_folded_and_kept(memory: Memory) -> None:
    memory.store(agent_id=A, message={"content": "one", "source": "user"})
    memory.store(agent_id=A, message={"content": "two", "source": {"type": "assistant", "id": "bot"}})
    memory.store(agent_id=A, message={"content": "three", "source": {"User": {"id": "discord:1", "name": "M"}}})
    sources = [row["source"] for row in memory.list_memories(agent_id=A)["memories"]]
    assert sources == [
        {"type": "User", "id": "discord:1", "name": "M"},
        {"type": "Agent", "id": "bot"},
        {"type": "User"},
    ]


def test_an_embedding_failure_still_stores_the_row_with_embedded_false(tmp_path: Path) -> None:
    with open_memory(tmp_path / "broken.db", embedder=BrokenEmbedder()) as memory:
        result = memory.store(agent_id=A, message={"content": "stored without a vector"})
        assert result["ok"] is True and result["result"] == "stored" and result["embedded"] is False
        assert _contents(memory, A, [result["ref"]]) == {result["ref"]: "stored without a vector"}
        assert memory.store_.vectors([result["ref"]]) == {}
        episode = memory.archive_episode(agent_id=A, summary="an episode without a vector")
        assert episode["ok"] is True and episode["embedded"] is False
        assert memory.list_episodes(agent_id=A)["count"] == 1
        # recall still answers (the lexical arms and the listing need no vector)
        answer = memory.recall(agent_id=A, query="")
        assert answer.get("ok") is not False
        assert result["ref"] in [row.get("ref") for row in answer["messages"]]


def test_an_update_whose_embedding_fails_drops_the_stale_vector(memory: Memory) -> None:
    result = memory.store(agent_id=A, message={"content": "before the change"})
    assert result["ref"] in memory.store_.vectors([result["ref"]])
    memory.embedder = BrokenEmbedder()
    updated = memory.update_memory(memory_id=result["id"], content="after the change")
    assert updated == {"ok": True, "updated_id": result["id"], "embedded": False}
    assert memory.store_.vectors([result["ref"]]) == {}
    assert _contents(memory, A, [result["ref"]])[result["ref"]] == "after the change"


# -- archive_episode ----------------------------------------------------------------------------


def test_episode_start_and_end_are_the_earliest_and_latest_parsed_instants_of_history(memory: Memory) -> None:
    history = [
        {"role": "user", "timestamp": "2025-03-01T10:00:00+02:00"},  # 08:00Z: the earliest instant
        {"role": "user", "timestamp": "2025-03-01T09:00:00Z"},
        {"role": "user", "timestamp": "2025-03-01T12:30:00+05:00"},  # 07:30Z is earlier still
        {"role": "agent", "timestamp": "2025-03-01T05:00:00-05:00"},  # 10:00Z: the latest
        {"role": "agent", "timestamp": "not a time"},
        {"role": "agent", "timestamp": 12},
        {"role": "agent"},
    ]
    result = memory.archive_episode(agent_id=A, summary="a morning of planning", history=history)
    assert result["ok"] is True and result["ref"] == f"ep:{result['episode_id']}"
    row = _episode_columns(memory, A)[result["episode_id"]]
    assert (row["start_time"], row["end_time"]) == ("2025-03-01T12:30:00+05:00", "2025-03-01T05:00:00-05:00")
    listed = memory.list_episodes(agent_id=A)["episodes"][0]
    assert listed["time"] == "2025-03-01T12:30:00+05:00"


def test_episode_times_given_as_arguments_override_history(memory: Memory) -> None:
    result = memory.archive_episode(
        agent_id=A,
        summary="a planned trip",
        history=[{"timestamp": "2025-01-01T00:00:00Z"}],
        start_time="2025-05-01T09:00:00+00:00",
        end_time="2025-05-03T18:00:00+00:00",
    )
    row = _episode_columns(memory, A)[result["episode_id"]]
    assert (row["start_time"], row["end_time"]) == ("2025-05-01T09:00:00+00:00", "2025-05-03T18:00:00+00:00")


def test_an_episode_without_times_is_dated_when_it_was_recorded(memory: Memory) -> None:
    result = memory.archive_episode(agent_id=A, summary="an undated chat", keywords="chat misc", resolved=True)
    row = _episode_columns(memory, A)[result["episode_id"]]
    assert row["start_time"] is None and row["end_time"] is None
    listed = memory.list_episodes(agent_id=A)["episodes"][0]
    assert listed["time"] == NOW and listed["keywords"] == "chat misc" and listed["resolved"] is True
    item = memory.get_contents(agent_id=A, refs=[result["ref"]])["items"][0]
    assert "an undated chat" in item["content"]


def test_archiving_the_same_summary_twice_makes_two_episodes(memory: Memory) -> None:
    """archive_episode is a bare insert, as the reference documents (not idempotent)."""
    first = memory.archive_episode(agent_id=A, summary="same summary")
    second = memory.archive_episode(agent_id=A, summary="same summary")
    assert first["episode_id"] != second["episode_id"]
    assert memory.list_episodes(agent_id=A)["count"] == 2


# -- update_memory -----------------------------------------------------------------------------


def test_update_memory_changes_the_text_and_re_embeds_it(memory: Memory) -> None:
    result = memory.store(agent_id=A, message={"content": "the meeting is on monday"})
    memory.store(agent_id=A, message={"content": "completely unrelated gardening note"})
    updated = memory.update_memory(memory_id=result["id"], content="the meeting moved to thursday", agent_id=A)
    assert updated == {"ok": True, "updated_id": result["id"], "embedded": True}
    assert _contents(memory, A, [result["ref"]])[result["ref"]] == "the meeting moved to thursday"
    vector = memory.store_.vectors([result["ref"]])[result["ref"]]
    assert np.allclose(vector, hash_vector("the meeting moved to thursday"))
    answer = memory.recall(agent_id=A, query="the meeting moved to thursday", limit=5)
    rows = {row["ref"]: row["content"] for row in answer["messages"] if "ref" in row}
    assert rows.get(result["ref"]) == "the meeting moved to thursday"
    assert all("monday" not in text for text in rows.values())


def test_update_memory_over_the_cap_is_truncated_and_flagged(memory: Memory) -> None:
    result = memory.store(agent_id=A, message={"content": "short"})
    cap = memory.settings.max_content_length
    updated = memory.update_memory(memory_id=result["id"], content="z" * (cap + 10))
    assert updated["ok"] is True and updated["truncated"] is True
    assert len(_contents(memory, A, [result["ref"]])[result["ref"]]) == cap


# -- delete ------------------------------------------------------------------------------------


def test_a_deleted_memory_is_reported_missing(memory: Memory) -> None:
    keep = memory.store(agent_id=A, message={"content": "keep me"})
    gone = memory.store(agent_id=A, message={"content": "forget me"})
    assert memory.delete_memory(memory_id=gone["id"], agent_id=A) == {"ok": True, "deleted_id": gone["id"]}
    result = memory.get_contents(agent_id=A, refs=[keep["ref"], gone["ref"]])
    assert result["missing"] == [gone["ref"]] and [i["ref"] for i in result["items"]] == [keep["ref"]]
    assert [m["ref"] for m in memory.list_memories(agent_id=A)["memories"]] == [keep["ref"]]
    assert gone["ref"] not in [row.get("ref") for row in memory.recall(agent_id=A, query="")["messages"]]
    assert gone["ref"] not in memory.store_.vectors([gone["ref"]])
    assert failed(memory.delete_memory(memory_id=gone["id"], agent_id=A), "'memory_id'")
    # deleted content may be stored again
    assert memory.store(agent_id=A, message={"content": "forget me"})["result"] == "stored"


def test_a_deleted_episode_is_reported_missing(memory: Memory) -> None:
    episode = memory.archive_episode(agent_id=A, summary="a session to forget")
    assert memory.delete_episode(episode_id=episode["episode_id"], agent_id=A) == {
        "ok": True,
        "deleted_id": episode["episode_id"],
    }
    assert memory.get_contents(agent_id=A, refs=[episode["ref"]])["missing"] == [episode["ref"]]
    assert memory.list_episodes(agent_id=A)["count"] == 0
    assert failed(memory.delete_episode(episode_id=episode["episode_id"]), "'episode_id'")


def test_another_agent_cannot_update_or_delete(memory: Memory) -> None:
    mine = memory.store(agent_id=A, message={"content": "agent a's secret"})
    episode = memory.archive_episode(agent_id=A, summary="agent a's session")
    before = snapshot(memory)
    assert failed(memory.update_memory(memory_id=mine["id"], content="overwritten", agent_id=B), "'memory_id'")
    assert failed(memory.delete_memory(memory_id=mine["id"], agent_id=B), "'memory_id'")
    assert failed(memory.delete_episode(episode_id=episode["episode_id"], agent_id=B), "'episode_id'")
    assert snapshot(memory) == before
    assert memory.get_contents(agent_id=B, refs=[mine["ref"], episode["ref"]])["items"] == []


def test_without_agent_id_update_and_delete_are_unscoped(memory: Memory) -> None:
    mine = memory.store(agent_id=A, message={"content": "original"})
    episode = memory.archive_episode(agent_id=A, summary="a session")
    assert memory.update_memory(memory_id=mine["id"], content="edited")["ok"] is True
    assert _contents(memory, A, [mine["ref"]])[mine["ref"]] == "edited"
    assert memory.delete_memory(memory_id=mine["id"])["ok"] is True
    assert memory.delete_episode(episode_id=episode["episode_id"])["ok"] is True
    assert memory.list_memories(agent_id="")["count"] == memory.list_episodes(agent_id="")["count"] == 0


# -- profile -----------------------------------------------------------------------------------


def test_profile_update_then_get(memory: Memory) -> None:
    assert memory.get_profile(agent_id=A) == {"profile": ""}
    assert memory.update_profile(agent_id=A, profile="  likes green tea  ") == {"ok": True, "profiles_updated": 1}
    assert memory.get_profile(agent_id=A) == {"profile": "likes green tea"}
    memory.update_profile(agent_id=A, profile="[Memory from x] prefers coffee")
    assert memory.get_profile(agent_id=A) == {"profile": "prefers coffee"}
    assert memory.get_profile(agent_id=B) == {"profile": ""}


def test_a_profile_over_2000_characters_is_truncated_and_flagged(memory: Memory) -> None:
    assert memory.settings.max_profile_length == 2000
    result = memory.update_profile(agent_id=A, profile="p" * 2500)
    assert result == {"ok": True, "profiles_updated": 1, "truncated": True}
    assert memory.get_profile(agent_id=A)["profile"] == "p" * 2000
    assert "truncated" not in memory.update_profile(agent_id=A, profile="q" * 2000)


# -- list -----------------------------------------------------------------------------------


def test_list_memories_is_newest_first_and_respects_limit_agent_and_project(memory: Memory) -> None:
    refs = [
        memory.store(agent_id=A, message={"content": f"note {i}"}, project_id=p)["ref"]
        for i, p in enumerate(["", "p1", "p2", "p1", ""])
    ]
    memory.store(agent_id=B, message={"content": "b's note"})
    listed = memory.list_memories(agent_id=A)
    assert [m["ref"] for m in listed["memories"]] == refs[::-1] and listed["count"] == 5
    assert [m["ref"] for m in memory.list_memories(agent_id=A, limit=2)["memories"]] == refs[::-1][:2]
    assert [m["ref"] for m in memory.list_memories(agent_id=A, project_id="")["memories"]] == [refs[4], refs[0]]
    assert [m["ref"] for m in memory.list_memories(agent_id=A, project_id="p1")["memories"]] == [
        refs[4],
        refs[3],
        refs[1],
        refs[0],
    ]
    assert memory.list_memories(agent_id="")["count"] == 6
    assert memory.list_memories(agent_id=A, limit=0) == {"memories": [], "count": 0}
    row = listed["memories"][0]
    assert set(row) >= {
        "id",
        "ref",
        "agent_id",
        "project_id",
        "channel",
        "content",
        "source",
        "timestamp",
        "created_at",
        "locked",
    }


def test_list_episodes_is_newest_first(memory: Memory) -> None:
    ids = [memory.archive_episode(agent_id=A, summary=f"session {i}")["episode_id"] for i in range(3)]
    assert [e["id"] for e in memory.list_episodes(agent_id=A)["episodes"]] == ids[::-1]
    assert [e["id"] for e in memory.list_episodes(agent_id=A, limit=1)["episodes"]] == ids[-1:]


# -- recall: what holds for any correct recall ------------------------------------------------


def test_recall_finds_a_unique_stored_text_for_a_query_equal_to_it_as_the_best_row(memory: Memory) -> None:
    texts = [
        "the spare key hangs behind the blue garage door",
        "quarterly budget review scheduled with finance",
        "my cat Pixel likes sardines for breakfast",
        "the wifi password rotates every ninety days",
        "train tickets to Lisbon booked for the conference",
    ]
    refs = {memory.store(agent_id=A, message={"content": t})["ref"]: t for t in texts}
    for ref, text in refs.items():
        answer = memory.recall(agent_id=A, query=text, limit=3)
        rows = [row for row in answer["messages"] if "ref" in row]
        assert 1 <= len(rows) <= 3
        assert rows[-1]["ref"] == ref and rows[-1]["content"] == text  # the last row is the best
        for row in rows:
            assert set(row) >= {"ref", "content", "timestamp"} and row["ref"] in refs


def test_recall_respects_the_limit(memory: Memory) -> None:
    for i in range(12):
        memory.store(agent_id=A, message={"content": f"memory number {i} about the garden"})
    for limit in (0, 1, 5, 10):
        rows = [row for row in memory.recall(agent_id=A, query="", limit=limit)["messages"] if "ref" in row]
        assert len(rows) <= limit
    rows = [row for row in memory.recall(agent_id=A, query="", limit=5)["messages"] if "ref" in row]
    assert len(rows) == 5
