"""The FTS expression builder and exclusion (docs/recall-process.md#the-arms)."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from cuedrecall.text import build_fts_expression, is_excluded, normalize_exclusions

# The whole expression: quoted terms (inner quotes doubled) joined by " OR ".
_QUOTED = r'"(?:[^"]|"")*"'
_EXPRESSION = re.compile(f"{_QUOTED}(?: OR {_QUOTED})*")


def test_non_cjk_tokens_are_kept_whole():
    assert build_fts_expression("fix bug-183 today") == '"fix" OR "bug-183" OR "today"'


def test_short_tokens_are_dropped():
    assert build_fts_expression("a an the is of") == '"the"'


def test_nothing_surviving_gives_empty_expression():
    assert build_fts_expression("") == ""
    assert build_fts_expression("  a b ?? ") == ""


def test_edge_punctuation_is_stripped_from_tokens():
    assert build_fts_expression('("bug-183"), [release]! `code`;') == ('"bug-183" OR "release" OR "code"')


def test_inner_punctuation_is_kept():
    assert build_fts_expression("v2.5.5a1's") == '"v2.5.5a1\'s"'


def test_cjk_run_becomes_overlapping_trigrams():
    assert build_fts_expression("東京都庁舎") == '"東京都" OR "京都庁" OR "都庁舎"'


def test_short_cjk_runs_are_dropped():
    assert build_fts_expression("東京 です") == ""


def test_hiragana_and_katakana_count_as_cjk():
    assert build_fts_expression("リリースの") == '"リリー" OR "リース" OR "ースの"'


def test_mixed_token_splits_into_cjk_and_non_cjk_runs():
    assert build_fts_expression("bug-183の修正") == '"bug-183" OR "の修正"'


def test_half_width_katakana_counts_as_cjk():
    assert build_fts_expression("abcｱｲｳ") == '"abc" OR "ｱｲｳ"'


def test_repeated_terms_are_kept_once_in_first_order():
    assert build_fts_expression("beta alpha beta alpha") == '"beta" OR "alpha"'


def test_inner_double_quote_is_doubled():
    assert build_fts_expression('say"hi') == '"say""hi"'


def test_extra_terms_are_appended_as_phrases():
    assert build_fts_expression("release", ["code review", "ab", 'x"yz']) == ('"release" OR "code review" OR "x""yz"')


def test_extra_terms_alone_make_an_expression():
    assert build_fts_expression("", ["deploy"]) == '"deploy"'


@given(st.text(), st.lists(st.text(), max_size=4))
def test_expression_never_raises_and_every_term_is_quoted(query, extra):
    expression = build_fts_expression(query, extra)
    assert expression == "" or _EXPRESSION.fullmatch(expression)


# --- exclusion ---------------------------------------------------------------------


def test_exclusions_are_stripped_lowered_and_empties_dropped():
    assert normalize_exclusions(["  Hello ", "", "   ", "WORLD"]) == ("hello", "world")


def test_short_exclusion_must_equal_content():
    entries = normalize_exclusions(["deploy notes"])
    assert is_excluded("  Deploy Notes ", entries)
    assert not is_excluded("deploy notes for friday", entries)


def test_long_exclusion_excludes_by_prefix_either_way():
    full = "the quarterly release moved to friday because of the freeze"
    entries = normalize_exclusions([full[:40]])
    assert is_excluded(full, entries)
    assert is_excluded(full[:35], entries)  # a shorter preview of the same record
    assert not is_excluded("something else entirely, of some length", entries)


def test_prefix_rule_starts_at_32_characters():
    entry = "x" * 32
    assert is_excluded(entry + "tail", normalize_exclusions([entry]))
    assert not is_excluded(entry[:-1] + "tail", normalize_exclusions([entry[:-1]]))


def test_empty_content_is_never_excluded():
    assert not is_excluded("   ", normalize_exclusions(["x" * 40]))
