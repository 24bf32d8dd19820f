"""Where a returned row came from, read from its recall's trace: the arms that reached it, the fusion votes that
kept it, and the gate decision that let it pass.

``attribute(trace, ref, place)`` is one row's record; ``tables(entries)`` the markdown tables of many, by the
arms that brought the rows, by the arm whose vote weighed most, and by the gate's decision. Used by
``benchmarks.retrieval --layout one-agent --attribution`` on the rows of the first 10 that come from another
conversation than the question's (foreign rows).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from benchmarks import harness as h
from cuedrecall.recall import arm_registry as arm
from cuedrecall.recall import episode_context, time_context

VECTOR = (arm.VECTOR_NEAR.name, arm.VECTOR_FAR.name)
LEXICAL = arm.ARMS.lexical_names
CONTEXT = episode_context.VOTE  # the vote an episode lends the memories of its span
NEIGHBOUR = time_context.VOTE  # the vote a memory's neighbour in time lends it
SHORT = {
    arm.VECTOR_NEAR.name: "vector",
    arm.VECTOR_FAR.name: "far",
    arm.EPISODE_FTS.name: "episode_fts",
    arm.MEMORY_KEYWORD.name: "trigram",
    arm.MEMORY_WORDS.name: "words",
    arm.MEMORY_SHORT_WORDS.name: "short words",
    CONTEXT: "episode context",
    NEIGHBOUR: "time context",
}


def attribute(trace: dict[str, Any], ref: str, place: int) -> dict[str, Any]:
    """One row's record: its place (0-based) in the answer, the arms that reached it with its rank on each, its
    votes and fused score, and the gate's decision on it."""
    arms = {name: hit["rank"] for name, hits in (trace.get("arms") or {}).items() for hit in hits if hit["ref"] == ref}
    fused: dict[str, Any] = next((row for row in trace.get("fusion") or [] if row["ref"] == ref), {})
    decision: dict[str, Any] = next(
        (d for d in (trace.get("gate") or {}).get("decisions") or [] if d["ref"] == ref), {}
    )
    seat = next((r["kind"] for r in trace.get("reservation") or [] if r["ref"] == ref), None)
    votes = dict(fused.get("votes") or {})
    return {
        "ref": ref,
        "place": place,
        "kind": ref.split(":", 1)[0],
        "arms": arms,
        "votes": votes,
        "fused": fused.get("score"),
        "signal": decision.get("signal"),
        "score": decision.get("score"),
        "threshold": decision.get("threshold"),
        "origin": decision.get("origin"),
        "on_votes": bool(decision.get("lexical")),
        "seat": seat,
    }


def brought_by(entry: dict[str, Any]) -> str:
    """The arms that reached the row, as one label (vector + words, trigram alone, ...)."""
    names = [SHORT.get(a, a) for a in sorted(entry["arms"], key=lambda a: (a not in VECTOR, a))]
    return " + ".join(names) if names else f"seat ({entry['seat']})" if entry["seat"] else "none"


def heaviest_vote(entry: dict[str, Any]) -> str:
    """The arm whose vote gave the row most of its fused score; ``lexical`` or ``vector`` share beside it."""
    votes = entry["votes"]
    if not votes:
        return "none"
    arm = max(votes, key=lambda a: votes[a])
    return SHORT.get(arm, arm)


def lexical_share(entry: dict[str, Any]) -> float:
    """The lexical arms' share of the row's fused score."""
    votes = entry["votes"]
    total = sum(votes.values())
    return sum(v for a, v in votes.items() if a in LEXICAL) / total if total else 0.0


def context_label(entry: dict[str, Any]) -> str:
    """Whether an episode lent the row its place (``episode_context`` vote), and whether the row is a memory."""
    if entry["kind"] != "mem":
        return "an episode (lends, never borrows)"
    return "lent a vote by an episode" if CONTEXT in entry["votes"] else "no episode lent a vote"


def gate_label(entry: dict[str, Any]) -> str:
    """How the gate let the row in: on its cosine or on its lexical votes, and the threshold's origin."""
    if entry["seat"]:
        return f"seat ({entry['seat']})"
    if entry["signal"] is None:
        return "no decision"
    on = "lexical votes" if entry["signal"] != "cosine" else "cosine"
    return f"{on}, {entry['origin']}"


def _table(entries: Sequence[dict[str, Any]], label: Any, name: str) -> list[str]:
    counts = Counter(label(e) for e in entries)
    total = len(entries)
    rows = []
    for key, n in counts.most_common():
        mine = [e for e in entries if label(e) == key]
        cosines = [e["score"] for e in mine if e["signal"] == "cosine" and e["score"] is not None]
        rows.append(
            [
                key,
                n,
                n / total if total else 0.0,
                h.mean(e["place"] + 1 for e in mine),
                h.mean(lexical_share(e) for e in mine),
                h.mean(cosines) if cosines else float("nan"),
            ]
        )
    return h.markdown_table([name, "rows", "share", "mean place", "lexical share of votes", "mean cosine"], rows)


def tables(entries: Iterable[dict[str, Any]]) -> list[str]:
    """The three attribution tables (markdown lines) over the entries."""
    items = list(entries)
    if not items:
        return ["No foreign row in the first 10."]
    return [
        "By the arms that reached the row:",
        "",
        *_table(items, brought_by, "arms"),
        "",
        "By the arm whose fusion vote weighed most:",
        "",
        *_table(items, heaviest_vote, "heaviest vote"),
        "",
        "By the gate's decision (the signal the row passed on, and its threshold's origin):",
        "",
        *_table(items, gate_label, "gate"),
        "",
        "By the episode context (a foreign memory an episode lent a vote sits in an episode the question reached):",
        "",
        *_table(items, context_label, "episode context"),
    ]
