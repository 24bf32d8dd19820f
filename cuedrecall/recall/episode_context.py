"""Stage 2b, episode context (policy episode-context-v1): an episode lends its place to the memories of its span.

The rule: after fusion, each memory the arms reached that was recorded inside the
span of an episode they also reached (start_time <= the memory's time <= end_time,
the same scope) takes one more vote, ``episode_context``: the vote one arm gives
the place that episode holds in the fused order (rrf: ``1 / (k + place + 1)``;
rsf: the episode's fused score scaled to 0..1 over the fused list, divided by the
number of arms that answered, as fusion scales an arm). Where several reached
episodes cover the memory, the best placed one lends. The list is then sorted again
(ties keep their order).

Why: a turn is read in its episode. A question about one conversation's event
shares its names and its topic with that conversation's summary, so the summary
ranks; a turn from another conversation that shares one word with the question
has no such episode behind it. So the vote lifts the turns of the episodes the
question is about over lexical look-alikes from elsewhere, in a store that holds
many conversations, and within one conversation over turns of other sessions.

The vote only orders: it is not a lexical vote and no cosine, so the gate
(``recall/gate.py``, which judges a row on its own signals) never admits a row for
it, and a store without episodes, or a memory outside every reached episode, is
ranked exactly as before. The trace's ``fusion`` shows the vote beside the arms'
and ``scoring.episode_context`` names the episode that lent it
(docs/recall-process.md#episode-context).
"""

from __future__ import annotations

from typing import Final

from cuedrecall.clock import to_epoch
from cuedrecall.recall.candidates import Candidate
from cuedrecall.recall.context import RecallContext
from cuedrecall.recall.lending import place_votes, ranked_again
from cuedrecall.store.base import EPISODE, MEMORY

POLICY: Final = "episode-context-v1"
VOTE: Final = "episode_context"  # its key in a candidate's votes and in the trace's fusion section


def lend_context(ctx: RecallContext, rows: list[Candidate], answered: int) -> list[Candidate]:
    """The fused rows with each memory inside a reached episode's span given that episode's vote, sorted again.

    ``answered``: how many arms returned a row (rsf divides every vote by it, so this vote too).
    """
    if not ctx.params.episode_context or not rows:
        return rows
    spans = _episode_spans(ctx, rows)
    if not spans:
        return rows
    votes = place_votes(ctx, rows, answered)
    lent = []
    for row in rows:
        if not row.ref.startswith(MEMORY + ":"):
            continue
        moment = ctx.facts.time(row.ref)
        if moment is None:
            continue
        place = next((p for p, (start, end) in spans if start <= moment <= end), None)
        if place is None:
            continue
        row.votes[VOTE] = votes[place]
        row.fused = (row.fused or 0.0) + votes[place]
        row.context = rows[place].ref
        lent.append(row)
    return ranked_again(ctx, rows, lent, VOTE, "context")


def _episode_spans(ctx: RecallContext, rows: list[Candidate]) -> list[tuple[int, tuple[float, float]]]:
    """(place in the fused order, (start, end) epoch seconds) of each reached episode with a readable span, best
    placed first."""
    spans = []
    for place, row in enumerate(rows):
        record = ctx.facts.get(row.ref) if row.ref.startswith(EPISODE + ":") else None
        if record is None:
            continue
        start, end = to_epoch(record.start_time), to_epoch(record.end_time)
        if start is not None and end is not None and start <= end:
            spans.append((place, (start, end)))
    return spans
