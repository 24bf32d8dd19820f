"""The term counts' cache is bounded, and keyword-budget-v2 picks each pass's terms by its rule."""

from __future__ import annotations

from pathlib import Path

from hypothesis import event, given, settings
from hypothesis import strategies as st

from cuedrecall.store import term_counts
from cuedrecall.store.term_counts import FALLBACK_ROWS, FIRST_PASS_ROWS, TermCounts, TermPlan, plan_terms, run_plan
from tests.conftest import open_memory


class _Source:
    """A term source with fixed counts; it records what it was asked."""

    def __init__(self, rows: int, counts: dict[str, int] | None = None) -> None:
        self.rows, self.counts, self.asked, self.calls = rows, counts or {}, [], 0

    def row_count(self, table: str) -> int:
        return self.rows

    def term_counts(self, table: str, kind: str, texts: list[str]) -> list[int]:
        self.calls += 1
        self.asked += texts
        return [self.counts.get(text, 0) for text in texts]


def test_the_cache_never_holds_more_than_its_bound() -> None:
    counts = TermCounts(_Source(10_000), 0.1, max_entries=50)
    for i in range(1_000):
        counts.word_rows("memories", f"w{i}")
    assert len(counts) == 50


def test_the_least_recently_used_count_leaves_first() -> None:
    source = _Source(10_000)
    counts = TermCounts(source, 0.1, max_entries=3)
    for word in ("a1", "b1", "c1"):
        counts.word_rows("memories", word)
    counts.word_rows("memories", "a1")  # used again: now the newest
    counts.word_rows("memories", "d1")  # pushes out b1, the least recently used
    source.asked.clear()
    counts.word_rows("memories", "a1")
    counts.word_rows("memories", "b1")
    assert source.asked == ["b1"]


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.text(alphabet="abcdeé東京", min_size=1, max_size=12), min_size=2, max_size=12, unique=True),
    st.booleans(),
)
def test_a_plan_asks_its_counts_in_one_request_and_then_from_the_cache(terms: list[str], words: bool) -> None:
    """plan_terms asks the source once for every count its terms need (so a backend a round trip away pays one),
    and plans the same as counting term by term; a second plan of the same terms asks nothing."""
    counts = {text: (sum(map(ord, text)) * 37) % 3_000 for term in terms for text in [term, *_grams(term)]}
    batched = _Source(100_000, counts)
    plan = plan_terms(TermCounts(batched, 0.1), "memories", terms, words=words)
    if words or any(len(term) >= 3 for term in terms):
        assert batched.calls == 1  # the rule fired: there were counts to read, and they went as one request
    one_by_one = _OneByOne(100_000, counts)
    assert plan == plan_terms(TermCounts(one_by_one, 0.1), "memories", terms, words=words)
    assert sorted(batched.asked) == sorted(set(one_by_one.asked))
    cached = TermCounts(batched, 0.1)
    plan_terms(cached, "memories", terms, words=words)
    batched.calls = 0
    assert plan_terms(cached, "memories", terms, words=words) == plan and batched.calls == 0


def _grams(term: str) -> list[str]:
    return [term[i : i + 3].lower() for i in range(len(term) - 2)]


class _OneByOne(_Source):
    """The same counts asked one text a request."""

    def term_counts(self, table: str, kind: str, texts: list[str]) -> list[int]:
        return [super(_OneByOne, self).term_counts(table, kind, [text])[0] for text in texts]


def test_the_default_bound_is_the_documented_one() -> None:
    assert TermCounts(_Source(1), 0.1).max_entries == TermCounts.MAX_ENTRIES == 50_000


def test_recalls_with_fresh_cjk_text_keep_the_store_cache_within_its_bound(tmp_path: Path) -> None:
    memory = open_memory(tmp_path / "m.db")
    for i in range(250):  # past MIN_ROWS: the common-term rule reads counts
        memory.store(agent_id="a", content=f"東京の会議 {i} は火曜日に移りました")
    vocab = memory.store_._vocab  # type: ignore[attr-defined]
    vocab.max_entries = 40
    for i in range(30):
        memory.recall(agent_id="a", query="".join(chr(0x4E00 + (i * 97 + j) % 20000) for j in range(40)))
    assert 0 < len(vocab) <= 40
    memory.close()


def test_a_store_within_the_first_budget_ranks_on_every_uncommon_term_and_reads_no_row_count() -> None:
    source = _Source(150)  # under MIN_ROWS: no term is common
    plan = plan_terms(TermCounts(source, 0.1), "memories", ["alpha", "beta", "gamma"], words=True)
    assert plan.first == plan.fallback == ("alpha", "beta", "gamma") and source.asked == []


def test_a_large_store_ranks_first_on_the_rarest_terms_that_fit_the_budget_in_query_order() -> None:
    rows = {"what": 40_000, "caroline": 900, "pottery": 700, "class": 900, "support": 3_000}
    plan = plan_terms(TermCounts(_Source(100_000, rows), 0.1), "memories", list(rows), words=True)
    # first pass: rarest first within FIRST_PASS_ROWS (700 + 900 fits; the next 900 would not)
    assert plan.first == ("caroline", "pottery")
    # fallback: any term, rarest first within FALLBACK_ROWS (700 + 900 + 900 + 3000 fits; 40,000 does not)
    assert plan.fallback == ("caroline", "pottery", "class", "support")
    assert plan.left_out == ("what",)
    record = plan.record("first")  # terms by their place in the query: a trace holds no text
    assert record["rule"] == "keyword-budget-v2" and record["term_rows"] == list(rows.values())
    assert record["first"] == [1, 2] and record["fallback"] == [1, 2, 3, 4] and record["left_out"] == [0]
    assert record["first_pass_rows"] == FIRST_PASS_ROWS and record["fallback_rows"] == FALLBACK_ROWS


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.from_regex(r"[a-z]{3,8}", fullmatch=True), st.integers(0, 30_000), min_size=1, max_size=12),
    st.integers(2_001, 200_000),
)
def test_each_pass_reads_no_more_rows_than_its_budget_and_keeps_the_rarest(rows: dict[str, int], total: int) -> None:
    terms = list(rows)
    plan = plan_terms(TermCounts(_Source(total, rows), 1.0), "memories", terms, words=True)  # ratio 1: none common
    for kept, budget in ((plan.first, FIRST_PASS_ROWS), (plan.fallback, FALLBACK_ROWS)):
        assert min(total, sum(rows[t] for t in kept)) <= budget
        assert [t for t in terms if t in kept] == list(kept)  # the query's order
        dropped = [t for t in terms if t not in kept]
        assert all(rows[d] >= rows[k] for d in dropped for k in kept)  # never a rarer term left out
        assert not dropped or min(total, sum(rows[t] for t in kept) + min(rows[d] for d in dropped)) > budget


def test_the_budget_constants_are_the_rule_s(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(term_counts, "FIRST_PASS_ROWS", 10)
    plan = plan_terms(TermCounts(_Source(1_000, {"aaa": 6, "bbb": 6}), 1.0), "memories", ["aaa", "bbb"], words=True)
    assert plan.first == ("aaa",)


# -- run_plan: the passes (keyword-budget-v2) -------------------------------------------------------------------


class _Table:
    """Rows as the sets of terms they hold; a pass lists the rows holding any of its terms (and, joined, any of the
    others too), most of the pass's terms first, then by id: a stand-in for bm25 that rewards holding more terms."""

    def __init__(self, rows: list[frozenset[str]], depth: int) -> None:
        self.rows, self.depth, self.passes = rows, depth, []

    def run(self, terms: list[str], also: list[str]) -> list[tuple[int, int]]:
        self.passes.append((tuple(terms), tuple(also)))
        found = [
            (i, len(held & {*terms, *also}))
            for i, held in enumerate(self.rows)
            if held & set(terms) and (not also or held & set(also))
        ]
        return sorted(found, key=lambda row: (-row[1], row[0]))[: self.depth]


def _plan(first: tuple[str, ...], fallback: tuple[str, ...]) -> TermPlan:
    return TermPlan(first, fallback, tuple(dict.fromkeys([*first, *fallback])))


def test_a_first_pass_that_fills_the_depth_shares_it_with_the_rows_that_also_hold_a_fallback_term() -> None:
    # ten rows hold the name alone (short rows: bm25 puts them first); one holds the name and the common word
    rows = [frozenset({"quincy"})] * 10 + [frozenset({"quincy", "degree"})] + [frozenset({"degree"})] * 30
    table = _Table(rows, depth=5)
    found, ranked_on = run_plan(_plan(("quincy",), ("quincy", "degree")), table.run, 5, key=lambda row: row[0])
    assert ranked_on == "joined" and [i for i, _ in found] == [10, 0, 1, 2, 3]
    assert table.passes == [(("quincy",), ()), (("quincy",), ("degree",))]


def test_a_short_first_pass_goes_to_the_fallback_and_no_joined_pass_runs() -> None:
    rows = [frozenset({"quincy"})] * 2 + [frozenset({"degree"})] * 30
    table = _Table(rows, depth=5)
    found, ranked_on = run_plan(_plan(("quincy",), ("quincy", "degree")), table.run, 5, key=lambda row: row[0])
    assert ranked_on == "fallback" and len(found) == 5
    assert table.passes == [(("quincy",), ()), (("quincy", "degree"), ())]


def test_when_no_row_holds_both_the_first_pass_stands() -> None:
    rows = [frozenset({"quincy"})] * 10 + [frozenset({"degree"})] * 30
    table = _Table(rows, depth=5)
    found, ranked_on = run_plan(_plan(("quincy",), ("quincy", "degree")), table.run, 5, key=lambda row: row[0])
    assert ranked_on == "first" and [i for i, _ in found] == [0, 1, 2, 3, 4]
    assert table.passes == [(("quincy",), ()), (("quincy",), ("degree",))]


_TERMS = ("aaa", "bbb", "ccc", "ddd", "eee")


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.frozensets(st.sampled_from(_TERMS), min_size=1), min_size=1, max_size=40),
    st.integers(1, 2),
    st.integers(1, 8),
)
def test_the_passes_share_the_depth_and_neither_loses_its_best_rows_to_the_other(
    rows: list[frozenset[str]], split: int, depth: int
) -> None:
    first, others = _TERMS[:split], _TERMS[split:4]  # "eee" is in no pass: the budget left it out
    plan = _plan(first, (*first, *others))
    table = _Table(rows, depth)
    found, ranked_on = run_plan(plan, table.run, depth, key=lambda row: row[0])
    event(ranked_on)
    ids = [i for i, _ in found]
    assert len(ids) == len(set(ids)) <= depth
    if ranked_on == "fallback":
        assert all(rows[i] & {*first, *others} for i in ids)
        return
    assert ranked_on in ("first", "joined")
    assert all(rows[i] & set(first) for i in ids)  # never a row the first pass could not reach
    alone = [i for i, _ in _Table(rows, depth).run(list(first), [])]
    holds_both = [i for i, held in enumerate(rows) if held & set(first) and held & set(others)]
    if ranked_on == "first":
        assert ids == alone and not holds_both
        return
    both = [i for i, _ in _Table(rows, depth).run(list(first), list(others))]
    half = depth // 2
    assert set(alone[:half]) <= set(ids) and set(both[:half]) <= set(ids)  # each pass keeps its best half
    assert len(ids) == min(depth, len(set(alone) | set(both)))  # the depth is filled while either has rows
    assert set(both[: max(1, half)]) & set(ids)  # a joined pass that ran always places a row


def test_a_function_word_never_makes_a_joined_pass() -> None:
    rows = [frozenset({"quincy"})] * 10 + [frozenset({"quincy", "what"})]
    table = _Table(rows, depth=5)
    found, ranked_on = run_plan(_plan(("quincy",), ("quincy", "What")), table.run, 5, key=lambda row: row[0])
    assert ranked_on == "first" and [i for i, _ in found] == [0, 1, 2, 3, 4]
    assert table.passes == [(("quincy",), ())]


class _KindSource(_Source):
    """Counts by kind: a trigram's, a phrase's and a word's count of the same text differ."""

    def term_counts(self, table: str, kind: str, texts: list[str]) -> list[int]:
        self.calls += 1
        self.asked += [(kind, text) for text in texts]
        return [{"gram": 3, "phrase": 5, "word": 7}[kind] * len(text) for text in texts]


def test_a_term_s_held_rows_are_its_own_count_not_its_rarest_trigram_s() -> None:
    """The joined pass's df on PostgreSQL (FTS5's): a three-character term is one trigram (counted lower-cased), a
    longer one is counted as the phrase itself, a shorter one holds no trigram; a word is the word index's count."""
    source = _KindSource(100_000)
    counts = TermCounts(source, 0.1)
    assert counts.held_rows("memories", ["Tea", "degree", "ab"], words=False) == [9, 30, 0]
    assert ("gram", "tea") in source.asked and ("phrase", "degree") in source.asked
    assert not any(kind == "gram" and text != "tea" for kind, text in source.asked)  # no bound asked for
    assert counts.held_rows("memories", ["degree", "walk"], words=True) == [42, 28]
    calls = source.calls
    counts.held_rows("memories", ["Tea", "degree"], words=False)
    assert source.calls == calls  # cached, as every count
