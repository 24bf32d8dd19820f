"""Building blocks through the tools: the writes queue a build in their own transaction, the builder (a
thread, or ``drain`` in the test's thread) divides, embeds and writes, the backfill walks what was stored
before, a process killed mid-queue leaves work that the next one finishes, and check_health reports and
advances the backfill.

Most tests open the store with ``background=False`` so that nothing runs behind the test's back: the queue
waits for ``memory.blocks.drain()``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import cuedrecall.handlers.blocks as blocks_module
from cuedrecall.api import Memory
from cuedrecall.embed import EmbeddingError, HashEmbedder
from cuedrecall.embed.hashing import hash_vector
from cuedrecall.errors import StoreError
from cuedrecall.handlers.blocks import BACKFILL, BlockBuilder, quantise
from cuedrecall.store.base import Scope
from cuedrecall.text.blocks import divide
from tests.conftest import NOW, REPO_ROOT, make_settings, open_memory

A, B = "agent-a", "agent-b"
SCOPE_A = Scope(A)  # the default scope of the helpers below
MODEL = HashEmbedder.model
REPO = REPO_ROOT
BUILDING = {"block_build_enabled": True}  # retrieval stays off: the recall side is not under test here

_TOPICS = (
    "the weather",
    "the garden",
    "the train timetable",
    "a film",
    "the neighbour's dog",
    "the bakery",
    "the river walk",
    "a board game",
    "the library",
    "the market",
)
ENGLISH = (
    " ".join(
        f"Entry {i}: we talked about {_TOPICS[i % len(_TOPICS)]} for a while, and nothing in it was worth keeping."
        for i in range(50)
    )
    + " Before leaving, Mara said the spare key to the boathouse is taped under the third green bench."
)
ENGLISH_QUERY = "where is the spare key to the boathouse taped"

_JA_TOPICS = (
    "天気",
    "庭の花",
    "電車の時刻",
    "映画",
    "近所の犬",
    "パン屋",
    "川沿いの散歩",
    "ボードゲーム",
    "図書館",
    "市場",
)
# fewer than 64 blocks: the arm examines a record's first 64 blocks only (per_record)
JAPANESE = (
    "".join(
        f"{i}日目は{_JA_TOPICS[i % len(_JA_TOPICS)]}について友人と長い時間をかけて話し合いましたが、結局のところ特に"
        "覚えておくべき大切なことは何もありませんでした。"
        for i in range(50)
    )
    + "帰り際に、倉庫の合鍵は青い植木鉢の下に隠してあると言われました。"
)
JAPANESE_QUERY = "倉庫の合鍵は青い植木鉢の下"


def opened(path: Path | str, *, embedder: Any = None, **settings: Any) -> Memory:
    """A store that builds blocks, with no builder thread: the test drains the queue itself."""
    return open_memory(path, settings=make_settings(**{**BUILDING, **settings}), embedder=embedder, background=False)


def arm(memory: Memory, query: str, scope: Scope = SCOPE_A) -> list[tuple[str, int]]:
    hits, order = memory.store_.block_arm(scope, hash_vector(query), MODEL)
    assert order == "vector"
    return [(hit.ref, hit.block) for hit in hits]


def lacking(memory: Memory, agent: str = "") -> int:
    return memory.store_.block_counts(agent, MODEL)["records_lacking_blocks"]


class FlakyEmbedder(HashEmbedder):
    """Fails every call of more than one text (the builder's block batches) while ``failing``; runs ``hook``
    once, on the first such call."""

    def __init__(self) -> None:
        self.failing = False
        self.hook: Any = None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) > 1:
            hook, self.hook = self.hook, None
            if hook is not None:
                hook()
            if self.failing:
                raise EmbeddingError("the embedding service is down")
        return super().embed(texts)


# -- the writes queue builds --------------------------------------------------------------------------


def test_every_write_of_a_text_answers_blocks_queued_and_the_queue_holds_its_build(db_path: Path) -> None:
    with opened(db_path) as memory:
        assert memory.store_.pending_tasks() == 0  # no thread, no backfill queued
        stored = memory.store(agent_id=A, content=ENGLISH)
        assert stored["blocks"] == {"status": "queued"}
        episode = memory.archive_episode(agent_id=A, summary=JAPANESE)
        assert episode["blocks"] == {"status": "queued"}
        updated = memory.update_memory(agent_id=A, memory_id=stored["id"], content=ENGLISH + " PS.")
        assert updated["blocks"] == {"status": "queued"}
        skipped = memory.store(agent_id=A, content=ENGLISH + " PS.")
        assert skipped["result"] == "skipped" and "blocks" not in skipped
        assert memory.store_.pending_tasks("build_blocks") == 3
        assert memory.get_queue_status() == {
            "enabled": True,
            "pending": 3,
            "pending_by_kind": {"build_blocks": 3},
            "max_retries": 3,
            "retry_delay": 30,
        }
        assert memory.blocks is not None and memory.blocks.drain() == 3
        assert memory.store_.pending_tasks() == 0 and lacking(memory) == 0
        assert memory.get_queue_status()["pending"] == 0


def test_with_building_off_store_answers_as_before_and_queues_nothing(memory: Memory) -> None:
    stored = memory.store(agent_id=A, content=ENGLISH)
    assert stored == {"ok": True, "result": "stored", "id": 1, "ref": "mem:1", "embedded": True}
    episode = memory.archive_episode(agent_id=A, summary="a talk")
    assert "blocks" not in episode and "blocks" not in memory.update_memory(agent_id=A, memory_id=1, content="x y")
    assert memory.blocks is None and memory.store_.pending_tasks() == 0
    assert memory.get_queue_status() == {"enabled": False, "pending": 0}


def test_without_an_embedder_nothing_is_built_or_queued(db_path: Path) -> None:
    with open_memory(db_path, settings=make_settings(embedding_mode="none", **BUILDING)) as memory:
        assert "blocks" not in memory.store(agent_id=A, content=ENGLISH)
        assert memory.blocks is None and memory.store_.pending_tasks() == 0


def test_an_import_queues_one_build_a_record_and_a_dry_run_none(db_path: Path, tmp_path: Path) -> None:
    with opened(tmp_path / "source.db") as source:
        source.store(agent_id=A, content=ENGLISH)
        source.store(agent_id=A, content="a short note")
        source.archive_episode(agent_id=A, summary=JAPANESE)
        exported = source.export_memories(agent_id=A, output_path="a.jsonl")
        assert exported["ok"], exported
        path = exported["path"]
    with opened(db_path) as memory:
        before = memory.store_.pending_tasks()
        dry = memory.call("import_memories", {"input_path": path, "dry_run": True}, anywhere=True)
        assert dry["imported_memories"] == 2 and memory.store_.pending_tasks() == before
        assert memory.call("import_memories", {"input_path": path}, anywhere=True)["imported_memories"] == 2
        assert memory.store_.pending_tasks("build_blocks") == 3
        assert memory.blocks is not None
        memory.blocks.drain()
        assert lacking(memory) == 0 and arm(memory, ENGLISH_QUERY)[0][0] == "mem:1"


def test_a_merge_queues_the_builds_of_the_copies(db_path: Path) -> None:
    with opened(db_path) as memory:
        memory.store(agent_id=A, content=ENGLISH)
        assert memory.blocks is not None
        memory.blocks.drain()
        memory.merge_memories(source_agent_id=A, target_agent_id=B)
        assert memory.store_.pending_tasks("build_blocks") == 1
        memory.blocks.drain()
        assert [ref for ref, _ in arm(memory, ENGLISH_QUERY, Scope(B))] == ["mem:2"]


# -- what the builder writes ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, query", [(ENGLISH, ENGLISH_QUERY), (JAPANESE, JAPANESE_QUERY)], ids=["english", "japanese"]
)
def test_a_long_record_is_found_by_the_block_that_holds_its_last_words(db_path: Path, text: str, query: str) -> None:
    """The answer sits at the end of a record of several thousand characters: its whole-record vector hardly
    resembles the query, its last block does."""
    assert len(text) > 3000
    with opened(db_path) as memory:
        long = memory.store(agent_id=A, content=text)["ref"]
        for i in range(5):
            memory.store(agent_id=A, content=text.split(". ")[0].split("。")[0] + f" (a shorter copy {i})")
        memory.store(agent_id=B, content=text)  # another agent's copy never comes back
        assert memory.blocks is not None
        memory.blocks.drain()
        hits, order = memory.store_.block_arm(Scope(A), hash_vector(query), MODEL)
        assert order == "vector" and hits[0].ref == long
        spans = divide(text)
        assert hits[0].block == len(spans) - 1 and query[-4:] in spans[hits[0].block].text(text)
        whole = float(memory.store_.vectors([long])[long] @ hash_vector(query))
        assert hits[0].cosine is not None and hits[0].cosine > 2 * whole
        assert all(hit.ref.startswith("mem:") and hit.ref != "mem:7" for hit in hits)
        assert [ref for ref, _ in arm(memory, query, Scope(B))][:1] == ["mem:7"]


def test_the_stored_blocks_are_the_divider_s_spans_with_sign_bits_and_int8_codes(db_path: Path) -> None:
    with opened(db_path) as memory:
        ref = memory.store(agent_id=A, content=ENGLISH)["ref"]
        short = memory.store(agent_id=A, content="one sentence only")["ref"]
        assert memory.blocks is not None
        memory.blocks.drain()
        spans = divide(ENGLISH)
        assert memory.store_.block_spans([ref, short]) == {
            ref: [(s.start, s.end, s.forced) for s in spans],
            short: [(0, len("one sentence only"), False)],
        }
        counts = memory.store_.block_counts(A, MODEL)
        assert counts == {
            "records_with_blocks": 2,
            "records_divided": 1,
            "records_lacking_blocks": 0,
            "block_rows": len(spans),
        }
        vectors = HashEmbedder().embed([s.text(ENGLISH) for s in spans])
        bits, codes = quantise(vectors)
        assert bits.shape == (len(spans), 48) and codes.dtype == np.int8
        assert np.all(np.abs(codes).max(axis=1) == 127)
        assert np.array_equal(np.unpackbits(bits, axis=1).astype(bool), vectors > 0)


def test_an_all_zero_vector_is_refused() -> None:
    with pytest.raises(blocks_module.BuildError):
        quantise(np.zeros((2, 8), np.float32))


def test_a_new_text_gets_new_blocks_and_the_old_ones_go_at_once(db_path: Path) -> None:
    with opened(db_path) as memory:
        stored = memory.store(agent_id=A, content=ENGLISH)
        assert memory.blocks is not None
        memory.blocks.drain()
        new = ENGLISH.replace("boathouse", "greenhouse")
        memory.update_memory(agent_id=A, memory_id=stored["id"], content=new)
        assert arm(memory, ENGLISH_QUERY) == [] and lacking(memory) == 1  # the stale set went with the old text
        memory.blocks.drain()
        assert memory.store_.block_spans([stored["ref"]])[stored["ref"]][-1][1] == len(new)
        assert arm(memory, "the spare key to the greenhouse")[0][0] == stored["ref"]


def test_a_set_made_for_a_text_that_changed_meanwhile_is_not_written_and_the_new_text_is_built(db_path: Path) -> None:
    embedder = FlakyEmbedder()
    with opened(db_path, embedder=embedder) as memory:
        stored = memory.store(agent_id=A, content=ENGLISH)
        new = ENGLISH.replace("boathouse", "greenhouse")
        # while the builder embeds the old text's blocks, the memory is given a new text
        embedder.hook = lambda: memory.update_memory(agent_id=A, memory_id=stored["id"], content=new)
        assert memory.blocks is not None
        memory.blocks.drain()
        assert memory.store_.pending_tasks() == 0  # the stale build ended without a retry; the new one ran
        spans = memory.store_.block_spans([stored["ref"]])[stored["ref"]]
        assert spans[-1][1] == len(new) and len(spans) == len(divide(new))


def test_a_failed_task_whose_release_failed_is_released_on_the_next_step_not_left_for_its_lease(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database went down mid-task: the failure and the release of its claim both failed. The builder releases
    the claim on its next step, so the task runs again after the retry delay rather than the 5-minute lease."""
    embedder = FlakyEmbedder()
    with opened(db_path, embedder=embedder) as memory:
        memory.store(agent_id=A, content=ENGLISH)
        embedder.failing = True
        clock = [1000.0]
        builder = BlockBuilder(lambda: memory.runtime, now=lambda: clock[0])
        release = memory.store_.retry_task
        refused: list[int] = []

        def down(task_id: int, error: str, not_before: float) -> bool:
            refused.append(task_id)
            raise StoreError("the database is unreachable")

        monkeypatch.setattr(memory.store_, "retry_task", down)
        assert builder.drain() == 1 and refused  # failed, and its release was refused
        monkeypatch.setattr(memory.store_, "retry_task", release)  # the database is back
        embedder.failing = False
        clock[0] += blocks_module.RETRY_DELAY_S
        assert blocks_module.RETRY_DELAY_S < blocks_module.LEASE_S
        assert builder.drain() == 1 and lacking(memory) == 0  # released, claimed again and built: no lease wait


def test_an_embedding_failure_is_retried_later_and_the_task_dropped_after_three(
    db_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    embedder = FlakyEmbedder()
    with opened(db_path, embedder=embedder) as memory:
        memory.store(agent_id=A, content=ENGLISH)
        embedder.failing = True
        clock = [1000.0]
        builder = BlockBuilder(lambda: memory.runtime, now=lambda: clock[0])
        assert builder.drain() == 1 and memory.store_.pending_tasks() == 1  # failed: waits for its retry
        assert builder.drain() == 0  # not due yet
        clock[0] += blocks_module.RETRY_DELAY_S
        assert builder.drain() == 1 and memory.store_.pending_tasks() == 1
        embedder.failing = False
        clock[0] += blocks_module.RETRY_DELAY_S
        assert builder.drain() == 1 and memory.store_.pending_tasks() == 0 and lacking(memory) == 0
        memory.update_memory(agent_id=A, memory_id=1, content=ENGLISH + " Later.")
        embedder.failing = True
        for _ in range(3):
            clock[0] += blocks_module.RETRY_DELAY_S
            assert builder.drain() == 1
        assert memory.store_.pending_tasks() == 0 and lacking(memory) == 1  # dropped, and logged
        assert "dropped after 3 failed attempts" in caplog.text


# -- the backfill --------------------------------------------------------------------------------------------


def test_the_backfill_walks_what_was_stored_before_in_bounded_runs_with_its_cursor(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_memory(db_path) as before:  # blocks not built
        for i in range(5):
            before.store(agent_id=A, content=f"Record {i}. " + ENGLISH)
        before.archive_episode(agent_id=A, summary=JAPANESE)
    monkeypatch.setattr(blocks_module, "BACKFILL_RECORDS", 2)
    with opened(db_path) as memory:
        assert memory.blocks is not None and memory.blocks.queue_backfill()  # as a server's start does
        assert memory.store_.pending_tasks(BACKFILL) == 1 and lacking(memory) == 6
        assert memory.blocks.drain(max_tasks=1) == 1
        assert lacking(memory) == 4 and memory.store_.pending_tasks(BACKFILL) == 1  # re-queued with its cursor
        task = memory.store_.claim_task(time.time(), 1.0)
        assert task is not None and task.payload == {"after": "mem:2"}
        memory.store_.retry_task(task.id, "released by the test", 0.0)
        memory.blocks.drain()
        assert lacking(memory) == 0 and memory.store_.pending_tasks() == 0
    with opened(db_path) as again:  # queued only when none is pending
        assert again.blocks is not None and again.blocks.queue_backfill() is True
        assert again.blocks.queue_backfill() is False and again.store_.pending_tasks(BACKFILL) == 1


# -- processes -----------------------------------------------------------------------------------------------


_KILLED_SCRIPT = """
import sys, time
import cuedrecall.handlers.blocks as blocks
from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock
from cuedrecall.config import Settings
from cuedrecall.embed import HashEmbedder

blocks.LEASE_S = {lease}  # a short claim, so the test need not wait long for it to run out

class Stalling(HashEmbedder):
    def embed(self, texts):
        if len(texts) > 1:  # the builder's block batch: say so, then hang until killed
            print("building", flush=True)
            time.sleep(600)
        return super().embed(texts)

settings = Settings.from_env({{}}, embedding_mode="hash", block_build_enabled=True, block_retrieval_enabled=False)
memory = Memory({path!r}, settings=settings, clock=fixed_clock({now!r}), embedder=Stalling(), background=False)
for i in range({count}):
    answer = memory.store(agent_id={agent!r}, content=f"Record {{i}}. " + {text!r})
    assert answer["blocks"] == {{"status": "queued"}}, answer
print("stored", flush=True)
memory.blocks.start()  # queues a backfill; the thread claims the oldest task, the first build, and stalls in it
time.sleep(600)
"""


def test_work_left_by_a_process_killed_mid_queue_is_finished_by_the_next(tmp_path: Path) -> None:
    path = tmp_path / "killed.db"
    lease, count = 1.0, 4
    script = _KILLED_SCRIPT.format(lease=lease, path=str(path), now=NOW, count=count, agent=A, text=ENGLISH)
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script)],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=REPO,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "stored"
        assert child.stdout.readline().strip() == "building"  # a build task is claimed and under way
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    killed_at = time.time()
    with opened(path) as memory:
        assert memory.store_.pending_tasks("build_blocks") == count  # the queue survived, the claimed one too
        assert lacking(memory) == count
        assert memory.blocks is not None
        memory.blocks.drain()  # all but the build the dead process holds
        time.sleep(max(0.0, killed_at + lease + 0.1 - time.time()))  # its claim runs out
        memory.blocks.drain()
        assert memory.store_.pending_tasks() == 0 and lacking(memory) == 0
        assert {ref for ref, _ in arm(memory, ENGLISH_QUERY)} == {f"mem:{i}" for i in range(1, count + 1)}


def test_two_stores_on_one_file_share_the_queue_and_each_index_follows_the_other(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    with opened(path) as first, opened(path) as second:
        assert first.blocks is not None and second.blocks is not None
        assert first.blocks.queue_backfill() is True and second.blocks.queue_backfill() is False  # one chain
        ref = second.store(agent_id=A, content=ENGLISH)["ref"]
        first.blocks.drain()  # the first builds what the second stored
        assert second.blocks.drain() == 0
        assert arm(second, ENGLISH_QUERY)[0][0] == ref == arm(first, ENGLISH_QUERY)[0][0]
        second.delete_memory(agent_id=A, memory_id=1)
        assert arm(first, ENGLISH_QUERY) == []


def test_the_builder_thread_builds_on_its_own_and_stops_with_the_store(db_path: Path) -> None:
    memory = open_memory(db_path, settings=make_settings(**BUILDING))
    try:
        assert memory.blocks is not None and memory.blocks._thread is not None
        thread = memory.blocks._thread
        memory.store(agent_id=A, content=ENGLISH)
        deadline = time.time() + 20
        while (lacking(memory) or memory.store_.pending_tasks()) and time.time() < deadline:
            time.sleep(0.05)
        assert lacking(memory) == 0 and memory.store_.pending_tasks() == 0
    finally:
        memory.close()
    assert not thread.is_alive()


# -- check_health --------------------------------------------------------------------------------------------


def test_missing_blocks_reports_the_records_lacking_a_set_and_a_fix_advances_the_backfill(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(blocks_module, "BACKFILL_RECORDS", 2)
    with opened(db_path) as memory:
        refs = [memory.store(agent_id=A, content=f"Record {i}. " + ENGLISH)["ref"] for i in range(3)]
        memory.store(agent_id=B, content=ENGLISH)
        found = next(i for i in memory.check_health(agent_id=A)["issues"] if i["check"] == "missing_blocks")
        assert found["count"] == 3 and found["severity"] == "info" and found["sample_refs"] == refs
        assert found["blocks"] == {
            "records_with_blocks": 0,
            "records_divided": 0,
            "records_lacking_blocks": 3,
            "block_rows": 0,
        }
        fixed = memory.check_health(agent_id=A, fix=True, checks=["missing_blocks"])
        issue = fixed["issues"][0]
        assert issue["fixed"] == 2 and issue["remaining"] == 1 and fixed["status"] == "healthy"
        memory.check_health(agent_id=A, fix=True, checks=["missing_blocks"])
        assert lacking(memory, A) == 0 and lacking(memory, B) == 1  # the fix kept to the agent asked about
        assert memory.check_health(agent_id=A, checks=["missing_blocks"])["issues"] == []


def test_missing_blocks_is_not_run_where_blocks_are_not_built(memory: Memory) -> None:
    memory.store(agent_id=A, content=ENGLISH)
    result = memory.check_health(agent_id=A, checks=["missing_blocks"])
    assert result["checks_run"] == [] and "not built" in result["not_run"]["missing_blocks"]
    assert "not_run" not in memory.check_health(agent_id=A, checks=["null_embedding"])
