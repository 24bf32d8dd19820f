"""Reconstruct's stage 1 (graph/cues.py): the declared names a query holds, and the other names they bring.

Also the normalisation every comparison of names goes through (graph/names.py).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cuedrecall.api import Memory
from cuedrecall.graph.cues import MAX_MATCHES, MAX_TERMS, Cues, query_cues
from cuedrecall.graph.names import normalize_name
from cuedrecall.store.base import Scope

A, B = "agent-a", "agent-b"
SCOPE_A = Scope(A)  # the default scope of the helpers below


class Spy:
    """A store that records which of its methods were called (what a read of the graph cost)."""

    def __init__(self, store: Any) -> None:
        self.store, self.calls = store, []

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.store, name)
        if not callable(attr):
            return attr

        def called(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            return attr(*args, **kwargs)

        return called


def entities(memory: Memory, *declared: dict[str, Any], agent: str = A, **scope: str) -> None:
    result = memory.declare_associations(agent_id=agent, associations={"entities": list(declared)}, **scope)
    assert result["ok"] and result["dropped"] == [], result


def cues(memory: Memory, query: str, scope: Scope = SCOPE_A) -> Cues:
    return query_cues(memory.store_, scope, query)


# -- normalisation ---------------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_normalisation_is_idempotent(text: str) -> None:
    once = normalize_name(text)
    assert normalize_name(once) == once


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_a_normalised_name_has_no_leading_trailing_or_repeated_whitespace(text: str) -> None:
    once = normalize_name(text)
    assert once == once.strip() and "  " not in once and all(ch == " " or not ch.isspace() for ch in once)


def test_normalisation_folds_width_case_and_whitespace() -> None:
    assert normalize_name("  ＴＯＫＹＯ\u3000Tower\n") == "tokyo tower"
    assert normalize_name("Straße") == normalize_name("STRASSE")
    assert normalize_name("ﾀﾅｶ") == "タナカ"


# -- matching ----------------------------------------------------------------------------------------------


def test_a_query_naming_nothing_declared_has_no_cues_and_no_report(memory: Memory) -> None:
    entities(memory, {"name": "Ana"})
    found = cues(memory, "what did Bo say")
    assert found == Cues([], [], 0) and found.report() is None


def test_an_agent_without_a_graph_costs_one_cached_read(memory: Memory) -> None:
    spy = Spy(memory.store_)
    assert query_cues(spy, Scope(A), "anything at all") == Cues([], [], 0)  # type: ignore[arg-type]
    assert spy.calls == ["has_graph"]


def test_a_name_in_the_query_brings_the_entitys_other_names_as_terms(memory: Memory) -> None:
    entities(memory, {"name": "Osaka office", "aliases": ["Kansai branch", "OO"]})
    found = cues(memory, "Who runs the KANSAI   branch?")
    assert found.entities == ["Osaka office"] and found.terms == ["Osaka office", "OO"]
    assert found.report() == {"entities": ["Osaka office"], "terms": ["Osaka office", "OO"]}


def test_terms_skip_names_the_query_already_holds(memory: Memory) -> None:
    entities(memory, {"name": "Osaka office", "aliases": ["Kansai branch"]})
    found = cues(memory, "the kansai branch, formerly the Osaka Office")
    assert found.entities == ["Osaka office"] and found.terms == [] and found.report() == {"entities": ["Osaka office"]}


def test_the_longest_name_is_matched_first_and_a_shorter_one_inside_it_does_not_count(memory: Memory) -> None:
    entities(memory, {"name": "New York"}, {"name": "New York Times"})
    assert cues(memory, "a review in the new york times").entities == ["New York Times"]
    assert cues(memory, "the New York Times office in New York").entities == ["New York Times", "New York"]


def test_a_shorter_name_overlapping_a_longer_match_does_not_count(memory: Memory) -> None:
    entities(memory, {"name": "York Times"}, {"name": "New York"})
    assert cues(memory, "new york times").entities == ["York Times"]


def test_names_of_equal_length_are_matched_in_name_order(memory: Memory) -> None:
    entities(memory, {"name": "Bo"}, {"name": "Al"})
    assert cues(memory, "bo and al").entities == ["Al", "Bo"]


def test_the_same_name_in_a_project_and_the_global_pool_matches_both_once(memory: Memory) -> None:
    entities(memory, {"name": "Ana", "aliases": ["Ana K."]})
    entities(memory, {"name": "Ana", "aliases": ["Anita"]}, project_id="p1")
    found = cues(memory, "ana said", Scope(A, "p1"))
    assert found.entities == ["Ana"]  # two entities, one name
    assert found.terms == ["Ana K.", "Anita"]


def test_at_most_64_matches_are_counted(memory: Memory) -> None:
    names = [f"w{i:02d}" for i in range(MAX_MATCHES + 6)]
    entities(memory, *({"name": name} for name in names[:60]))
    entities(memory, *({"name": name} for name in names[60:]))
    found = cues(memory, " ".join(reversed(names)))
    assert found.entities == names[:MAX_MATCHES]


def test_at_most_32_terms_and_the_rest_are_counted(memory: Memory) -> None:
    entities(
        memory,
        {"name": "Hub", "aliases": [f"hub alias {i:02d}" for i in range(32)]},
        {"name": "Spoke", "aliases": [f"spoke alias {i}" for i in range(5)]},
    )
    found = cues(memory, "hub and spoke")
    assert len(found.terms) == MAX_TERMS and found.terms_omitted == 5
    # Spoke, the longer name, matched first: its aliases lead, Hub's follow until the bound
    assert found.entities == ["Spoke", "Hub"]
    assert found.terms == [*(f"spoke alias {i}" for i in range(5)), *(f"hub alias {i:02d}" for i in range(27))]
    assert found.report()["terms_omitted"] == 5  # type: ignore[index]


def test_a_japanese_name_is_matched_in_its_kanji_or_its_katakana_spelling(memory: Memory) -> None:
    entities(memory, {"name": "田中", "aliases": ["タナカ"]})
    by_kana = cues(memory, "タナカさんと駅で会った")
    assert by_kana.entities == ["田中"] and by_kana.terms == ["田中"]
    by_kanji = cues(memory, "田中さんはどこ？")
    assert by_kanji.entities == ["田中"] and by_kanji.terms == ["タナカ"]
    assert cues(memory, "ﾀﾅｶさん").terms == ["田中"]  # half-width katakana normalises to the alias


def test_only_entities_readable_in_the_scope_are_matched(memory: Memory) -> None:
    entities(memory, {"name": "Ana"}, project_id="p1")
    entities(memory, {"name": "Bo"}, agent=B)
    entities(memory, {"name": "Cy"}, channel="c1")
    assert cues(memory, "ana bo cy", Scope(A, "p1")).entities == ["Ana", "Cy"]
    assert cues(memory, "ana bo cy", Scope(A, "p2")).entities == ["Cy"]
    assert cues(memory, "ana bo cy", Scope(A, None, "c2")).entities == ["Ana"]
    assert cues(memory, "ana bo cy", Scope(B)).entities == ["Bo"]


@settings(max_examples=40, deadline=None)
@given(query=st.text(alphabet="abc xyz田中タナカ", max_size=30))
def test_every_match_is_in_the_query_and_no_term_is(query: str) -> None:
    import tempfile

    from tests.conftest import open_memory

    with tempfile.TemporaryDirectory() as folder, open_memory(f"{folder}/m.db") as memory:
        entities(
            memory,
            {"name": "ab", "aliases": ["x y", "田中"]},
            {"name": "b c", "aliases": ["タナカ", "abc"]},
            {"name": "z", "aliases": ["yz"]},
        )
        found = cues(memory, query)
        text = normalize_name(query)
        every = {"ab": ["ab", "x y", "田中"], "b c": ["b c", "タナカ", "abc"], "z": ["z", "yz"]}
        for name in found.entities:
            assert any(normalize_name(other) in text for other in every[name])
        assert all(normalize_name(term) not in text for term in found.terms)
        assert len(found.terms) == len(set(found.terms)) <= MAX_TERMS
