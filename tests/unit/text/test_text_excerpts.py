"""Excerpts: the passages of a long record that match the query, widened to their governing context, in budget."""

from __future__ import annotations

import itertools
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from cuedrecall.text.blocks import Span, divide
from cuedrecall.text.excerpts import SEPARATOR, excerpt, governing, partitions, shared_trigrams, trigrams
from tests.conftest import make_settings, open_memory

FILLER = "The project started in May. " * 20
LONG = FILLER + "However, the dentist appointment moved to Friday at 3pm. That was final. " + FILLER


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=3000), st.text(max_size=60), st.integers(min_value=1, max_value=900))
def test_an_excerpt_fits_its_budget_and_every_passage_is_the_records_own_text(
    text: str, query: str, budget: int
) -> None:
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


# -- given blocks (a record's stored block set) ------------------------------------------------------------------


def cut_at(text: str, cuts: list[int]) -> list[Span]:
    bounds = [0, *sorted({c for c in cuts if 0 < c < len(text)}), len(text)]
    return [Span(start, end) for start, end in itertools.pairwise(bounds)]


@settings(max_examples=200, deadline=None)
@given(
    st.text(min_size=1, max_size=3000),
    st.text(max_size=60),
    st.integers(min_value=1, max_value=900),
    st.lists(st.integers(min_value=1, max_value=2999), max_size=12),
    st.integers(min_value=-2, max_value=14),
)
def test_an_excerpt_over_given_blocks_fits_its_budget_and_shows_the_records_own_text(
    text: str, query: str, budget: int, cuts: list[int], first: int
) -> None:
    spans = cut_at(text, cuts)
    assert partitions(text, spans)
    found = excerpt(text, query, budget, spans=spans, first=first)
    assert len(found.text) <= budget
    assert all(piece in text for piece in found.text.split(SEPARATOR))
    assert found.basis in ("blocks", "start")


def test_given_blocks_are_the_ones_chosen_from_with_basis_blocks() -> None:
    text = "Filler words only here. " * 4 + "The zebra sleeps. Mid sentence" + " more filler words." * 4
    own = text.index("zebra")
    spans = cut_at(text, [own, own + len("zebra")])  # three blocks: before, "zebra", the rest
    found = excerpt(text, "zebra", budget=60, spans=spans)
    assert found.basis == "blocks" and found.text == "zebra"  # its context is over budget: its own given block
    assert excerpt(text, "zebra", budget=60).text == "The zebra sleeps."  # divided now without them
    assert excerpt(text, "zebra", budget=60).basis == "lexical"


def test_a_first_block_ranks_before_the_lexical_best_and_is_always_shown() -> None:
    text = "The dentist moved to Friday. " + "Filler words only here. " * 40 + "The harbour opens at dawn."
    spans = divide(text)
    harbour = len(spans) - 1
    plain = excerpt(text, "dentist friday", budget=40, spans=spans)
    assert plain.text == "The dentist moved to Friday."
    found = excerpt(text, "dentist friday", budget=40, spans=spans, first=harbour)
    assert found.basis == "blocks" and found.text == "The harbour opens at dawn."  # only one fits: the first
    both = excerpt(text, "dentist friday", budget=80, spans=spans, first=harbour)
    assert both.text == f"The dentist moved to Friday.{SEPARATOR}The harbour opens at dawn."  # text order
    nothing = excerpt(text, "zzzz qqqq", budget=80, spans=spans, first=harbour)  # no word matches: still shown
    assert nothing.basis == "blocks" and nothing.text == "The harbour opens at dawn."


def test_a_first_block_too_long_for_its_context_is_shown_alone_or_cut() -> None:
    text = "Intro sentence. The keeper said, and the keeper\nrepaired the foghorn. " + "Filler words here. " * 30
    spans = divide(text)
    keeper = next(i for i, s in enumerate(spans) if "repaired" in s.text(text))
    context = governing(text, spans, keeper)
    assert context[0] < keeper  # its sentence starts a block earlier
    alone = excerpt(text, "zzzz", budget=len(spans[keeper].text(text).strip()) + 2, spans=spans, first=keeper)
    assert alone.text == spans[keeper].text(text).strip()
    cut = excerpt(text, "zzzz", budget=8, spans=spans, first=keeper)
    assert cut.text == spans[keeper].text(text)[:8].strip()


def test_a_first_block_is_ignored_out_of_range_or_without_given_blocks() -> None:
    assert excerpt(LONG, "dentist appointment", first=0).basis == "lexical"
    spans = divide(LONG)
    assert excerpt(LONG, "dentist appointment", spans=spans, first=len(spans)) == excerpt(
        LONG, "dentist appointment", spans=spans
    )
    assert excerpt(LONG, "zzzz", budget=60, spans=spans, first=-1).basis == "start"


def test_one_given_block_shows_the_start() -> None:
    found = excerpt(LONG, "dentist", budget=50, spans=[Span(0, len(LONG))], first=0)
    assert found.basis == "start" and LONG.startswith(found.text)


def test_partitions_holds_only_for_blocks_that_cover_the_text_exactly() -> None:
    assert partitions("abcdef", [Span(0, 2), Span(2, 6)])
    assert not partitions("abcdef", [Span(0, 2), Span(3, 6)])  # a gap
    assert not partitions("abcdef", [Span(0, 2), Span(2, 5)])  # short of the end
    assert not partitions("abcdef", [Span(0, 2), Span(2, 2), Span(2, 6)])  # an empty block
    assert not partitions("abcdef", [])


def test_a_recalled_row_cut_to_its_preview_carries_the_excerpt_of_its_matching_passage(tmp_path: Path) -> None:
    with open_memory(tmp_path / "e.db") as memory:
        memory.calibration.set("a", "cosine", 0.0)
        memory.store(agent_id="a", content=LONG)
        row = memory.recall(agent_id="a", query="dentist appointment")["messages"][-1]
        assert row["content_truncated"] is True and len(row["content"]) == 500
        assert row["excerpt_basis"] == "lexical" and "dentist appointment moved to Friday" in row["excerpt"]
        whole = memory.recall(agent_id="a", query="dentist appointment", full_content=True)["messages"][-1]
        assert "excerpt" not in whole  # a whole row needs none


REPORT = " ".join(f"Paragraph {i} of the quarterly report covers routine figures and staffing." for i in range(60))
FAR = REPORT + " The lighthouse keeper Ingrid repaired the foghorn on the northern pier."


def test_with_blocks_on_a_block_seats_excerpt_is_built_over_the_stored_blocks_and_holds_the_block_it_reached(
    tmp_path: Path,
) -> None:
    settings = make_settings(block_build_enabled=True, block_retrieval_enabled=True)
    with open_memory(tmp_path / "b.db", settings=settings, background=False) as memory:
        memory.calibration.set("a", "cosine", 0.99)  # the whole record's vector alone cannot pass
        memory.calibration.set("a", "rrf", 1.0)
        ref = memory.store(agent_id="a", content=FAR)["ref"]
        for text in ("weekly groceries: milk, eggs and bread", "the car needs new tyres before winter"):
            memory.store(agent_id="a", content=text)
        assert memory.blocks is not None
        memory.blocks.drain()
        answer = memory.recall(agent_id="a", query="lighthouse keeper Ingrid foghorn northern pier")
        (row,) = [m for m in answer["messages"] if m.get("match_reason", {}).get("signal") == "block"]
        assert row["ref"] == ref and row["content_truncated"] is True
        start, end, _ = memory.store_.block_spans([ref])[ref][row["match_reason"]["block"]]
        assert row["excerpt_basis"] == "blocks" and FAR[start:end].strip() in row["excerpt"]
        assert "lighthouse keeper Ingrid" in row["excerpt"]
        # a row the answer holds by its score is built over the stored blocks too
        memory.calibration.set("a", "cosine", 0.0)
        memory.calibration.set("a", "rrf", 0.0)
        plain = memory.recall(agent_id="a", query="Paragraph 42 of the quarterly report")
        (long_row,) = [m for m in plain["messages"] if m.get("ref") == ref]
        assert long_row["match_reason"]["signal"] != "block"
        assert long_row["excerpt_basis"] == "blocks" and "Paragraph 42 " in long_row["excerpt"]
    with open_memory(tmp_path / "b.db") as off:  # retrieval off: divided now, as before
        query = "lighthouse keeper Ingrid foghorn"
        (row,) = [m for m in off.recall(agent_id="a", query=query)["messages"] if m.get("ref") == ref]
        assert row["excerpt_basis"] == "lexical" and "lighthouse keeper Ingrid" in row["excerpt"]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="abcAB .東京ｱ", max_size=30), st.text(alphabet="abcAB .東京ｱ", max_size=60))
def test_shared_trigrams_counts_what_the_two_trigram_sets_share(query: str, text: str) -> None:
    assert shared_trigrams(trigrams(query), text) == len(trigrams(query) & trigrams(text))
