"""Lexical coverage counts a question word as held exactly when the text's words hold it
(docs/recall-process.md#lexical-coverage): a word of at least STEM letters as the start of one of the text's words,
a shorter one as a whole word, where a text's words are its runs of letters and digits. ``holds`` finds this by
substring search; the property checks it against the definition, a split of the text into its words."""

from __future__ import annotations

import re

from hypothesis import event, given, settings
from hypothesis import strategies as st

from cuedrecall.recall.lexical_coverage import STEM, holds

_RUN = re.compile(r"[^\W_]+")  # the definition: a word is a run of letters and digits
ALPHABET = "abcdeé1_ -.'東京ß"


def _by_definition(text: str, word: str) -> bool:
    tokens = set(_RUN.findall(text))
    if len(word) >= STEM:
        return word[:STEM] in {token[:STEM] for token in tokens if len(token) >= STEM}
    return word in tokens


@st.composite
def text_and_word(draw: st.DrawFn) -> tuple[str, str]:
    text = draw(st.text(alphabet=ALPHABET, max_size=40))
    if text and draw(st.booleans()):  # a piece of the text itself: the cases where edges decide
        start = draw(st.integers(0, len(text) - 1))
        word = text[start : start + draw(st.integers(1, 8))]
    else:
        word = draw(st.text(alphabet=ALPHABET, min_size=1, max_size=8))
    return text, word


@settings(max_examples=2000, deadline=None)
@given(text_and_word())
def test_a_word_is_held_exactly_when_the_texts_words_hold_it(case: tuple[str, str]) -> None:
    text, word = case
    expected = _by_definition(text, word)
    event(f"held: {expected}, stem rule: {len(word) >= STEM}")
    assert holds(text, word) == expected


def test_the_edges_decide_a_short_word_and_only_the_start_a_long_one() -> None:
    assert holds("the cat sat", "cat") and not holds("concatenate", "cat") and not holds("cats", "cat")
    assert holds("she paints daily", "painting") and not holds("repaints", "painting")
    assert holds("a_cat_", "cat") and holds("2cat", "2cat") and not holds("x_y", "x_y")  # "_" parts words
