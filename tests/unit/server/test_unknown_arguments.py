"""An argument a tool does not take is ignored and reported, as CPersona ignores it; strict settings refuse it
(docs/tools.md#unknown-arguments).

A client written for a later CPersona, or one that adds keys of its own, keeps its calls: the
answer is the tool's usual one plus ``ignored_arguments`` naming what was left out, and the
log says so. ``CUEDRECALL_STRICT_ARGUMENTS`` turns that into a refusal naming the argument,
and only then do the schemas say ``additionalProperties: false``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from cuedrecall.api import Memory
from cuedrecall.server.mcp import _tool_list
from cuedrecall.tools import TOOLS
from tests.conftest import failed, make_settings, open_memory, snapshot
from tests.unit.server.test_tool_annotations import CASES, CONTEXT, seed

A = "agent-a"


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    context = tmp_path / "operating-context.toml"  # get_operating_context's cases read one (test_tool_annotations)
    context.write_text(CONTEXT, encoding="utf-8")
    with open_memory(tmp_path / "u.db", settings=make_settings(operating_context_path=str(context))) as opened:
        seed(opened)
        yield opened


def strict(memory: Memory) -> Memory:
    memory.runtime = replace(memory.runtime, settings=replace(memory.settings, strict_arguments=True))
    return memory


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_an_unknown_argument_is_ignored_named_and_logged(
    tool: str, memory: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="cuedrecall"):
        answer = memory.call(tool, {**CASES[tool][0], "colour": "blue"})
    assert answer.get("ok") is not False, answer
    assert answer["ignored_arguments"] == ["colour"]
    assert any("colour" in record.getMessage() and tool in record.getMessage() for record in caplog.records)


@pytest.mark.parametrize("tool", sorted(name for name, spec in TOOLS.items() if spec.read_only))
def test_a_read_answers_the_same_with_or_without_an_unknown_argument(tool: str, memory: Memory) -> None:
    plain = memory.call(tool, CASES[tool][0])
    extra = memory.call(tool, {**CASES[tool][0], "colour": "blue", "future_option": {"x": 1}})
    assert extra.pop("ignored_arguments") == ["colour", "future_option"]
    assert extra == plain


def test_a_known_argument_keeps_its_checks_beside_an_unknown_one(memory: Memory) -> None:
    before = snapshot(memory, agents=(A,))
    answer = memory.call("store", {"agent_id": A, "content": 5, "colour": "blue"})
    assert failed(answer, "'content'") and answer["result"] == "rejected"
    refused = memory.call("delete_memory", {"memory_id": 999_999, "colour": "blue"})  # refused by its handler
    assert failed(refused, "'memory_id'") and refused["ignored_arguments"] == ["colour"]
    assert snapshot(memory, agents=(A,)) == before


def test_an_unknown_field_of_store_s_message_is_ignored_and_named(memory: Memory) -> None:
    answer = memory.store(agent_id=A, message={"content": "a note with a role", "role": "user"})
    assert answer["result"] == "stored" and answer["ignored_arguments"] == ["message.role"]
    refused = strict(memory).store(agent_id=A, message={"content": "another note", "role": "user"})
    assert failed(refused, "'message'") and "role" in refused["error"]


def test_strict_settings_refuse_an_unknown_argument_naming_it_and_write_nothing(memory: Memory) -> None:
    strict(memory)
    before = snapshot(memory, agents=(A,))
    answer = memory.call("store", {"agent_id": A, "content": "kept out", "colour": "blue"})
    assert failed(answer, "colour") and answer["result"] == "rejected"
    assert snapshot(memory, agents=(A,)) == before


def test_many_or_long_names_are_listed_cut() -> None:
    names = {f"extra_{i:03d}": i for i in range(60)} | {"a" * 500: 1}
    listed = TOOLS["recall"].unknown(names)
    assert listed[0] == "a" * 40 + "..." and listed[1] == "extra_000"
    assert len(listed) == 51 and listed[-1] == "(+11 more)"


def test_the_schemas_say_additional_properties_false_only_when_strict() -> None:
    for listed in _tool_list():
        assert "additionalProperties" not in listed.inputSchema, listed.name
    for listed in _tool_list(strict=True):
        assert listed.inputSchema["additionalProperties"] is False, listed.name
