"""Moving memory: export to a file, import from one (ours or CPersona's), merge one agent into another."""

from __future__ import annotations

from typing import Any

from cuedrecall.access import READ, WRITE, Demand
from cuedrecall.handlers import portability
from cuedrecall.handlers.merge import merge_memories
from cuedrecall.tools.common import AGENT_OR_ALL, SESSION_KEY, identifier
from cuedrecall.tools.spec import Param, Tool, on_agent


def _merge_demands(bound: dict[str, Any]) -> list[Demand]:
    """A copy reads the source; a move also deletes there."""
    source_need = WRITE if bound["mode"] == "move" else READ
    return [Demand(bound["source_agent_id"], source_need), Demand(bound["target_agent_id"], WRITE)]


def _paused_merge(rt: Any, bound: dict[str, Any]) -> dict[str, Any]:
    """merge_memories' answer while paused: its real keys, nothing merged."""
    counts = dict.fromkeys(("merged_memories", "skipped_memories", "merged_episodes", "skipped_episodes"), 0)
    moved = {"source_deleted": 0, "left_at_source": 0} if bound["mode"] == "move" else {}
    names = {key: bound[key] for key in ("source_agent_id", "target_agent_id", "strategy", "mode")}
    return {**names, **counts, "profile_copied": False, "skipped_profile": False, **moved}


_AGENT_ARG = identifier("an agent", required=True, non_empty=True)

TOOLS = [
    Tool(
        "export_memories",
        "Write an agent's memories, episodes, profile and graph to a JSONL file in the export folder.",
        {
            "agent_id": AGENT_OR_ALL,
            "output_path": Param(
                "string",
                "a file in the server's export folder (created 0600)",
                required=True,
                non_empty=True,
                max_length=1024,
            ),
            "include_embeddings": Param("boolean", "with the vectors", default=False),
            "overwrite": Param(
                "boolean", "replace another existing file (needs write on what it holds)", default=False
            ),
        },
        portability.export_jsonl,
        on_agent(WRITE),
        destructive=True,
        takes_principal=True,
    ),
    Tool(
        "import_memories",
        "Load a JSONL export (ours, CPersona's, or plain records) from the export folder; again, it adds nothing.",
        {
            "input_path": Param(
                "string",
                "a file in the server's export folder",
                required=True,
                non_empty=True,
                max_length=1024,
            ),
            "target_agent_id": identifier('file every record under it ("" = each its own)', default=""),
            "dry_run": Param("boolean", "only count", default=False),
            "session_key": SESSION_KEY,
        },
        portability.import_jsonl,
        on_agent(WRITE, "target_agent_id"),
        takes_principal=True,
        idempotent=True,  # the same file again adds nothing
        paused={"imported_memories": 0, "imported_episodes": 0},
        previews=True,
    ),
    Tool(
        "merge_memories",
        "Copy or move one agent's memories, episodes and profile to another, skipping duplicates.",
        {
            "source_agent_id": _AGENT_ARG,
            "target_agent_id": _AGENT_ARG,
            "strategy": Param("string", "skip what the target holds", default="skip", enum=("skip",)),
            "mode": Param("string", "move deletes what was copied", default="copy", enum=("copy", "move")),
            "dry_run": Param("boolean", "only count", default=False),
            "session_key": SESSION_KEY,
        },
        merge_memories,
        _merge_demands,
        destructive=True,  # mode move deletes the source's rows
        idempotent=True,  # what the target holds is skipped: the same merge again changes nothing
        paused=_paused_merge,
        previews=True,
    ),
]
