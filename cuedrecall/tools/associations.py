"""declare_associations and traverse: the associative layer (published with their arguments, answered ok:false until built)."""

from __future__ import annotations

from cuedrecall.access import READ, WRITE
from cuedrecall.handlers.associations import not_built
from cuedrecall.tools.common import (
    AGENT, CHANNEL_READ, CHANNEL_WRITE, PROJECT_READ, PROJECT_WRITE, SESSION_KEY, SOURCE_ID,
)
from cuedrecall.tools.spec import Param, Tool, on_agent

TOOLS = [
    Tool(
        "declare_associations",
        "Declare entities, aliases and relations for recall to follow. (Not yet available: answers ok:false.)",
        {"agent_id": AGENT, "associations": Param("object", "{entities: [{name, aliases}], relations: [{subject, "
                                                  "predicate, object}]}"),
         "anchor_ref": Param("string", "the record they were said in (mem:<id>, ep:<id>)", default="",
                             max_length=64),
         "retract": Param("object", "{relations: [ids], mentions: [{entity, ref}]}"),
         "channel": CHANNEL_WRITE, "project_id": PROJECT_WRITE, "session_key": SESSION_KEY},
        not_built("declare_associations"), on_agent(WRITE), destructive=True,
    ),
    Tool(
        "traverse",
        "Walk the declared associations from one entity. (Not yet available: answers ok:false.)",
        {"agent_id": AGENT, "entity": Param("string", "a name or alias", required=True, non_empty=True, max_length=256),
         "max_hops": Param("integer", "hops (0 to 5)", default=1, minimum=0, maximum=5, clamp=True),
         "limit": Param("integer", "entities (1 to 100)", default=20, minimum=1, maximum=100, clamp=True),
         "channel": CHANNEL_READ, "project_id": PROJECT_READ, "source_id": SOURCE_ID},
        not_built("traverse"), on_agent(READ), read_only=True,
    ),
]
