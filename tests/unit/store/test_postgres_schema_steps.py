"""PostgreSQL's schema steps (store/postgres/schema.py, docs/storage.md): a database a newer server migrated past
this code's last step is refused with a StoreError naming both steps, and nothing is written."""

from __future__ import annotations

import psycopg
import pytest

from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock
from cuedrecall.errors import StoreError
from cuedrecall.store.postgres import schema
from tests.conftest import NOW, make_settings
from tests.pg_server import postgres_url

pytestmark = pytest.mark.postgres


def _open(url: str) -> Memory:
    return Memory(settings=make_settings(db_url=url, db_path=":memory:"), clock=fixed_clock(NOW), background=False)


def test_a_database_past_this_servers_last_step_is_refused_and_nothing_is_written() -> None:
    url = postgres_url()
    with _open(url) as memory:
        assert memory.store(agent_id="a", content="the studio moves to Porto")["ok"]
    later = schema.LATEST_VERSION + 1
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("INSERT INTO schema_version(version) VALUES (%s)", (later,))  # what a newer server left
        before = conn.execute("SELECT version FROM schema_version ORDER BY version").fetchall()
    with pytest.raises(StoreError) as refused:
        _open(url)
    assert f"step {later}" in str(refused.value) and f"last step {schema.LATEST_VERSION}" in str(refused.value)
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT version FROM schema_version ORDER BY version").fetchall() == before
        assert conn.execute("SELECT count(*) FROM memories").fetchone() == (1,)


def test_a_database_at_this_servers_last_step_opens() -> None:
    url = postgres_url()
    with _open(url):
        pass
    with _open(url) as memory:
        assert memory.store(agent_id="a", content="opened again")["ok"]
