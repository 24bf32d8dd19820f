"""Faults: a kill -9 at any moment, a full disk, a read-only database, an embedder that fails or times out.

The rules (issue 16): nothing acknowledged is ever lost and nothing half-written is ever visible; a write the
database refuses is answered ``ok: false`` in words the caller can act on, and writes nothing; a row stored
while the embedder failed is stored without a vector, and ``check_health(fix: true)`` gives it one later.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from benchmarks import faults, serving
from cuedrecall.api import Memory
from cuedrecall.embed.hashing import hash_vector
from cuedrecall.embed.http import HttpEmbedder
from cuedrecall.errors import StoreError, describe_storage_error
from cuedrecall.store.base import MEMORY
from tests.conftest import make_settings, open_memory, snapshot

AGENT = "fault-agent"
INTEGRITY = ["sqlite_integrity", "fts_integrity", "vector_index"]


# -- kill -9 -----------------------------------------------------------------------------------------------------


def test_twenty_sigkills_at_random_moments_lose_no_acknowledged_write_and_leave_nothing_half_written(
    tmp_path: Path,
) -> None:
    """20 kills, five in each workload (startup, a stream of stores, an import, a block build); after each,
    benchmarks.faults checks every rule of the restart (see its docstring) and lists what it found wrong."""
    report = faults.run(20, seed=1601, workdir=tmp_path, import_rows=300, long_texts=8)
    assert report.failures == []
    assert report.kills == {"startup": 5, "stores": 5, "import": 5, "blocks": 5}
    assert report.mid_write["stores"] == 5  # every stream of stores is cut with calls in flight
    assert report.resumed >= 1  # some kill left queued block builds, and the restart ran them
    assert report.acked > 300 and report.checked > report.acked


def test_sigkills_over_several_servers_on_one_file_lose_nothing_and_every_store_is_answered(
    tmp_path: Path,
) -> None:
    """The fleet run (issue 24): 12 kills over phases of 1, 2 and 3 servers on one database, every store
    timed; nothing acknowledged lost, no store left unanswered by a live server, each answer within STUCK_S."""
    report = faults.run_fleet(12, seed=2401, workdir=tmp_path, servers=3, phase_kills=4, import_rows=300)
    assert report.failures == [] and report.waits.stuck == []
    assert sum(report.kills.values()) == 12 and len(report.phases) == 3
    assert report.acked > 50 and report.checked >= report.acked
    assert len(report.waits.seconds) > 50 and max(report.waits.seconds) < faults.STUCK_S


def test_a_store_held_behind_another_processes_write_lock_is_filed_with_the_lock_and_its_holder(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The watch is not blind: a store waiting on a write lock this process holds is filed as stuck, with the
    lock (the WAL write byte of the -shm file) and its holder's pid, and the server's stack (begin_write)."""
    monkeypatch.setattr(faults, "SLOW_S", 0.5)
    monkeypatch.setattr(faults, "STUCK_S", 2.0)
    db = tmp_path / "f.db"
    server = faults.StdioServer(db, faults.server_env(tmp_path), tmp_path / "server.log")
    try:
        assert server.handshake()
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        waits = faults.Waits()
        watch = faults.Watch(db, {0: server}, waits, sqlite=True)
        watch.thread.start()
        request = server.call("store", {"agent_id": AGENT, "content": "held behind the lock"})
        serving.wait_until(lambda: waits.stuck, 20)
        holder.execute("COMMIT")
        holder.close()
        assert (server.result(request) or {}).get("result") == "stored"
        watch.stop.set()
        watch.thread.join()
    finally:
        server.stop()
    waits.harvest(server, "server 0")
    assert len(waits.stuck) == 1, waits.stuck
    assert f"pid {os.getpid()} WRITE db-shm WAL write" in waits.stuck[0]
    assert "busy.py" in waits.stuck[0] and "begin_write" in waits.stuck[0]
    assert waits.slow and waits.slow[0][0] >= 2.0 and "WAL write" in waits.slow[0][1]


def _queued_behind_a_held_lock(tmp_path: Path, calls: int, call: Callable[[Memory, int], Any]) -> list[float]:
    """``calls`` threads run ``call`` at once on one Memory (write bound 1 s) while another connection holds the
    database's write lock throughout; the seconds each took."""
    took: list[float] = []
    with open_memory(tmp_path / "m.db", background=False) as memory:
        memory.store_.write_wait_s = 1.0
        holder = sqlite3.connect(tmp_path / "m.db", isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")

        def one(k: int) -> None:
            started = time.monotonic()
            call(memory, k)
            took.append(time.monotonic() - started)

        threads = [threading.Thread(target=one, args=(k,)) for k in range(calls)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        holder.execute("ROLLBACK")
        holder.close()
        assert memory.store(agent_id=AGENT, content="after the lock went")["result"] == "stored"
    assert len(took) == calls
    return sorted(took)


def _write(memory: Memory, k: int) -> None:
    with pytest.raises(StoreError, match="busy"), memory.store_.write():
        pass


def _store(memory: Memory, k: int) -> None:
    answer = memory.store(agent_id=AGENT, content=f"queued store {k}")
    assert answer["ok"] is False and "busy" in answer["error"], answer


@pytest.mark.skipif(bool(make_settings().db_url), reason="SQLite's write lock")
def test_writes_queued_in_one_process_behind_a_held_write_lock_share_one_bound(tmp_path: Path) -> None:
    """Issue 24: the bound counts from when a write is asked for, its time queued behind this process's other
    writers included. Before, each queued write waited the whole bound in turn (here 1, 2, 3 s)."""
    took = _queued_behind_a_held_lock(tmp_path, 3, _write)
    assert took[-1] < 1.0 + 0.5, took


@pytest.mark.skipif(bool(make_settings().db_url), reason="SQLite's write lock")
def test_stores_sent_at_once_behind_a_held_write_lock_answer_within_two_bounds(tmp_path: Path) -> None:
    """A store first reads (its duplicate check) under the in-process lock a waiting writer holds, then writes:
    at most two bounds, however many were sent. Before, the k-th answered after k bounds (1, 2, 3, 4 s here;
    at the shipped 30 s, three stores under a lock held 70 s answered after 30, 60 and 70 s)."""
    took = _queued_behind_a_held_lock(tmp_path, 4, _store)
    assert took[-1] < 2 * 1.0 + 0.7, took


def _ledger_of(memory: Memory, count: int) -> faults.Ledger:
    ledger = faults.Ledger()
    rng = random.Random(3)
    for _ in range(count):
        agent, text = faults.AGENTS[0], ledger.text(rng)
        msg_id = f"m{ledger.serial}"
        ledger.sent[msg_id] = (agent, text)
        ledger.acked[msg_id] = memory.store(agent_id=agent, content=text, id=msg_id)["ref"]
    return ledger


def test_the_restart_check_finds_a_lost_write_a_changed_row_and_a_half_import(tmp_path: Path) -> None:
    """The check the kill test relies on is not vacuous: each kind of damage it looks for is reported."""
    with open_memory(tmp_path / "m.db") as memory:
        ledger = _ledger_of(memory, 4)
        assert faults.row_failures(ledger, memory) == ([], 4)
        lost, changed = sorted(ledger.acked)[:2]
        memory.delete_memory(memory_id=int(ledger.acked[lost].split(":")[1]))
        memory.update_memory(memory_id=int(ledger.acked[changed].split(":")[1]), content="another text")
        ledger.imports["imp0"] = (["never-stored", changed], False)  # a later row there, an earlier one not
        failures, _ = faults.row_failures(ledger, memory)
    assert any(ledger.acked[lost] in f and "missing" in f for f in failures)
    assert any(ledger.acked[changed] in f for f in failures)
    assert any("not a text that was sent" in f for f in failures)
    assert any("import imp0" in f and "1 of 2 rows, not whole batches" in f for f in failures)


# -- the disk full, the database read-only --------------------------------------------------------------------


@pytest.fixture
def filled(tmp_path: Path) -> Iterator[tuple[Memory, list[str]]]:
    """A store of 20 acknowledged memories whose file may grow by a few pages only (PRAGMA max_page_count)."""
    with open_memory(tmp_path / "full.db") as memory:
        refs = [memory.store(agent_id=AGENT, content=f"kept note {i} about the harbour")["ref"] for i in range(20)]
        conn = memory.store_._conn  # the store's own connection: the cap is per connection
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages + 4}")
        yield memory, refs


def _intact(memory: Memory, refs: list[str]) -> None:
    """Every acknowledged row is there with its text, and the file and both indexes agree with the rows."""
    items = memory.get_contents(agent_id=AGENT, refs=refs)["items"]
    assert [item["content"] for item in items] == [f"kept note {i} about the harbour" for i in range(len(refs))]
    health = memory.check_health(agent_id="", checks=INTEGRITY)
    assert health["issues"] == [], health


def test_a_full_disk_answers_ok_false_saying_so_and_loses_nothing(filled: tuple[Memory, list[str]]) -> None:
    memory, refs = filled
    big = " ".join(f"word{i}" for i in range(3000))
    answers = [memory.store(agent_id=AGENT, content=f"{n} {big}") for n in range(40)]
    refused = [a for a in answers if a.get("ok") is False]
    assert refused, "the capped file never filled"
    assert refused[0]["error"] == describe_storage_error(sqlite3.OperationalError("database or disk is full"))
    assert refused[0]["result"] == "rejected"
    stored = [a["ref"] for a in answers if a.get("ok")]
    assert memory.list_memories(agent_id=AGENT, limit=500)["count"] == len(refs) + len(stored)
    _intact(memory, refs)
    memory.store_._conn.execute("PRAGMA max_page_count = 1073741823")  # space freed: writes go on
    assert memory.store(agent_id=AGENT, content="written once there is room again")["result"] == "stored"
    _intact(memory, refs)


def test_a_full_disk_refuses_an_import_whole(filled: tuple[Memory, list[str]], tmp_path: Path) -> None:
    memory, refs = filled
    exports = tmp_path / "exports"
    exports.mkdir(exist_ok=True)
    rows = [{"_type": "memory", "agent_id": AGENT, "content": f"imported row {i} " + "x" * 400} for i in range(300)]
    header = {"_type": "header", "version": "cuedrecall-export/1", "memory_count": len(rows)}
    (exports / "big.jsonl").write_text("\n".join(json.dumps(r) for r in [header, *rows]) + "\n", encoding="utf-8")
    answer = memory.import_memories(input_path="big.jsonl", target_agent_id=AGENT)
    assert answer["ok"] is False and "full" in answer["error"]
    assert memory.list_memories(agent_id=AGENT, limit=500)["count"] == len(refs)
    _intact(memory, refs)


def test_a_read_only_database_answers_ok_false_saying_so_writes_nothing_and_still_reads(memory: Memory) -> None:
    refs = [memory.store(agent_id=AGENT, content=f"kept note {i} about the harbour")["ref"] for i in range(3)]
    before = snapshot(memory, (AGENT,))
    memory.store_._conn.execute("PRAGMA query_only = ON")  # as a file on a read-only mount is
    refused = {
        "store": memory.store(agent_id=AGENT, content="never written"),
        "update_memory": memory.update_memory(memory_id=1, content="never changed", agent_id=AGENT),
        "delete_memory": memory.delete_memory(memory_id=2, agent_id=AGENT),
        "archive_episode": memory.archive_episode(agent_id=AGENT, summary="never archived"),
        "update_profile": memory.update_profile(agent_id=AGENT, profile="never set"),
    }
    sentence = describe_storage_error(sqlite3.OperationalError("attempt to write a readonly database"))
    assert sentence and "read-only" in sentence
    for tool, answer in refused.items():
        assert answer["ok"] is False and answer["error"] == sentence, (tool, answer)
    recalled = memory.recall(agent_id=AGENT, query="kept note 1 about the harbour", limit=5)
    assert refs[1] in [m.get("ref") for m in recalled["messages"]]
    assert snapshot(memory, (AGENT,)) == before
    memory.store_._conn.execute("PRAGMA query_only = OFF")
    _intact(memory, refs)


# -- the embedder failing or timing out ---------------------------------------------------------------------------


class Flaky:
    """An http embedder's transport that answers like the hash embedder, except the calls numbered in
    ``failing`` (1 = the first), which time out as a stalled embedding server does."""

    def __init__(self, failing: set[int]) -> None:
        self.failing = failing
        self.calls = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.calls += 1
        if self.calls in self.failing:
            raise httpx.ReadTimeout("the embedding server did not answer in time", request=request)
        texts = json.loads(request.content)["texts"]
        return httpx.Response(200, json={"embeddings": [hash_vector(t).tolist() for t in texts]})


def _http_embedder(failing: set[int]) -> HttpEmbedder:
    return HttpEmbedder("http://embedder.invalid/embed", transport=httpx.MockTransport(Flaky(failing)))


def _refilled(memory: Memory, texts: dict[str, str]) -> None:
    """check_health(fix) gives every row without a vector its vector; the index then agrees with the rows."""
    health = memory.check_health(agent_id=AGENT, checks=["null_embedding"])
    assert health["issues"] and health["issues"][0]["count"] > 0
    fixed = memory.check_health(agent_id=AGENT, fix=True, checks=["null_embedding"])
    assert fixed["issues"][0]["fixed"] == health["issues"][0]["count"] and "remaining" not in fixed["issues"][0]
    assert memory.check_health(agent_id=AGENT, checks=["null_embedding", *INTEGRITY])["issues"] == []
    vectors = memory.store_.vectors(list(texts))
    assert set(vectors) == set(texts)
    for ref, text in texts.items():
        assert np.allclose(vectors[ref], hash_vector(text), atol=1e-6)


def test_rows_imported_while_the_embedder_times_out_are_stored_and_given_vectors_by_check_health_fix(
    tmp_path: Path,
) -> None:
    """The embedder answers the first batch, then times out on the second (of three): the import
    still stores every row (the second batch without vectors), and check_health(fix: true) refills them."""
    rows = [
        {
            "_type": "memory",
            "agent_id": AGENT,
            "content": f"imported note {i} on {random.Random(i).random()}",
            "msg_id": f"i{i}",
        }
        for i in range(40)
    ]
    header = {"_type": "header", "version": "cuedrecall-export/1", "memory_count": len(rows)}
    with open_memory(tmp_path / "emb.db", settings=make_settings(embedding_mode="none")) as memory:
        memory.embedder = _http_embedder(failing={2})
        exports = tmp_path / "exports"
        exports.mkdir()
        (exports / "in.jsonl").write_text("\n".join(json.dumps(r) for r in [header, *rows]) + "\n", "utf-8")
        answer = memory.call("import_memories", {"input_path": "in.jsonl", "target_agent_id": AGENT}, batch_size=16)
        assert answer["ok"] is True and answer["imported_memories"] == len(rows), answer
        stored = {r.ref: r.text for r in memory.store_.list_records(MEMORY, AGENT, None, 100)}
        assert sorted(stored.values()) == sorted(r["content"] for r in rows)
        unembedded = set(stored) - set(memory.store_.vectors(list(stored)))
        assert unembedded == {f"mem:{i}" for i in range(17, 33)}  # the second batch
        _refilled(memory, stored)


def test_a_store_while_the_embedder_fails_is_acknowledged_without_a_vector_and_refilled_later(
    tmp_path: Path,
) -> None:
    with open_memory(tmp_path / "emb.db", settings=make_settings(embedding_mode="none")) as memory:
        memory.embedder = _http_embedder(failing={2, 3})
        texts = {}
        for i in range(4):
            answer = memory.store(agent_id=AGENT, content=f"stored while flaky {i}")
            assert answer["result"] == "stored"
            texts[answer["ref"]] = f"stored while flaky {i}"
        assert [memory.store_.vectors([ref]) != {} for ref in texts] == [True, False, False, True]
        found = memory.recall(agent_id=AGENT, query="stored while flaky 2", limit=5)
        assert "mem:3" in [m.get("ref") for m in found["messages"]]  # the lexical arms still find it
        _refilled(memory, texts)
