"""The recall trace recorder, handed to every stage; the sections' shapes are in ``trace_schema``.

``Recorder`` does nothing, so a recall without a trace runs the same code and
pays for a method call per stage: stages hand it the results they computed anyway,
and only ``TraceRecorder`` turns them into trace sections. It keeps refs, ranks,
scores and reasons, never stored text; scores as computed, unrounded, so any
comparison can be redone from the record.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from cuedrecall.recall.trace_schema import (
    TRACE_VERSION,
    CueIgnored,
    CueSection,
    GateDecision,
    GateSection,
    Policy,
    PropagationSection,
    Reservation,
    Stage,
    StaleConflict,
    Trace,
)

if TYPE_CHECKING:
    from cuedrecall.recall.arm_registry import Arms
    from cuedrecall.recall.candidates import Candidate
    from cuedrecall.recall.verdicts import GateResult


class Recorder:
    """The no-op recorder: every stage calls it, none of it costs more than the call."""

    enabled = False

    def header(
        self,
        policy: Policy,
        server_version: str,
        scope: dict[str, Any],
        request: dict[str, Any],
        config: dict[str, Any],
    ) -> None: ...
    def arms(self, arms: Arms) -> None: ...
    def excluded(self, refs: list[str]) -> None: ...
    def fusion(self, rows: list[Candidate]) -> None: ...
    def scoring(self, name: str, rows: list[Candidate], factor: str) -> None: ...
    def gate(self, result: GateResult) -> None: ...
    def autocut(self, fired: bool, at: int | None, dropped: list[Candidate]) -> None: ...
    def order(self, rows: list[Candidate], limit: int, cut: list[Candidate]) -> None: ...
    def reservation(self, ref: str, kind: str, *, relieved: bool = False) -> None: ...
    def block(self, order: str) -> None: ...
    def stage(self, entry: Stage) -> int:
        return 0

    def suspect(self, stage: int, code: str, reason: str, action: str) -> None: ...
    def cue(self, section: CueSection) -> None: ...
    def cue_ignored(self, section: CueIgnored) -> None: ...
    def propagation(self, section: PropagationSection) -> None: ...
    def conflicts(self, entries: list[StaleConflict]) -> None: ...
    def coverage(self, ledger: dict[str, Any]) -> None: ...
    def bounds(self, section: dict[str, Any]) -> None: ...
    def mark(self, stage: str) -> None: ...

    def result(self) -> Trace | None:
        return None


class TraceRecorder(Recorder):
    """Builds the trace as the stages run."""

    enabled = True

    def __init__(self) -> None:
        self._last = self._start = time.perf_counter()
        self.data: Trace = {
            "trace_version": TRACE_VERSION,
            "policy": {"scoring": "", "process": "", "gate": ""},
            "server_version": None,
            "scope": {},
            "request": {},
            "config": {},
            "arms": {},
            "fusion": [],
            "scoring": {},
            "gate": {"decisions": [], "calibrated": {}, "heuristic_min": 0.0, "pool": 0, "gate_fallback": False},
            "autocut": {"fired": False},
            "order": {"before_cut": [], "limit": 0, "cut_by_count": []},
            "reservation": [],
            "stages": [],
            "suspected": [],
            "timing_ms": {},
        }

    def header(
        self,
        policy: Policy,
        server_version: str,
        scope: dict[str, Any],
        request: dict[str, Any],
        config: dict[str, Any],
    ) -> None:
        self.data["policy"] = policy
        self.data["server_version"] = server_version
        self.data["scope"] = scope
        self.data["request"] = request
        self.data["config"] = config

    def arms(self, arms: Arms) -> None:
        """Each arm's hits under its declared name (recall/arm_registry.py), a keyword arm's term plan beside."""
        for name, hits in arms.items():
            self.data["arms"][name] = [{"ref": h.ref, "rank": h.rank, "raw": h.raw} for h in hits]
            plan = getattr(hits, "plan", None)  # a keyword arm's term plan (store.term_counts.PlannedHits)
            if plan is not None:
                ranked_on = getattr(hits, "ranked_on", "")
                self.data.setdefault("keyword_terms", {})[name] = plan.record(ranked_on)

    def excluded(self, refs: list[str]) -> None:
        """Rows an arm found that exclude_contents removed (they kept their ranks)."""
        known = self.data.setdefault("excluded", [])
        known.extend(ref for ref in refs if ref not in known)

    def fusion(self, rows: list[Candidate]) -> None:
        self.data["fusion"] = [{"ref": row.ref, "score": row.fused, "votes": dict(row.votes)} for row in rows]

    def scoring(self, name: str, rows: list[Candidate], factor: str) -> None:
        """One scoring factor (``penalty``, ``prior``) of each row, under the step's name."""
        self.data["scoring"][name] = {row.ref: getattr(row, factor) for row in rows}

    def gate(self, result: GateResult) -> None:
        decisions: list[GateDecision] = []
        for d in result.decisions:
            item: GateDecision = {
                "ref": d.ref,
                "signal": d.signal,
                "score": d.score,
                "threshold": d.threshold,
                "origin": d.origin,
                "passed": d.passed,
            }
            if d.reason:
                item["reason"] = d.reason
            if d.lexical:
                item["lexical"] = True
            decisions.append(item)
        section: GateSection = {
            "decisions": decisions,
            "calibrated": dict(result.calibrated),
            "heuristic_min": result.heuristic_min,
            "pool": result.pool,
            "gate_fallback": bool(result.rescued),
        }
        if result.rescued:
            section["fallback_admitted"] = list(result.rescued)
        if result.bar:
            section["bar"] = {
                signal: {"threshold": value, "origin": origin} for signal, (value, origin) in result.bar.items()
            }
        self.data["gate"] = section

    def autocut(self, fired: bool, at: int | None, dropped: list[Candidate]) -> None:
        if fired and at is not None:
            self.data["autocut"] = {"fired": True, "at": at, "dropped": [row.ref for row in dropped]}
        else:
            self.data["autocut"] = {"fired": False}

    def order(self, rows: list[Candidate], limit: int, cut: list[Candidate]) -> None:
        self.data["order"] = {
            "before_cut": [row.ref for row in rows],
            "limit": limit,
            "cut_by_count": [row.ref for row in cut],
        }

    def reservation(self, ref: str, kind: str, *, relieved: bool = False) -> None:
        """A row a held place admitted; ``relieved``: a cue seat that took a row one step under the gate."""
        entry: Reservation = {"ref": ref, "kind": kind}
        if relieved:
            entry["relieved"] = True
        self.data["reservation"].append(entry)

    def block(self, order: str) -> None:
        """How the block arm ordered its hits: "vector" (int8 re-rank) or "hamming"."""
        self.data["block"] = {"order": order}

    def stage(self, entry: Stage) -> int:
        """Append a stage entry, numbered here (0, 1, ... in the order they ran, whoever ran them); its number."""
        number = len(self.data["stages"])
        self.data["stages"].append({"stage": number, **entry})
        return number

    def suspect(self, stage: int, code: str, reason: str, action: str) -> None:
        self.data["suspected"].append({"stage": stage, "code": code, "reason": reason, "action": action})

    def cue(self, section: CueSection) -> None:
        self.data["cue"] = section

    def cue_ignored(self, section: CueIgnored) -> None:
        self.data["cue_ignored"] = section

    def propagation(self, section: PropagationSection) -> None:
        """The propagation seat's section; it names its policy in ``policy.propagation`` (its time is a mark)."""
        self.data["propagation"] = section
        self.data["policy"]["propagation"] = section["policy"]

    def conflicts(self, entries: list[StaleConflict]) -> None:
        """stale-v1's conflicts among the returned rows (recall/stale.py); absent when they agree."""
        self.data["conflicts"] = entries

    def coverage(self, ledger: dict[str, Any]) -> None:
        self.data["coverage"] = ledger

    def bounds(self, section: dict[str, Any]) -> None:
        """recall-bounds-v1's caps and what each left out of this recall (recall/bounds.py)."""
        self.data["bounds"] = section

    def mark(self, stage: str) -> None:
        """timing_ms[stage]: the time since the previous mark (stages mark as they end, in the order they ran)."""
        now = time.perf_counter()
        self.data["timing_ms"][stage] = round((now - self._last) * 1000, 3)
        self._last = now

    def result(self) -> Trace:
        self.data["timing_ms"]["total"] = round((time.perf_counter() - self._start) * 1000, 3)
        return self.data
