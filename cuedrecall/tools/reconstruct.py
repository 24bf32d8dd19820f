"""reconstruct: answer from memory, the recall's records grouped into items and quoted within a budget."""

from __future__ import annotations

from cuedrecall.access import READ
from cuedrecall.handlers.associations import not_built
from cuedrecall.tools.common import AGENT, CHANNEL_READ, PROJECT_READ, SESSION_KEY, SOURCE_ID, TIME_CUE
from cuedrecall.tools.spec import Param, Tool, on_agent

TOOLS = [
    Tool(
        "reconstruct",
        "Answer from memory: the recall's records grouped into items, each quoted within a budget. (Not yet "
        "available: answers ok:false; use recall.)",
        {"agent_id": AGENT, "query": Param("string", "the question", required=True, non_empty=True, max_length=16000),
         "count": Param("integer", "items wanted", minimum=0), "top_k": Param("integer", "records read", minimum=1,
                                                                             maximum=100),
         "max_hops": Param("integer", "association hops", minimum=0, maximum=5),
         "max_evidence": Param("integer", "claims per item", minimum=1, maximum=100),
         "deep": Param("boolean", "halve the gate", default=False), "channel": CHANNEL_READ,
         "project_id": PROJECT_READ, "source_id": SOURCE_ID,
         "trace": Param("boolean", "also the trace", default=False),
         "budget": Param("integer", "characters of quotes", minimum=1), "time_cue": TIME_CUE,
         "mode": Param("string", "a budget preset", max_length=64), "lite": Param("boolean", "a small answer"),
         "session_key": SESSION_KEY},
        not_built("reconstruct"), on_agent(READ), read_only=True, failure={"items": [], "returned_count": 0},
    ),
]
