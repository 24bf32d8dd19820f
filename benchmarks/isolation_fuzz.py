"""Random tool calls against a store of several agents: no call reads or changes what is not its own (issue 16).

A world of three agents, each with memories in every project x channel x source bucket, episodes, a profile,
entities (some named alike across agents) and relations, locked rows and rows holding extra whitespace. Every
text carries a token of its own (``r12z`` a memory, ``e3z`` an episode, ``p1z`` a profile, ``n4z`` an entity)
so a leak shows in any answer, whatever its shape. Then random calls of every tool that reads or writes an
agent's rows, each as one agent, most aimed at another agent's rows, and after each the rules:

- a read answers only the caller's rows inside the scope asked for: every ref it names and every token it
  shows belongs to a row (profile, entity) the scope may see, unless the caller sent it in the call;
  get_contents reports another agent's refs (and unknown ones) as ``missing``;
- a write changes the rows of the agents it acts for only (the caller; a merge's source and target, the
  source only when moving); a refused call (``ok: false``) changes nothing at all; update, delete, lock and
  unlock of another agent's row are refused;
- a call with a NUL character in any one of its strings (a text, a name, an identifier, a key) is refused
  naming that argument, never a failure inside the server, and changes nothing (PostgreSQL text cannot hold
  a NUL, so neither backend takes one: the same refusal on both, tests/unit/tools/test_named_refusals.py);
- a flood of recalls, each naming a scope never seen (a new source_id), keeps the store's per-scope
  statistics within their bound (docs/caches.md) and still answers only the scope asked for.

Read semantics (tests/contract/test_isolation.py): agent exact; project None = every project, "" = the global pool
only, "X" = X and the pool; channel "" = every channel, "C" = C and ""; a source_id ending in a letter or digit
names one source, any other is a prefix of it; episodes are left out when source_id is set unless channel is.

    python -m benchmarks.isolation_fuzz --calls 10000 --out benchmarks/results/isolation.md
    python -m benchmarks.isolation_fuzz --backend postgres --calls 3000 --out benchmarks/results/isolation.md

The rows are read before and after each call through the store's read methods (``Snapshot``), so the check is
the same on SQLite and on PostgreSQL (``--backend postgres``: a private pgserver, benchmarks/pg.py).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import astuple, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from benchmarks.hostile import TABLES

REPO = Path(__file__).resolve().parents[1]
AGENTS = ("agent-1", "agent-2", "agent-3")
PROJECTS = ("", "p1", "p2")
CHANNELS = ("", "c1", "c2")
SOURCES = ("", "discord:alice", "discord:alice2", "slack:bob", "Discord:carol")
READ_PROJECTS = (None, "", "p1", "p2", "p9")
READ_CHANNELS = ("", "c1", "c2", "c9")
READ_SOURCES = ("", "discord:", "discord:alice", "slack", "Discord:", "x")
SHARED_NAMES = ("Alice", "Harbour Co")  # entities every agent declares: one agent's must never answer another's
WORDS = ("harbour", "ledger", "violin", "orchard", "comet", "lantern", "glacier", "pepper")
CUES = (
    None,
    {"after": "2025-01-01", "before": "2026-01-01", "confidence": "sure"},
    {"ago": {"unit": "months", "value": 1}, "confidence": "vague"},
)
TOKEN = re.compile(r"\b[repn]\d+z\b")
REF = re.compile(r"\b(?:mem|ep):\d+\b")
# What the fuzzer found while it was built, each fixed in the module that leaked, with its test
FOUND = (
    "traverse named the record a relation was declared in (`anchor_ref`) even when that record lay outside the "
    "project, channel or source asked for: fixed in cuedrecall/graph/traverse.py (`Scope.reads`), "
    "tests/contract/test_isolation_tools.py::test_traverse_names_a_relations_anchor_only_when_the_scope_reads_that_record",
)


class Chooser(Protocol):
    """Where the random choices come from: ``random.Random`` here, hypothesis's ``data.draw`` in the tests."""

    def pick(self, items: Sequence[Any]) -> Any: ...
    def integer(self, low: int, high: int) -> int: ...


@dataclass
class RandomChooser:
    rng: random.Random

    def pick(self, items: Sequence[Any]) -> Any:
        return items[self.rng.randrange(len(items))]

    def integer(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)


@dataclass(frozen=True)
class Owner:
    """What a token or a ref belongs to: a memory, an episode, a profile or an entity, and its axes."""

    kind: str  # "memory", "episode", "profile", "entity"
    agent_id: str
    project_id: str = ""
    channel: str = ""
    source_id: str = ""


@dataclass(frozen=True)
class Scope:
    agent_id: str
    project_id: str | None = None
    channel: str = ""
    source_id: str = ""


def in_scope(owner: Owner, scope: Scope) -> bool:
    """The read semantics of the module docstring (a profile is its agent's whole; an entity has no source)."""
    if owner.agent_id != scope.agent_id:
        return False
    if owner.kind == "profile":
        return True
    pool = None if scope.project_id is None else {"", scope.project_id} if scope.project_id else {""}
    if pool is not None and owner.project_id not in pool:
        return False
    if scope.channel and owner.channel not in ("", scope.channel):
        return False
    if owner.kind == "entity":
        return True
    if owner.kind == "episode":
        return not scope.source_id or bool(scope.channel)
    if not scope.source_id:
        return True
    if scope.source_id[-1:].isalnum():
        return owner.source_id == scope.source_id
    return owner.source_id.startswith(scope.source_id)


# -- the world ----------------------------------------------------------------------------------------------


class World:
    """The store under test, read back after every write: who owns each ref and each token."""

    def __init__(self, memory: Any) -> None:
        self.memory = memory
        self.snapshot = Snapshot(memory.store_, AGENTS)
        self.serial = 0
        self.refs: dict[str, Owner] = {}
        self.tokens: dict[str, list[Owner]] = {}

    def token(self, kind: str) -> str:
        self.serial += 1
        return f"{kind}{self.serial}z"

    def text(self, kind: str = "r", rng: random.Random | None = None) -> str:
        words = " ".join((rng or random).choice(WORDS) for _ in range(3))
        return f"{words} {self.token(kind)} about the harbour"

    def populate(self, rng: random.Random) -> None:
        """Every agent: a memory per bucket (some locked, some with extra whitespace), episodes, a profile,
        entities (two named alike in every agent) with mentions and relations."""
        m = self.memory
        for agent in AGENTS:
            refs = []
            for project in PROJECTS:
                for channel in CHANNELS:
                    for source in SOURCES:
                        text = self.text("r", rng) + ("  \n\n\n  tail" if rng.random() < 0.1 else "")
                        message = {"content": text, **({"source": {"type": "User", "id": source}} if source else {})}
                        stored = m.store(
                            agent_id=agent,
                            message=message,
                            project_id=project,
                            channel=channel,
                            lock=rng.random() < 0.1,
                        )
                        refs.append(stored["ref"])
                    m.archive_episode(
                        agent_id=agent,
                        summary=self.text("e", rng),
                        keywords=rng.choice(WORDS),
                        project_id=project,
                        channel=channel,
                    )
            m.update_profile(agent_id=agent, profile=f"profile {self.token('p')} of {agent}")
            for project in ("", "p1"):
                names = [*SHARED_NAMES, f"entity {self.token('n')}"]
                relations = [
                    {"subject": names[0], "predicate": "knows", "object": names[2]},
                    {"subject": refs[0], "predicate": "supports", "object": refs[1]},
                ]
                m.declare_associations(
                    agent_id=agent,
                    project_id=project,
                    anchor_ref=rng.choice(refs),
                    associations={"entities": [{"name": n} for n in names], "relations": relations},
                )
        self.reload()

    def reload(self) -> None:
        """Read every owner back from the store (after any write)."""
        from cuedrecall.store.base import EPISODE, MEMORY

        self.refs, self.tokens = {}, {}
        for kind, prefix, field_name in ((MEMORY, "mem", "content"), (EPISODE, "ep", "summary")):
            for row in self.memory.store_.export_rows(kind, ""):
                source = json.loads(row["source"]).get("id", "") if kind == MEMORY and row["source"] else ""
                owner = Owner(
                    "memory" if kind == MEMORY else "episode",
                    row["agent_id"],
                    row["project_id"],
                    row["channel"],
                    source if isinstance(source, str) else "",
                )
                self.refs[f"{prefix}:{row['id']}"] = owner
                self._own(row[field_name], owner)
        for agent, table in self.snapshot().items():
            for profile in table["profiles"]:
                self._own(str(profile), Owner("profile", agent))
            for entity in table["entities"]:
                self._own(str(entity), Owner("entity", agent, entity[2], entity[3]))

    def _own(self, text: str, owner: Owner) -> None:
        for token in TOKEN.findall(text):
            self.tokens.setdefault(token, []).append(owner)


ENTITY_WINDOW = 4096  # ids probed past the highest entity id seen: entity ids grow by a few a call


class Snapshot:
    """Every agent's rows of every table that holds an agent's data (memories, episodes, profiles, entities and
    their aliases and mentions, relations, calibration, recall precision), read through the store's own read
    methods, so the same snapshot holds on SQLite and PostgreSQL (no SQL outside cuedrecall/store/).

    Entities have no list of their own in the store's API: they are read by id (``Store.entities``), up to
    ``ENTITY_WINDOW`` past the highest id seen so far (kept across snapshots). Relations are read per agent:
    those between two entities (``entity_relations``) and those between two records (``relations_between``);
    a relation between an entity and a record has no read method and is not in the snapshot. Mentions are read
    per agent of the mentioning record (``mentioning``), for every entity of any agent."""

    def __init__(self, store: Any, agents: Sequence[str] = ()) -> None:
        self.store = store
        self.agents = tuple(agents)
        self.highest = 0

    def _entities(self) -> list[Any]:
        found: dict[int, Any] = {}
        start = 1
        while True:
            top = max(self.highest, start - 1) + ENTITY_WINDOW
            batch = self.store.entities(range(start, top + 1))
            found.update(batch)
            self.highest = max([self.highest, *batch])
            if self.highest <= top - ENTITY_WINDOW // 2:
                break
            start = top + 1
        return [found[key] for key in sorted(found)]

    def __call__(self) -> dict[str, dict[str, list[tuple]]]:
        from cuedrecall.store.base import EPISODE, MEMORY, make_ref
        from cuedrecall.store.base import Scope as StoreScope

        out: dict[str, dict[str, list[tuple]]] = {}

        def add(agent: str, table: str, row: tuple) -> None:
            out.setdefault(agent, {t: [] for t in TABLES})[table].append(row)

        store = self.store
        refs: list[str] = []
        record_agents: set[str] = set()
        for kind, table in ((MEMORY, "memories"), (EPISODE, "episodes")):
            for row in store.export_rows(kind, ""):
                add(row["agent_id"], table, tuple((key, _plain(value)) for key, value in sorted(row.items())))
                refs.append(make_ref(kind, row["id"]))
                record_agents.add(row["agent_id"])
        for profile in store.profiles(""):
            add(profile[0], "profiles", tuple(profile))
        for threshold in store.thresholds():
            add(threshold.agent_id, "calibration", astuple(threshold))
        for agent, beta in sorted(store.betas().items()):
            add(agent, "recall_precision", (agent, beta))
        entities = self._entities()
        by_agent: dict[str, list[int]] = {}
        for entity in entities:
            add(entity.agent_id, "entities", astuple(entity))
            by_agent.setdefault(entity.agent_id, []).append(entity.id)
        owner = {entity.id: entity.agent_id for entity in entities}
        ids = sorted(owner)
        for entity_id, hits in sorted(store.aliases(ids).items()):
            for hit in hits:
                add(owner[entity_id], "entity_aliases", (entity_id, hit.written, hit.normalized))
        relations: dict[int, Any] = {}
        for agent in sorted(set(by_agent) | record_agents | set(self.agents)):
            scope = StoreScope(agent)
            if by_agent.get(agent):
                relations.update((r.id, r) for r in store.entity_relations(scope, by_agent[agent]))
            if refs:
                relations.update((r.id, r) for r in store.relations_between(scope, refs))
            if ids and agent in record_agents:
                for entity_id, mentions in sorted(store.mentioning(scope, ids, 1_000_000).items()):
                    for ref in mentions.refs:
                        add(owner[entity_id], "entity_mentions", (entity_id, ref))
        for key in sorted(relations):
            add(relations[key].agent_id, "relations", astuple(relations[key]))
        for tables in out.values():
            tables["entity_mentions"].sort()
        return out


def _plain(value: Any) -> Any:
    """A column value that compares by value (a vector as its bytes)."""
    if hasattr(value, "tobytes"):
        return value.tobytes()
    if isinstance(value, list):
        return tuple(map(_plain, value))
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, default=str)
    return value


# -- the calls ----------------------------------------------------------------------------------------------


@dataclass
class Call:
    """One tool call as ``caller``; ``actors`` the agents whose rows it may change; ``scope`` what its answer
    may show (None: not checked); ``target`` the row a targeted write aims at."""

    tool: str
    args: dict[str, Any]
    caller: str
    actors: frozenset[str] = frozenset()
    scope: Scope | None = None
    target: str | None = None
    target_owner: str | None = None  # the agent owning ``target`` when the call was made
    nul: str | None = None  # the argument a NUL character was put in: the call must be refused naming it


def _read_scope(c: Chooser, caller: str) -> Scope:
    return Scope(caller, c.pick(READ_PROJECTS), c.pick(READ_CHANNELS), c.pick(READ_SOURCES))


def _scope_args(scope: Scope) -> dict[str, Any]:
    return {"project_id": scope.project_id, "channel": scope.channel, "source_id": scope.source_id}


def _query(w: World, c: Chooser) -> str:
    """A query naming any agent's token (most often), a few words, or nothing."""
    tokens = sorted(w.tokens)
    return (
        c.pick(("", "harbour", "harbour lantern", *(tokens[c.integer(0, len(tokens) - 1)] for _ in range(3))))
        if tokens
        else "harbour"
    )


def _some_refs(w: World, c: Chooser, prefix: str = "") -> list[str]:
    refs = sorted(r for r in w.refs if r.startswith(prefix)) or ["mem:1"]
    return [refs[c.integer(0, len(refs) - 1)] for _ in range(c.integer(1, 5))]


def _agent(c: Chooser, unknown: bool = False) -> str:
    return c.pick((*AGENTS, "agent-unknown") if unknown else AGENTS)


def recall_call(w: World, c: Chooser) -> Call:
    caller = _agent(c, unknown=True)
    scope = _read_scope(c, caller)
    tool = c.pick(("recall", "recall", "recall_with_context"))
    args = {
        "agent_id": caller,
        "query": _query(w, c),
        "limit": c.pick((5, 50, 100)),
        "deep": c.pick((False, True)),
        **_scope_args(scope),
    }
    if tool == "recall":
        args.update(trace=c.pick((False, True)), full_content=c.pick((False, True)), time_cue=c.pick(CUES))
    return Call(tool, args, caller, scope=scope)


def reconstruct_call(w: World, c: Chooser) -> Call:
    caller = _agent(c, unknown=True)
    scope = _read_scope(c, caller)
    args = {
        "agent_id": caller,
        "query": _query(w, c) or "harbour",
        "count": c.pick((3, 10)),
        "max_hops": c.integer(0, 2),
        "lite": c.pick((False, True)),
        "trace": c.pick((False, True)),
        "time_cue": c.pick(CUES),
        **_scope_args(scope),
    }
    return Call("reconstruct", args, caller, scope=scope)


def get_contents_call(w: World, c: Chooser) -> Call:
    caller = _agent(c, unknown=True)
    refs: list[Any] = [*_some_refs(w, c), "mem:999999"]
    refs[0] = c.pick((refs[0], {"ref": refs[0], "span": [0, 8]}, {"ref": refs[0], "block": 0}))
    return Call("get_contents", {"agent_id": caller, "refs": refs}, caller, scope=Scope(caller))


def traverse_call(w: World, c: Chooser) -> Call:
    caller = _agent(c, unknown=True)
    scope = _read_scope(c, caller)
    names = [*SHARED_NAMES, *(f"entity {t}" for t in sorted(w.tokens) if t.startswith("n"))]
    args = {
        "agent_id": caller,
        "entity": c.pick(names),
        "max_hops": c.integer(0, 3),
        "limit": 100,
        **_scope_args(scope),
    }
    return Call("traverse", args, caller, scope=scope)


def list_call(w: World, c: Chooser) -> Call:
    caller = _agent(c, unknown=True)
    project = c.pick(READ_PROJECTS)
    tool = c.pick(("list_memories", "list_episodes", "get_profile", "get_recall_precision", "export_memories"))
    args: dict[str, Any] = {"agent_id": caller}
    if tool in ("list_memories", "list_episodes"):
        args.update(project_id=project, limit=500)
    if tool == "export_memories":
        w.serial += 1
        args["output_path"] = f"iso-{w.serial}.jsonl"
    scoped = Scope(caller, project) if tool in ("list_memories", "list_episodes") else Scope(caller)
    return Call(tool, args, caller, scope=scoped)


def row_write_call(w: World, c: Chooser) -> Call:
    """update, delete, lock or unlock of a row of any agent, as any agent."""
    caller = _agent(c)
    tool = c.pick(("update_memory", "delete_memory", "lock_memory", "unlock_memory", "delete_episode"))
    target = _some_refs(w, c, "ep:" if tool == "delete_episode" else "mem:")[0]
    key = "episode_id" if tool == "delete_episode" else "memory_id"
    args: dict[str, Any] = {key: int(target.split(":")[1]), "agent_id": caller}
    if tool == "update_memory":
        args["content"] = w.text("r")
    owner = w.refs.get(target)
    return Call(tool, args, caller, frozenset({caller}), Scope(caller), target, owner and owner.agent_id)


def agent_write_call(w: World, c: Chooser) -> Call:
    """A write on the caller's own memory as a whole: store, episode, profile, associations, repairs, tuning."""
    caller = _agent(c)
    tool = c.pick(
        (
            "store",
            "archive_episode",
            "update_profile",
            "declare_associations",
            "declare_associations",
            "check_health",
            "deep_check",
            "calibrate_threshold",
            "set_recall_precision",
        )
    )
    args: dict[str, Any] = {"agent_id": caller}
    if tool == "store":
        args.update(
            content=c.pick((w.text("r"), *(f"duplicate of {t}" for t in list(w.tokens)[:2]))),
            project_id=c.pick(PROJECTS),
            channel=c.pick(CHANNELS),
        )
    elif tool == "archive_episode":
        args.update(summary=w.text("e"), project_id=c.pick(PROJECTS), channel=c.pick(CHANNELS))
    elif tool == "update_profile":
        args["profile"] = f"profile {w.token('p')} of {caller}"
    elif tool == "declare_associations":
        args.update(_associations(w, c))
    elif tool in ("check_health", "deep_check"):
        args["fix"] = True
    elif tool == "calibrate_threshold":
        args["sample_size"] = 10
    else:
        args["precision"] = c.pick(("strict", "lenient"))
    return Call(tool, args, caller, frozenset({caller}), Scope(caller))


def _associations(w: World, c: Chooser) -> dict[str, Any]:
    """Entities (one named like every agent's), relations between any agent's refs, an anchor of any agent,
    and retractions of relation and mention ids that are most often another agent's."""
    refs = _some_refs(w, c)
    return {
        "anchor_ref": c.pick(refs),
        "project_id": c.pick(PROJECTS),
        "channel": c.pick(CHANNELS),
        "associations": {
            "entities": [{"name": c.pick(SHARED_NAMES)}, {"name": f"entity {w.token('n')}"}],
            "relations": [
                {"subject": c.pick(refs), "predicate": "supports", "object": c.pick(refs)},
                {"subject": c.pick(SHARED_NAMES), "predicate": "knows", "object": "Bob"},
            ],
        },
        "retract": {"relations": [c.integer(1, 40)], "mentions": [{"entity": c.integer(1, 20), "ref": c.pick(refs)}]},
    }


def merge_call(w: World, c: Chooser) -> Call:
    source, target = c.pick(AGENTS), c.pick(AGENTS)
    mode = c.pick(("copy", "move"))
    args = {"source_agent_id": source, "target_agent_id": target, "mode": mode, "dry_run": c.pick((False, True))}
    return Call("merge_memories", args, target, frozenset({target, source} if mode == "move" else {target}))


def _strings(value: Any, where: str) -> list[tuple[str, str]]:
    """(argument path, top-level argument) of every string inside ``value``, keys included."""
    if isinstance(value, str):
        return [(where, where.split(".")[0].split("[")[0])]
    if isinstance(value, list):
        return [found for i, item in enumerate(value) for found in _strings(item, f"{where}[{i}]")]
    if isinstance(value, dict):
        return [(f"{where}.{key}", where.split(".")[0].split("[")[0]) for key in value] + [
            found for key, item in value.items() for found in _strings(item, f"{where}.{key}")
        ]
    return []


def _with_nul(value: Any, path: list[str | int], at: int) -> Any:
    """``value`` with a NUL put into the string at ``path`` (a key when the path's last step names one)."""
    if not path:
        return value[:at] + "\x00" + value[at:]
    step, rest = path[0], path[1:]
    if isinstance(value, list):
        return [_with_nul(item, rest, at) if i == step else item for i, item in enumerate(value)]
    if not rest and isinstance(step, str) and step.startswith("\x01key:"):
        key = step[len("\x01key:") :]
        return {(k[:at] + "\x00" + k[at:] if k == key else k): v for k, v in value.items()}
    return {k: (_with_nul(v, rest, at) if k == step else v) for k, v in value.items()}


def _path(value: Any, want: int) -> tuple[list[str | int], int]:
    """The path of the ``want``-th string inside ``value`` (depth first, a dict's keys before its values)."""
    found: list[list[str | int]] = []

    def walk(item: Any, trail: list[str | int]) -> None:
        if isinstance(item, str):
            found.append(trail)
        elif isinstance(item, list):
            for i, child in enumerate(item):
                walk(child, [*trail, i])
        elif isinstance(item, dict):
            for key in item:
                found.append([*trail, "\x01key:" + key])
            for key, child in item.items():
                walk(child, [*trail, key])

    walk(value, [])
    return found[want % len(found)], len(found)


def nul_call(w: World, c: Chooser) -> Call:
    """Any other call with a NUL put into one of its strings: refused naming that argument, nothing
    written."""
    for _ in range(20):
        base = c.pick(_WEIGHTED)(w, c)
        names = [name for name, value in base.args.items() if _strings(value, name)]
        if names:
            break
    else:
        return base
    name = c.pick(sorted(names))
    path, _ = _path(base.args[name], c.integer(0, 10_000))
    text = base.args[name]
    for step in path:
        text = step[len("\x01key:") :] if isinstance(step, str) and step.startswith("\x01key:") else text[step]
    args = {**base.args, name: _with_nul(base.args[name], path, c.integer(0, len(text)))}
    return Call(base.tool, args, base.caller, frozenset(), base.scope, base.target, base.target_owner, nul=name)


def flood_call(w: World, c: Chooser) -> Call:
    """A recall naming a source never seen before: one more scope statistic the store may keep."""
    w.serial += 1
    caller = _agent(c, unknown=True)
    scope = Scope(caller, c.pick(READ_PROJECTS), c.pick(READ_CHANNELS), f"flood-{w.serial}")
    args = {"agent_id": caller, "query": _query(w, c), **_scope_args(scope)}
    return Call("recall", args, caller, scope=scope)


def wipe_call(w: World, c: Chooser) -> Call:
    caller = _agent(c)
    return Call("delete_agent_data", {"agent_id": caller}, caller, frozenset({caller}), Scope(caller))


# (generator, weight): reads most, a whole agent wiped rarely
CALLS: tuple[tuple[Callable[[World, Chooser], Call], int], ...] = (
    (recall_call, 24),
    (reconstruct_call, 12),
    (get_contents_call, 16),
    (traverse_call, 12),
    (list_call, 16),
    (row_write_call, 24),
    (agent_write_call, 20),
    (merge_call, 3),
    (wipe_call, 1),
)
_WEIGHTED = [make for make, weight in CALLS for _ in range(weight)]
# the hostile calls, drawn beside the others: a NUL in any string, a scope never seen before
HOSTILE: tuple[tuple[Callable[[World, Chooser], Call], int], ...] = ((nul_call, 12), (flood_call, 12))
_ALL = _WEIGHTED + [make for make, weight in HOSTILE for _ in range(weight)]


# -- the rules ------------------------------------------------------------------------------------------------


def shown_leaks(w: World, call: Call, shown: str, prior: tuple[dict[str, Owner], dict[str, list[Owner]]]) -> list[str]:
    """Refs and tokens the answer shows that its scope may not see (those the caller sent excepted); a row is
    judged as it was before the call or after it (a write's answer names the rows it made or removed)."""
    assert call.scope is not None
    sent = json.dumps(call.args, ensure_ascii=False)
    refs, tokens = prior
    leaks = []
    for ref in sorted(set(REF.findall(shown)) - set(REF.findall(sent))):
        owners = [o for o in (refs.get(ref), w.refs.get(ref)) if o is not None]
        if not any(in_scope(o, call.scope) for o in owners):
            leaks.append(f"shows {ref} ({owners[:1]})")
    for token in sorted(set(TOKEN.findall(shown)) - set(TOKEN.findall(sent))):
        owners = tokens.get(token, []) + w.tokens.get(token, [])
        if not any(in_scope(o, call.scope) for o in owners):
            leaks.append(f"shows the text {token} of {owners[:2]}")
    return leaks


def rule_breaks(
    w: World,
    call: Call,
    answer: dict[str, Any],
    shown: str,
    before: dict[str, Any],
    after: dict[str, Any],
    prior: tuple[dict[str, Owner], dict[str, list[Owner]]] | None = None,
) -> list[str]:
    """What the call did that the rules of the module docstring forbid ([] when nothing); ``w`` is the world
    after the call, ``prior`` its refs and tokens before (the same when not given)."""
    prior = prior or (w.refs, w.tokens)
    problems = shown_leaks(w, call, shown, prior) if call.scope is not None else []
    changed = sorted(a for a in set(before) | set(after) if before.get(a) != after.get(a))
    if answer.get("ok") is False and changed:
        problems.append(f"refused ({answer.get('error')}) yet changed the rows of {changed}")
    if set(changed) - call.actors:
        problems.append(f"changed the rows of {sorted(set(changed) - call.actors)}, acting for {sorted(call.actors)}")
    if call.target_owner not in (None, call.caller) and answer.get("ok") is not False:
        problems.append(f"{call.tool} of {call.target} (owned by {call.target_owner}) was not refused")
    if call.tool == "get_contents" and call.nul is None:  # a read: the world is as it was before the call
        asked = [r["ref"] if isinstance(r, dict) else r for r in call.args["refs"]]
        others = [r for r in asked if r not in w.refs or w.refs[r].agent_id != call.caller]
        if sorted(set(answer.get("missing", []))) != sorted(set(others)):
            problems.append(f"missing {answer.get('missing')}, expected {sorted(set(others))}")
    if call.nul is not None:
        error = str(answer.get("error", ""))
        if answer.get("ok") is not False or f"argument '{call.nul}" not in error or "NUL" not in error:
            problems.append(f"a NUL in '{call.nul}' was not refused by name: {error[:200] or answer}")
    if call.tool == "store" and answer.get("result") == "skipped":
        owner = w.refs.get(f"mem:{answer.get('id')}")
        if owner is None or owner.agent_id != call.caller:
            problems.append(f"a store skipped as a duplicate of mem:{answer.get('id')} ({owner})")
    return [f"{call.tool} as {call.caller} {json.dumps(call.args)[:300]}: {p}" for p in problems]


@dataclass
class Outcome:
    """One call's result: the call, its rule breaks, whether it was refused, how many rows' texts it showed."""

    call: Call
    problems: list[str]
    refused: bool
    shown: int


def step(w: World, c: Chooser, make: Callable[[World, Chooser], Call] | None = None) -> Outcome:
    """One random call (of ``make`` when given), made and checked; the world is read back after a write."""
    call = (make or c.pick(_ALL))(w, c)
    prior = (w.refs, w.tokens)  # reload() makes new dicts, so these stay as they were
    before = w.snapshot()
    answer = w.memory.call(call.tool, call.args)
    shown = json.dumps(answer, ensure_ascii=False) + _exported(w, call, answer)
    after = w.snapshot()
    if before != after:
        w.reload()
    problems = rule_breaks(w, call, answer, shown, before, after, prior)
    kept, bound = _scope_stats(w)
    if kept > bound:
        problems.append(f"{call.tool}: the store keeps {kept} scope statistics, over its bound of {bound}")
    if before != after:
        _replenish(w, random.Random(w.serial))
    return Outcome(call, problems, answer.get("ok") is False, len(set(TOKEN.findall(shown))))


def _scope_stats(w: World) -> tuple[int, int]:
    """(scope statistics the store keeps, their bound); (0, 0) where the backend keeps none."""
    grown = getattr(w.memory.store_, "_grown", None)
    return (len(grown), grown._kept.limit) if grown is not None else (0, 0)


def _replenish(w: World, rng: random.Random) -> None:
    """An agent a wipe or a move emptied gets a memory in every project x channel and an episode again, so
    later calls still have its rows to aim at (not counted as calls)."""
    held = {agent: 0 for agent in AGENTS}
    for owner in w.refs.values():
        held[owner.agent_id] = held.get(owner.agent_id, 0) + 1
    empty = [agent for agent in AGENTS if held[agent] < 10]
    for agent in empty:
        for project in PROJECTS:
            for channel in CHANNELS:
                w.memory.store(
                    agent_id=agent,
                    content=w.text("r", rng),
                    project_id=project,
                    channel=channel,
                    source={"type": "User", "id": rng.choice(SOURCES[1:])},
                )
        w.memory.archive_episode(agent_id=agent, summary=w.text("e", rng), channel=rng.choice(CHANNELS))
    if empty:
        w.reload()


def _exported(w: World, call: Call, answer: dict[str, Any]) -> str:
    """The file an export wrote (removed once read): what it shows is checked like an answer."""
    if call.tool != "export_memories" or answer.get("ok") is False:
        return ""
    path = Path(answer.get("path") or answer.get("output_path") or "")
    if not path.is_file():
        path = Path(w.memory.settings.db_path).parent / "exports" / call.args["output_path"]
    text = path.read_text(encoding="utf-8")
    path.unlink()
    return text


def open_world(workdir: Path, seed: int, db_url: str = "") -> World:
    """A fresh store in ``workdir``, or in the PostgreSQL database at ``db_url`` (hash embedder, no background
    work), populated."""
    from cuedrecall.api import Memory
    from cuedrecall.clock import fixed_clock
    from cuedrecall.config import Settings

    settings = Settings.from_env(
        {},
        db_path=str(workdir / "iso.db"),
        db_url=db_url,
        embedding_mode="hash",
        block_build_enabled=False,
        block_retrieval_enabled=False,
        calibrate_on_growth=False,
    )
    world = World(Memory(settings=settings, clock=fixed_clock("2025-11-01T12:00:00+00:00"), background=False))
    (workdir / "exports").mkdir(exist_ok=True)
    world.populate(random.Random(seed))
    return world


@dataclass
class Report:
    calls: dict[str, int] = field(default_factory=dict)
    refused: dict[str, int] = field(default_factory=dict)  # answered ok: false (another agent's row, mostly)
    showing: dict[str, int] = field(default_factory=dict)  # answers (or exported files) showing some row's text
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    nul: int = 0  # calls with a NUL put into one string (each must be refused naming that argument)
    nul_refused: int = 0
    flood: int = 0  # recalls naming a scope never seen


def _flood(call: Call) -> bool:
    return call.nul is None and str(call.args.get("source_id", "")).startswith("flood-")


def run(
    calls: int, seed: int, workdir: Path, progress: Callable[[str], None] | None = None, db_url: str = ""
) -> Report:
    world = open_world(workdir, seed, db_url)
    chooser, report, started = RandomChooser(random.Random(seed)), Report(), time.monotonic()
    try:
        for n in range(calls):
            out = step(world, chooser)
            tool = out.call.tool
            report.calls[tool] = report.calls.get(tool, 0) + 1
            report.refused[tool] = report.refused.get(tool, 0) + out.refused
            report.showing[tool] = report.showing.get(tool, 0) + bool(out.shown)
            report.problems += out.problems
            report.nul += out.call.nul is not None
            report.nul_refused += out.call.nul is not None and out.refused
            report.flood += _flood(out.call)
            if progress and (n + 1) % 1000 == 0:
                progress(f"{n + 1} calls, {len(report.problems)} problems")
    finally:
        world.memory.close()
    report.seconds = time.monotonic() - started
    return report


HEAD = (
    "# Isolation fuzz (issue 16)\n\n"
    "Random calls of every tool that reads or writes an agent's rows, as one of three agents (or an unknown "
    "one), against a store where every text carries a token of its own; after each call the rules of "
    "`benchmarks/isolation_fuzz.py` are checked (no ref or token outside the scope asked for, no row of another "
    "agent changed, a refused call changes nothing, another agent's refs reported missing, a NUL in any string "
    "refused by name with nothing written, a flood of new scopes kept within the statistics' bound). The rows "
    "are read before and after each call through the store's own read methods (`Snapshot`), the same on both "
    "backends; `--backend postgres` runs the store in a private PostgreSQL 16 + pgvector server (pgserver), a "
    "fresh schema per run.\n"
)
TAIL = "## Found while the fuzzer was built, and fixed\n\n" + "\n".join(f"- {f}" for f in FOUND) + "\n"


def markdown(report: Report, command: str, backend: str = "sqlite") -> str:
    """This backend's section of the results file."""
    from benchmarks.pg import BACKEND_TITLES

    rows = "\n".join(
        f"| {tool} | {n} | {report.refused.get(tool, 0)} | {report.showing.get(tool, 0)} |"
        for tool, n in sorted(report.calls.items(), key=lambda kv: -kv[1])
    )
    problems = "\n".join(f"- {p}" for p in report.problems[:50]) or "none"
    return (
        f"## {BACKEND_TITLES[backend]}\n\nCommand: `{command}`\n\n"
        f"- calls: {sum(report.calls.values())}\n- rule breaks: {len(report.problems)}\n"
        f"- hostile calls among them: {report.nul} with a NUL in one string ({report.nul_refused} refused), "
        f"{report.flood} recalls naming a scope never seen\n"
        f"- time: {report.seconds:.0f} s\n\n| tool | calls | refused (ok: false) | answers showing some row's text "
        f"|\n|---|---:|---:|---:|\n{rows}\n\n"
        f"### Rule breaks (the first 50)\n\n{problems}\n"
    )


def main(argv: list[str] | None = None) -> int:
    from benchmarks import pg

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=16)
    pg.add_options(
        parser,
        "a private PostgreSQL server (pgserver), a fresh schema for the run",
        REPO / "benchmarks" / "results" / "isolation.md",
    )
    args = parser.parse_args(argv)
    try:
        with tempfile.TemporaryDirectory(prefix="isolation-") as workdir:
            report = run(
                args.calls,
                args.seed,
                Path(workdir),
                progress=lambda line: print(line, flush=True),
                db_url=pg.db_url(args.backend),
            )
    finally:
        pg.stop()
    command = "python -m benchmarks.isolation_fuzz " + " ".join(argv if argv is not None else sys.argv[1:])
    section = markdown(report, command.strip(), args.backend)
    pg.write_section(args.out, args.backend, section, HEAD, TAIL)
    print(section)
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main())
