"""get_contents answers at most 40,000 characters of text, whole items only; the rest are deferred
(docs/tools.md#memory)."""

from __future__ import annotations

from cuedrecall.api import Memory
from cuedrecall.handlers.read import CONTENTS_BUDGET

A = "agent-a"
CAP = 16_000  # the stored maximum at the test settings' default


def stored(memory: Memory, text: str) -> str:
    return str(memory.store(agent_id=A, content=text)["ref"])


def test_the_batch_stops_at_its_budget_and_names_the_rest(memory: Memory) -> None:
    refs = [stored(memory, letter * CAP) for letter in "ABCD"]
    answer = memory.get_contents(agent_id=A, refs=refs)
    assert [item["ref"] for item in answer["items"]] == refs[:2] and answer["count"] == 2
    assert answer["deferred"] == refs[2:] and answer["budget_chars"] == CONTENTS_BUDGET
    assert sum(len(item["content"]) for item in answer["items"]) <= CONTENTS_BUDGET
    rest = memory.get_contents(agent_id=A, refs=answer["deferred"])  # asked again, they come
    assert [item["ref"] for item in rest["items"]] == refs[2:] and "deferred" not in rest


def test_rows_are_never_cut_to_fit(memory: Memory) -> None:
    texts = {stored(memory, letter + "E" * (CAP - 1)): letter + "E" * (CAP - 1) for letter in "XYZ"}
    answer = memory.get_contents(agent_id=A, refs=list(texts))
    assert answer["items"] and all(item["content"] == texts[item["ref"]] for item in answer["items"])


def test_a_batch_that_fits_keeps_its_shape_and_a_missing_ref_is_missing(memory: Memory) -> None:
    refs = [stored(memory, f"short {n}") for n in range(3)]
    answer = memory.get_contents(agent_id=A, refs=[*refs, "mem:999999"])
    assert answer["count"] == 3 and answer["missing"] == ["mem:999999"]
    assert "deferred" not in answer and "budget_chars" not in answer


def test_a_range_past_the_budget_is_deferred_as_it_was_asked(memory: Memory) -> None:
    refs = [stored(memory, letter * CAP) for letter in "ABC"]
    asked = [refs[0], refs[1], {"ref": refs[2], "span": [0, 10]}, {"ref": refs[2], "span": [0, 20_000]}]
    answer = memory.get_contents(agent_id=A, refs=asked)
    assert answer["count"] == 3 and answer["deferred"] == asked[3:]  # a short range still fits; the long one waits
