"""``cuedrecall migrate --from sqlite:<path> --to postgresql://...``: everything moves, ids kept, counts verified."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cuedrecall.api import Memory
from cuedrecall.cli import main
from cuedrecall.clock import fixed_clock
from cuedrecall.demo import load_sample
from cuedrecall.store.base import EPISODE, MEMORY, NewRelation, Scope, Threshold
from cuedrecall.store.migrate import TABLE_COLUMNS, source_counts
from tests.conftest import NOW, make_settings
from tests.pg_server import postgres_url

pytestmark = pytest.mark.postgres  # runs on the PostgreSQL test server (make test-fast leaves it out)

AGENT = "demo"


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite store with the sample, its blocks, a graph, folders, calibration and a precision override."""
    path = tmp_path_factory.mktemp("migrate") / "source.db"
    settings = make_settings(block_build_enabled=True, block_retrieval_enabled=True)
    with Memory(path, settings=settings, clock=fixed_clock(NOW), background=False) as memory:
        load_sample(memory)
        memory.blocks.drain()
        store = memory.runtime.store
        with store.write() as conn:
            bike = store.insert_entity(conn, AGENT, "", "", "Bike", "bike", NOW)
            store.add_alias(conn, bike, "bicycle", "bicycle")
            store.add_mention(conn, bike, "mem:1", NOW)
            store.add_relation(conn, NewRelation(AGENT, "", "", "entity", bike, "fixed at", MEMORY, 2, "mem:2", NOW))
            errands = store.insert_folder(conn, AGENT, "", 0, "Errands", "errands", "agent", NOW)
            store.file_record(conn, "mem:1", errands, "agent", NOW)
            store.set_thresholds(conn, [Threshold(AGENT, "cosine", 0.41, "hash-384", "v1")])
            store.set_beta(conn, AGENT, 0.7)
            store.enqueue(conn, "noop", {"x": 1}, 5.0)
    return path


def test_migrate_moves_every_table_with_its_ids_and_the_answers_stay_the_same(source: Path) -> None:
    url = postgres_url()
    assert main(["migrate", "--from", f"sqlite:{source}", "--to", url]) == 0
    counts = source_counts(str(source))
    assert counts["memories"] and counts["blocks"] and counts["entities"] and counts["relations"]
    assert counts["folders"] and counts["folder_members"]
    sqlite = Memory(source, settings=make_settings(), clock=fixed_clock(NOW), background=False)
    postgres = Memory(settings=make_settings(db_url=url, db_path=":memory:"), clock=fixed_clock(NOW), background=False)
    with sqlite, postgres:
        left, right = sqlite.runtime.store, postgres.runtime.store
        for kind in (MEMORY, EPISODE):
            before, after = list(left.export_rows(kind, "")), list(right.export_rows(kind, ""))
            assert [row["id"] for row in before] == [row["id"] for row in after]
            for a, b in zip(before, after):
                assert {k: v for k, v in a.items() if k != "embedding"} == {
                    k: v for k, v in b.items() if k != "embedding"
                }
                assert (a["embedding"] is None and b["embedding"] is None) or np.array_equal(
                    a["embedding"], b["embedding"]
                )
        refs = [f"mem:{row['id']}" for row in left.export_rows(MEMORY, "")]
        assert left.block_spans(refs) == right.block_spans(refs)
        assert all(
            np.array_equal(left.block_codes(ref, "hash-384"), right.block_codes(ref, "hash-384"))
            for ref in refs
            if left.block_codes(ref, "hash-384") is not None
        )
        query = sqlite.embedder.embed(["bike shop brake pads"])[0]
        (ours, order), (theirs, their_order) = (
            side.block_arm(Scope(AGENT), query, "hash-384") for side in (left, right)
        )
        # the same hits in the same order; the cosines agree to float32 (SQLite's scan sums in float32)
        assert order == their_order and [(h.ref, h.block, h.distance) for h in ours] == [
            (h.ref, h.block, h.distance) for h in theirs
        ]
        assert [h.cosine for h in ours] == pytest.approx([h.cosine for h in theirs], abs=1e-6)
        for words in (["bike", "brakes"], ["sister", "said"], ["the", "garden", "tomatoes"]):  # the words moved too
            found = [
                [(h.ref, round(h.raw, 9)) for h in side.memory_words(Scope(AGENT), words, depth=50)]
                for side in (left, right)
            ]
            assert found[0] and found[0] == found[1], words
        assert left.thresholds() == right.thresholds() and left.betas() == right.betas()
        assert left.profiles("") == right.profiles("")
        assert left.entities_named(Scope(AGENT), "bicycle") == right.entities_named(Scope(AGENT), "bicycle")
        assert left.relations_between(Scope(AGENT), ["mem:1", "mem:2"]) == right.relations_between(
            Scope(AGENT), ["mem:1", "mem:2"]
        )
        assert left.pending_by_kind() == right.pending_by_kind()
        assert left.declared("") == right.declared("")  # the graph and folders, ids and all
        # the copy is analysed: the planner knows the vector widths (migration 2's statistics) at once
        analysed = right._read(
            "SELECT count(*) FROM pg_stats_ext_exprs WHERE statistics_name = 'memories_vector_dims' "
            "AND statistics_schemaname = current_schema() AND most_common_vals IS NOT NULL"
        )
        assert analysed[0][0] == 1
        # a new row after the copy takes a fresh id (the id sequences moved on)
        stored = postgres.store(agent_id=AGENT, content="a memory stored after the migration")
        assert stored["id"] > max(row["id"] for row in left.export_rows(MEMORY, ""))


def test_migrate_refuses_a_target_that_is_not_empty_and_writes_nothing(
    source: Path, capsys: pytest.CaptureFixture
) -> None:
    url = postgres_url()
    with Memory(settings=make_settings(db_url=url, db_path=":memory:"), background=False) as memory:
        memory.store(agent_id="someone", content="already here")
    assert main(["migrate", "--from", f"sqlite:{source}", "--to", url]) == 1
    assert "not empty" in capsys.readouterr().err
    with Memory(settings=make_settings(db_url=url, db_path=":memory:"), background=False) as memory:
        assert memory.runtime.store.maintenance_counts("")["memories"] == 1


def test_migrate_names_its_arguments_when_they_are_not_a_sqlite_path_and_a_postgresql_url(
    capsys: pytest.CaptureFixture,
) -> None:
    assert main(["migrate", "--from", "/tmp/x.db", "--to", "postgresql://h/db"]) == 2
    assert "--from sqlite:<path> --to postgresql://" in capsys.readouterr().err
    assert set(TABLE_COLUMNS) >= {"memories", "episodes", "blocks", "entities", "relations", "calibration"}
