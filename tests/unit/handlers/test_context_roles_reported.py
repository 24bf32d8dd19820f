"""recall_with_context reports the roles of the entries that only filtered it, whatever their form
(docs/tools.md#the-conversation-of-recall_with_context)."""

from __future__ import annotations

from typing import Any

import pytest

from cuedrecall.api import Memory

A = "agent-a"
AT = "2025-10-01T09:00:00+00:00"


def roles(memory: Memory, context: list[Any]) -> list[str] | None:
    answer = memory.recall_with_context(agent_id=A, query="", external_context=context)
    assert answer.get("ok") is not False, answer
    return answer.get("context_filter_only", {}).get("roles")


@pytest.mark.parametrize(
    ("role", "shown"),
    [(None, "(unset)"), ("", "(unset)"), (7, "7"), ({"nested": "d"}, "{'nested': 'd'}"), (["user"], "['user']")],
)
def test_an_entry_without_a_string_role_is_listed_as_filtering_only(memory: Memory, role: Any, shown: str) -> None:
    entry = {"content": "a note the caller holds", "timestamp": AT} | ({} if role is None else {"role": role})
    answer = memory.recall_with_context(agent_id=A, query="", external_context=[entry])
    assert answer["context_filter_only"]["roles"] == [shown]
    assert answer["messages"] == []  # only "user" and "assistant" join the answer, never a role made text


def test_roles_of_every_kind_are_listed_together_sorted(memory: Memory) -> None:
    context = [
        {"role": "system", "content": "sys note", "timestamp": AT},
        {"role": 7, "content": "numeric role", "timestamp": AT},
        {"content": "no role at all"},
    ]
    assert roles(memory, context) == ["(unset)", "7", "system"]


def test_the_conversation_alone_adds_no_report(memory: Memory) -> None:
    context = [{"role": "user", "content": "hello", "timestamp": AT}, {"role": "assistant", "content": "hi"}]
    answer = memory.recall_with_context(agent_id=A, query="", external_context=context)
    assert "context_filter_only" not in answer and len(answer["messages"]) == 2


def test_a_malformed_entry_is_skipped_and_reported_and_the_rest_is_merged(memory: Memory) -> None:
    context: list[Any] = [
        {"role": "user", "content": None},
        {"role": "user", "content": 12345},
        None,
        "just text",
        {"role": "user", "content": "  visible conversation text  "},
    ]
    answer = memory.recall_with_context(agent_id=A, query="query", external_context=context)
    assert [m["content"] for m in answer["messages"]] == ["visible conversation text"]
    issues = answer["context_field_issues"]  # CPersona's shape: {entries: [{index, fields}], note}
    assert issues["entries"] == [
        {"index": 0, "fields": ["content"]},
        {"index": 1, "fields": ["content"]},
        {"index": 2, "fields": ["<entry>"]},
        {"index": 3, "fields": ["<entry>"]},
    ]
    assert isinstance(issues["note"], str)
    assert "context_filter_only" not in answer  # an entry without text filtered nothing
