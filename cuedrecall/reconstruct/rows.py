"""The row: one record reconstruct works with, with its relevance rank and what joined it to its item."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from cuedrecall.reconstruct.policy import REVISION_DIGITS
from cuedrecall.store.base import EPISODE, Record


@dataclass
class Row:
    """A candidate (from the recall) or a walked record (from the associations)."""

    record: Record
    rank: int  # 0 = the recall's best row; walked rows rank after every candidate
    reserved: bool = False  # held by a seat after the recall's count, not admitted by it
    why: str | None = None  # the bundling key that joined it to another row ("cluster:msg_id", "relation:<p>")
    hops: int | None = None  # walked rows: relations followed to reach it

    @property
    def ref(self) -> str:
        return self.record.ref

    @property
    def kind_order(self) -> int:
        """Memories before episodes, wherever two rows tie."""
        return 1 if self.record.kind == EPISODE else 0

    @property
    def relevance(self) -> tuple[int, int, int]:
        return (self.rank, self.kind_order, self.record.id)


def revision(text: str) -> str:
    """A short digest of a stored text: a range asked with it is served only while the text is the same."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:REVISION_DIGITS]
