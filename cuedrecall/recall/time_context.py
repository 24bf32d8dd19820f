"""Stage 2c, time context (policy time-context-v1): a turn is read among the turns recorded around it.

The rule: after the episodes' votes, each memory the arms reached takes one more vote, ``time_context``: half the
vote its best placed neighbour's place in the fused order would lend (rrf: ``1 / (k + place + 1)``; rsf: as
episode context scales it), a neighbour being another memory the arms reached that was recorded within WINDOW_S
seconds of it. The list is then sorted again (ties keep their order).

Why: the turns of one sitting talk about one thing. When the arms reach several turns recorded around the same
moment, that moment is likely what the question is about, and each of them is a better bet than a lone turn of
the same score recorded at another time: a lexical look-alike from another conversation, or from another day of
this one. Unlike episode context it needs no summary: the turns vouch for each other.

The vote only orders: it is neither a lexical vote nor a cosine, so the gate (``recall/gate.py``) passes or refuses
every row as it would without it, and a memory with no reached neighbour (or no time) keeps its own score. The
trace's ``fusion`` shows the vote beside the arms' and ``scoring.time_context`` names the neighbour that lent it
(docs/recall-process.md#time-context).
"""

from __future__ import annotations

from typing import Final

import numpy as np

from cuedrecall.recall.candidates import Candidate
from cuedrecall.recall.context import RecallContext
from cuedrecall.recall.lending import place_votes, ranked_again
from cuedrecall.store.base import MEMORY

POLICY: Final = "time-context-v1"
VOTE: Final = "time_context"  # its key in a candidate's votes and in the trace's fusion section
WINDOW_S: Final = 600.0  # two memories recorded this close (seconds, either way) are neighbours
SHARE: Final = 0.5  # the part of its place's vote a neighbour lends
_NONE: Final = np.iinfo(np.int64).max  # no place: an empty range's minimum


def lend_neighbours(ctx: RecallContext, rows: list[Candidate], answered: int) -> list[Candidate]:
    """The fused rows with each memory given half its best placed reached neighbour's vote, sorted again.

    ``answered``: how many arms returned a row (rsf divides every vote by it, so this vote too).
    """
    if not ctx.params.time_context or len(rows) < 2:
        return rows
    timed = sorted((moment, place) for place, row in enumerate(rows) if (moment := _time(ctx, row)) is not None)
    if len(timed) < 2:
        return rows
    moments = np.array([moment for moment, _place in timed], dtype=np.float64)
    places = np.array([place for _moment, place in timed], dtype=np.int64)
    neighbours = best_neighbours(moments, places)
    if not (neighbours >= 0).any():
        return rows
    votes = place_votes(ctx, rows, answered)
    lent = []
    for place, best in zip(places.tolist(), neighbours.tolist(), strict=True):
        if best < 0:
            continue
        row = rows[place]
        row.votes[VOTE] = SHARE * votes[best]
        row.fused = (row.fused or 0.0) + row.votes[VOTE]
        row.neighbour = rows[best].ref
        lent.append(row)
    return ranked_again(ctx, rows, lent, VOTE, "neighbour")


def best_neighbours(moments: np.ndarray, places: np.ndarray) -> np.ndarray:
    """For each memory (``moments`` ascending, ``places`` their places in the fused order): the best (lowest) place
    among the others recorded within WINDOW_S of it, or -1 where there is none. O(n log n): a table of range minima,
    so a store whose memories share one moment costs no more than one whose memories are apart."""
    index = np.arange(len(moments))
    low = np.searchsorted(moments, moments - WINDOW_S, side="left")
    high = np.searchsorted(moments, moments + WINDOW_S, side="right")
    table = _minima(places)
    best = np.minimum(_range_min(table, low, index), _range_min(table, index + 1, high))
    return np.where(best == _NONE, -1, best)


def _minima(values: np.ndarray) -> np.ndarray:
    """Row k, column j: the least of values[j : j + 2**k] (_NONE past the end)."""
    rows, span = [values], 1
    while 2 * span <= len(values):
        above = rows[-1]
        rows.append(np.concatenate([np.minimum(above[:-span], above[span:]), np.full(span, _NONE)]))
        span *= 2
    return np.stack(rows)


def _range_min(table: np.ndarray, start: np.ndarray, stop: np.ndarray) -> np.ndarray:
    """The least value of each slice [start, stop) from the table of minima; _NONE for an empty slice."""
    out = np.full(len(start), _NONE, dtype=table.dtype)
    some = stop > start
    width = (stop - start)[some]
    level = np.floor(np.log2(width)).astype(np.int64)
    first, last = start[some], stop[some] - (1 << level)
    out[some] = np.minimum(table[level, first], table[level, last])
    return out


def _time(ctx: RecallContext, row: Candidate) -> float | None:
    return ctx.facts.time(row.ref) if row.ref.startswith(MEMORY + ":") else None
