"""Reconstruct's stage 1: the declared names a query contains, and the other names of what they name.

A query that names an entity ("the Kansai branch") should also find records that
call it something else ("Osaka office"). The matched entities' other names become
extra lexical terms for the candidate recall; they are never embedded, so the
vector arms see the query as written. A query that names nothing declared gets no
cues, and the recall runs exactly as without the graph.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cuedrecall.graph.names import normalize_name
from cuedrecall.store.base import GraphStore, NameHit, Scope

MAX_MATCHES = 64  # (name, entity) matches read from one query
MAX_TERMS = 32  # extra terms handed to the recall; the rest are counted


@dataclass(frozen=True)
class Cues:
    entities: list[str]  # matched entities' names as declared, in match order
    terms: list[str]  # extra lexical-only terms: other names/aliases as written, at most MAX_TERMS
    terms_omitted: int  # terms past MAX_TERMS

    def report(self) -> dict[str, Any] | None:
        """What the trace shows under ``cues``: None when nothing matched; keys only when they hold something."""
        if not self.entities:
            return None
        out: dict[str, Any] = {"entities": list(self.entities)}
        if self.terms:
            out["terms"] = list(self.terms)
        if self.terms_omitted:
            out["terms_omitted"] = self.terms_omitted
        return out


NO_CUES = Cues([], [], 0)


def query_cues(store: GraphStore, scope: Scope, query: str) -> Cues:
    """The entities whose names or aliases the query contains (normalized substrings), and their other names.

    Longer names are matched first (then by the name, then entity id), at most
    MAX_MATCHES; a name whose every occurrence overlaps text a longer name already
    claimed does not count ("New York" inside "New York Times" names the paper only).
    Every name and alias of a matched entity, as written, becomes a term unless its
    normalized form is already in the query; deduplicated, at most MAX_TERMS.
    """
    text = normalize_name(query)
    if not text or not store.has_graph(scope.agent_id):
        return NO_CUES
    matched = _matched(text, store.names_within(scope, text))
    entities = store.entities(matched) if matched else {}
    matched = [entity_id for entity_id in matched if entity_id in entities]
    if not matched:
        return NO_CUES
    aliases = store.aliases(matched)
    names = list(dict.fromkeys(entities[entity_id].name for entity_id in matched))
    every_name = [
        hit
        for entity_id in matched
        for hit in (
            NameHit(entity_id, entities[entity_id].name, entities[entity_id].normalized),
            *aliases.get(entity_id, []),
        )
    ]
    terms = _other_names(text, every_name)
    return Cues(names, terms[:MAX_TERMS], max(0, len(terms) - MAX_TERMS))


def _matched(text: str, hits: list[NameHit]) -> list[int]:
    """Entity ids in match order, each once: longest name first, a name shadowed by longer ones not counted."""
    taken = [0] * len(text)  # per character of the query, the length of the longest counted match over it
    order: list[int] = []
    counted = 0
    for hit in sorted(hits, key=lambda hit: (-len(hit.normalized), hit.normalized, hit.entity_id)):
        size = len(hit.normalized)
        # a span is free unless a strictly longer match took part of it: one of equal length does not block,
        # so a name declared for two entities (a project's and the global pool's) matches both
        free = [start for start in _starts(text, hit.normalized) if max(taken[start : start + size]) <= size]
        if not free:
            continue
        for start in free:
            taken[start : start + size] = [max(size, length) for length in taken[start : start + size]]
        counted += 1
        if hit.entity_id not in order:
            order.append(hit.entity_id)
        if counted == MAX_MATCHES:
            break
    return order


def _starts(text: str, term: str) -> list[int]:
    """Where ``term`` occurs in ``text``, overlapping occurrences included."""
    starts, start = [], text.find(term)
    while start >= 0:
        starts.append(start)
        start = text.find(term, start + 1)
    return starts


def _other_names(text: str, names: list[NameHit]) -> list[str]:
    """The names as written whose normalized form the query does not already hold, first spelling of each."""
    seen: set[str] = set()
    out: list[str] = []
    for hit in names:
        if hit.normalized in text or hit.normalized in seen:
            continue
        seen.add(hit.normalized)
        out.append(hit.written)
    return out
