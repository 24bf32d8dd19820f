"""The block divider (issue 11): blocks partition the text, none is too long, and cuts fall where the rule says."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from cuedrecall.text.blocks import MAX_BLOCK_CHARS, PAIRS, Span, divide

_PIECES = st.sampled_from(
    [
        "word ",
        "an idea",
        ". ",
        "!",
        "? ",
        "。",
        "．",
        "！",
        "？",
        "\n",
        "\n\n",
        ", ",
        "、",
        "; ",
        ": ",
        "```",
        "\n```\n",
        "x" * 300,
        "日本語の文",
        "é",
        " ",
        "...",
        *PAIRS,
        *PAIRS.values(),
    ]
)
TEXTS = st.one_of(st.text(max_size=3000), st.lists(_PIECES, max_size=120).map("".join))


def texts(text: str) -> list[str]:
    return [span.text(text) for span in divide(text)]


@settings(max_examples=300, deadline=None)
@given(TEXTS)
def test_the_blocks_partition_the_text_and_none_exceeds_the_maximum(text: str) -> None:
    spans = divide(text)
    assert "".join(span.text(text) for span in spans) == text
    assert all(0 < span.end - span.start <= MAX_BLOCK_CHARS for span in spans)
    assert all(a.end == b.start for a, b in itertools.pairwise(spans))
    assert not spans or (spans[0].start, spans[-1].end) == (0, len(text))


@settings(max_examples=200, deadline=None)
@given(TEXTS)
def test_the_divider_is_deterministic(text: str) -> None:
    assert divide(text) == divide(text)


def test_empty_text_has_no_blocks() -> None:
    assert divide("") == []


def test_sentences_end_at_full_stops_followed_by_space_or_the_end_and_at_full_width_marks_anywhere() -> None:
    assert texts("One. Two! Three?") == ["One. ", "Two! ", "Three?"]
    assert texts("version 2.4.1 shipped") == ["version 2.4.1 shipped"]  # a dot inside a word is no sentence end
    assert texts("今日は晴れ。明日は雨！本当？") == ["今日は晴れ。", "明日は雨！", "本当？"]


def test_lines_and_blank_lines_are_cuts_but_commas_are_not() -> None:
    assert texts("first line\nsecond line\n\nthird, fourth, fifth") == [
        "first line\n",
        "second line\n\n",
        "third, fourth, fifth",
    ]


def test_no_cut_falls_inside_a_balanced_pair_or_a_fence() -> None:
    assert texts("He said (yes. no.) and left. Then") == ["He said (yes. no.) and left. ", "Then"]
    assert texts("「はい。いいえ。」と言った。次") == ["「はい。いいえ。」と言った。", "次"]
    fenced = "Run this:\n```\nmake test.\nmake demo.\n```\nDone."
    assert texts(fenced) == ["Run this:\n", "```\nmake test.\nmake demo.\n```\n", "Done."]


def test_an_unmatched_opener_protects_nothing() -> None:
    assert texts("an aside (never closed. Next one.") == ["an aside (never closed. ", "Next one."]


def test_an_overlong_span_splits_at_its_last_weak_boundary_keeping_at_least_half() -> None:
    clause = "a" * 300 + ", "
    text = clause * 4  # one sentence of 1208 characters with commas every 302
    spans = divide(text)
    assert [span.end - span.start for span in spans] == [604, 604]
    assert spans[0].forced and not spans[-1].forced
    assert text[spans[0].end - 2 : spans[0].end] == ", "


def test_an_overlong_span_without_a_weak_boundary_is_cut_hard_at_the_maximum() -> None:
    spans = divide("x" * 2000)
    assert [span.end - span.start for span in spans] == [MAX_BLOCK_CHARS, MAX_BLOCK_CHARS, 2000 - 2 * MAX_BLOCK_CHARS]
    assert [span.forced for span in spans] == [True, True, False]
    assert spans[0] == Span(0, MAX_BLOCK_CHARS, forced=True)


def test_whitespace_never_stands_alone_as_a_block_it_joins_the_block_before_it() -> None:
    assert texts("A.\n\nB") == ["A.\n\n", "B"]
    assert texts("\n\nHello. World.\n") == ["\n\nHello. ", "World.\n"]
    assert texts("One.\nTwo.") == ["One.\n", "Two."]
