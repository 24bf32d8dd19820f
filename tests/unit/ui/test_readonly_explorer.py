"""The read-only explorer (``cuedrecall ui`` without --write) writes nothing: opened under another embedder it
queues no re-embedding and no calibration, adopts no sidecar, and every write is refused; it still reads."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from cuedrecall.api import Memory
from cuedrecall.errors import StoreError
from cuedrecall.handlers.reembed import REEMBED
from cuedrecall.ui import commands
from cuedrecall.ui.app import TOKEN_HEADER, make_app
from tests.conftest import make_settings, open_memory, snapshot
from tests.unit.handlers.test_reembed import A, Rolled, fill

AUTH = {TOKEN_HEADER: "t"}
# test_reembed's fill() leaves an empty schema under CUEDRECALL_TEST_BACKEND=postgres (its stores are not seen by
# a later open of the same path there), so these run on SQLite only; the PostgreSQL write guard is the same check
pytestmark = pytest.mark.skipif(
    os.environ.get("CUEDRECALL_TEST_BACKEND", "") == "postgres", reason="fill() places its store apart on PostgreSQL"
)


def _tasks(memory: Memory) -> int:
    return sum(memory.get_queue_status().get("pending_by_kind", {}).values())


def test_a_read_only_open_under_another_embedder_queues_nothing(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    fill(path)
    with open_memory(path) as before:
        state, tasks = snapshot(before, agents=(A,)), _tasks(before)
    with open_memory(
        path,
        settings=make_settings(calibrate_on_model_change=True),
        embedder=Rolled(),
        background=False,
        read_only=True,
    ) as memory:
        assert memory.blocks is None
        assert memory.store_.pending_tasks(REEMBED) == 0
        assert memory.recall(agent_id=A, query="violin").get("ok") is not False  # it still reads
        assert memory.list_memories(agent_id=A)["count"] == 12
        client = TestClient(make_app(memory, "t"), base_url="http://127.0.0.1")
        assert client.get("/api/records", params={"agent_id": A}, headers=AUTH).status_code == 200
        answer = client.post("/api/search", json={"tool": "recall", "agent_id": A, "query": "violin"}, headers=AUTH)
        assert answer.status_code == 200 and answer.json()["ok"] is True
    with open_memory(path) as after:
        assert snapshot(after, agents=(A,)) == state and _tasks(after) == tasks


def test_every_write_is_refused_by_a_read_only_memory(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    fill(path, memories=2, episodes=0)
    with open_memory(path, read_only=True) as memory:
        state = snapshot(memory, agents=(A,))
        answer = memory.store(agent_id=A, content="a new note")
        assert answer["ok"] is False and "read-only" in answer["error"] and answer["result"] == "rejected"
        assert memory.update_profile(agent_id=A, profile="p")["ok"] is False
        with pytest.raises(StoreError), memory.store_.write():
            pass
        assert snapshot(memory, agents=(A,)) == state


def test_a_read_only_memory_adopts_no_calibration_sidecar(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    fill(path, memories=1, episodes=0)
    sidecar = Path(str(path) + ".calibration.json")
    calibration = {"embedding_model": "x", "scoring_version": "y", "agents": {A: {"cosine": 0.3}}}
    sidecar.write_text(json.dumps(calibration))
    with open_memory(path, read_only=True) as memory:
        assert memory.store_.thresholds() == []
    assert sidecar.is_file()


def test_the_ui_command_opens_read_only_without_write(monkeypatch: pytest.MonkeyPatch) -> None:
    opened: dict[str, Any] = {}

    class Stop(Exception):
        pass

    def memory(args: argparse.Namespace, **kwargs: Any) -> Any:
        opened.update(kwargs)
        raise Stop

    for write in (False, True):
        with pytest.raises(Stop):
            commands.ui(argparse.Namespace(write=write, traces=None, port=0), memory)
        assert opened == {"background": write, "read_only": not write}
