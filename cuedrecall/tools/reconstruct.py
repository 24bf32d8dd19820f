"""reconstruct: answer from memory, the recall's records grouped into items and quoted within a budget."""

from __future__ import annotations

from cuedrecall.access import READ
from cuedrecall.handlers.reconstruct import reconstruct
from cuedrecall.tools.common import AGENT, CHANNEL_READ, PROJECT_READ, QUERY_MAX, SESSION_KEY, SOURCE_ID, TIME_CUE
from cuedrecall.tools.spec import Param, Tool, on_agent

TOOLS = [
    Tool(
        "reconstruct",
        "Answer a question from memory: the records a recall finds, grouped into items (versions of one message, "
        "an episode and what happened in it, a burst of one speaker's turns, records you related), each item "
        "quoting its best passages within a character budget, its claims newest first with their roles. Entity "
        "names and aliases you declared (declare_associations) reach records that use another name. Give "
        "time_cue when you half-remember when it happened.",
        {
            "agent_id": AGENT,
            "query": Param("string", 'the question ("" = the newest memories)', required=True, max_length=QUERY_MAX),
            "count": Param(
                "integer",
                "the most items to return (a ceiling, not a target; omitted = the server's "
                "default, 10); a value over the server's maximum is lowered and count_policy says so",
                minimum=0,
            ),
            "top_k": Param(
                "integer",
                "how many records the recall hands over (default 20): raise it when items lack evidence",
                minimum=1,
                maximum=100,
            ),
            "max_hops": Param(
                "integer",
                "declared relations the walk may follow from an item's records (default 2, "
                "at most 5: a larger value is lowered)",
                minimum=0,
                maximum=5,
                clamp=True,
            ),
            "max_evidence": Param(
                "integer",
                "claims kept per item (default 40, at most 100: a larger value is lowered)",
                minimum=1,
                maximum=100,
                clamp=True,
            ),
            "deep": Param("boolean", "the recall's deep mode (a halved gate)", default=False),
            "channel": CHANNEL_READ,
            "project_id": PROJECT_READ,
            "source_id": SOURCE_ID,
            "trace": Param(
                "boolean",
                "also return how the answer was built: candidates, clusters, cues, the recall's "
                "own trace (trace.recall) and coverage; never stored text",
                default=False,
            ),
            "budget": Param(
                "integer",
                "characters of quoted text the items may carry (omitted = the server default, "
                "at least one head quote per item); items before excerpts",
                minimum=1,
            ),
            "time_cue": TIME_CUE,
            "mode": Param(
                "string",
                "a named answer size: lite (small, 2,800 characters of quotes) or pro (more "
                "items, the largest budget); both leave out ranges, bounds and budget fields",
                enum=("lite", "pro"),
            ),
            "lite": Param("boolean", 'the same as mode "lite" (the older name); not together with mode'),
            "session_key": SESSION_KEY,
        },
        reconstruct,
        on_agent(READ),
        read_only=True,
        failure={"items": [], "returned_count": 0},
    ),
]
