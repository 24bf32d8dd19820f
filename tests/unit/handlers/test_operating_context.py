"""The operating context: the operator's file of instructions and defaults, and project_id "@auto" resolved through it.

docs/tools.md#the-operating-context. The file is the operator's setting, never a caller's; without one (or with
one that cannot be used) the context is dormant, get_operating_context says why, and "@auto" is refused.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cuedrecall.api import Memory
from cuedrecall.handlers.operating_context import parse
from cuedrecall.server.mcp import INSTRUCTIONS, instructions
from tests.conftest import make_settings, open_memory, snapshot

CONTEXT = """
version = 1
context_revision = "2026-07-18.1"

[instructions]
summary = "Pass project_id \\"@auto\\" to file under your project."

[registry]
project_ids = ["", "shop"]
enforce = "{enforce}"

[defaults]
"claude-code" = "shop"
"global-agent" = ""

[[doctrine]]
name = "recall-discipline"
body = "recall with a limit of 5 outside session start."

[[doctrine]]
name = "agent-ids"
body = "claude-code for Claude Code sessions."
"""

Writer = Callable[[str], Memory]


@pytest.fixture
def with_context(tmp_path: Path) -> Iterator[Writer]:
    """A memory whose operating context file holds the given text (the file rewritten between calls)."""
    path = tmp_path / "operating-context.toml"
    opened: list[Memory] = []

    def make(text: str) -> Memory:
        path.write_text(text, encoding="utf-8")
        stat = path.stat()  # a visible change even on a coarse clock: the file is read again when it changes
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
        if not opened:
            settings = make_settings(operating_context_path=str(path))
            opened.append(open_memory(tmp_path / "m.db", settings=settings))
        return opened[0]

    yield make
    for memory in opened:
        memory.close()


def test_without_a_file_the_context_is_dormant_and_says_why(memory: Memory) -> None:
    answer = memory.get_operating_context()
    assert answer["ok"] is False and answer["enabled"] is False and answer["dormant"] == "not_configured"
    assert "CUEDRECALL_OPERATING_CONTEXT_PATH" in answer["error"]


@pytest.mark.parametrize(
    ("text", "dormant", "words"),
    [
        (None, "missing", "no sidecar file"),
        ("version = [broken", "unusable", "sidecar unusable"),
        ("version = 2", "unusable", "version must be 1"),
        ('version = 1\n[registry]\nenforce = "sometimes"', "unusable", "registry.enforce"),
        ('version = 1\n[[doctrine]]\nname = "a"', "unusable", "needs a name and a body"),
        ("version = 1\ndoctrine = 5", "unusable", "doctrine must be a list"),
    ],
)
def test_a_missing_or_unusable_file_is_dormant_never_fatal_and_named(
    tmp_path: Path, text: str | None, dormant: str, words: str
) -> None:
    path = tmp_path / "context.toml"
    if text is not None:
        path.write_text(text, encoding="utf-8")
    with open_memory(tmp_path / "m.db", settings=make_settings(operating_context_path=str(path))) as memory:
        answer = memory.get_operating_context()
        assert answer["ok"] is False and answer["dormant"] == dormant and words in answer["error"]
        assert str(tmp_path) not in answer["error"]  # the file's folder is the operator's business
        assert memory.store(agent_id="a", content="still works")["result"] == "stored"


def test_the_switch_off_leaves_the_file_unread(tmp_path: Path) -> None:
    path = tmp_path / "context.toml"
    path.write_text(CONTEXT.format(enforce="warn"), encoding="utf-8")
    settings = make_settings(operating_context_path=str(path), operating_context=False)
    with open_memory(tmp_path / "m.db", settings=settings) as memory:
        answer = memory.get_operating_context()
        assert answer["dormant"] == "off" and "disabled" in answer["error"]


def test_the_overview_gives_revision_summary_registry_defaults_and_section_names(with_context: Writer) -> None:
    answer = with_context(CONTEXT.format(enforce="warn")).get_operating_context()
    assert answer["ok"] is True and answer["enabled"] is True
    assert answer["context_revision"] == "2026-07-18.1"
    assert "@auto" in answer["instructions_summary"]
    assert answer["registry"] == {"project_ids": ["", "shop"], "enforce": "warn"}
    assert answer["defaults"] == {"claude-code": "shop", "global-agent": ""}
    assert answer["doctrine_sections"] == ["agent-ids", "recall-discipline"]
    assert "limit of 5" not in str(answer)  # a section's body only when asked for


def test_a_section_is_read_in_full_and_an_unknown_one_is_refused_with_the_names(with_context: Writer) -> None:
    memory = with_context(CONTEXT.format(enforce="warn"))
    answer = memory.get_operating_context(section="recall-discipline")
    assert answer["ok"] is True and "limit of 5" in answer["body"] and answer["context_revision"] == "2026-07-18.1"
    unknown = memory.get_operating_context(section="../../etc/passwd")
    assert unknown["ok"] is False and "unknown doctrine section" in unknown["error"]
    assert unknown["doctrine_sections"] == ["agent-ids", "recall-discipline"]


def test_the_file_is_read_again_when_it_changes(with_context: Writer) -> None:
    memory = with_context(CONTEXT.format(enforce="warn"))
    assert memory.get_operating_context()["ok"] is True
    with_context("version = [broken")
    assert memory.get_operating_context()["dormant"] == "unusable"
    with_context(CONTEXT.format(enforce="warn").replace("2026-07-18.1", "2026-07-19.1"))
    assert memory.get_operating_context()["context_revision"] == "2026-07-19.1"


def test_auto_is_refused_when_no_context_is_in_use_and_nothing_is_written(memory: Memory) -> None:
    before = snapshot(memory)
    stored = memory.store(agent_id="a", content="a fact", project_id="@auto")
    assert stored["ok"] is False and stored["result"] == "rejected" and "'project_id'" in stored["error"]
    assert "@auto" in stored["error"] and "CUEDRECALL_OPERATING_CONTEXT_PATH" in stored["error"]
    recalled = memory.recall(agent_id="a", query="fact", project_id="@auto")
    assert recalled["ok"] is False and recalled["messages"] == []
    assert snapshot(memory) == before


def test_auto_resolves_to_the_agents_project_and_says_so(with_context: Writer) -> None:
    memory = with_context(CONTEXT.format(enforce="warn"))
    stored = memory.store(agent_id="claude-code", content="the shop opens at nine", project_id="@auto")
    assert stored["result"] == "stored" and stored["resolved_project_id"] == "shop"
    assert "operating_context_warning" not in stored
    rows = memory.list_memories(agent_id="claude-code", project_id="@auto")
    assert rows["resolved_project_id"] == "shop" and [m["project_id"] for m in rows["memories"]] == ["shop"]
    episode = memory.archive_episode(agent_id="global-agent", summary="a session", project_id="@auto")
    assert episode["resolved_project_id"] == "" and "operating_context_warning" not in episode


def test_an_unmapped_auto_reads_the_global_pool_with_a_warning_and_a_write_warns_or_is_refused(
    with_context: Writer,
) -> None:
    memory = with_context(CONTEXT.format(enforce="warn"))
    recalled = memory.recall(agent_id="stranger", query="", project_id="@auto")
    assert (
        recalled["resolved_project_id"] == ""
        and "no project for agent 'stranger'" in (recalled["operating_context_warning"])
    )
    stored = memory.store(agent_id="stranger", content="filed in the pool", project_id="@auto")
    assert stored["result"] == "stored" and stored["resolved_project_id"] == ""
    assert "operating_context_warning" in stored
    with_context(CONTEXT.format(enforce="reject"))
    before = snapshot(memory)
    refused = memory.store(agent_id="stranger", content="not filed", project_id="@auto")
    assert refused["ok"] is False and "'project_id'" in refused["error"] and "nothing was written" in refused["error"]
    assert snapshot(memory) == before
    read = memory.recall(agent_id="stranger", query="", project_id="@auto")  # a read only warns
    assert read.get("ok") is not False and "operating_context_warning" in read


def test_a_project_outside_the_registry_warns_and_under_reject_a_write_to_it_is_refused(
    with_context: Writer,
) -> None:
    memory = with_context(CONTEXT.format(enforce="warn"))
    stored = memory.store(agent_id="claude-code", content="filed elsewhere", project_id="garden")
    assert (
        stored["result"] == "stored"
        and "not in the operating context's registry" in (stored["operating_context_warning"])
    )
    with_context(CONTEXT.format(enforce="reject"))
    before = snapshot(memory)
    assert memory.store(agent_id="claude-code", content="x", project_id="garden")["ok"] is False
    assert snapshot(memory) == before
    assert "operating_context_warning" in memory.recall(agent_id="claude-code", query="", project_id="garden")
    assert memory.store(agent_id="claude-code", content="global", project_id="")["result"] == "stored"
    with_context(CONTEXT.format(enforce="off"))
    quiet = memory.store(agent_id="claude-code", content="anywhere", project_id="garden")
    assert quiet["result"] == "stored" and "operating_context_warning" not in quiet


def test_the_summary_joins_the_servers_instructions(tmp_path: Path) -> None:
    path = tmp_path / "context.toml"
    path.write_text(CONTEXT.format(enforce="warn"), encoding="utf-8")
    assert instructions(make_settings()) == INSTRUCTIONS
    told = instructions(make_settings(operating_context_path=str(path)))
    assert told.startswith(INSTRUCTIONS) and "@auto" in told


def test_a_file_written_for_cpersona_parses_unchanged() -> None:
    context = parse(CONTEXT.format(enforce="reject"))
    assert context.enforce == "reject" and context.defaults["claude-code"] == "shop"
    assert list(context.doctrine) == ["recall-discipline", "agent-ids"]
