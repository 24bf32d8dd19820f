"""reconstruct: answer from memory, the recall's records grouped into items and quoted within a budget."""

from __future__ import annotations

from cuedrecall.access import READ
from cuedrecall.handlers.reconstruct import reconstruct
from cuedrecall.tools.common import AGENT, CHANNEL_READ, PROJECT_READ, QUERY_MAX, SESSION_KEY, SOURCE_ID, TIME_CUE
from cuedrecall.tools.spec import Param, Tool, on_agent

TOOLS = [
    Tool(
        "reconstruct",
        "Answer from memory: recalled records grouped into items, each quoting its best passages, claims newest "
        "first with their roles.",
        {
            "agent_id": AGENT,
            "query": Param("string", 'the question ("" = the newest)', required=True, max_length=QUERY_MAX),
            "count": Param("integer", "most items (default 10)", minimum=0),
            "top_k": Param("integer", "records recalled (default 20)", minimum=1, maximum=100),
            "max_hops": Param("integer", "relations followed (default 2)", minimum=0, maximum=5, clamp=True),
            "max_evidence": Param("integer", "claims per item (default 40)", minimum=1, maximum=100, clamp=True),
            "deep": Param("boolean", "weaker matches too", default=False),
            "channel": CHANNEL_READ,
            "project_id": PROJECT_READ,
            "source_id": SOURCE_ID,
            "trace": Param("boolean", "also how the answer was built", default=False),
            "budget": Param("integer", "characters of quotes", minimum=1),
            "time_cue": TIME_CUE,
            "mode": Param("string", "answer size: lite (2,800 characters) or pro", enum=("lite", "pro")),
            "lite": Param("boolean", "mode lite"),
            "session_key": SESSION_KEY,
        },
        reconstruct,
        on_agent(READ),
        read_only=True,
        failure={"items": [], "returned_count": 0},
    ),
]
