"""The read tools that are not recall: get_contents, list_memories, list_episodes, get_profile."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cuedrecall.errors import ToolArgumentError
from cuedrecall.reconstruct.rows import revision
from cuedrecall.runtime import Runtime
from cuedrecall.store.base import EPISODE, MEMORY, Record, split_ref
from cuedrecall.text.blocks import Span, divide
from cuedrecall.text.excerpts import governing, partitions

MAX_REFS = 20
CONTENTS_BUDGET = 40_000  # characters of text one get_contents answers; the rows past it are deferred
_RANGES = ("block", "span", "node")  # at most one per item
_ITEM_KEYS = frozenset(("ref", "revision", *_RANGES))


@dataclass(frozen=True)
class _Wanted:
    """One item of ``refs``: a record, whole or one range of it (``low``/``high``: blocks or characters)."""

    position: int
    ref: str
    kind: str = "whole"  # "whole" | "block" | "span" | "unsupported" (a node)
    low: int = 0
    high: int = 0
    revision: str | None = None  # served only while the stored text still has this revision

    @property
    def name(self) -> str:
        return f"refs[{self.position}]"


def get_contents(rt: Runtime, agent_id: str, refs: list[Any]) -> dict[str, Any]:
    """The text of records, whole or a range of each.

    An item of ``refs`` is a ref ("mem:12", "ep:3": the whole record, as recall shows it, an episode with its
    label) or an object ``{ref, block?, span?, revision?}`` asking for a range of the record's stored text (an episode's
    summary without its label): ``block`` an index or ``[first, last]`` of the record's blocks (its stored
    block set while block retrieval is on and the set exists, basis "blocks"; else the blocks the divider
    gives now, basis "divided"), ``span`` character offsets ``[start, end)``, the end clamped to the text. A
    range answers the raw text of the range with ``range`` ({start, end}) and ``content_len`` (the whole
    stored text's length); a block range also names its blocks and the blocks that govern it (whole
    sentences, with a qualifier's clause: what an excerpt would widen it to). A ``revision`` (as reconstruct's
    ``expand`` gives it) is served only while the stored text still has it, else answered in ``unresolved``
    ("stale_revision"); CPersona's ``node`` is answered there as "not supported". Another agent's record, or a
    gone one, is ``missing``. A malformed item, or a range outside its record, refuses the whole call,
    naming the item. One answer holds at most CONTENTS_BUDGET characters of text, whole items only (the first
    always): the items past it are answered in ``deferred``, as asked, with ``budget_chars``.
    """
    if not refs:
        raise ToolArgumentError("argument 'refs' must hold at least one ref")
    if len(refs) > MAX_REFS:
        raise ToolArgumentError(f"argument 'refs' holds {len(refs)} refs (max {MAX_REFS} per call)")
    wanted = [_parsed(position, item) for position, item in enumerate(refs)]
    with rt.store.snapshot():
        found = rt.store.records([w.ref for w in wanted])
        owned = {ref: record for ref, record in found.items() if record.agent_id == agent_id}
        ranged = [w.ref for w in wanted if w.kind == "block" and w.ref in owned]
        stored = rt.store.block_spans(ranged) if ranged and _stored_blocks_read(rt) else {}
        answers = [_answer(w, owned.get(w.ref), stored.get(w.ref)) for w in wanted]
    items: list[dict[str, Any]] = []
    missing: list[str] = []
    unresolved: list[dict[str, Any]] = []
    deferred: list[Any] = []
    spent = 0
    for w, answer in zip(wanted, answers):
        if answer is None:
            missing.append(w.ref)
        elif w.kind == "unsupported":
            unresolved.append({"ref": w.ref, "reason": "not supported"})
        elif answer.get("stale"):
            unresolved.append({"ref": w.ref, "reason": "stale_revision"})
        elif deferred or (items and spent + len(answer.get("content", "")) > CONTENTS_BUDGET):
            deferred.append(refs[w.position])  # whole rows only: this one and the rest wait for another call
        else:
            spent += len(answer.get("content", ""))
            items.append(answer)
    out: dict[str, Any] = {"items": items, "missing": missing, "count": len(items)}
    if unresolved:
        out["unresolved"] = unresolved
    if deferred:
        out.update(deferred=deferred, budget_chars=CONTENTS_BUDGET)
    return out


def _stored_blocks_read(rt: Runtime) -> bool:
    """Stored block sets are read as recall reads them: while block retrieval is on and a model can embed."""
    return rt.settings.block_retrieval_enabled and rt.embedder.available


def _refused(name: str, problem: str) -> ToolArgumentError:
    return ToolArgumentError(f"argument 'refs': {name} {problem}")


def _parsed(position: int, item: Any) -> _Wanted:
    """The item's request, or ToolArgumentError naming it (``refs[i]``) when it is malformed."""
    name = f"refs[{position}]"
    if isinstance(item, str):
        return _Wanted(position, _ref(name, item))
    if not isinstance(item, dict):
        raise _refused(name, 'must be a ref ("mem:<id>", "ep:<id>") or an object {ref, block?, span?}')
    unknown = sorted(set(item) - _ITEM_KEYS)
    if unknown:
        raise _refused(
            name,
            f"has unknown field(s) {', '.join(repr(key)[:40] for key in unknown[:5])} "
            f"(accepted: ref, block, span, node, revision)",
        )
    if "ref" not in item:
        raise _refused(name, "has no ref")
    if not isinstance(item["ref"], str):
        raise _refused(name, "has a ref that is not a string")
    ref = _ref(name, item["ref"])
    asked = [key for key in _RANGES if key in item]
    if len(asked) > 1:
        raise _refused(name, f"asks for {' and '.join(asked)}: at most one of block, span, node")
    if "revision" in item and not isinstance(item["revision"], str):
        raise _refused(name, "has a revision that is not a string")
    version = item.get("revision")
    if asked in (["block"], ["node"]):
        low, high = _index_range(name, asked[0], item[asked[0]])
        return _Wanted(position, ref, "block" if asked == ["block"] else "unsupported", low, high, version)
    if asked == ["span"]:
        low, high = _pair(name, "span", item["span"])
        if high <= low:
            raise _refused(name, f"has an empty or inverted span [{low}, {high}]: the end must follow the start")
        return _Wanted(position, ref, "span", low, high, version)
    return _Wanted(position, ref, "whole", revision=version)


def _ref(name: str, value: str) -> str:
    try:
        split_ref(value)
    except ValueError as exc:
        raise _refused(name, f"is {exc}") from None
    return value


def _index(name: str, field: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _refused(name, f"has a {field} that is not an integer of at least 0 (or a pair of them)")
    return value


def _pair(name: str, field: str, value: Any) -> tuple[int, int]:
    if not isinstance(value, list) or len(value) != 2:
        shape = "[start, end]" if field == "span" else "[first, last]"
        raise _refused(name, f"has a {field} that is not a pair {shape}")
    return _index(name, field, value[0]), _index(name, field, value[1])


def _index_range(name: str, field: str, value: Any) -> tuple[int, int]:
    """A block (or node) index, or [first, last] with last >= first."""
    if isinstance(value, list):
        first, last = _pair(name, field, value)
        if last < first:
            raise _refused(name, f"has an inverted {field} range [{first}, {last}]")
        return first, last
    index = _index(name, field, value)
    return index, index


def _answer(
    wanted: _Wanted, record: Record | None, stored: list[tuple[int, int, bool]] | None
) -> dict[str, Any] | None:
    """The item for a request on an owned record (None when it is not the caller's or gone); a range outside
    the record refuses the call."""
    if record is None:
        return None
    if wanted.revision is not None and wanted.revision != revision(record.text):
        return {"stale": True}  # the text changed since the ref's revision was read: its offsets mean nothing now
    item: dict[str, Any] = {"ref": wanted.ref}
    if wanted.kind == "whole":
        item["content"] = record.display_content
    elif wanted.kind == "span":
        text = record.text
        if wanted.low >= len(text):
            raise _refused(
                wanted.name, f"has a span starting at {wanted.low}, past the end of the text ({len(text)} characters)"
            )
        end = min(wanted.high, len(text))
        item.update(content=text[wanted.low : end], range={"start": wanted.low, "end": end}, content_len=len(text))
    elif wanted.kind == "block":
        item.update(_block_range(wanted, record.text, stored))
    item.update(source=record.source, timestamp=record.timestamp)
    if record.msg_id:
        item["id"] = record.msg_id
    return item


def _block_range(wanted: _Wanted, text: str, stored: list[tuple[int, int, bool]] | None) -> dict[str, Any]:
    spans = [Span(start, end, forced) for start, end, forced in stored or ()]
    basis = "blocks" if spans and partitions(text, spans) else "divided"
    if basis == "divided":
        spans = divide(text)
    if wanted.high >= len(spans):
        held = f"{len(spans)} (0 to {len(spans) - 1})" if spans else "none"
        raise _refused(wanted.name, f"asks for block {wanted.high}; the record's blocks ({basis}): {held}")
    start, end = spans[wanted.low].start, spans[wanted.high].end
    return {
        "content": text[start:end],
        "range": {"start": start, "end": end},
        "content_len": len(text),
        "block": {"first": wanted.low, "last": wanted.high, "of": len(spans)},
        "basis": basis,
        "governing": {"first": governing(text, spans, wanted.low)[0], "last": governing(text, spans, wanted.high)[1]},
    }


# What a listing may return in characters, spent front to back; past it, long rows become previews.
MEMORY_LIST_BUDGET = 1_000_000
EPISODE_LIST_BUDGET = 800_000
PREVIEW_CHARS = 500


def list_memories(rt: Runtime, agent_id: str, limit: int, project_id: str | None) -> dict[str, Any]:
    records = rt.store.list_records(MEMORY, agent_id, project_id, limit)
    rows = [
        {
            "id": r.id,
            "ref": r.ref,
            "agent_id": r.agent_id,
            "project_id": r.project_id,
            "channel": r.channel,
            "content": r.text,
            "source": r.source,
            "timestamp": r.timestamp,
            "created_at": r.created_at,
            "locked": r.locked,
        }
        for r in records
    ]
    return {"memories": rows, "count": len(rows), **_budgeted(rows, ("content",), MEMORY_LIST_BUDGET)}


def list_episodes(rt: Runtime, agent_id: str, limit: int, project_id: str | None) -> dict[str, Any]:
    records = rt.store.list_records(EPISODE, agent_id, project_id, limit)
    rows = [
        {
            "id": r.id,
            "ref": r.ref,
            "agent_id": r.agent_id,
            "project_id": r.project_id,
            "channel": r.channel,
            "summary": r.text,
            "keywords": r.keywords,
            "start_time": r.start_time,
            "end_time": r.end_time,
            "time": r.timestamp,
            "created_at": r.created_at,
            "resolved": r.resolved,
        }
        for r in records
    ]
    return {"episodes": rows, "count": len(rows), **_budgeted(rows, ("summary", "keywords"), EPISODE_LIST_BUDGET)}


def _budgeted(rows: list[dict[str, Any]], fields: tuple[str, ...], budget: int) -> dict[str, Any]:
    """Spend the character budget front to back; the first row is always whole, later rows past the budget
    are cut to a preview (``<field>_truncated``, ``<field>_len``; get_contents has the rest)."""
    spent, cut = 0, False
    for position, row in enumerate(rows):
        size = sum(len(row[name]) for name in fields)
        if position == 0 or spent + size <= budget:
            spent += size
            continue
        for name in fields:
            if len(row[name]) > PREVIEW_CHARS:
                row[f"{name}_len"], row[name] = len(row[name]), row[name][:PREVIEW_CHARS]
                row[f"{name}_truncated"] = cut = True
        spent += sum(len(row[name]) for name in fields)
    return {"budget_chars": budget} if cut else {}


def get_profile(rt: Runtime, agent_id: str) -> dict[str, Any]:
    found = rt.store.profile(agent_id)
    return {"profile": found[0] if found else ""}
