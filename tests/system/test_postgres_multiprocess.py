"""Two server processes over one PostgreSQL database: concurrent stores from both, every acknowledged write seen
by both, no duplicate from the duplicate-check race, one task claimed by one process only. (The race test runs
over one SQLite file too: the rule is the write handler's, whatever the backend.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock
from tests.conftest import NOW, REPO_ROOT, make_settings
from tests.pg_server import postgres_url

REPO = REPO_ROOT
AGENT = "shared-agent"
SHARED = [f"the shared fact number {i} about the harbour" for i in range(40)]

_WORKER = textwrap.dedent("""
    import json, sys
    from cuedrecall.api import Memory
    from cuedrecall.config import Settings
    place, name, go = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
    settings = Settings.from_env({}, embedding_mode="hash", **place,
                                 block_build_enabled=False, block_retrieval_enabled=False, calibrate_on_growth=False)
    memory = Memory(settings=settings, background=False)
    shared = json.loads(sys.argv[4])
    answers = []
    import os, time
    while not os.path.exists(go):
        time.sleep(0.005)
    for i, text in enumerate(shared):
        answers.append(memory.store(agent_id="shared-agent", content=text))
        answers.append(memory.store(agent_id="shared-agent", content=f"{name} alone wrote line {i}"))
    seen = {row["content"] for row in memory.call("list_memories", {"agent_id": "shared-agent", "limit": 1000})
            .get("memories", [])}
    print(json.dumps({"answers": answers, "seen": sorted(seen)}))
    memory.close()
""")


def _workers(place: dict[str, str], tmp_path: Path) -> list[dict]:
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, json.dumps(place), name, str(go), json.dumps(SHARED)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for name in ("one", "two")
    ]
    go.touch()  # both start storing at once
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        outputs.append(json.loads(out.strip().splitlines()[-1]))
    return outputs


@pytest.mark.parametrize("backend", ["postgres", "sqlite"])
def test_two_processes_storing_at_once_leave_every_write_once_and_both_see_all(tmp_path: Path, backend: str) -> None:
    place = (
        {"db_url": postgres_url(), "db_path": ":memory:"}
        if backend == "postgres"
        else {"db_path": str(tmp_path / "shared.db")}
    )
    outputs = _workers(place, tmp_path)
    for output in outputs:
        assert all(answer["ok"] for answer in output["answers"])
    with Memory(settings=make_settings(**place), clock=fixed_clock(NOW), background=False) as memory:
        rows = list(memory.runtime.store.export_rows("mem", AGENT))
    contents = [row["content"] for row in rows]
    assert len(contents) == len(set(contents)), "a duplicate survived the race"
    expected = set(SHARED) | {f"{name} alone wrote line {i}" for name in ("one", "two") for i in range(len(SHARED))}
    assert set(contents) == expected  # every acknowledged write is there
    acknowledged = {answer["id"] for output in outputs for answer in output["answers"]}
    assert acknowledged == {row["id"] for row in rows}  # each answer names a row that exists
    last = max(outputs, key=lambda output: len(output["seen"]))
    assert set(last["seen"]) == expected


def test_one_queued_task_is_claimed_by_one_process_only(tmp_path: Path) -> None:
    """Claims go through SELECT ... FOR UPDATE SKIP LOCKED: two stores over one database never hold one task."""
    from cuedrecall.store.postgres import PostgresStore

    url = postgres_url()
    first, second = PostgresStore(url), PostgresStore(url)
    try:
        with first.write() as conn:
            ids = {first.enqueue(conn, "build_blocks", {"ref": f"mem:{i}"}) for i in range(5)}
        claimed = []
        for i in range(5):
            store = (first, second)[i % 2]
            task = store.claim_task(now=100.0, lease_s=60.0)
            assert task is not None
            claimed.append(task.id)
        assert sorted(claimed) == sorted(ids)  # each task once
        assert first.claim_task(now=100.0, lease_s=60.0) is None and second.claim_task(now=100.0, lease_s=60.0) is None
        assert second.claim_task(now=200.0, lease_s=60.0) is not None  # a claim that ran out is claimable again
    finally:
        first.close()
        second.close()
