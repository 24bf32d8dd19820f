"""get_contents ranges: an item of refs may ask for some blocks or a character span of a record.

Rules checked: a ref string answers the whole record as before; ``block`` (an index or
[first, last]) answers those blocks of the stored block set while block retrieval is on
and the set exists (basis "blocks"), else of the divider's blocks now (basis "divided"),
with the blocks that govern the range; ``span`` answers [start, end) of the stored text
(an episode's summary without its label), the end clamped; every range answers its
offsets and the whole text's length; CPersona's node and revision are answered in
unresolved; another agent's record is missing whatever range it asks for; a malformed
item, or a range outside its record, refuses the whole call naming the item, and nothing
else is answered.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest

from cuedrecall.api import Memory
from cuedrecall.reconstruct.rows import revision
from cuedrecall.store.base import BlockSet
from cuedrecall.text.blocks import divide
from cuedrecall.tools import TOOLS
from tests.conftest import failed, make_settings, open_memory

A, B = "agent-a", "agent-b"
TEXT = (
    "Intro line one. The budget for the\nbridge project is 4 million. However, it may grow. Other things follow here."
)
SUMMARY = "We met at noon. We planned the regatta. We left early."


@pytest.fixture
def stored(tmp_path: Path) -> Iterator[tuple[Memory, str, str, str]]:
    """A memory with several blocks and an episode of agent A, and a memory of agent B."""
    with open_memory(tmp_path / "r.db") as memory:
        mine = memory.store(agent_id=A, content=TEXT)["ref"]
        episode = memory.archive_episode(agent_id=A, summary=SUMMARY)["ref"]
        theirs = memory.store(agent_id=B, content=TEXT + " Theirs.")["ref"]
        yield memory, mine, episode, theirs


def only(result: dict[str, Any]) -> dict[str, Any]:
    assert result.get("ok") is not False, result
    (item,) = result["items"]
    return item


def test_a_ref_string_still_answers_the_whole_record_without_range_fields(stored: tuple[Memory, str, str, str]) -> None:
    memory, mine, episode, _ = stored
    result = memory.get_contents(agent_id=A, refs=[mine, {"ref": episode}])
    assert [item["content"] for item in result["items"]] == [TEXT, f"[Episode] {SUMMARY}"]
    assert not {"range", "content_len", "basis"} & set(result["items"][0])
    assert result["count"] == 2 and result["missing"] == [] and "unresolved" not in result


def test_a_block_answers_that_block_of_the_divided_text_with_its_governing_blocks(
    stored: tuple[Memory, str, str, str],
) -> None:
    memory, mine, _, _ = stored
    spans = divide(TEXT)
    budget = next(i for i, s in enumerate(spans) if "budget" in s.text(TEXT))
    item = only(memory.get_contents(agent_id=A, refs=[{"ref": mine, "block": budget}]))
    assert item["content"] == spans[budget].text(TEXT) == "The budget for the\n"
    assert item["range"] == {"start": spans[budget].start, "end": spans[budget].end}
    assert item["content_len"] == len(TEXT) and item["basis"] == "divided"
    assert item["block"] == {"first": budget, "last": budget, "of": len(spans)}
    governing = item["governing"]  # the rest of its sentence, and the "However" clause tied to it
    governed = TEXT[spans[governing["first"]].start : spans[governing["last"]].end]
    assert governed.strip() == "The budget for the\nbridge project is 4 million. However, it may grow."
    assert item["source"] == {} and item["timestamp"]


def test_a_block_pair_answers_the_blocks_from_first_to_last(stored: tuple[Memory, str, str, str]) -> None:
    memory, mine, _, _ = stored
    spans = divide(TEXT)
    item = only(memory.get_contents(agent_id=A, refs=[{"ref": mine, "block": [1, 2]}]))
    assert item["content"] == TEXT[spans[1].start : spans[2].end]
    assert item["block"] == {"first": 1, "last": 2, "of": len(spans)}
    last = only(memory.get_contents(agent_id=A, refs=[{"ref": mine, "block": [len(spans) - 1] * 2}]))
    assert TEXT.endswith(last["content"]) and last["range"]["end"] == len(TEXT)


def test_a_span_answers_the_raw_characters_with_its_end_clamped(stored: tuple[Memory, str, str, str]) -> None:
    memory, mine, episode, _ = stored
    item = only(memory.get_contents(agent_id=A, refs=[{"ref": mine, "span": [6, 10]}]))
    assert item["content"] == TEXT[6:10] and item["range"] == {"start": 6, "end": 10}
    assert item["content_len"] == len(TEXT) and "basis" not in item and "block" not in item
    item = only(memory.get_contents(agent_id=A, refs=[{"ref": mine, "span": [16, 10**9]}]))
    assert item["content"] == TEXT[16:] and item["range"] == {"start": 16, "end": len(TEXT)}
    # an episode's offsets are in its summary, without the label its whole form shows
    item = only(memory.get_contents(agent_id=A, refs=[{"ref": episode, "span": [0, 15]}]))
    assert item["content"] == "We met at noon." and item["content_len"] == len(SUMMARY)
    assert item["source"] == {"System": "episode"}


def test_items_keep_their_order_and_mix_whole_records_ranges_and_missing(stored: tuple[Memory, str, str, str]) -> None:
    memory, mine, episode, _ = stored
    result = memory.get_contents(
        agent_id=A,
        refs=[
            {"ref": mine, "span": [0, 5]},
            "mem:999",
            episode,
            {"ref": "ep:999", "block": 40},
            {"ref": mine, "block": 0},
        ],
    )
    assert [item["ref"] for item in result["items"]] == [mine, episode, mine]
    assert [item["content"] for item in result["items"]] == [
        "Intro",
        f"[Episode] {SUMMARY}",
        divide(TEXT)[0].text(TEXT),
    ]
    assert result["missing"] == ["mem:999", "ep:999"] and result["count"] == 3


def test_another_agents_record_is_missing_whatever_range_it_asks_for(stored: tuple[Memory, str, str, str]) -> None:
    memory, _, _, theirs = stored
    refs = [
        {"ref": theirs, "block": 0},
        {"ref": theirs, "span": [0, 4]},
        {"ref": theirs, "block": 500},
        {"ref": theirs, "span": [10**6, 10**6 + 1]},
        {"ref": theirs, "node": 0},
    ]
    result = memory.get_contents(agent_id=A, refs=refs)
    assert result == {"items": [], "missing": [theirs] * 5, "count": 0}  # no range check leaks its size
    assert only(memory.get_contents(agent_id=B, refs=[{"ref": theirs, "span": [0, 5]}]))["content"] == "Intro"


def test_cpersonas_node_is_answered_unresolved_not_supported(stored: tuple[Memory, str, str, str]) -> None:
    memory, mine, episode, _ = stored
    result = memory.get_contents(agent_id=A, refs=[{"ref": mine, "node": [0, 1]}, {"ref": episode, "node": 0}, mine])
    assert [item["ref"] for item in result["items"]] == [mine] and result["count"] == 1
    assert result["unresolved"] == [{"ref": ref, "reason": "not supported"} for ref in (mine, episode)]


def test_a_range_with_the_texts_revision_is_served_and_with_another_is_stale(
    stored: tuple[Memory, str, str, str],
) -> None:
    memory, mine, _, _ = stored
    text = memory.get_contents(agent_id=A, refs=[mine])["items"][0]["content"]
    current = revision(text)
    served = memory.get_contents(agent_id=A, refs=[{"ref": mine, "span": [0, 5], "revision": current}])
    assert only(served)["content"] == text[:5]
    stale = memory.get_contents(agent_id=A, refs=[{"ref": mine, "block": 1, "revision": "0123456789ab"}])
    assert stale["items"] == [] and stale["unresolved"] == [{"ref": mine, "reason": "stale_revision"}]


@pytest.mark.parametrize(
    ("item", "words"),
    [
        ({"block": 1, "span": [0, 5]}, "at most one"),
        ({"node": 0, "block": 1}, "at most one"),
        ({"block": "1"}, "integer"),
        ({"block": 1.5}, "integer"),
        ({"block": True}, "integer"),
        ({"block": -1}, "integer"),
        ({"block": [2, 1]}, "inverted"),
        ({"block": [1, 2, 3]}, "pair"),
        ({"block": [1, "2"]}, "integer"),
        ({"block": 99}, "block 99"),
        ({"block": [0, 99]}, "block 99"),
        ({"span": [5, 5]}, "empty"),
        ({"span": [9, 2]}, "inverted"),
        ({"span": [0]}, "pair"),
        ({"span": [0, None]}, "integer"),
        ({"span": [10**6, 10**6 + 5]}, "past the end"),
        ({"node": [3, 1]}, "inverted"),
        ({"revision": 12}, "revision"),
        ({"colour": "red"}, "unknown field"),
    ],
    ids=lambda value: str(value)[:40],
)
def test_a_malformed_item_or_a_range_outside_its_record_refuses_the_call_naming_it(
    stored: tuple[Memory, str, str, str], item: dict[str, Any], words: str
) -> None:
    memory, mine, episode, _ = stored
    result = memory.get_contents(agent_id=A, refs=[mine, {"ref": episode, "span": [0, 3]}, {"ref": mine, **item}])
    assert failed(result, "refs[2]") and words in result["error"], result
    assert result["items"] == [] and "missing" not in result and "count" not in result  # nothing else answered


@pytest.mark.parametrize(
    "item", [{"block": 0}, {}, {"ref": 12}, {"ref": "x:1", "span": [0, 1]}, 7, None, ["mem:1"]], ids=str
)
def test_an_item_without_a_readable_ref_is_refused_naming_it(stored: tuple[Memory, str, str, str], item: Any) -> None:
    memory, mine, _, _ = stored
    result = memory.get_contents(agent_id=A, refs=[mine, item])
    assert failed(result, "refs[1]") and failed(result, "'refs'") and result["items"] == []


def test_the_limit_of_twenty_items_counts_range_objects_too(stored: tuple[Memory, str, str, str]) -> None:
    memory, mine, _, _ = stored
    assert memory.get_contents(agent_id=A, refs=[{"ref": mine, "span": [0, 1]}] * 20)["count"] == 20
    result = memory.get_contents(agent_id=A, refs=[{"ref": mine, "span": [0, 1]}] * 21)
    assert failed(result, "'refs'") and "20" in result["error"]


def test_the_published_schema_takes_both_forms_and_refuses_two_ranges() -> None:
    validator = jsonschema.Draft202012Validator(TOOLS["get_contents"].input_schema())
    assert validator.is_valid(
        {
            "agent_id": A,
            "refs": [
                "mem:1",
                {"ref": "mem:1", "block": [1, 2]},
                {"ref": "ep:2", "span": [0, 800]},
                {"ref": "mem:3", "node": 1, "revision": "abc"},
            ],
        }
    )
    assert not validator.is_valid({"agent_id": A, "refs": [{"block": 1}]})  # no ref
    assert not validator.is_valid({"agent_id": A, "refs": [{"ref": "mem:1", "colour": "red"}]})
    assert not validator.is_valid({"agent_id": A, "refs": ["mem:1"] * 21})


# -- the stored block set ---------------------------------------------------------------------------------------

FILLER = " ".join(f"Paragraph {i} of the quarterly report covers routine figures and staffing." for i in range(30))
LONG = FILLER + " The lighthouse keeper Ingrid repaired the foghorn on the northern pier."


def blocks_on(path: Path) -> Memory:
    settings = make_settings(block_build_enabled=True, block_retrieval_enabled=True)
    return open_memory(path, settings=settings, background=False)


def test_with_block_retrieval_on_a_block_is_one_of_the_stored_set(tmp_path: Path) -> None:
    with blocks_on(tmp_path / "b.db") as memory:
        ref = memory.store(agent_id=A, content=LONG)["ref"]
        assert only(memory.get_contents(agent_id=A, refs=[{"ref": ref, "block": 3}]))["basis"] == "divided"
        assert memory.blocks is not None
        memory.blocks.drain()  # built: the stored set is read from now on
        spans = memory.store_.block_spans([ref])[ref]
        result = memory.get_contents(
            agent_id=A, refs=[{"ref": ref, "block": 3}, {"ref": ref, "block": [0, len(spans) - 1]}]
        )
        three, whole = result["items"]
        assert three["basis"] == whole["basis"] == "blocks"
        assert (three["range"]["start"], three["range"]["end"]) == spans[3][:2]
        assert three["content"] == LONG[spans[3][0] : spans[3][1]] and three["content"].startswith("Paragraph 3 ")
        assert whole["content"] == LONG and whole["block"]["of"] == len(spans)
        refused = memory.get_contents(agent_id=A, refs=[{"ref": ref, "block": len(spans)}])
        assert failed(refused, "refs[0]") and "(blocks)" in refused["error"]
    with open_memory(tmp_path / "b.db") as off:  # retrieval off: the stored set is not read
        assert only(off.get_contents(agent_id=A, refs=[{"ref": ref, "block": 3}]))["basis"] == "divided"


def test_the_stored_set_is_answered_even_where_it_differs_from_the_divider(tmp_path: Path) -> None:
    with blocks_on(tmp_path / "b.db") as memory:
        ref = memory.store(agent_id=A, content=LONG)["ref"]
        store = memory.store_
        record = store.record_text(ref)
        assert record is not None
        halves = ((0, 100, True), (100, len(LONG), False))  # a set no divider makes: the stored one is read
        block_set = BlockSet(ref, record[1], "hash", halves, np.ones((2, 4), np.uint8), np.ones((2, 32), np.int8))
        with store.write() as conn:
            assert store.write_blocks(conn, block_set)
        item = only(memory.get_contents(agent_id=A, refs=[{"ref": ref, "block": 1}]))
        assert item["basis"] == "blocks" and item["content"] == LONG[100:]
        assert item["block"] == {"first": 1, "last": 1, "of": 2}
