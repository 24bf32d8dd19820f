"""What every check works with: the ``Finding`` it answers, the ``Run`` it looks in, and the repairs several share.

A check looks and answers a ``Finding``: how many, one sentence, the first few
items. A repair mends what its check looks for and answers how many rows it
repaired. Every repair of one run spends one budget of rows it may embed or
rewrite (``EMBED_BUDGET``), so a fix run on a large store stops and reports what
is left rather than running on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from cuedrecall.handlers.blocks import queue_build
from cuedrecall.handlers.rows import embedding
from cuedrecall.runtime import Runtime
from cuedrecall.store.base import EPISODE, MEMORY, IndexGap, Record, make_ref

SAMPLE = 5  # refs shown per issue
EMBED_BUDGET = 5000  # rows one run may embed or rewrite, every repair together
EMBED_BATCH = 256  # rows embedded per call and written per transaction
KINDS = (MEMORY, EPISODE)


@dataclass(frozen=True)
class Finding:
    """What one check saw: how many, one sentence, the first few items ({"ref"} and/or {"detail"})."""

    count: int
    detail: str = "nothing found"
    items: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)  # further keys of the report (near_duplicate's pairs)


NOTHING = Finding(0)


def finding(count: int, detail: str, items: list[dict[str, Any]], extra: dict[str, Any] | None = None) -> Finding:
    """A check's finding; NOTHING when it counted none."""
    return Finding(count, detail, items, extra or {}) if count else NOTHING


@dataclass
class Run:
    """One call: its agent ("" = every agent), the items kept per check, the rows it may still embed."""

    rt: Runtime
    agent_id: str
    limit: int = SAMPLE
    budget: int = field(default_factory=lambda: EMBED_BUDGET)

    def take(self, refs: list[str]) -> list[str]:
        """As many of the refs as the budget allows, spending it."""
        taken = refs[: max(0, self.budget)]
        self.budget -= len(taken)
        return taken

    @cached_property
    def width(self) -> int | None:
        """The width every vector should have: the embedder's while it makes vectors, else the index's."""
        rt = self.rt
        if rt.embedder.available:
            width = getattr(rt.embedder, "dimensions", None)
            if not width:  # an http embedder learns its width from its first answer
                probe = rt.embed(["width"])[0]
                width = None if probe is None else int(probe.shape[0])
            if width:
                return int(width)
        return rt.store.embedding_dim()


Check = Callable[[Run], Finding]
Repair = Callable[[Run, Finding], int]


def ref_items(kind: str, ids: list[int]) -> list[dict[str, Any]]:
    """The rows' items, one {"ref"} each."""
    return [{"ref": make_ref(kind, row_id)} for row_id in ids]


def short(value: Any, size: int = 60) -> str:
    """The value as text, cut to ``size`` characters with "..." when longer."""
    text = str(value)
    return text if len(text) <= size else text[: size - 3] + "..."


# -- repairs shared by several checks --------------------------------------------------------


def reembed(run: Run, refs: list[str]) -> int:
    """Embed the records' text again (within the run's budget) and store the vectors; the count stored."""
    done = 0
    refs = run.take(refs)
    for start in range(0, len(refs), EMBED_BATCH):
        records = list(run.rt.store.records(refs[start : start + EMBED_BATCH]).values())
        made = [(r, v) for r, v in zip(records, run.rt.embed([r.text for r in records])) if v is not None]
        if made:
            with run.rt.store.write() as conn:
                for record, vector in made:
                    _set_vector(run.rt, conn, record, vector)
        done += len(made)
    return done


def _set_vector(rt: Runtime, conn: Any, record: Record, vector: np.ndarray) -> None:
    """Store a record's new vector: a memory's with its row, an episode's through its own method."""
    if record.kind == MEMORY:
        rt.store.update_memory(conn, record.id, embedding(vector, rt.embedder.model))
    else:
        rt.store.set_episode_embedding(conn, record.id, vector, rt.embedder.model)


def rewrite(run: Run, refs: list[str], rule: Callable[[str], str]) -> int:
    """Replace memories' content by ``rule(content)`` with a fresh vector (the old one when none can be made).

    A locked memory is never changed, nor one the rule would leave empty.
    """
    records = [r for r in run.rt.store.records(refs).values() if not r.locked and r.text != rule(r.text)]
    taken = set(run.take([r.ref for r in records if rule(r.text)]))
    records = [r for r in records if r.ref in taken]
    for start in range(0, len(records), EMBED_BATCH):
        batch = records[start : start + EMBED_BATCH]
        texts = [rule(r.text) for r in batch]
        vectors = run.rt.embed(texts)
        with run.rt.store.write() as conn:
            for record, text, vector in zip(batch, texts, vectors):
                vector_columns = embedding(vector, run.rt.embedder.model) if vector is not None else {}
                run.rt.store.update_memory(conn, record.id, {"content": text, **vector_columns})
                queue_build(run.rt, conn, record.ref)  # the new text's blocks (the old ones went with the old text)
    return len(records)


def delete_unlocked(run: Run, refs: list[str]) -> int:
    """Delete the memories among refs that are not locked; the count deleted."""
    doomed = [r.ref for r in run.rt.store.records(refs).values() if not r.locked]
    if not doomed:
        return 0
    with run.rt.store.write() as conn:
        return sum(run.rt.store.delete(conn, ref) for ref in doomed)


def gap_finding(run: Run, gaps: dict[str, IndexGap], index: str) -> Finding:
    """One finding for an index of both kinds: its rows missing, its entries without a row, its own verdict."""
    count = sum(gap.count for gap in gaps.values())
    if not count:
        return NOTHING
    items: list[dict[str, Any]] = []
    for kind, gap in gaps.items():
        items += [{"ref": make_ref(kind, i), "detail": f"not in the {index}"} for i in gap.missing]
        items += [{"detail": f"{index} entry for {kind}:{i}, which has no row"} for i in gap.stray]
        items += [{"detail": gap.problem}] if gap.problem else []
    missing = sum(len(g.missing) for g in gaps.values())
    stray = sum(len(g.stray) for g in gaps.values())
    problems = "; ".join(g.problem for g in gaps.values() if g.problem)
    detail = (
        f"the {index} is out of step with the rows: {missing} rows without an entry, {stray} entries "
        f"without a row" + (f"; its integrity check says: {problems}" if problems else "")
    )
    return finding(count, detail, items[: run.limit])
