"""A refusal names the argument and keeps the words a CPersona client may match on
(docs/tools.md#answers-while-paused-and-refusals); nothing is written."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from cuedrecall.api import Memory
from tests.conftest import failed, snapshot

A = "agent-a"


@pytest.mark.parametrize(
    ("tool", "arguments", "argument", "words"),
    [
        ("calibrate_threshold", {"agent_id": A, "percentile": 200}, "'percentile'", "percentile must be in"),
        ("calibrate_threshold", {"agent_id": A, "percentile": -1}, "'percentile'", "percentile must be in"),
        ("set_recall_precision", {"agent_id": A, "precision": "bogus"}, "'precision'", "Unknown precision"),
        ("get_contents", {"agent_id": A, "refs": [f"mem:{i}" for i in range(1, 23)]}, "'refs'", "max 20"),
        (
            "store",
            {"agent_id": A, "message": {"content": "x", "source": {"type": "Agent", "name": "n" * 300}}},
            "message.source.name",
            "source too large",
        ),
    ],
)
def test_the_refusal_keeps_cpersona_s_words(
    memory: Memory, tool: str, arguments: dict[str, Any], argument: str, words: str
) -> None:
    before = snapshot(memory, agents=(A,))
    answer = memory.call(tool, arguments)
    assert failed(answer, argument) and words in answer["error"], answer
    assert snapshot(memory, agents=(A,)) == before


def test_a_refused_store_says_why_under_reason_too(memory: Memory) -> None:
    answer = memory.store(agent_id=A, message={"content": 5})
    assert answer["result"] == "rejected" and answer["reason"] == answer["error"]


def test_an_import_of_what_is_not_a_readable_file_says_so(memory: Memory, db_path: Path) -> None:
    folder = db_path.parent / "exports"
    folder.mkdir(exist_ok=True)
    os.mkfifo(folder / "pipe.jsonl")
    (folder / "latin1.jsonl").write_bytes(b'{"_type":"memory","agent_id":"a","content":"caf\x93"}\n')
    pipe = memory.import_memories(input_path="pipe.jsonl")
    assert failed(pipe, "'input_path'") and "not a regular file" in pipe["error"]
    latin = memory.import_memories(input_path="latin1.jsonl")
    assert failed(latin, "'input_path'") and "could not read" in latin["error"]
