"""A session pause belongs to the principal that made it: another client naming the same session_key is
neither skipped nor told whether the key is paused; the pauses in force at once are bounded."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cuedrecall.access import READ, WRITE, Principal
from cuedrecall.api import Memory
from cuedrecall.errors import ToolArgumentError
from cuedrecall.sessions import Pauses, SessionKey
from tests.conftest import failed

ADMIN = Principal("admin", {"*": WRITE})
OTHER_ADMIN = Principal("admin-2", {"*": WRITE})
CLIENT_X = Principal("X", {"a": WRITE})
NOBODY = Principal("nobody", {"a": READ})


def test_another_clients_write_with_a_paused_key_is_kept(memory: Memory) -> None:
    pause = {"session_key": "k", "ttl_seconds": 60}
    assert memory.call("pause_persistence", pause, principal=ADMIN)["paused"]
    theirs = memory.call("store", {"agent_id": "a", "content": "from X", "session_key": "k"}, principal=CLIENT_X)
    assert theirs["result"] == "stored", theirs
    mine = memory.call("store", {"agent_id": "a", "content": "from admin", "session_key": "k"}, principal=ADMIN)
    assert mine["result"] == "skipped" and mine["persisted"] is False
    assert [m["content"] for m in memory.list_memories(agent_id="a")["memories"]] == ["from X"]


def test_status_answers_for_the_callers_own_sessions_only(memory: Memory) -> None:
    memory.call("pause_persistence", {"session_key": "k", "ttl_seconds": 60}, principal=ADMIN)
    for caller in (NOBODY, CLIENT_X, OTHER_ADMIN):
        status = memory.call("persistence_status", {"session_key": "k"}, principal=caller)
        assert status["paused"] is False and status["expires_at"] is None, (caller.client_id, status)
    assert memory.call("persistence_status", {"session_key": "k"}, principal=ADMIN)["paused"] is True


def test_another_principal_cannot_lift_a_pause(memory: Memory) -> None:
    memory.call("pause_persistence", {"ttl_seconds": 60}, principal=ADMIN)  # the admin's shared bucket
    assert memory.call("resume_persistence", {}, principal=OTHER_ADMIN)["was_active"] is False
    assert memory.call("persistence_status", {}, principal=ADMIN)["paused"] is True
    stored = memory.call("store", {"agent_id": "a", "content": "other admin"}, principal=OTHER_ADMIN)
    assert stored["result"] == "stored"
    assert memory.call("resume_persistence", {}, principal=ADMIN)["was_active"] is True


def test_the_local_caller_keeps_its_sessions_as_before(memory: Memory) -> None:
    memory.pause_persistence(ttl_seconds=60, session_key="s1")
    assert memory.store(agent_id="a", content="kept off", session_key="s1")["result"] == "skipped"
    assert memory.store(agent_id="a", content="kept", session_key="s2")["result"] == "stored"
    assert memory.persistence_status(session_key=" s1 ")["paused"] is True  # the key is trimmed


def test_pauses_are_bounded_and_expired_ones_leave_first() -> None:
    pauses, now = Pauses(limit=2), datetime(2025, 1, 1, tzinfo=UTC)
    pauses.pause(SessionKey("c", "one"), 10, now)
    pauses.pause(SessionKey("c", "two"), 100, now)
    with pytest.raises(ToolArgumentError, match="session_key"):
        pauses.pause(SessionKey("c", "three"), 10, now)
    pauses.pause(SessionKey("c", "two"), 5, now)  # pausing one in force again is always taken
    later = now + timedelta(seconds=20)  # "one" and "two" have expired
    pauses.pause(SessionKey("c", "three"), 10, later)
    assert len(pauses) <= 2 and pauses.remaining(SessionKey("c", "three"), later) == 10


def test_a_pause_past_the_bound_is_refused_by_name(memory: Memory) -> None:
    memory.runtime.pauses.limit = 2
    for key in ("k1", "k2"):
        answer = memory.call("pause_persistence", {"session_key": key, "ttl_seconds": 60}, principal=ADMIN)
        assert answer["paused"]
    answer = memory.call("pause_persistence", {"session_key": "k3", "ttl_seconds": 60}, principal=ADMIN)
    assert failed(answer, "session_key")
