"""What one recall works with: its request, its parameters, the scope's facts, and the recorder.

The store is read through here: the arms, then the facts step, and the scope's
statistics once each (pool, span, profile, newest episode), so no stage reads the
same thing twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from cuedrecall.recall.facts import Facts
from cuedrecall.recall.params import RecallParams
from cuedrecall.recall.request import RecallRequest
from cuedrecall.recall.trace import Recorder
from cuedrecall.store.base import BlockHit, Scope, Store
from cuedrecall.text.fts import MIN_TERM, capped_terms, short_runs
from cuedrecall.text.words import capped_words


@dataclass
class RecallContext:
    """The inputs of one recall, handed to every stage with the recorder."""

    store: Store
    request: RecallRequest
    embed: Callable[[], np.ndarray | None]  # the query's vector, asked for once by the first stage that reads it
    params: RecallParams
    now: datetime
    recorder: Recorder = field(default_factory=Recorder)
    started: float = field(default_factory=time.perf_counter)
    terms: list[str] = field(init=False)  # the query's full-text terms, computed once for every lexical arm
    words: list[str] = field(init=False)  # the query's content words, for the word arm
    left_out: dict[str, int] = field(init=False)  # distinct terms and words the caps left out (recall/bounds.py)
    facts: Facts = field(init=False)
    _cache: dict[str, Any] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self.terms, terms_left_out = capped_terms(self.query, self.lexical_terms)
        self.words, words_left_out = capped_words(" ".join((self.query, *self.lexical_terms)))
        self.left_out = {"terms": terms_left_out, "words": words_left_out}
        self.facts = Facts(self.store)

    @property
    def scope(self) -> Scope:
        return self.request.scope

    @property
    def query(self) -> str:
        return self.request.query

    @property
    def lexical_terms(self) -> tuple[str, ...]:
        return self.request.lexical_terms

    @property
    def short_words(self) -> list[str]:
        """The query's two-character CJK words (text/fts.py ``short_runs``), for the short-word arm."""
        return short_runs(self.query)

    @property
    def short_terms(self) -> list[str]:
        """Extra phrases too short for the trigram index (a two-character name such as 東京): matched as
        substrings by the memory keyword arm instead."""
        return [term.strip() for term in self.lexical_terms if 0 < len(term.strip()) < MIN_TERM]

    @property
    def query_vector(self) -> np.ndarray | None:
        """The query's vector (None: blank, or no embedder), embedded when a stage first reads it: the recall's
        own thread embeds it while the full-text arms already run beside it (recall/arms.py)."""
        return self._once("query_vector", self.embed)

    @property
    def blank(self) -> bool:
        return not self.query.strip()

    def _once(self, key: str, read: Any) -> Any:
        if key not in self._cache:
            self._cache[key] = read()
        return self._cache[key]

    def pool(self) -> int:
        """Memories + episodes in scope: the gate's pool size."""
        return self._once("pool", lambda: sum(self.store.pool_counts(self.scope)))

    def profile(self) -> str | None:
        """The agent's profile text, or None without one."""
        found = self._once("profile", lambda: self.store.profile(self.scope.agent_id))
        return found[0] if found else None

    def span(self) -> tuple[float, float] | None:
        """(oldest, newest) memory time in scope, epoch seconds."""
        return self._once("span", lambda: self.store.span(self.scope))

    def blocks(self) -> tuple[list[BlockHit], str] | None:
        """The block arm's records for this query (best first) and the order it read them in, searched once (None:
        this recall does not search blocks): the arms stage searches it while the lexical arms run beside it
        (recall/arms.py), the held seats read it."""
        p = self.params
        if not p.block_retrieval or self.blank or self.query_vector is None:
            return None
        vector = self.query_vector
        return self._once("blocks", lambda: self.store.block_arm(self.scope, vector, p.embedding_model))

    def newest_episode_time(self) -> str | None:
        """When the scope's newest episode was recorded (the episode penalty's boundary)."""
        return self._once("episode_boundary", lambda: self.store.newest_episode_time(self.scope))
