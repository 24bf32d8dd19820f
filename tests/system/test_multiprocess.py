"""Several connections over one database file: every read sees every committed write, whoever made it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from cuedrecall.api import Memory
from cuedrecall.embed.hashing import hash_vector
from cuedrecall.store.base import EPISODE, MEMORY, Scope
from cuedrecall.text.fts import fts_terms
from tests.conftest import NOW, REPO_ROOT, open_memory

AGENT = "shared-agent"
REPO = REPO_ROOT


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[Memory, Memory]]:
    """Two independent Memory objects (two connections, two vector indexes) over the same file."""
    path = tmp_path / "shared.db"
    with open_memory(path) as writer, open_memory(path) as reader:
        yield writer, reader


def _near(memory: Memory, text: str, scope: Scope | None = None) -> dict[str, float]:
    hits = memory.store_.vector_near(scope or Scope(AGENT), hash_vector(text), floor=-2.0, depth=1000, window=1000)
    return {h.ref: h.raw for h in hits}


def _recalled(memory: Memory, query: str) -> list[str]:
    return [row["ref"] for row in memory.recall(agent_id=AGENT, query=query, limit=10)["messages"] if "ref" in row]


def test_a_write_through_one_is_visible_to_the_others_recall_and_vector_search(pair: tuple[Memory, Memory]) -> None:
    writer, reader = pair
    assert _near(reader, "anything") == {}  # the reader's index is built (empty) before the write
    assert reader.store_.pool_counts(Scope(AGENT)) == (0, 0)
    text = "the lighthouse keeper's logbook is in the blue chest"
    stored = writer.store(agent_id=AGENT, message={"content": text})
    near = _near(reader, text)
    assert stored["ref"] in near and near[stored["ref"]] == pytest.approx(1.0, abs=1e-5)
    assert _recalled(reader, text)[-1] == stored["ref"]
    assert reader.get_contents(agent_id=AGENT, refs=[stored["ref"]])["items"][0]["content"] == text
    assert reader.list_memories(agent_id=AGENT)["count"] == 1
    assert reader.store_.pool_counts(Scope(AGENT)) == (1, 0)  # cached statistics follow too
    keyword = reader.store_.memory_keyword(Scope(AGENT), fts_terms("lighthouse"), "lighthouse", depth=10)
    assert [h.ref for h in keyword] == [stored["ref"]]


def test_a_delete_through_one_disappears_from_the_other(pair: tuple[Memory, Memory]) -> None:
    writer, reader = pair
    keep = writer.store(agent_id=AGENT, message={"content": "keep the red umbrella by the door"})
    gone = writer.store(agent_id=AGENT, message={"content": "the old alarm code was 1234"})
    assert {keep["ref"], gone["ref"]} <= set(_near(reader, "alarm code"))  # the reader has indexed both
    assert writer.delete_memory(memory_id=gone["id"], agent_id=AGENT)["ok"] is True
    assert gone["ref"] not in _near(reader, "alarm code")
    assert gone["ref"] not in _recalled(reader, "the old alarm code was 1234")
    assert gone["ref"] not in _recalled(reader, "")
    assert reader.get_contents(agent_id=AGENT, refs=[gone["ref"]])["missing"] == [gone["ref"]]
    assert reader.store_.vectors([keep["ref"], gone["ref"]]).keys() == {keep["ref"]}


def test_an_update_through_one_is_re_embedded_in_the_others_index(pair: tuple[Memory, Memory]) -> None:
    writer, reader = pair
    stored = writer.store(agent_id=AGENT, message={"content": "dinner with Ana on friday"})
    assert np.allclose(reader.store_.vectors([stored["ref"]])[stored["ref"]], hash_vector("dinner with Ana on friday"))
    writer.update_memory(memory_id=stored["id"], content="dinner with Ana moved to sunday")
    assert np.allclose(
        reader.store_.vectors([stored["ref"]])[stored["ref"]], hash_vector("dinner with Ana moved to sunday")
    )
    answer = reader.recall(agent_id=AGENT, query="dinner with Ana moved to sunday", limit=5)
    assert answer["messages"][-1]["content"] == "dinner with Ana moved to sunday"


def test_episodes_and_profiles_written_by_one_are_read_by_the_other(pair: tuple[Memory, Memory]) -> None:
    writer, reader = pair
    episode = writer.archive_episode(agent_id=AGENT, summary="a long talk about moving to Lisbon")
    writer.update_profile(agent_id=AGENT, profile="plans to move abroad")
    assert episode["ref"] in _near(reader, "moving to Lisbon")
    fts = reader.store_.episode_fts(Scope(AGENT), fts_terms("Lisbon"), depth=10)
    assert [h.ref for h in fts] == [episode["ref"]]
    assert [h.ref for h in reader.store_.newest(Scope(AGENT), EPISODE, 10)] == [episode["ref"]]
    assert reader.get_profile(agent_id=AGENT) == {"profile": "plans to move abroad"}
    writer.update_profile(agent_id=AGENT, profile="moved to Lisbon")  # the reader had cached the first one
    assert reader.get_profile(agent_id=AGENT) == {"profile": "moved to Lisbon"}
    writer.delete_episode(episode_id=episode["episode_id"])
    assert episode["ref"] not in _near(reader, "moving to Lisbon")


def test_interleaved_writes_from_both_leave_both_indexes_complete_and_in_order(pair: tuple[Memory, Memory]) -> None:
    first, second = pair
    refs = []
    for i in range(30):
        side = first if i % 3 else second
        refs.append(side.store(agent_id=AGENT, message={"content": f"interleaved note {i} about kites"})["ref"])
        if i % 7 == 0:
            side.delete_memory(memory_id=int(refs.pop(0).split(":")[1]))
    for memory in pair:
        assert set(_near(memory, "kites")) == set(refs)
        assert [h.ref for h in memory.store_.newest(Scope(AGENT), MEMORY, 100)] == sorted(
            refs, key=lambda r: -int(r.split(":")[1])
        )
        assert memory.list_memories(agent_id=AGENT)["count"] == len(refs)


def test_a_duplicate_written_by_one_is_skipped_by_the_other(pair: tuple[Memory, Memory]) -> None:
    first, second = pair
    stored = first.store(agent_id=AGENT, message={"content": "only once", "id": "x-1"})
    again = second.store(agent_id=AGENT, message={"content": "only once", "id": "x-2"})
    assert again == {"ok": True, "result": "skipped", "reason": "duplicate content", "id": stored["id"]}
    again = second.store(agent_id=AGENT, message={"content": "other words", "id": "x-1"})
    assert again["result"] == "skipped" and again["reason"] == "duplicate msg_id"


def test_a_write_from_another_process_is_seen_without_reopening(tmp_path: Path) -> None:
    path = tmp_path / "proc.db"
    with open_memory(path) as reader:
        assert _near(reader, "anything") == {}
        script = textwrap.dedent(f"""
            from cuedrecall.api import Memory
            from cuedrecall.clock import fixed_clock
            from cuedrecall.config import Settings
            settings = Settings.from_env({{}}, embedding_mode="hash", block_build_enabled=False,
                                         block_retrieval_enabled=False)
            with Memory({str(path)!r}, settings=settings, clock=fixed_clock({NOW!r})) as m:
                for i in range(5):
                    m.store(agent_id={AGENT!r}, message={{"content": f"written by another process {{i}}"}})
                m.delete_memory(memory_id=2)
        """)
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        subprocess.run([sys.executable, "-c", script], check=True, env=env, cwd=REPO, timeout=60)
        assert set(_near(reader, "another process")) == {"mem:1", "mem:3", "mem:4", "mem:5"}
        assert "mem:5" in _recalled(reader, "written by another process 4")
        assert reader.list_memories(agent_id=AGENT)["count"] == 4
