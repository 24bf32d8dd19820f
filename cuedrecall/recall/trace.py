"""The recall trace (trace_version 1): a recorder handed to every stage.

``Recorder`` does nothing, so a recall without a trace runs the same code and
pays for a method call per stage. ``TraceRecorder`` keeps refs, ranks, scores and
reasons, never stored text; scores as computed, unrounded, so any comparison can
be redone from the record.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cuedrecall.recall.candidates import Candidate
    from cuedrecall.recall.context import RecallContext
    from cuedrecall.recall.gate import Decision
    from cuedrecall.store.base import Hit

TRACE_VERSION = 1


class Recorder:
    """The no-op recorder: every stage calls it, none of it costs more than the call."""

    enabled = False

    def set(self, key: str, value: Any) -> None: ...
    def arms(self, arms: dict[str, list["Hit"]]) -> None: ...
    def excluded(self, refs: list[str]) -> None: ...
    def fusion(self, rows: list["Candidate"]) -> None: ...
    def scoring(self, name: str, factors: dict[str, float]) -> None: ...
    def gate(self, ctx: "RecallContext", decisions: list["Decision"], rescued: list[str]) -> None: ...
    def autocut(self, fired: bool, at: int | None, dropped: list[str]) -> None: ...
    def order(self, rows: list["Candidate"], limit: int, cut: list["Candidate"]) -> None: ...
    def reservation(self, ref: str, kind: str) -> None: ...
    def stage(self, entry: dict[str, Any]) -> None: ...
    def suspect(self, stage: int, code: str, reason: str, action: str) -> None: ...
    def mark(self, stage: str) -> None: ...

    def result(self) -> dict[str, Any] | None:
        return None


class TraceRecorder(Recorder):
    """Builds the trace dict as the stages run."""

    enabled = True

    def __init__(self) -> None:
        self._last = self._start = time.perf_counter()
        self.data: dict[str, Any] = {
            "trace_version": TRACE_VERSION, "policy": {}, "server_version": None, "scope": {}, "request": {},
            "config": {}, "arms": {}, "fusion": [], "scoring": {}, "gate": {"decisions": []},
            "autocut": {"fired": False}, "order": {}, "reservation": [], "stages": [], "suspected": [],
            "timing_ms": {},
        }

    def set(self, key: str, value: Any) -> None:
        self.data[key] = value

    def arms(self, arms: dict[str, list["Hit"]]) -> None:
        for name, hits in arms.items():
            self.data["arms"][name] = [{"ref": h.ref, "rank": h.rank, "raw": h.raw} for h in hits]

    def excluded(self, refs: list[str]) -> None:
        """Rows an arm found that exclude_contents removed (they kept their ranks)."""
        known = self.data.setdefault("excluded", [])
        known.extend(ref for ref in refs if ref not in known)

    def fusion(self, rows: list["Candidate"]) -> None:
        self.data["fusion"] = [
            {"ref": row.ref, "score": row.fused, "votes": dict(row.votes)}
            for row in rows
        ]

    def scoring(self, name: str, factors: dict[str, float]) -> None:
        self.data["scoring"][name] = dict(factors)

    def gate(self, ctx: "RecallContext", decisions: list["Decision"], rescued: list[str]) -> None:
        out = []
        for d in decisions:
            item = {"ref": d.ref, "signal": d.signal, "score": d.score, "threshold": d.threshold,
                    "origin": d.origin, "passed": d.passed}
            if d.reason:
                item["reason"] = d.reason
            out.append(item)
        self.data["gate"] = {
            "decisions": out,
            "calibrated": dict(ctx.params.thresholds),
            "heuristic_min": ctx.minimum(),
            "pool": ctx.pool(),
            "gate_fallback": bool(rescued),
        }
        if rescued:
            self.data["gate"]["fallback_admitted"] = rescued

    def autocut(self, fired: bool, at: int | None, dropped: list[str]) -> None:
        self.data["autocut"] = {"fired": fired, **({"at": at, "dropped": dropped} if fired else {})}

    def order(self, rows: list["Candidate"], limit: int, cut: list["Candidate"]) -> None:
        self.data["order"] = {
            "before_cut": [row.ref for row in rows],
            "limit": limit,
            "cut_by_count": [row.ref for row in cut],
        }

    def reservation(self, ref: str, kind: str) -> None:
        self.data["reservation"].append({"ref": ref, "kind": kind})

    def stage(self, entry: dict[str, Any]) -> None:
        self.data["stages"].append(entry)

    def suspect(self, stage: int, code: str, reason: str, action: str) -> None:
        self.data["suspected"].append({"stage": stage, "code": code, "reason": reason, "action": action})

    def mark(self, stage: str) -> None:
        now = time.perf_counter()
        self.data["timing_ms"][stage] = round((now - self._last) * 1000, 3)
        self._last = now

    def result(self) -> dict[str, Any]:
        self.data["timing_ms"]["total"] = round((time.perf_counter() - self._start) * 1000, 3)
        return self.data
