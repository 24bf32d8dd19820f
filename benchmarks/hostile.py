"""What a hostile client sends, written once for the fuzzers, the memory probe and their tests.

``BASE``: valid arguments for every tool, which the fuzzers damage; ``SHAPES`` and ``body_for``: a
``tools/call`` whose one argument is a hostile shape (an array of millions of zeros, an object of a million
members, a string of 12 MB) of a given size or just under the message bounds; ``TABLES``: the tables a tool
writes, whose rows a refused call must leave alone.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from cuedrecall.server.jsonrpc import MAX_ITEMS, MAX_STRING  # the message bounds: the largest bodies parsed
from cuedrecall.tools import TOOLS

AGENT = "fuzz-agent"
# the tables a tool writes: a refused call must leave their rows alone
TABLES = (
    "memories",
    "episodes",
    "profiles",
    "entities",
    "entity_aliases",
    "entity_mentions",
    "relations",
    "calibration",
    "recall_precision",
)

BASE: dict[str, dict[str, Any]] = {
    "store": {"agent_id": AGENT, "content": "the ferry leaves at seven"},
    "recall": {"agent_id": AGENT, "query": "ferry"},
    "recall_with_context": {"agent_id": AGENT, "query": "ferry"},
    "get_contents": {"agent_id": AGENT, "refs": ["mem:1"]},
    "archive_episode": {"agent_id": AGENT, "summary": "a trip to the island"},
    "update_memory": {"agent_id": AGENT, "memory_id": 1, "content": "the ferry leaves at eight"},
    "lock_memory": {"agent_id": AGENT, "memory_id": 1},
    "unlock_memory": {"agent_id": AGENT, "memory_id": 1},
    "delete_memory": {"agent_id": AGENT, "memory_id": 2},
    "delete_episode": {"agent_id": AGENT, "episode_id": 2},
    "delete_agent_data": {"agent_id": "another-agent"},
    "list_memories": {"agent_id": AGENT},
    "list_episodes": {"agent_id": AGENT},
    "get_profile": {"agent_id": AGENT},
    "update_profile": {"agent_id": AGENT, "profile": "likes ferries"},
    "calibrate_threshold": {"agent_id": AGENT},
    "set_recall_precision": {"agent_id": AGENT, "precision": "strict"},
    "get_recall_precision": {"agent_id": AGENT},
    "export_memories": {"agent_id": AGENT, "output_path": "fuzz.jsonl"},
    "import_memories": {"input_path": "fuzz.jsonl", "dry_run": True},
    "merge_memories": {"source_agent_id": AGENT, "target_agent_id": "merged-agent"},
    "check_health": {},
    "deep_check": {"agent_id": AGENT},
    "get_queue_status": {},
    "get_session_findings": {},
    "pause_persistence": {"ttl_seconds": 1, "session_key": "fuzz-pause"},
    "resume_persistence": {"session_key": "fuzz-pause"},
    "persistence_status": {},
    "declare_associations": {"agent_id": AGENT, "associations": {"entities": [{"name": "ferry"}]}},
    "traverse": {"agent_id": AGENT, "entity": "ferry"},
    "reconstruct": {"agent_id": AGENT, "query": "ferry"},
    "get_operating_context": {"section": "notes"},
    "check_update": {"refresh": False},
    "migrate_channel_axis": {"agent_id": AGENT},
}


def _fill(unit: bytes, size: int) -> bytes:
    """``[unit, unit, ...]`` of about ``size`` bytes."""
    return b"[" + b",".join([unit] * max(1, size // (len(unit) + 1))) + b"]"


def _members(size: int) -> bytes:
    count = size // 12
    return b"{" + b",".join(b'"%d":0' % i for i in range(count)) + b"}"


SHAPES: dict[str, Callable[[int], bytes]] = {
    "zeros": lambda size: _fill(b"0", size),
    "empty objects": lambda size: _fill(b"{}", size),
    "members": _members,
    "empty strings": lambda size: _fill(b'""', size),
    "long string": lambda size: b'"' + b"x" * (size - 2) + b'"',
    "wide string": lambda size: b'"\\ud83d\\ude00' + b"x" * (size - 14) + b'"',
}


UNDER = 1_000  # items or bytes left below a bound by the "under the bounds" bodies


def under_size(shape: str) -> int:
    """Bytes of a ``shape`` value just under the message bounds: the largest body the server parses."""
    items = MAX_ITEMS - UNDER
    return {
        "zeros": items * 2,
        "empty objects": items // 2 * 3,
        "members": items // 2 * 12,
        "empty strings": items * 3,
    }.get(shape, MAX_STRING - UNDER)


def target_argument(tool: str) -> str:
    """The argument a tool's hostile bodies go in: its first array or object argument, else its first one."""
    params = TOOLS[tool].params
    for name, param in params.items():
        if param.type in ("array", "object"):
            return name
    return next(iter(params), "extra")


def body_for(tool: str, shape: str, size: int, request_id: int = 7, under: bool = False) -> bytes:
    """One ``tools/call`` of ``tool`` with valid arguments (the fuzzer's) but its target argument ``shape``,
    about ``size`` bytes in all, or (``under``) just under the message bounds."""
    target = target_argument(tool)
    valid = {key: value for key, value in BASE[tool].items() if key != target}
    others = json.dumps(valid).encode()[1:-1]
    head = (
        b'{"jsonrpc":"2.0","id":'
        + str(request_id).encode()
        + b',"method":"tools/call","params":{"name":"'
        + tool.encode()
        + b'","arguments":{'
        + others
        + (b"," if others else b"")
        + b'"'
        + target.encode()
        + b'":'
    )
    tail = b"}}}"
    return head + SHAPES[shape](under_size(shape) if under else size - len(head) - len(tail)) + tail
