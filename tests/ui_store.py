"""A small store for the browser-side tests: bike-shop visits over a year, where a cue naming June lifts the June
repair (the evidence) up the answer; a row the gate drops; a memory whose text is markup (``<script>``)."""

from __future__ import annotations

from typing import Any

from cuedrecall.api import Memory

AGENT = "me"
QUESTION = "what did the bike shop fix on the bike?"
CUE = {"after": "2025-06-01", "before": "2025-06-30", "confidence": "sure"}
LIMIT = 8
EVIDENCE_TEXT = "The shop fitted new brake pads on the bike in June."
SCRIPT_TEXT = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"> a note about the hose.'
ROWS = (
    ("2025-02-03T10:00:00+00:00", "The bike shop trued both wheels of my bike and checked the bike shop bill twice."),
    ("2025-03-10T10:00:00+00:00", "Bike shop visit: the bike shop replaced the chain on my bike."),
    ("2025-04-14T10:00:00+00:00", "At the bike shop they adjusted the bike gears; bike shop was busy."),
    ("2025-06-12T18:45:00+00:00", EVIDENCE_TEXT),
    ("2025-08-20T10:00:00+00:00", "Bike shop again: the bike shop fixed the bike saddle clamp."),
    ("2025-09-29T10:00:00+00:00", "Autumn bike shop service: the bike shop fixed the bike bottom bracket."),
    ("2025-07-01T10:00:00+00:00", "Tomatoes are ripening on the balcony."),
    ("2025-06-20T10:00:00+00:00", SCRIPT_TEXT),
)


def fill(memory: Memory) -> dict[str, str]:
    """Store the rows (and a profile); text -> ref."""
    refs = {}
    for stamp, text in ROWS:
        answer = memory.store(agent_id=AGENT, content=text, timestamp=stamp)
        refs[text] = f"mem:{answer['id']}"
    memory.update_profile(agent_id=AGENT, profile="Rides a road bike in Lisbon.")
    return refs


def cued_recall(memory: Memory, **extra: Any) -> dict[str, Any]:
    return memory.recall(agent_id=AGENT, query=QUESTION, limit=LIMIT, time_cue=CUE, trace=True, **extra)


def biggest_lift(trace: dict[str, Any]) -> dict[str, Any]:
    """The move that lifted a row furthest (the evidence, in this store)."""
    return max(trace["cue"]["lifted"], key=lambda m: m["from"] - m["to"])
