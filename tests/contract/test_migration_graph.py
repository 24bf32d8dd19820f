"""Migration carries everything: a CPersona export's declared graph (entities, aliases, mentions, relations) and
folders arrive in ours, a CPersona user's traverse and reconstruct reach the same records afterwards, and our own
export carries the graph and folders through a round trip.

The fixtures are CPersona's own output (tests/fixtures/README.md): ``cpersona-2.6.14-export-graph.jsonl`` is a
store with a larger graph and folder tree, and ``cpersona-2.6.14-graph-answers.json`` what CPersona's traverse and
reconstruct reached on it. Runs on both backends (CUEDRECALL_TEST_BACKEND=postgres).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from cuedrecall.api import Memory
from cuedrecall.cli import _record_count
from tests.conftest import FIXTURES, failed, open_memory, snapshot

sys.path.insert(0, str(FIXTURES))
from make_cpersona_export import reached

GRAPH = "cpersona-2.6.14-export-graph.jsonl"
ANSWERS = "cpersona-2.6.14-graph-answers.json"
CPERSONA_FILES = (
    "cpersona-2.6.0-export.jsonl",
    "cpersona-2.6.14-export.jsonl",
    "cpersona-2.6.14-export-folders.jsonl",
    "cpersona-2.6.14-export-vectors.jsonl",
    GRAPH,
)
MARA, HARBOUR = "mara-assistant", "harbour-bot"
AGENTS = (MARA, HARBOUR)


def _lines(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def _place(memory: Memory, name: str, lines: list[dict[str, Any]] | None = None) -> str:
    """A fixture (or lines made from one) in the memory's export folder; its name there."""
    folder = Path(memory.settings.db_path).parent / "exports"
    folder.mkdir(exist_ok=True)
    if lines is None:
        shutil.copyfile(FIXTURES / name, folder / name)
    else:
        (folder / name).write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), "utf-8")
    return name


def _texts(memory: Memory) -> dict[str, str]:
    """Every record's ref -> its text (content or summary), every agent."""
    store = memory.store_
    out = {f"mem:{row['id']}": row["content"] for row in store.export_rows("mem", "")}
    out.update({f"ep:{row['id']}": row["summary"] for row in store.export_rows("ep", "")})
    return out


def graph_view(memory: Memory) -> dict[str, Any]:
    """The store's declarations in terms two stores share: names, records by their text, folders by path."""
    declared, texts = memory.store_.declared(""), _texts(memory)
    names = {e.id: (e.agent_id, e.project_id, e.channel, e.name) for e in declared.entities}

    def end(kind: str, row_id: int) -> tuple[str, ...]:
        return ("entity", *names[row_id]) if kind == "entity" else ("record", texts[f"{kind}:{row_id}"])

    paths: dict[int, tuple[str, ...]] = {}
    for folder in declared.folders:  # parents first: by id, and a parent is made before its child
        paths[folder.id] = (*paths.get(folder.parent_id, (folder.agent_id, folder.project_id)), folder.name)
    return {
        "entities": sorted(
            (*names[e.id], e.declared_by, e.created_at, tuple(a.written for a in declared.aliases.get(e.id, [])))
            for e in declared.entities
        ),
        "mentions": sorted((names[m.entity_id], texts[m.ref], m.declared_by, m.created_at) for m in declared.mentions),
        "relations": sorted(
            (
                r.agent_id,
                r.project_id,
                r.channel,
                end(r.subject_kind, r.subject_id),
                r.predicate,
                end(r.object_kind, r.object_id),
                texts[r.anchor_ref] if r.anchor_ref else "",
                r.declared_by,
                r.declared_at,
            )
            for r in declared.relations
        ),
        "folders": sorted((paths[f.id], f.declared_by, f.created_at) for f in declared.folders),
        "members": sorted((texts[m.ref], paths[m.folder_id], m.declared_by, m.declared_at) for m in declared.members),
    }


def file_view(name: str) -> dict[str, Any]:
    """The same view of what an export file declares, read from the file alone."""
    lines = _lines(name)
    texts = {f"mem:{r['id']}": r["content"] for r in lines if r["_type"] == "memory"}
    texts.update({f"ep:{r['id']}": r["summary"] for r in lines if r["_type"] == "episode"})
    entities = {r["id"]: r for r in lines if r["_type"] == "entity"}
    names = {i: (r["agent_id"], r["project_id"], r["channel"], r["name"]) for i, r in entities.items()}

    def end(kind: str, row_id: int) -> tuple[str, ...]:
        return ("entity", *names[row_id]) if kind == "entity" else ("record", texts[f"{kind}:{row_id}"])

    folders = {r["id"]: r for r in lines if r["_type"] == "folder"}

    def path(folder_id: int) -> tuple[str, ...]:
        r = folders[folder_id]
        return (*(path(r["parent_id"]) if r["parent_id"] else (r["agent_id"], r["project_id"])), r["name"])

    paths = {folder_id: path(folder_id) for folder_id in folders}
    return {
        "entities": sorted(
            (*names[i], r["declared_by"], r["created_at"], tuple(r["aliases"])) for i, r in entities.items()
        ),
        "mentions": sorted(
            (names[r["entity"]], texts[r["ref"]], r["declared_by"], r["created_at"])
            for r in lines
            if r["_type"] == "mention"
        ),
        "relations": sorted(
            (
                r["agent_id"],
                r["project_id"],
                r["channel"],
                end(r["subject_kind"], r["subject_id"]),
                r["predicate"],
                end(r["object_kind"], r["object_id"]),
                texts[r["anchor_ref"]] if r["anchor_ref"] else "",
                r["declared_by"],
                r["declared_at"],
            )
            for r in lines
            if r["_type"] == "relation"
        ),
        "folders": sorted((paths[r["id"]], r["declared_by"], r["created_at"]) for r in lines if r["_type"] == "folder"),
        "members": sorted(
            (texts[r["ref"]], paths[r["folder_id"]], r["declared_by"], r["declared_at"])
            for r in lines
            if r["_type"] == "folder_member"
        ),
    }


def _empty(memory: Memory) -> bool:
    declared = memory.store_.declared("")
    return not any(
        (declared.entities, declared.mentions, declared.relations, declared.folders, declared.members, declared.aliases)
    )


# -- a CPersona export, whole ----------------------------------------------------------------------


@pytest.mark.parametrize("name", CPERSONA_FILES)
def test_a_cpersona_export_with_a_graph_imports_everything(memory: Memory, name: str) -> None:
    header, lines = _lines(name)[0], _lines(name)
    result = memory.import_memories(input_path=_place(memory, name))
    assert result["ok"] is True and "not_imported" not in result and "dropped" not in result, result
    # every count the header gives is what arrived
    if header.get("entity_count") or header.get("mention_count") or header.get("relation_count"):
        aliases = sum(len(r["aliases"]) for r in lines if r["_type"] == "entity")
        assert result["associations"] == {
            "entities": header["entity_count"],
            "aliases": aliases,
            "mentions": header["mention_count"],
            "relations": header["relation_count"],
        }
    else:
        assert "associations" not in result
    if header.get("folder_count") or header.get("folder_member_count"):
        assert result["folders"] == {"folders": header["folder_count"], "members": header["folder_member_count"]}
    else:
        assert "folders" not in result
    assert graph_view(memory) == file_view(name)  # and it arrived as CPersona held it


def test_the_graph_fixture_is_what_cpersona_wrote() -> None:
    header = _lines(GRAPH)[0]
    assert header["version"] == "cpersona-export/1.2"
    assert (header["entity_count"], header["mention_count"], header["relation_count"]) == (8, 14, 8)
    assert (header["folder_count"], header["folder_member_count"]) == (5, 7)
    kinds = {(r["subject_kind"], r["object_kind"]) for r in _lines(GRAPH) if r["_type"] == "relation"}
    assert kinds == {("entity", "entity"), ("entity", "mem"), ("entity", "ep"), ("mem", "mem")}


@pytest.mark.parametrize("question", json.loads((FIXTURES / ANSWERS).read_text("utf-8")), ids=lambda q: q["tool"])
def test_a_cpersona_users_traverse_and_reconstruct_reach_the_same_records_after_migrating(
    memory: Memory, question: dict[str, Any]
) -> None:
    memory.import_memories(input_path=_place(memory, GRAPH))
    answer = memory.call(question["tool"], question["arguments"])
    assert reached(question["tool"], answer, _texts(memory)) == question["reached"]


def test_the_walk_reaches_through_imported_relations_what_the_question_does_not_name(memory: Memory) -> None:
    memory.import_memories(input_path=_place(memory, GRAPH))
    answer = memory.reconstruct(agent_id=MARA, query="Which firm sends invoices by post?", project_id="home")
    texts = _texts(memory)
    walked = {texts[c["ref"]]: c["why"] for item in answer["items"] for c in item["claims"] if "hops" in c}
    assert walked["The plumber Ines replaced the kitchen tap on 12 May"] == "relation:works for"


def test_the_progress_of_an_import_ends_at_its_total(tmp_path: Path) -> None:
    path = str(FIXTURES / GRAPH)
    total, advanced = _record_count(path), []
    assert total == len(_lines(GRAPH)) - 1  # every record after the header, the graph and folders included
    with open_memory(tmp_path / "p.db") as memory:
        result = memory.call("import_memories", {"input_path": path}, progress=advanced.append, anywhere=True)
        assert result["ok"] is True and sum(advanced) == total
        dry: list[int] = []
        memory.call("import_memories", {"input_path": path, "dry_run": True}, progress=dry.append, anywhere=True)
        assert sum(dry) == total


@pytest.mark.sqlite_only  # the command opens the file it is given
def test_the_import_command_moves_a_cpersona_users_graph(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from cuedrecall.cli import main

    path = str(FIXTURES / GRAPH)
    db = tmp_path / "moved.db"
    assert main(["import", path, "--db", str(db), "--embedding", "hash"]) == 0
    assert json.loads(capsys.readouterr().out)["associations"]["relations"] == 8
    with open_memory(db) as moved:
        assert graph_view(moved) == file_view(GRAPH)


def test_a_second_import_adds_no_declaration(memory: Memory) -> None:
    name = _place(memory, GRAPH)
    first = memory.import_memories(input_path=name)
    before = graph_view(memory), snapshot(memory, AGENTS)
    again = memory.import_memories(input_path=name)
    # what the file declares is all held (CPersona's counts say so), and nothing was added twice
    assert (again["associations"], again["folders"]) == (first["associations"], first["folders"])
    assert "not_imported" not in again
    assert (graph_view(memory), snapshot(memory, AGENTS)) == before


def test_a_dry_run_counts_the_graph_and_folders_and_writes_nothing(memory: Memory, tmp_path: Path) -> None:
    dry = memory.import_memories(input_path=_place(memory, GRAPH), dry_run=True)
    assert _empty(memory) and memory.list_memories(agent_id="")["count"] == 0
    with open_memory(tmp_path / "real.db") as real:
        done = real.import_memories(input_path=_place(real, GRAPH))
    assert {**dry, "dry_run": False} == done


def test_target_agent_id_files_the_graph_and_folders_under_the_target(memory: Memory) -> None:
    result = memory.import_memories(input_path=_place(memory, GRAPH), target_agent_id="newcomer")
    assert "not_imported" not in result
    declared = memory.store_.declared("")
    assert {e.agent_id for e in declared.entities} == {r.agent_id for r in declared.relations} == {"newcomer"}
    assert {f.agent_id for f in declared.folders} == {"newcomer"}
    answer = memory.traverse(agent_id="newcomer", entity="Pier 4", channel="docks")
    assert [e["name"] for e in answer["entities"]] == ["pier four", "night ferry"]


# -- our own export ------------------------------------------------------------------------------------


def test_our_export_round_trips_the_graph_and_folders(memory: Memory, tmp_path: Path) -> None:
    memory.import_memories(input_path=_place(memory, GRAPH))
    # and something declared through our own tools, besides what CPersona declared
    stored = memory.store(agent_id=MARA, message={"content": "Ines fixed the boiler in June"}, project_id="home")
    memory.declare_associations(
        agent_id=MARA,
        project_id="home",
        anchor_ref=stored["ref"] if "ref" in stored else f"mem:{stored['id']}",
        associations={
            "entities": [{"name": "boiler", "aliases": ["heater"]}, {"name": "Ines"}],
            "relations": [{"subject": "Ines", "predicate": "fixed", "object": "boiler"}],
        },
    )
    exported = memory.export_memories(agent_id="", output_path="ours.jsonl")
    assert exported["associations"] == {"entities": 9, "mentions": 16, "relations": 9}
    assert exported["folders"] == {"folders": 5, "members": 7}
    header = json.loads((tmp_path / "exports" / "ours.jsonl").read_text("utf-8").splitlines()[0])
    assert header["version"] == "cuedrecall-export/2"
    with open_memory(tmp_path / "fresh.db") as fresh:
        result = fresh.import_memories(input_path="ours.jsonl")
        assert result["ok"] is True and "not_imported" not in result
        assert graph_view(fresh) == graph_view(memory)
        for question in json.loads((FIXTURES / ANSWERS).read_text("utf-8")):  # the same records, either store
            tool, arguments = question["tool"], question["arguments"]
            here = reached(tool, fresh.call(tool, arguments), _texts(fresh))
            assert here == reached(tool, memory.call(tool, arguments), _texts(memory))


def test_one_agents_export_carries_that_agents_graph_only(memory: Memory, tmp_path: Path) -> None:
    memory.import_memories(input_path=_place(memory, GRAPH))
    memory.export_memories(agent_id=HARBOUR, output_path="harbour.jsonl")
    with open_memory(tmp_path / "fresh.db") as fresh:
        result = fresh.import_memories(input_path="harbour.jsonl")
        assert result["associations"] == {"entities": 2, "aliases": 1, "mentions": 3, "relations": 1}
        assert result["folders"] == {"folders": 1, "members": 1}
        ours = graph_view(memory)
        assert graph_view(fresh) == {
            key: [row for row in rows if HARBOUR in json.dumps(row) or "pier" in json.dumps(row).lower()]
            for key, rows in ours.items()
        }


def test_an_export_with_nothing_declared_is_still_version_1(memory: Memory, tmp_path: Path) -> None:
    memory.store(agent_id=MARA, message={"content": "a plain memory"})
    memory.export_memories(agent_id="", output_path="plain.jsonl")
    header = json.loads((tmp_path / "exports" / "plain.jsonl").read_text("utf-8").splitlines()[0])
    assert header["version"] == "cuedrecall-export/1" and "entity_count" not in header


# -- what cannot be carried ------------------------------------------------------------------------------


def _graph_lines() -> list[dict[str, Any]]:
    return _lines(GRAPH)


def _with(lines: list[dict[str, Any]], kind: str, change: dict[str, Any], which: int = 0) -> list[dict[str, Any]]:
    """The lines with the ``which``-th record of ``kind`` changed."""
    seen = -1
    out = []
    for line in lines:
        if line["_type"] == kind:
            seen += 1
            if seen == which:
                line = {**line, **change}
        out.append(line)
    return out


MALFORMED = {
    "mention of an entity the file lacks": ("mention", {"entity": 99}, "entity 99"),
    "relation to an entity the file lacks": ("relation", {"object_kind": "entity", "object_id": 99}, "entity 99"),
    "relation end of no kind": ("relation", {"subject_kind": "person"}, "subject_kind"),
    "empty predicate": ("relation", {"predicate": "  "}, "predicate"),
    "bad anchor": ("relation", {"anchor_ref": "memory 1"}, "anchor_ref"),
    "empty name": ("entity", {"name": " "}, "name"),
    "long name": ("entity", {"name": "x" * 257}, "256"),
    "aliases not a list": ("entity", {"aliases": "M."}, "aliases"),
    "alias not a name": ("entity", {"aliases": [7]}, "alias"),
    "id not an integer": ("entity", {"id": "1"}, "id"),
    "repeated entity id": ("entity", {"id": 2}, "repeats entity id 2"),
    "unknown declared_by": ("entity", {"declared_by": "someone"}, "declared_by"),
    "project not a string": ("entity", {"project_id": 3}, "project_id"),
    "mention ref not a ref": ("mention", {"ref": "12"}, "ref"),
    "folder parent the file lacks": ("folder", {"parent_id": 99}, "parent 99"),
    "folder member of a folder the file lacks": ("folder_member", {"folder_id": 99}, "folder 99"),
    "folder id true": ("folder", {"id": True}, "id"),
}


@pytest.mark.parametrize("case", MALFORMED, ids=list(MALFORMED))
def test_a_malformed_declaration_refuses_the_whole_file_and_writes_nothing(memory: Memory, case: str) -> None:
    kind, change, named = MALFORMED[case]
    before = snapshot(memory, AGENTS)
    result = memory.import_memories(input_path=_place(memory, "bad.jsonl", _with(_graph_lines(), kind, change)))
    assert failed(result, "'input_path'") and named in result["error"] and f"({kind})" in result["error"], result
    assert snapshot(memory, AGENTS) == before and _empty(memory)


def test_a_folder_tree_that_loops_is_refused(memory: Memory) -> None:
    lines = _graph_lines()
    child = next(r for r in lines if r["_type"] == "folder" and r["parent_id"])
    # the parent placed below its own child
    lines = [
        {**r, "parent_id": child["id"]} if r["_type"] == "folder" and r["id"] == child["parent_id"] else r
        for r in lines
    ]
    result = memory.import_memories(input_path=_place(memory, "loop.jsonl", lines))
    assert failed(result, "'input_path'") and "loops" in result["error"]
    assert _empty(memory)


def test_a_declaration_without_an_agent_needs_a_target(memory: Memory) -> None:
    lines = _with(_graph_lines(), "entity", {"agent_id": ""})
    result = memory.import_memories(input_path=_place(memory, "anon.jsonl", lines))
    assert failed(result, "'target_agent_id'") and "(entity)" in result["error"] and _empty(memory)


def test_a_declaration_naming_a_record_that_did_not_come_along_is_left_out_and_said(memory: Memory) -> None:
    lines = _graph_lines()
    first_memory = next(r for r in lines if r["_type"] == "memory")
    lines = [r for r in lines if r is not first_memory]
    lines[0] = {**lines[0], "memory_count": lines[0]["memory_count"] - 1}
    result = memory.import_memories(input_path=_place(memory, "cut.jsonl", lines))
    ref = f"mem:{first_memory['id']}"
    naming = [r for r in lines if ref in (r.get("ref"), r.get("anchor_ref")) or _names_record(r, first_memory["id"])]
    counts: dict[str, int] = {}
    for r in naming:
        counts[r["_type"]] = counts.get(r["_type"], 0) + 1
    assert result["ok"] is True and result["not_imported"] == counts
    assert len(result["dropped"]) == len(naming) and all(ref in d["reason"] for d in result["dropped"])
    assert result["associations"]["entities"] == 8  # the rest arrived


def _names_record(line: dict[str, Any], memory_id: int) -> bool:
    return line["_type"] == "relation" and ("mem", memory_id) in {
        (line["subject_kind"], line["subject_id"]),
        (line["object_kind"], line["object_id"]),
    }


def test_an_alias_that_names_another_entity_here_is_left_out_and_said(memory: Memory) -> None:
    memory.declare_associations(
        agent_id=MARA, project_id="home", associations={"entities": [{"name": "Pipe Club", "aliases": ["PP"]}]}
    )
    result = memory.import_memories(input_path=_place(memory, GRAPH))
    assert result["not_imported"] == {"alias": 1}
    assert "'PP' already names another entity" in result["dropped"][0]["reason"]
    assert result["associations"]["aliases"] == 4


def test_a_record_filed_already_stays_where_it_is(memory: Memory, tmp_path: Path) -> None:
    name = _place(memory, GRAPH)
    memory.import_memories(input_path=name)
    moved = _with(_lines(GRAPH), "folder", {"name": "elsewhere"}, which=0)  # the harbour bot's one folder
    result = memory.import_memories(input_path=_place(memory, "moved.jsonl", moved))
    assert result["not_imported"] == {"folder_member": 1}
    assert "filed in another folder already" in result["dropped"][0]["reason"]
    assert result["folders"] == {"folders": 5, "members": 6}


# -- the store keeps them --------------------------------------------------------------------------------


def test_deleting_a_record_unfiles_it_and_deleting_an_agent_takes_its_folders(memory: Memory) -> None:
    memory.import_memories(input_path=_place(memory, GRAPH))
    texts = {text: ref for ref, text in _texts(memory).items()}
    ferry = texts["The night ferry leaves from pier four"]
    assert memory.delete_memory(agent_id=HARBOUR, memory_id=int(ferry.split(":")[1]))["ok"] is True
    declared = memory.store_.declared(HARBOUR)
    assert declared.members == [] and len(declared.folders) == 1  # the folder stays, empty
    memory.delete_agent_data(agent_id=MARA)
    declared = memory.store_.declared("")
    assert {f.agent_id for f in declared.folders} == {HARBOUR} and declared.members == []
    assert {e.agent_id for e in declared.entities} == {HARBOUR}


def test_file_record_keeps_the_first_folder(memory: Memory) -> None:
    store = memory.store_
    stored = memory.store(agent_id=MARA, message={"content": "a memory to file"})
    ref = stored["ref"] if "ref" in stored else f"mem:{stored['id']}"
    with store.write() as conn:
        one = store.insert_folder(conn, MARA, "", 0, "One", "one", "agent", "2025-01-01T00:00:00+00:00")
        two = store.insert_folder(conn, MARA, "", one, "Two", "two", "operator", "2025-01-01T00:00:00+00:00")
        assert store.file_record(conn, ref, two, "agent", "2025-01-02T00:00:00+00:00") == two
        assert store.file_record(conn, ref, one, "agent", "2025-01-02T00:00:00+00:00") == two
    assert store.find_folder(MARA, "", one, "two") == two and store.find_folder(MARA, "", 0, "two") is None
    assert store.filed_in([ref, "mem:999"]) == {ref: two}
