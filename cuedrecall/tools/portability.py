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


_AGENT_ARG = identifier("an agent id", required=True, non_empty=True)

TOOLS = [
    Tool(
        "export_memories",
        "Write an agent's memories, episodes and profile to a JSONL file in the export folder (a backup or a move).",
        {
            "agent_id": AGENT_OR_ALL,
            "output_path": Param(
                "string",
                "file to write, relative to the server's export folder (an absolute path "
                "only inside it); the file is created 0600, no folder is made",
                required=True,
                non_empty=True,
                max_length=1024,
            ),
            "include_embeddings": Param("boolean", "also write the vectors", default=False),
            "overwrite": Param(
                "boolean",
                "replace an existing file that is not this agent's own export (needs write access on what it holds)",
                default=False,
            ),
        },
        portability.export_jsonl,
        on_agent(WRITE),
        destructive=True,
        takes_principal=True,
    ),
    Tool(
        "import_memories",
        "Load a JSONL export (cuedrecall's, or CPersona's cpersona-export/1.x) from the export folder. Importing "
        "the same file twice changes nothing.",
        {
            "input_path": Param(
                "string",
                "file to read, relative to the server's export folder (an absolute path only inside it)",
                required=True,
                non_empty=True,
                max_length=1024,
            ),
            "target_agent_id": identifier('file every record under this agent ("" keeps each record\'s)', default=""),
            "dry_run": Param("boolean", "count what would be imported without writing", default=False),
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
        "Copy (or move) one agent's memories, episodes and profile under another agent; duplicates are skipped.",
        {
            "source_agent_id": _AGENT_ARG,
            "target_agent_id": _AGENT_ARG,
            "strategy": Param(
                "string", "skip: what the target already holds is left as it is", default="skip", enum=("skip",)
            ),
            "mode": Param(
                "string", "copy keeps the source; move deletes what was copied", default="copy", enum=("copy", "move")
            ),
            "dry_run": Param("boolean", "count without writing", default=False),
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
