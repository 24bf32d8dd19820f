"""The coverage ledger (docs/trace.md#the-coverage-ledger): which parts of the question the returned records hold.

Recorded only, after the answer is final; nothing in the recall reads it. Parts
are spans of the normalized question, records are refs: the ledger holds no text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cuedrecall.text import NORMALIZATION, normalize, question_parts

if TYPE_CHECKING:
    from cuedrecall.recall.trace import Recorder


def build_ledger(question: str, records: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """The ledger of ``question`` over (ref, full stored text) pairs in response order."""
    parsed = question_parts(question)
    texts = [(ref, normalize(text)) for ref, text in records]
    covered_by = [[ref for ref, text in texts if part.text(parsed.normalized) in text] for part in parsed.parts]
    ledger: dict[str, Any] = {
        "normalization": NORMALIZATION,
        "parts": [{"span": [part.start, part.end], "kind": part.kind} for part in parsed.parts],
        "covered_by": covered_by,
        "uncovered": [i for i, refs in enumerate(covered_by) if not refs],
        "records": len(texts),
    }
    if parsed.omitted:
        ledger["parts_omitted"] = parsed.omitted
    return ledger


def record_coverage(question: str, returned: Sequence[tuple[str, str]], recorder: Recorder) -> None:
    """Record the ledger over the returned records (ref, full stored text); ``{"error": type}`` if it fails."""
    recorder.mark("response")
    try:
        ledger = build_ledger(question, list(dict(returned).items()))
    except Exception as exc:  # the ledger is an instrument: its failure must never fail the recall
        ledger = {"error": type(exc).__name__}
    recorder.coverage(ledger)
    recorder.mark("coverage")
