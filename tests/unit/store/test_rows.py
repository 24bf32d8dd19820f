"""A memory's row read into a record (store/rows.py): the source is the stored JSON object, whatever its form, and
every record holds a dict of its own, even where parsing is shared between rows of the same source."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from cuedrecall.store.rows import memory_record

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8))
SOURCES = st.one_of(
    st.dictionaries(st.text(max_size=6), SCALARS, max_size=4),
    st.dictionaries(st.text(max_size=6), st.one_of(SCALARS, st.lists(SCALARS, max_size=2)), max_size=4),
    st.dictionaries(st.text(max_size=6), st.dictionaries(st.text(max_size=3), SCALARS, max_size=2), max_size=2),
)


def row(source: str) -> tuple:
    return (7, "agent", "", "", "text", "2025-01-01", "2025-01-01", "", source, 0, 1.0)


@given(SOURCES)
def test_a_records_source_is_the_stored_object_and_its_own(source: dict) -> None:
    stored = json.dumps(source)
    first, second = memory_record(row(stored)), memory_record(row(stored))
    assert first.source == second.source == json.loads(stored)
    first.source["added"] = 1  # a record's dict is its own: another record of the same source does not see it
    for value in first.source.values():
        if isinstance(value, list):
            value.append(0)
        elif isinstance(value, dict):
            value.update(added=1)
    assert second.source == json.loads(stored) == memory_record(row(stored)).source


def test_a_source_that_is_not_a_json_object_reads_as_empty() -> None:
    for stored in ("", "null", "[1, 2]", "3", "not json", '"text"'):
        assert memory_record(row(stored)).source == {}
