"""Excerpts: the passages of a long record that match the query, widened to their governing context, in budget."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import open_memory
from cuedrecall.text.blocks import divide
from cuedrecall.text.excerpts import SEPARATOR, excerpt, governing

FILLER = "The project started in May. " * 20
LONG = FILLER + "However, the dentist appointment moved to Friday at 3pm. That was final. " + FILLER


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=3000), st.text(max_size=60), st.integers(min_value=1, max_value=900))
def test_an_excerpt_fits_its_budget_and_every_passage_is_the_records_own_text(text: str, query: str,
                                                                              budget: int) -> None:
    found = excerpt(text, query, budget)
    assert len(found.text) <= budget
    assert all(piece in text for piece in found.text.split(SEPARATOR))
    assert found.basis in ("lexical", "start")


def test_the_matching_passage_is_shown_with_the_sentence_a_qualifier_attaches_it_to() -> None:
    found = excerpt(LONG, "when is the dentist appointment?")
    assert found.basis == "lexical"
    assert found.text == "The project started in May. However, the dentist appointment moved to Friday at 3pm."


def test_a_block_that_ends_no_sentence_takes_in_the_rest_of_its_sentence() -> None:
    text = "Intro line one.\nThe budget for the\nbridge project is 4 million.\nOther things."
    spans = divide(text)
    middle = next(i for i, s in enumerate(spans) if "budget" in text[s.start : s.end])
    first, last = governing(text, spans, middle)
    assert text[spans[first].start : spans[last].end].strip() == "The budget for the\nbridge project is 4 million."


def test_japanese_qualifiers_govern_as_english_ones_do() -> None:
    found = excerpt("一つ目の文。ただし、歯医者は金曜日。三つ目。", "歯医者はいつ")
    assert found.text == "一つ目の文。ただし、歯医者は金曜日。"


def test_a_record_of_one_block_or_without_a_match_shows_its_start() -> None:
    assert excerpt("just one sentence without an end", "sentence").basis == "start"
    found = excerpt(LONG, "zzzz qqqq", budget=60)
    assert found.basis == "start" and LONG.startswith(found.text) and len(found.text) <= 60


def test_separate_passages_appear_in_text_order_joined_by_the_separator() -> None:
    text = "Alpha facts here. " + "Filler words only. " * 30 + "Omega facts there. " + "Filler words only. " * 30
    found = excerpt(text, "alpha omega facts")
    assert found.text == f"Alpha facts here.{SEPARATOR}Omega facts there."


def test_a_recalled_row_cut_to_its_preview_carries_the_excerpt_of_its_matching_passage(tmp_path: Path) -> None:
    with open_memory(tmp_path / "e.db") as memory:
        memory.calibration.set("a", "cosine", 0.0)
        memory.store(agent_id="a", content=LONG)
        row = memory.recall(agent_id="a", query="dentist appointment")["messages"][-1]
        assert row["content_truncated"] is True and len(row["content"]) == 500
        assert row["excerpt_basis"] == "lexical" and "dentist appointment moved to Friday" in row["excerpt"]
        whole = memory.recall(agent_id="a", query="dentist appointment", full_content=True)["messages"][-1]
        assert "excerpt" not in whole  # a whole row needs none
