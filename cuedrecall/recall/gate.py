"""Stage 4, the quality gate (policy gate-v2): each row judged on its own signals, each against its own threshold.

Why its own signals: another arm's vote never makes a row fail (gate-v0 judged a row the vector arm reached on its
cosine alone); a row that shares only common words with the question is refused by name (``common_words_only``);
and in a small pool neither the pool-size heuristic, tuned for pools of hundreds, nor an automatic calibration,
measured between stored memories where a question sits farther from everything, refuses a newcomer's one real
match (the outlier bar). gate-v2 adds that a row whose text repeats every informative word of the query passes
whatever the thresholds, so a stored phrase or identifier the query repeats never depends on which calibration
has landed (``repeats``). The rule, its thresholds and its reasons: docs/recall-process.md#the-gate.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import NamedTuple

from cuedrecall.recall.arm_registry import ARMS
from cuedrecall.recall.candidates import Candidate
from cuedrecall.recall.context import RecallContext
from cuedrecall.recall.gate_policy import COMMON_WORDS, HEURISTIC_FLOOR, OUTLIER_MAX_POOL, OUTLIER_Z
from cuedrecall.recall.verdicts import Decision, GateResult
from cuedrecall.text import identifier_like_parts, normalize
from cuedrecall.text.words import MAX_WORDS

MAX_REPEATED_WORDS = MAX_WORDS  # informative words a repeating row is checked for; more: the rule stays out

PROFILE_MIN_POOL = 50
UNSCORED_MIN_POOL = 100
_HIRAGANA = re.compile("[\u3040-\u309f]+")
_CJK = re.compile("[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_EDGE = re.compile(r"^[^\w]+|[^\w]+$")
_SPLIT = re.compile("[\\s\u3000-\u303f\uff01-\uff0f\uff1a-\uff20]+")  # white space and CJK punctuation


@dataclass(frozen=True)
class Bar:
    """One recall's thresholds: (value, origin) for cosine and for the lexical votes (on the fusion's scale)."""

    cosine: tuple[float, str]
    lexical: tuple[float, str]


def heuristic_minimum(pool: int) -> float:
    """0.5 for a tiny pool, falling to 0.2 from about 500 rows: bigger pools hold more near-misses."""
    if pool <= 0:
        return 0.5
    return round(0.5 - 0.3 * min(1.0, math.log(pool + 1) / math.log(500)), 4)


def minimum(ctx: RecallContext) -> float:
    """The heuristic minimum of this recall's pool, ``deep`` halving it."""
    return heuristic_minimum(ctx.pool()) * _deep(ctx)


def _deep(ctx: RecallContext) -> float:
    return 0.5 if ctx.params.deep else 1.0


def bar(ctx: RecallContext, heuristic: float) -> Bar:
    """The thresholds this recall judges by; ``deep`` halves each."""
    p = ctx.params
    explicit = "cosine" in p.thresholds and p.calibration != "auto"  # a gate someone chose is not lowered
    if "cosine" in p.thresholds:
        cosine = (p.thresholds["cosine"] * _deep(ctx), "calibrated")
    else:
        cosine = (heuristic, "heuristic")
    typical = outlier_bar(ctx) if _own_signals(ctx) and not explicit else None
    if typical is not None and max(typical, HEURISTIC_FLOOR) * _deep(ctx) < cosine[0]:
        cosine = (max(typical, HEURISTIC_FLOOR) * _deep(ctx), "outlier")
    if p.mode in p.thresholds:
        lexical = (p.thresholds[p.mode] * _deep(ctx), "calibrated")
    else:
        lexical = (heuristic * best_possible(ctx, p.mode), "heuristic")
    return Bar(cosine, lexical)


def _repeat_rule(ctx: RecallContext) -> bool:
    """Whether a row repeating the query passes whatever its thresholds: gate-v2 (the default), unless a person
    set this agent's thresholds (an explicit calibration is the whole rule, as with the outlier bar)."""
    return ctx.params.gate_policy not in ("gate-v0", "gate-v1") and ctx.params.calibration != "explicit"


def repeated_words(ctx: RecallContext) -> tuple[re.Pattern[str], ...]:
    """The query's informative words as patterns a repeating text must hold: each word between white space or CJK
    punctuation that is not a common word, punctuation stripped from its ends; a word with CJK in it as a substring
    (no spaces mark its ends), any other as a whole word. Empty when the query holds no informative word, or more
    than ``MAX_REPEATED_WORDS`` of them: a pasted page is not a phrase a row repeats, and the check stays bounded
    (recall-bounds-v1)."""
    words = (_EDGE.sub("", word) for word in _SPLIT.split(normalize(ctx.query)))
    kept = dict.fromkeys(word for word in words if word and not common_word(word))
    if len(kept) > MAX_REPEATED_WORDS:
        return ()
    return tuple(re.compile(re.escape(w)) if _CJK.search(w) else _whole(w) for w in kept)


def _repeats(text: str, words: tuple[re.Pattern[str], ...]) -> bool:
    return bool(words) and all(word.search(text) for word in words)


def _own_signals(ctx: RecallContext) -> bool:
    """Whether each signal is judged on its own (gate-v1 and gate-v2); ``recall_gate=gate-v0`` is the gate before
    it, kept to measure the change."""
    return ctx.params.gate_policy != "gate-v0"


def outlier_bar(ctx: RecallContext) -> float | None:
    """Mean + OUTLIER_Z sd of the query's cosine over every row of a pool under OUTLIER_MAX_POOL; else None."""
    pool = ctx.pool()
    if ctx.query_vector is None or not 1 < pool < OUTLIER_MAX_POOL:
        return None
    cosines = ctx.store.vector_cosines(ctx.scope, ctx.query_vector, floor=-2.0, depth=pool, window=ctx.params.window)
    if len(cosines) < 2 or float(cosines.std()) <= 0:
        return None
    return float(cosines.mean() + OUTLIER_Z * cosines.std())


def best_possible(ctx: RecallContext, signal: str) -> float:
    """The scale of the heuristic for a signal: the score a row judged on it can reach.

    A row judged on rrf is lexical-only, and a memory or an episode sits on one lexical
    arm at most: first place there, 1/(k+1), is its ceiling. Measured against three
    first places, an exact keyword match could never pass in a small store. rsf keeps
    the whole 0..1 scale: per arm it already normalizes, and a 1/active-arms ceiling
    admitted weak rows that pushed evidence out (benchmarks/results/design-figures.md).
    """
    return 1 / (ctx.params.rrf_k + 1) if signal == "rrf" else 1.0


def common_word(term: str) -> bool:
    """A word that is no evidence on its own: an English function word, or a run of hiragana (particles)."""
    word = normalize(term).strip()
    return word in COMMON_WORDS or bool(_HIRAGANA.fullmatch(word))


def informative_terms(ctx: RecallContext) -> tuple[str, ...]:
    """What a lexical match must hold to count: the query's terms and phrases that are not common words, and the
    whole query (what the LIKE fallback matches)."""
    terms = [normalize(term).strip() for term in [*ctx.terms, *ctx.short_terms]]
    whole = normalize(ctx.query).strip()
    return tuple(dict.fromkeys(t for t in [*terms, whole] if t and not common_word(t)))


def lexical_votes(row: Candidate) -> float | None:
    """The lexical arms' share of the row's score (after the episode penalty); None when no lexical arm reached it."""
    votes = [vote for arm, vote in row.votes.items() if arm in ARMS.lexical_names]
    return sum(votes) * row.penalty if votes else None


class Judgement(NamedTuple):
    signal: str
    score: float
    threshold: float
    origin: str
    lexical: bool  # the lexical votes of a row a vector arm reached too


def decide(
    ctx: RecallContext, row: Candidate, judge: Bar, terms: tuple[str, ...], words: tuple[re.Pattern[str], ...] = ()
) -> Decision:
    mode = ctx.params.mode
    signal = row.signal(mode)
    if signal == "profile":
        passed = ctx.pool() >= PROFILE_MIN_POOL
        return Decision(row.ref, signal, None, PROFILE_MIN_POOL, None, passed, None if passed else "profile_small_pool")
    if signal is None:
        passed = ctx.blank or ctx.pool() >= UNSCORED_MIN_POOL
        return Decision(row.ref, None, None, None, None, passed, None if passed else "unscored_volume")
    if not _own_signals(ctx):  # gate-v0: the row's first signal alone, a lexical match on any word
        score, (threshold, origin) = row.score(mode), judge.cosine if signal == "cosine" else judge.lexical
        passed = score is not None and score >= threshold
        return Decision(
            row.ref,
            signal,
            score,
            threshold,
            origin,
            passed,
            None if passed else "below_gate",
            closeness=None if passed else _closeness(score, threshold),
        )
    votes = lexical_votes(row)
    counted = votes is not None and (
        any(arm in row.ranks for arm in ARMS.content_word_names) or _holds(_text(ctx, row.ref), terms)
    )
    if row.cosine is None and not counted:  # a lexical-only row matched on common words alone
        threshold, origin = judge.lexical
        return Decision(row.ref, mode, row.fused, threshold, origin, False, "common_words_only")
    judged = []
    if row.cosine is not None:
        judged.append(Judgement("cosine", row.cosine, *judge.cosine, False))
    if counted and votes is not None:
        judged.append(Judgement(mode, votes, *judge.lexical, row.cosine is not None))
    for j in judged:
        if j.score >= j.threshold:
            return Decision(row.ref, j.signal, j.score, j.threshold, j.origin, True, lexical=j.lexical)
    if votes is not None and _repeats(_text(ctx, row.ref), words):  # gate-v2: the row repeats the query
        threshold, _ = judge.lexical
        return Decision(row.ref, mode, votes, threshold, "repeats", True, lexical=row.cosine is not None)
    first = judged[0]
    return Decision(
        row.ref,
        first.signal,
        first.score,
        first.threshold,
        first.origin,
        False,
        "below_gate",
        closeness=max(_closeness(j.score, j.threshold) for j in judged),
    )


def _holds(text: str, terms: tuple[str, ...]) -> bool:
    return any(term in text for term in terms)


def _closeness(score: float | None, threshold: float) -> float:
    """score / threshold: how near a refused row came (1.0 would have passed); 0 for no score or no threshold."""
    if score is None or threshold <= 0:
        return 0.0
    return score / threshold


def gate(ctx: RecallContext, rows: list[Candidate]) -> GateResult:
    """Admit the rows that clear one of their own thresholds; order is kept."""
    heuristic = minimum(ctx)
    judge = bar(ctx, heuristic)
    terms = informative_terms(ctx)
    words = repeated_words(ctx) if _repeat_rule(ctx) else ()
    decisions = [decide(ctx, row, judge, terms, words) for row in rows]
    admitted = [row for row, d in zip(rows, decisions) if d.passed]
    for row, d in zip(rows, decisions):
        row.on_votes = d.passed and d.lexical  # the response says so (match_reason.admitted_on)
    fallback = False
    if not any(not row.is_profile for row in admitted):
        rescued = _identifier_matches(ctx, rows)
        if rescued:  # a profile row that passed stays: the rescue adds rows, it never removes one
            admitted = rescued + [row for row in admitted if row.is_profile]
            fallback = True
    rescued_refs = [row.ref for row in admitted] if fallback else []
    result = GateResult(
        admitted,
        decisions,
        fallback,
        rescued_refs,
        ctx.params.thresholds,
        heuristic,
        ctx.pool(),
        bar={"cosine": judge.cosine, ctx.params.mode: judge.lexical},
    )
    ctx.recorder.gate(result)
    return result


def _identifier_matches(ctx: RecallContext, rows: list[Candidate]) -> list[Candidate]:
    """When nothing passed: the lexical rows whose text holds an identifier of the query (bug-218, 2.5.5a1)."""
    parts = identifier_like_parts(ctx.query)
    lexical = [row for row in rows if not row.is_profile and any(arm in row.ranks for arm in ARMS.lexical_names)]
    if not parts or not lexical:
        return []
    exact = [_whole(part) for part in parts]
    return [row for row in lexical if any(p.search(_text(ctx, row.ref)) for p in exact)]


def _text(ctx: RecallContext, ref: str) -> str:
    record = ctx.facts.get(ref)
    return "" if record is None else normalize(record.text + " " + record.keywords)


def _whole(part: str) -> re.Pattern[str]:
    """The part as a whole identifier: bug-21 is not in bug-218, nor v2.4 in v2.4.1; a path may sit under another
    path (src/app.py in /work/src/app.py) and a sentence may end right after it."""
    return re.compile(rf"(?<![0-9a-z._#-]){re.escape(part)}(?![0-9a-z_#-]|\.[0-9a-z])")
