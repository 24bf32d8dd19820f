"""Quotes: what an item shows of each record it cites, read only after the items are chosen.

The head quote (up to ``cap`` characters, 800 by default) fills with the record's
best-matching blocks, each widened to the context that governs it, in text order
joined by " … ": the whole text when it fits (basis ``whole``), the stored block set
(``blocks``) or the blocks the divider gives now (``lexical``), or its start when the
record is one block (``start``). Every other claim quotes one passage: its best
block's governing context, cut to the preview size. Blocks rank by two lists fused by
reciprocal rank: the trigrams a block shares with the query, and the closeness of
its int8 code to the query vector where the stored set has codes of the query's
model. What a quote leaves out is named in ``expand``: the ``get_contents`` request
that returns it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from cuedrecall.reconstruct.policy import RRF_K
from cuedrecall.reconstruct.rows import revision
from cuedrecall.text.blocks import Span
from cuedrecall.text.excerpts import SEPARATOR, governs, joined, merged, shared_trigrams, trigrams


@dataclass(frozen=True)
class Blocks:
    """A record's blocks as a quote may use them: the stored set, or the divider's now."""

    spans: list[Span]
    basis: str  # "blocks" (stored) | "lexical" (divided now)
    codes: np.ndarray | None = None  # (blocks, dim) int8, stored sets only


@dataclass(frozen=True)
class Query:
    text: str
    vector: np.ndarray | None

    def wanted(self) -> set[str]:
        return trigrams(self.text)


def rank_blocks(text: str, blocks: Blocks, query: Query) -> list[int]:
    """Block indexes best first: reciprocal-rank fusion of shared trigrams and code closeness (ties: text order)."""
    wanted = query.wanted()
    lists: list[list[float]] = [[shared_trigrams(wanted, s.text(text)) for s in blocks.spans]]
    closeness = _closeness(blocks, query.vector)
    if closeness is not None:
        lists.append(closeness)
    score = [0.0] * len(blocks.spans)
    for values in lists:
        for index, rank in enumerate(_shared_ranks(values)):
            score[index] += 1.0 / (RRF_K + 1 + rank)
    return sorted(range(len(blocks.spans)), key=lambda index: (-score[index], index))


def _shared_ranks(values: list[float]) -> list[int]:
    """Each value's 0-based rank, largest first; equal values share the rank of the first of them."""
    first: dict[float, int] = {}
    for position, value in enumerate(sorted(values, reverse=True)):
        first.setdefault(value, position)
    return [first[value] for value in values]


def _closeness(blocks: Blocks, vector: np.ndarray | None) -> list[float] | None:
    codes = blocks.codes
    if codes is None or vector is None or codes.shape != (len(blocks.spans), len(vector)):
        return None
    values = codes.astype(np.float32)
    norms = np.linalg.norm(values, axis=1) * float(np.linalg.norm(vector))
    return [float(v) for v in (values @ vector.astype(np.float32)) / np.where(norms == 0, 1.0, norms)]


def head_quote(ref: str, text: str, blocks: Blocks, query: Query, cap: int) -> dict[str, Any]:
    """The item's head quote: the best governing ranges that fit ``cap``, separators counted."""
    if len(text) <= cap:
        return {"content": text, "quote_basis": "whole", "ranges": [[0, len(text)]]}
    cut = {"content_len": len(text), "content_truncated": True}
    if len(blocks.spans) <= 1:
        return {
            "content": text[:cap],
            **cut,
            "quote_basis": "start",
            "ranges": [[0, cap]],
            "expand": {"ref": ref, "span": [0, len(text)]},
        }
    taken, incomplete = _fill(text, blocks.spans, rank_blocks(text, blocks, query), cap)
    if incomplete is not None:
        start, end = taken[0]
        return {
            "content": text[start:end],
            **cut,
            "quote_basis": blocks.basis,
            "ranges": [[start, end]],
            "context_incomplete": True,
            "expand": {"ref": ref, "span": [start, incomplete]},
        }
    return {"content": joined(text, taken), **cut, "quote_basis": blocks.basis, "ranges": merged(taken)}


def _fill(text: str, spans: list[Span], ranked: list[int], cap: int) -> tuple[list[tuple[int, int]], int | None]:
    """Governing ranges best first until the first that does not fit; a range touching a taken one costs no
    separator. When not even the best fits: its first ``cap`` characters, and the end it governs up to."""
    taken: list[tuple[int, int]] = []
    spent = 0
    for index in ranked:
        first, last, _ = governs(text, spans, index)
        start, end = spans[first].start, spans[last].end
        if any(start < b and a < end for a, b in taken):
            continue
        touching = any(start == b or end == a for a, b in taken)
        cost = end - start + (0 if touching or not taken else len(SEPARATOR))
        if spent + cost > cap:
            if not taken:
                return [(start, start + cap)], end
            break
        taken.append((start, end))
        spent += cost
    return taken, None


def passage_quote(ref: str, text: str, blocks: Blocks, query: Query, cap: int) -> dict[str, Any]:
    """One passage of a record: its best block's governing context, cut to ``cap``."""
    if len(text) <= cap:
        return {"content": text}
    cut = {"content_len": len(text), "content_truncated": True}
    n = len(blocks.spans)
    if n <= 1:
        return {"content": text[:cap], **cut, "expand": {"ref": ref, "span": [0, len(text)]}}
    best = rank_blocks(text, blocks, query)[0]
    first, last, complete = governs(text, blocks.spans, best)
    start, end = blocks.spans[first].start, blocks.spans[last].end
    out: dict[str, Any] = {
        "content": text[start:end],
        "quote_basis": blocks.basis,
        "block": {"index": best, "of": n, "span": [start, end]},
        "content_len": len(text),
    }
    if end - start > cap:
        out.update(
            content=text[start : start + cap],
            content_truncated=True,
            context_incomplete=True,
            expand={"ref": ref, "block": best, "revision": revision(text)},
        )
        out["block"]["span"] = [start, start + cap]
    elif not complete:
        out.update(
            context_incomplete=True,
            expand={"ref": ref, "block": [max(0, first - 1), min(n - 1, last + 1)], "revision": revision(text)},
        )
    return out
