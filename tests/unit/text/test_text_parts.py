"""The coverage ledger's parts (docs/trace.md#the-coverage-ledger)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cuedrecall.text import MAX_PARTS, identifier_like_parts, normalize, question_parts

EXAMPLE = (
    "CPersona 2.5.5a1 のリリース前に、包括してコードレビューを行い、"
    "最優先度 P1 の判定でバグ bug-218 と PR #354 a/b を見る"
)


def _listed(question: str) -> list[tuple[str, str]]:
    found = question_parts(question)
    return [(part.text(found.normalized), part.kind) for part in found.parts]


def test_spec_example_gives_its_parts_in_order():
    assert _listed(EXAMPLE) == [
        ("cpersona", "identifier"),
        ("2.5.5a1", "identifier"),
        ("リリース", "katakana"),
        ("包括", "kanji"),
        ("コードレビュー", "katakana"),
        ("最優先度", "kanji"),
        ("p1", "identifier"),
        ("判定", "kanji"),
        ("バグ", "katakana"),
        ("bug-218", "identifier"),
        ("pr", "identifier"),
        ("#354", "identifier"),
        ("a/b", "identifier"),
    ]
    assert question_parts(EXAMPLE).omitted == 0


def test_normalize_is_nfkc_then_lower():
    assert normalize("ＡＢＣ　ｱｲｳ") == "abc アイウ"
    assert normalize(None) == ""


def test_span_reads_the_part_back_from_the_normalized_question():
    found = question_parts("See ＢＵＧ-９")
    assert [(p.start, p.end) for p in found.parts] == [(0, 3), (4, 9)]
    assert normalize("See ＢＵＧ-９")[4:9] == "bug-9"


def test_hiragana_runs_are_not_parts():
    assert _listed("これはひらがなです") == []


def test_single_characters_are_not_parts():
    assert _listed("a 東 ア x") == []


def test_identifier_ends_on_a_letter_or_digit():
    assert _listed("path src/app.py. and v1.2-") == [
        ("path", "identifier"),
        ("src/app.py", "identifier"),
        ("and", "identifier"),
        ("v1.2", "identifier"),
    ]


def test_hash_number_is_an_identifier():
    assert _listed("#12 #") == [("#12", "identifier")]


def test_kanji_run_includes_iteration_mark():
    assert _listed("人々が") == [("人々", "kanji")]


def test_katakana_run_includes_long_vowel_and_middle_dot():
    assert _listed("コード・レビュー") == [("コード・レビュー", "katakana")]


def test_repeated_part_counts_once():
    found = question_parts("deploy then Deploy then DEPLOY")
    assert [p.text(found.normalized) for p in found.parts] == ["deploy", "then"]
    assert found.parts[0].start == 0


def test_more_than_32_parts_reports_parts_omitted():
    question = " ".join(f"w{i}" for i in range(40))
    found = question_parts(question)
    assert len(found.parts) == MAX_PARTS
    assert found.omitted == 8
    assert found.texts[-1] == "w31"


def test_identifier_like_parts_keep_names_versions_and_paths():
    assert identifier_like_parts("hello 2.5.5a1 bug-218 #354 src/app.py my_var world") == (
        "2.5.5a1",
        "bug-218",
        "#354",
        "src/app.py",
        "my_var",
    )


def test_plain_words_and_cjk_are_not_identifier_like():
    assert identifier_like_parts("hello world リリース 判定") == ()


@given(st.text())
def test_parts_are_distinct_ordered_and_read_back(question):
    found = question_parts(question)
    texts = found.texts
    assert len(set(texts)) == len(texts)
    assert all(len(t) >= 2 for t in texts)
    starts = [p.start for p in found.parts]
    assert starts == sorted(starts)
    assert len(found.parts) <= MAX_PARTS
