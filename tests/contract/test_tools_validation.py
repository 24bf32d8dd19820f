"""Bad input: every argument of every tool is checked.

Each is answered {"ok": false, "error": ...} naming it, and nothing is written.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cuedrecall.api import Memory
from cuedrecall.tools import TOOLS
from tests.conftest import failed, make_settings, open_memory, snapshot

AGENT = "agent-a"
OTHER = "agent-b"


@pytest.fixture
def seeded(tmp_path: Path) -> Iterator[tuple[Memory, dict[str, dict[str, Any]]]]:
    """A store holding one memory, one episode and a profile per agent, and valid arguments for every tool."""
    context = tmp_path / "operating-context.toml"  # what get_operating_context reads
    context.write_text('version = 1\n[[doctrine]]\nname = "notes"\nbody = "short"\n', encoding="utf-8")
    with open_memory(tmp_path / "v.db", settings=make_settings(operating_context_path=str(context))) as memory:
        mem = memory.store(agent_id=AGENT, message={"content": "the seed memory about tea", "id": "m1"})
        memory.store(agent_id=OTHER, message={"content": "the other agent's memory"})
        ep = memory.archive_episode(agent_id=AGENT, summary="a seeded session", keywords="seed")
        memory.update_profile(agent_id=AGENT, profile="likes tea")
        for i, topic in enumerate(
            [
                "garden",
                "taxes",
                "piano",
                "cycling",
                "bread",
                "chess",
                "rust",
                "birds",
                "knitting",
                "sailing",
                "coffee",
                "maps",
            ]
        ):
            memory.store(agent_id=AGENT, message={"content": f"note {i}: a thought about {topic}"})
        export = memory.export_memories(agent_id=AGENT, output_path="seed.jsonl")  # into exports/ beside v.db
        assert mem["result"] == "stored" and ep["ok"] and export["ok"]
        base: dict[str, dict[str, Any]] = {
            "store": {
                "agent_id": AGENT,
                "message": {"content": "a fresh memory", "id": "m2"},
                "channel": "c",
                "project_id": "p",
            },
            "recall": {
                "agent_id": AGENT,
                "query": "tea",
                "limit": 5,
                "deep": False,
                "channel": "",
                "project_id": None,
                "source_id": "",
                "exclude_contents": [],
                "full_content": False,
                "trace": False,
                "time_cue": None,
            },
            "get_contents": {"agent_id": AGENT, "refs": [mem["ref"], ep["ref"]]},
            "archive_episode": {
                "agent_id": AGENT,
                "summary": "another session",
                "keywords": "k",
                "history": [{"timestamp": "2025-10-01T10:00:00+00:00"}],
                "start_time": None,
                "end_time": None,
                "resolved": False,
                "channel": "",
                "project_id": "",
            },
            "update_memory": {"memory_id": mem["id"], "content": "the changed memory", "agent_id": AGENT},
            "delete_memory": {"memory_id": mem["id"], "agent_id": AGENT},
            "delete_episode": {"episode_id": ep["episode_id"], "agent_id": AGENT},
            "list_memories": {"agent_id": AGENT, "limit": 10, "project_id": None},
            "list_episodes": {"agent_id": AGENT, "limit": 10, "project_id": None},
            "get_profile": {"agent_id": AGENT},
            "update_profile": {"agent_id": AGENT, "profile": "likes coffee now"},
            "export_memories": {"agent_id": AGENT, "output_path": "out.jsonl", "include_embeddings": False},
            "import_memories": {"input_path": export["path"], "target_agent_id": "agent-c", "dry_run": False},
            "calibrate_threshold": {
                "agent_id": AGENT,
                "sample_size": 50,
                "method": "separation",
                "percentile": 0.95,
                "z_factor": 1.0,
            },
            "set_recall_precision": {"agent_id": AGENT, "precision": "strict"},
            "get_recall_precision": {"agent_id": AGENT},
            "recall_with_context": {
                "agent_id": AGENT,
                "query": "tea",
                "limit": 5,
                "deep": False,
                "channel": "",
                "project_id": None,
                "source_id": "",
                "full_content": False,
                "external_context": [{"role": "user", "content": "hello", "timestamp": "2025-10-01T10:00:00+00:00"}],
            },
            "lock_memory": {"memory_id": mem["id"], "agent_id": AGENT},
            "unlock_memory": {"memory_id": mem["ref"], "agent_id": AGENT},
            "delete_agent_data": {"agent_id": "agent-c"},
            "merge_memories": {
                "source_agent_id": OTHER,
                "target_agent_id": "agent-d",
                "strategy": "skip",
                "mode": "copy",
                "dry_run": False,
            },
            "check_health": {"agent_id": AGENT, "fix": False, "checks": []},
            "deep_check": {"agent_id": AGENT, "fix": False, "checks": []},
            "get_queue_status": {},
            "get_session_findings": {"per_kind_limit": 5, "include_summary": True},
            "pause_persistence": {"ttl_seconds": 60, "session_key": "s1"},
            "resume_persistence": {"session_key": "s1"},
            "persistence_status": {"session_key": "s1"},
            "reconstruct": {"agent_id": AGENT, "query": "tea"},
            "declare_associations": {"agent_id": AGENT, "associations": {"entities": [{"name": "tea"}]}},
            "traverse": {"agent_id": AGENT, "entity": "tea"},
            "get_operating_context": {"section": "notes"},
            "check_update": {"refresh": False, "apply": False},
            "migrate_channel_axis": {"agent_id": AGENT, "dry_run": True, "globalize_unrecoverable": False},
        }
        yield memory, base


def _state(memory: Memory, tmp_path: Path) -> tuple[str, bool, str, list[Any]]:
    """What a failed call must leave unchanged: every row and profile, the export target's absence,
    every calibrated threshold and precision override, and the gate settings of every agent."""
    calibration = repr((memory.store_.thresholds(), memory.store_.betas()))
    gates = [memory.get_recall_precision(agent_id=agent) for agent in (AGENT, OTHER)]
    return (
        snapshot(memory, agents=(AGENT, OTHER, "agent-c")),
        (tmp_path / "exports" / "out.jsonl").exists(),
        calibration,
        gates,
    )


# A value of the wrong JSON type for each declared type (None too, for parameters that do not take null).
_WRONG: dict[str, list[Any]] = {
    "string": [42, True, ["x"], {"x": 1}],
    "integer": ["1", 1.5, True, [1]],
    "number": ["1", True, [1]],
    "boolean": ["yes", 1, 0, "false"],
    "object": ["x", 1, ["x"]],
    "array": ["x", 1, {"x": 1}],
}
_ITEM_WRONG: dict[str, Any] = {"string": 7, "object": "not an object"}
_JSON: dict[str, type] = {"string": str, "null": type(None)}  # the types a parameter may accept besides its own


def _item_wrong(items: Any) -> Any:
    """An array item of no type the declaration accepts (items of one type, or anyOf several: get_contents's
    ref or range object)."""
    if isinstance(items, str) or "type" in items:
        return _ITEM_WRONG[items if isinstance(items, str) else items["type"]]
    accepted = {branch["type"] for branch in items["anyOf"]}
    return next(value for kind, value in (("integer", 7), ("string", "x"), ("object", {})) if kind not in accepted)


PARAMS = [(tool.name, name) for tool in TOOLS.values() for name in tool.params]
REQUIRED = [(tool.name, name) for tool in TOOLS.values() for name, p in tool.params.items() if p.required]
REQUIRED_STRINGS = [(t, n) for t, n in REQUIRED if TOOLS[t].params[n].type == "string"]


def test_the_fixture_has_valid_arguments_for_every_tool(
    seeded: tuple[Memory, dict[str, dict[str, Any]]],
) -> None:
    """The base arguments every case below perturbs are themselves accepted, so each failure is the perturbation's."""
    memory, base = seeded
    assert set(base) == set(TOOLS)
    for name in TOOLS:
        assert set(base[name]) <= set(TOOLS[name].params), name
    order = [
        "recall",
        "get_contents",
        "list_memories",
        "list_episodes",
        "get_profile",
        "store",
        "archive_episode",
        "lock_memory",
        "unlock_memory",
        "update_memory",
        "update_profile",
        "export_memories",
        "import_memories",
        "delete_episode",
        "delete_memory",
    ]  # delete_memory after update_memory, which needs the row
    for name in [*order, *(t for t in TOOLS if t not in order)]:
        result = memory.call(name, base[name])
        assert result.get("ok") is not False, (name, result)


@pytest.mark.parametrize("tool", list(TOOLS))
def test_an_unknown_argument_is_refused_naming_it_and_nothing_is_written_when_strict(
    tool: str, seeded: tuple[Memory, dict[str, dict[str, Any]]], tmp_path: Path
) -> None:
    memory, base = seeded
    memory.runtime = replace(memory.runtime, settings=replace(memory.settings, strict_arguments=True))
    before = _state(memory, tmp_path)
    result = memory.call(tool, {**base[tool], "bogus_field": 1})
    assert failed(result, "bogus_field")
    assert _state(memory, tmp_path) == before


@pytest.mark.parametrize("tool", list(TOOLS))
def test_arguments_that_are_not_an_object_are_refused(
    tool: str, seeded: tuple[Memory, dict[str, dict[str, Any]]], tmp_path: Path
) -> None:
    memory, _ = seeded
    before = _state(memory, tmp_path)
    for arguments in (["agent-a"], "agent-a", 3):
        result = memory.call(tool, arguments)
        assert result.get("ok") is False and "must be an object" in result["error"]
    assert _state(memory, tmp_path) == before


def test_an_unknown_tool_is_refused_naming_it(seeded: tuple[Memory, dict[str, dict[str, Any]]]) -> None:
    memory, _ = seeded
    assert failed(memory.call("remember_everything", {}), "remember_everything")


@pytest.mark.parametrize(("tool", "param"), PARAMS, ids=[f"{t}.{p}" for t, p in PARAMS])
def test_a_wrong_type_for_any_argument_is_refused_naming_it_and_nothing_is_written(
    tool: str, param: str, seeded: tuple[Memory, dict[str, dict[str, Any]]], tmp_path: Path
) -> None:
    memory, base = seeded
    declared = TOOLS[tool].params[param]
    also = tuple(_JSON[kind] for kind in declared.also)
    wrong = [value for value in _WRONG[declared.type] if not isinstance(value, also)]
    if not declared.nullable and "null" not in declared.also:
        wrong.append(None)
    if declared.items:
        wrong.append([_item_wrong(declared.items)])
    before = _state(memory, tmp_path)
    for value in wrong:
        result = memory.call(tool, {**base[tool], param: value})
        assert failed(result, f"'{param}'"), (value, result)
    assert _state(memory, tmp_path) == before


@pytest.mark.parametrize(("tool", "param"), REQUIRED, ids=[f"{t}.{p}" for t, p in REQUIRED])
def test_a_missing_required_argument_is_refused_naming_it_and_nothing_is_written(
    tool: str, param: str, seeded: tuple[Memory, dict[str, dict[str, Any]]], tmp_path: Path
) -> None:
    memory, base = seeded
    before = _state(memory, tmp_path)
    arguments = {k: v for k, v in base[tool].items() if k != param}
    result = memory.call(tool, arguments)
    assert failed(result, f"'{param}'") and "required" in result["error"]
    assert _state(memory, tmp_path) == before


# A required string may be empty only where the empty string means something documented.
_EMPTY_MEANS_SOMETHING = {
    ("recall", "query"),
    ("recall_with_context", "query"),
    ("reconstruct", "query"),
    ("update_profile", "profile"),
    ("calibrate_threshold", "agent_id"),
}
NON_EMPTY = [pair for pair in REQUIRED_STRINGS if pair not in _EMPTY_MEANS_SOMETHING]


def test_every_required_string_must_be_non_empty_except_the_documented_ones() -> None:
    """Refused when empty: declared non_empty, or limited to a list of words that "" is not one of."""
    for tool, param in REQUIRED_STRINGS:
        declared = TOOLS[tool].params[param]
        refuses_empty = declared.non_empty or (bool(declared.enum) and "" not in declared.enum)
        assert refuses_empty == ((tool, param) not in _EMPTY_MEANS_SOMETHING), (tool, param)


@pytest.mark.parametrize(("tool", "param"), NON_EMPTY, ids=[f"{t}.{p}" for t, p in NON_EMPTY])
def test_an_empty_required_string_is_refused_naming_it_and_nothing_is_written(
    tool: str, param: str, seeded: tuple[Memory, dict[str, dict[str, Any]]], tmp_path: Path
) -> None:
    memory, base = seeded
    before = _state(memory, tmp_path)
    for empty in ("", "   ", "\n\t"):
        result = memory.call(tool, {**base[tool], param: empty})
        assert failed(result, f"'{param}'"), (empty, result)
    assert _state(memory, tmp_path) == before


def test_an_empty_recall_query_lists_instead_of_failing(seeded: tuple[Memory, dict[str, dict[str, Any]]]) -> None:
    memory, base = seeded
    result = memory.recall(**{**base["recall"], "query": "", "limit": 100})
    assert result.get("ok") is not False
    assert any(row["content"] == "the seed memory about tea" for row in result["messages"])


def test_an_empty_profile_updates_nothing(seeded: tuple[Memory, dict[str, dict[str, Any]]], tmp_path: Path) -> None:
    memory, _ = seeded
    before = _state(memory, tmp_path)
    for empty in ("", "   ", "[Memory from x]  "):
        result = memory.update_profile(agent_id=AGENT, profile=empty)
        assert result["ok"] is True and result["profiles_updated"] == 0 and result["reason"]
    assert _state(memory, tmp_path) == before
    assert memory.get_profile(agent_id=AGENT)["profile"] == "likes tea"


# -- store: the message object ---------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "named"),
    [
        ({}, "message.content"),
        ({"content": 5}, "message.content"),
        ({"content": None}, "message.content"),
        ({"content": "x", "id": 5}, "message.id"),
        ({"content": "x", "source": 5}, "message.source"),
        ({"content": "x", "source": ["User"]}, "message.source"),
        ({"content": "x", "metadata": "tags"}, "message.metadata"),
        ({"content": "x", "metadata": [1]}, "message.metadata"),
        ({"content": "x", "timestamp": 1730000000}, "message.timestamp"),
    ],
)
def test_a_malformed_message_is_refused_naming_the_field_and_nothing_is_written(
    message: dict[str, Any], named: str, seeded: tuple[Memory, dict[str, dict[str, Any]]], tmp_path: Path
) -> None:
    memory, _ = seeded
    before = _state(memory, tmp_path)
    result = memory.store(agent_id=AGENT, message=message)
    assert failed(result, named), result
    assert result["result"] == "rejected"
    assert _state(memory, tmp_path) == before


@pytest.mark.parametrize("field", ["metadata", "source"])
def test_over_cap_metadata_or_source_is_rejected_never_truncated(
    field: str, seeded: tuple[Memory, dict[str, dict[str, Any]]], tmp_path: Path
) -> None:
    memory, _ = seeded
    cap = memory.settings.max_metadata_length
    before = _state(memory, tmp_path)
    big = {"type": "User", "id": "u", "note": "x" * cap} if field == "source" else {"note": "x" * cap}
    result = memory.store(agent_id=AGENT, message={"content": "fits", field: big})
    assert result["ok"] is False and result["result"] == "rejected"
    assert field in result["reason"] and str(cap) in result["reason"]
    assert _state(memory, tmp_path) == before


def test_metadata_just_under_the_cap_is_stored(seeded: tuple[Memory, dict[str, dict[str, Any]]]) -> None:
    memory, _ = seeded
    cap = memory.settings.max_metadata_length
    metadata = {"n": "x" * (cap - len('{"n": ""}'))}
    result = memory.store(agent_id=AGENT, message={"content": "fits exactly", "metadata": metadata})
    assert result["result"] == "stored"


def test_over_cap_content_is_stored_truncated_to_the_cap_and_flagged(
    seeded: tuple[Memory, dict[str, dict[str, Any]]],
) -> None:
    memory, _ = seeded
    cap = memory.settings.max_content_length
    text = "word " * (cap // 5) + "tail beyond the cap"
    result = memory.store(agent_id=AGENT, message={"content": text})
    assert result["ok"] is True and result["result"] == "stored" and result["truncated"] is True
    item = memory.get_contents(agent_id=AGENT, refs=[result["ref"]])["items"][0]
    assert item["content"] == text.strip()[:cap]
    assert len(item["content"]) == cap


def test_content_at_the_cap_is_not_flagged(seeded: tuple[Memory, dict[str, dict[str, Any]]]) -> None:
    memory, _ = seeded
    result = memory.store(agent_id=AGENT, message={"content": "y" * memory.settings.max_content_length})
    assert result["result"] == "stored" and "truncated" not in result


@pytest.mark.parametrize("content", ["", "   ", "[Memory from yesterday]  "])
def test_empty_content_is_rejected_and_nothing_is_written(
    content: str, seeded: tuple[Memory, dict[str, dict[str, Any]]], tmp_path: Path
) -> None:
    memory, _ = seeded
    before = _state(memory, tmp_path)
    result = memory.store(agent_id=AGENT, message={"content": content})
    assert result["ok"] is False and result["result"] == "rejected" and result["reason"]
    assert _state(memory, tmp_path) == before


# -- refs, limits, times -----------------------------------------------------------------


def test_an_unknown_ref_is_reported_missing(seeded: tuple[Memory, dict[str, dict[str, Any]]]) -> None:
    memory, base = seeded
    known = base["get_contents"]["refs"]
    result = memory.get_contents(agent_id=AGENT, refs=[*known, "mem:9999", "ep:9999"])
    assert result["missing"] == ["mem:9999", "ep:9999"]
    assert [item["ref"] for item in result["items"]] == known
    assert result["count"] == 2


def test_another_agents_ref_is_reported_missing(seeded: tuple[Memory, dict[str, dict[str, Any]]]) -> None:
    memory, base = seeded
    refs = base["get_contents"]["refs"]
    result = memory.get_contents(agent_id=OTHER, refs=refs)
    assert result["items"] == [] and result["missing"] == refs


@pytest.mark.parametrize("ref", ["x:1", "mem:", "mem:abc", "ep:-1", "12", "", "MEM:1", "mem:1:2"])
def test_a_malformed_ref_is_refused_naming_refs(ref: str, seeded: tuple[Memory, dict[str, dict[str, Any]]]) -> None:
    memory, _ = seeded
    result = memory.get_contents(agent_id=AGENT, refs=["mem:1", ref])
    assert failed(result, "'refs'") and result["items"] == []


def test_more_than_twenty_refs_are_refused(seeded: tuple[Memory, dict[str, dict[str, Any]]]) -> None:
    memory, _ = seeded
    assert memory.get_contents(agent_id=AGENT, refs=[f"mem:{i}" for i in range(1, 21)]).get("ok") is not False
    result = memory.get_contents(agent_id=AGENT, refs=[f"mem:{i}" for i in range(1, 22)])
    assert failed(result, "'refs'") and "20" in result["error"]


def test_no_refs_are_refused(seeded: tuple[Memory, dict[str, dict[str, Any]]]) -> None:
    memory, _ = seeded
    assert failed(memory.get_contents(agent_id=AGENT, refs=[]), "'refs'")


def test_a_recall_limit_out_of_range_is_refused(seeded: tuple[Memory, dict[str, dict[str, Any]]]) -> None:
    memory, base = seeded
    for limit in (0, 100):
        assert memory.call("recall", {**base["recall"], "limit": limit}).get("ok") is not False
    for limit in (-1, 101, 10**9):
        result = memory.call("recall", {**base["recall"], "limit": limit})
        assert failed(result, "'limit'"), result
        assert result["messages"] == []  # the collection key the tool documents is still there


@pytest.mark.parametrize(
    ("tool", "key", "high"), [("list_memories", "memories", 500), ("list_episodes", "episodes", 200)]
)
def test_a_listing_limit_out_of_range_is_clamped_as_cpersona_clamps_it(
    tool: str, key: str, high: int, seeded: tuple[Memory, dict[str, dict[str, Any]]]
) -> None:
    memory, base = seeded
    everything = memory.call(tool, {**base[tool], "limit": high})[key]
    assert memory.call(tool, {**base[tool], "limit": 10**9})[key] == everything
    assert memory.call(tool, {**base[tool], "limit": -5}) == {key: [], "count": 0}


@pytest.mark.parametrize("tool", ["update_memory", "delete_memory"])
def test_a_memory_id_below_one_is_refused(
    tool: str, seeded: tuple[Memory, dict[str, dict[str, Any]]], tmp_path: Path
) -> None:
    memory, base = seeded
    before = _state(memory, tmp_path)
    for memory_id in (0, -3):
        assert failed(memory.call(tool, {**base[tool], "memory_id": memory_id}), "'memory_id'")
    assert _state(memory, tmp_path) == before


@pytest.mark.parametrize(
    ("tool", "param", "value"),
    [
        ("update_memory", "memory_id", 9999),
        ("delete_memory", "memory_id", 9999),
        ("delete_episode", "episode_id", 9999),
    ],
)
def test_an_unknown_id_is_refused_naming_it(
    tool: str, param: str, value: int, seeded: tuple[Memory, dict[str, dict[str, Any]]], tmp_path: Path
) -> None:
    memory, base = seeded
    before = _state(memory, tmp_path)
    assert failed(memory.call(tool, {**base[tool], param: value}), f"'{param}'")
    assert _state(memory, tmp_path) == before


@pytest.mark.parametrize("param", ["start_time", "end_time"])
@pytest.mark.parametrize("value", ["last tuesday", "2025-02-30", "", "12:00"])
def test_a_non_iso_episode_time_is_refused(
    param: str, value: str, seeded: tuple[Memory, dict[str, dict[str, Any]]], tmp_path: Path
) -> None:
    memory, base = seeded
    before = _state(memory, tmp_path)
    result = memory.archive_episode(**{**base["archive_episode"], param: value})
    assert failed(result, f"'{param}'") and result["episode_id"] is None
    assert _state(memory, tmp_path) == before


def test_a_summary_empty_after_sanitising_is_refused(
    seeded: tuple[Memory, dict[str, dict[str, Any]]], tmp_path: Path
) -> None:
    memory, base = seeded
    before = _state(memory, tmp_path)
    result = memory.archive_episode(**{**base["archive_episode"], "summary": "[Memory from a chat]"})
    assert failed(result, "'summary'") and result["episode_id"] is None
    assert _state(memory, tmp_path) == before


def test_update_memory_to_content_empty_after_sanitising_is_refused(
    seeded: tuple[Memory, dict[str, dict[str, Any]]], tmp_path: Path
) -> None:
    memory, base = seeded
    before = _state(memory, tmp_path)
    result = memory.update_memory(**{**base["update_memory"], "content": "[Memory from a chat]"})
    assert failed(result, "'content'")
    assert _state(memory, tmp_path) == before


@pytest.mark.parametrize(
    "cue",
    [
        {"after": "2025-01-01"},  # confidence missing
        {"after": "2025-01-01", "confidence": "certain"},
        {"after": "someday", "confidence": "sure"},
        {"after": "2025-03-01", "before": "2025-01-01", "confidence": "sure"},
        {"ago": {"unit": "fortnights", "value": 1}, "confidence": "sure"},
        {"ago": {"unit": "days", "value": -1}, "confidence": "sure"},
        {"after": "2025-01-01", "confidence": "sure", "when": "then"},
        {"confidence": "sure"},  # neither a period nor ago
    ],
)
def test_a_malformed_time_cue_is_refused_naming_time_cue(
    cue: dict[str, Any], seeded: tuple[Memory, dict[str, dict[str, Any]]]
) -> None:
    memory, base = seeded
    result = memory.recall(**{**base["recall"], "time_cue": cue})
    assert failed(result, "time_cue"), result
    assert result["messages"] == []


@pytest.mark.parametrize("path", ["../escape.jsonl", "a/../../escape.jsonl"])
def test_export_and_import_refuse_dot_dot_paths(
    path: str, seeded: tuple[Memory, dict[str, dict[str, Any]]], tmp_path: Path
) -> None:
    memory, _ = seeded
    before = _state(memory, tmp_path)
    assert failed(memory.export_memories(agent_id=AGENT, output_path=path), "'output_path'")
    assert failed(memory.import_memories(input_path=path), "'input_path'")
    assert _state(memory, tmp_path) == before
    assert not (tmp_path / "escape.jsonl").exists()


def test_importing_a_missing_file_is_refused_naming_input_path(
    seeded: tuple[Memory, dict[str, dict[str, Any]]], tmp_path: Path
) -> None:
    memory, _ = seeded
    assert failed(memory.import_memories(input_path="absent.jsonl"), "'input_path'")  # in the export folder
    assert failed(memory.import_memories(input_path=str(tmp_path / "absent.jsonl")), "'input_path'")  # outside
