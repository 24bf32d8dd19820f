"""Re-embedding a store whose vectors another model made: queued at the open, run by the queue's runner, newest
first, a batch a task. Meanwhile the vector arms compare a query with rows already re-embedded only (never across
models) and the lexical arms answer as before; check_health and get_queue_status show the progress; at the end
every row has the new model's vector of its own text, nothing is lost, and the stale calibration is measured anew.

The stores are filled under the hash embedder and reopened under ``Rolled``: the hash embedder under another label,
its vectors rolled by one place (another model of the same width, so only the label tells them apart).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import cuedrecall.handlers.reembed as reembed_module
from cuedrecall.api import Memory
from cuedrecall.embed import EmbeddingError, HashEmbedder, NullEmbedder
from cuedrecall.handlers.reembed import REEMBED
from cuedrecall.store.base import EPISODE, MEMORY, Scope, make_ref
from cuedrecall.store.index.vector_index import IndexRow, VectorIndex
from tests.conftest import make_settings, open_memory

A = "agent-a"
OLD = HashEmbedder.model
WORDS = (
    "harbour",
    "violin",
    "glacier",
    "lantern",
    "orchard",
    "comet",
    "saffron",
    "tundra",
    "quartz",
    "meadow",
    "falcon",
    "ember",
)


class Rolled(HashEmbedder):
    """Another model of the same width: the hash vectors rolled by one place, labelled apart."""

    model = "hash-384-rolled"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.roll(super().embed(texts), 1, axis=1)


class Failing(Rolled):
    """The new model while its service is down."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        raise EmbeddingError("the embedding service is down")


def fill(path: Path, memories: int = 12, episodes: int = 2) -> list[str]:
    """A store filled under the hash embedder, one memory a minute (each with a word of its own); the refs."""
    refs = []
    with open_memory(path) as memory:
        for i in range(memories):
            answer = memory.store(
                agent_id=A,
                content=f"note {i}: the {WORDS[i % len(WORDS)]} by the shore",
                timestamp=f"2025-10-01T10:{i:02d}:00+00:00",
            )
            refs.append(answer["ref"])
        for i in range(episodes):
            refs.append(
                memory.archive_episode(
                    agent_id=A, summary=f"episode {i}: a talk about the {WORDS[i]} and the {WORDS[i + 1]}"
                )["ref"]
            )
    return refs


def reopened(path: Path, embedder: Any = None, **settings: Any) -> Memory:
    return open_memory(path, settings=make_settings(**settings), embedder=embedder or Rolled(), background=False)


def rows(memory: Memory) -> dict[str, tuple[str, str, np.ndarray | None]]:
    """ref -> (text, embedding_model, vector) of every row."""
    out = {}
    for kind, column in ((MEMORY, "content"), (EPISODE, "summary")):
        for row in memory.store_.export_rows(kind, ""):
            out[make_ref(kind, row["id"])] = (row[column], row["embedding_model"], row["embedding"])
    return out


def vector_refs(memory: Memory, query: str) -> set[str]:
    """Every row the vector arms can reach with the query's vector (any score), near window, far list and period."""
    store, vector = memory.store_, memory.runtime.query_vector(query)
    assert vector is not None
    scope = Scope(A)
    hits = store.vector_near(scope, vector, floor=-1.0, depth=1000, window=1000)
    hits += store.vector_far(scope, vector, floor=-1.0, limit=1000, window=0, reach=1000)
    hits += store.vector_in_period(scope, MEMORY, vector, floor=-1.0, depth=1000, period=(0.0, 4e9))
    found = {hit.ref for hit in hits} | {hit.ref for hit in store.far_candidates(scope, vector, start=0, count=1000)}
    return found | set(store.vectors([ref for ref in rows(memory)]))


def stale_issue(memory: Memory) -> dict[str, Any] | None:
    issues = memory.check_health(agent_id=A, checks=["stale_embeddings"])["issues"]
    return issues[0] if issues else None


def test_a_model_change_queues_the_re_embedding_and_the_vector_arms_leave_the_old_vectors_out(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    refs = fill(path)
    with reopened(path) as memory:
        assert memory.store_.pending_tasks(REEMBED) == 1 and memory.blocks is not None
        status = memory.get_queue_status()
        assert status["enabled"] is True and status["pending_by_kind"] == {REEMBED: 1}
        issue = stale_issue(memory)
        assert issue is not None and issue["count"] == 14 and issue["severity"] == "info"
        assert issue["by_kind"] == {MEMORY: 12, EPISODE: 2} and issue["queued"] == 1
        assert vector_refs(memory, "the violin by the shore") == set()  # no row of the query's model yet
        # the lexical arms answer as before
        answer = memory.recall(agent_id=A, query="violin")
        assert refs[1] in [row["ref"] for row in answer["messages"]]
        # a second open while the task is pending queues no second chain
        with reopened(path) as again:
            assert again.store_.pending_tasks(REEMBED) == 1


def test_the_walk_goes_newest_first_a_batch_a_task_and_the_vector_arms_see_the_rows_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.db"
    refs = fill(path)
    monkeypatch.setattr(reembed_module, "BATCH_ROWS", 5)
    with reopened(path) as memory:
        assert memory.blocks is not None and memory.blocks.drain(max_tasks=1) == 1
        done = set(refs[7:12])  # the newest five memories
        labels = {ref: model for ref, (_, model, _) in rows(memory).items()}
        assert {ref for ref, model in labels.items() if model == Rolled.model} == done
        for query in ("the violin by the shore", "note 9: the falcon", "episode"):
            assert vector_refs(memory, query) == done  # never a row of the other model
        issue = stale_issue(memory)
        assert issue is not None and issue["count"] == 9
        assert memory.check_health(agent_id=A, checks=["vector_index"])["issues"] == []  # the index merged them in
        # a row rewritten before the walk reaches it gets the new model's vector from its write
        memory.update_memory(agent_id=A, memory_id=1, content="note 0: the harbour lights at dusk")
        assert vector_refs(memory, "harbour") == done | {refs[0]}
        assert memory.blocks.drain() == 2  # 8 left (one was rewritten meanwhile): a full batch, then the last 3
        assert memory.store_.pending_tasks() == 0 and stale_issue(memory) is None


def test_after_draining_every_row_has_the_new_models_vector_of_its_text_and_nothing_is_lost(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    fill(path)
    with open_memory(path) as memory:
        before = {ref: text for ref, (text, _, _) in rows(memory).items()}
        listed = memory.list_memories(agent_id=A, limit=100)
    rolled = Rolled()
    with reopened(path, rolled) as memory:
        assert memory.blocks is not None and memory.blocks.drain() >= 1
        after = rows(memory)
        assert {ref: text for ref, (text, _, _) in after.items()} == before
        for ref, (text, model, vector) in after.items():
            assert model == Rolled.model and np.allclose(vector, rolled.embed([text])[0]), ref
        assert memory.list_memories(agent_id=A, limit=100) == listed
        assert memory.get_queue_status()["pending"] == 0
        assert memory.check_health(agent_id=A)["status"] == "healthy"
        assert vector_refs(memory, "the violin by the shore") == set(before)


def test_the_stale_calibration_is_measured_anew_after_the_last_batch_not_at_the_open(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    fill(path, memories=30, episodes=0)
    with open_memory(path) as memory:
        assert memory.calibrate_threshold(agent_id=A)["ok"] is True
    with reopened(path) as memory:
        assert memory.calibration.stale  # kept at the open: measured over the rows re-embedded, it would mislead
        assert {row.embedding_model for row in memory.store_.thresholds()} == {OLD}
        assert memory.blocks is not None and memory.blocks.drain() >= 1
        assert not memory.calibration.stale
        assert {row.embedding_model for row in memory.store_.thresholds()} == {Rolled.model}


def test_a_failing_embedder_leaves_the_rows_as_they_were_and_the_task_waits_for_its_retry(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    fill(path)
    with reopened(path, Failing()) as memory:
        assert memory.blocks is not None and memory.blocks.drain() == 1  # failed: due again later
        assert memory.store_.pending_tasks(REEMBED) == 1
        assert {model for _, model, _ in rows(memory).values()} == {OLD}
        assert memory.recall(agent_id=A, query="violin")["messages"]  # the lexical arms still answer


def test_check_health_with_fix_re_embeds_the_stale_rows_now(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    fill(path)
    with reopened(path) as memory:
        result = memory.check_health(agent_id=A, fix=True, checks=["stale_embeddings"])
        assert result["issues"][0]["fixed"] == 14 and "remaining" not in result["issues"][0]
        assert {model for _, model, _ in rows(memory).values()} == {Rolled.model}
        assert memory.blocks is not None and memory.blocks.drain() == 1  # the queued step finds nothing left
        assert memory.store_.pending_tasks() == 0


def test_without_vectors_nothing_is_queued_and_a_store_of_one_model_queues_nothing(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    fill(path)
    with reopened(path, NullEmbedder(), embedding_mode="none") as memory:
        assert memory.store_.pending_tasks() == 0 and memory.blocks is None
        assert memory.get_queue_status() == {"enabled": False, "pending": 0}
        assert stale_issue(memory) is None
    with open_memory(path) as memory:
        assert memory.store_.pending_tasks() == 0 and stale_issue(memory) is None


def test_the_block_backfill_rebuilds_the_block_sets_of_the_new_model(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    text = " ".join(
        f"Entry {i}: we talked about the {WORDS[i % len(WORDS)]} for a while, and nothing in it was worth keeping."
        for i in range(40)
    )
    with open_memory(path, settings=make_settings(block_build_enabled=True), background=False) as memory:
        memory.store(agent_id=A, content=text)
        assert memory.blocks is not None and memory.blocks.drain() == 1
        assert memory.store_.block_counts(A, OLD)["records_lacking_blocks"] == 0
    with reopened(path, block_build_enabled=True) as memory:
        assert memory.store_.block_counts(A, Rolled.model)["records_lacking_blocks"] == 1
        assert memory.blocks is not None
        memory.blocks.queue_backfill()  # what a server's start queues
        memory.blocks.drain()
        counts = memory.store_.block_counts(A, Rolled.model)
        assert counts["records_lacking_blocks"] == 0 and counts["block_rows"] > 1
        assert memory.store_.block_counts(A, OLD)["records_with_blocks"] == 0


def test_rows_merged_into_the_vector_index_below_its_newest_id_land_in_id_order() -> None:
    """What a re-embedded batch does to the index: the same index as rows added in id order, in one pass."""
    rng = np.random.default_rng(7)
    made = {}
    for row_id in range(1, 80):
        vector = rng.normal(size=384).astype(np.float32)
        made[row_id] = IndexRow(
            row_id,
            vector / np.linalg.norm(vector),
            A if row_id % 3 else "agent-b",
            "",
            "",
            f"s{row_id % 4}",
            float(row_id),
        )
    exact = lambda ids: {i: made[i].vector for i in ids if i in made}  # noqa: E731  (the stored vectors)
    merged, ordered = VectorIndex(exact), VectorIndex(exact)
    first = sorted(rng.choice(list(made), size=20, replace=False).tolist())
    for row_id in first:
        merged.add(made[row_id])
    rest = [made[row_id] for row_id in made if row_id not in first]
    for start in range(0, len(rest), 13):
        merged.insert(list(reversed(rest[start : start + 13])))
    merged.insert([made[first[0]]])  # already there: left as it is
    for row in made.values():
        ordered.add(row)
    assert len(merged) == len(ordered) == 79
    query = made[5].vector
    for scope in (Scope(A), Scope("agent-b"), Scope(A, source_id="s1")):
        assert merged.search(scope, query, floor=-1.0, depth=100) == ordered.search(scope, query, floor=-1.0, depth=100)
        assert merged.coarse(scope, query, start=3, count=10) == ordered.coarse(scope, query, start=3, count=10)
    assert [a.tolist() for a in merged.agent_rows("")] == [a.tolist() for a in ordered.agent_rows("")]
