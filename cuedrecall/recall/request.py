"""One recall's request: the caller's arguments, read once in the handler (the time cue parsed) and carried as one
value through the context to the process; ``RecallParams`` beside it is what the settings make of them."""

from __future__ import annotations

from dataclasses import dataclass

from cuedrecall.recall.timecue import TimeCue
from cuedrecall.store.base import Scope


@dataclass(frozen=True)
class RecallRequest:
    scope: Scope
    query: str  # "" lists the newest memories
    limit: int
    deep: bool = False
    exclude_contents: tuple[str, ...] = ()  # texts already in the caller's context (params.exclusions)
    full_content: bool = False
    trace: bool = False  # the caller asked for the trace (the trace log records one either way)
    cue: TimeCue | None = None  # the time cue, parsed: an unreadable one was refused before the request existed
    propagation: bool = True  # whether this call may hold the propagation seat where the setting turns it on
    lexical_terms: tuple[str, ...] = ()  # extra phrases for the lexical arms only (reconstruct's entity names)
