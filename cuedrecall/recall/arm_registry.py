"""The recall arms, declared once: name, kind, what each reads, whether the cue searches it over a period, its runner.

Every stage that names an arm reads it here (docs/recall-process.md#the-arms);
docs/architecture.md#adding-an-arm says what a new arm needs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

from cuedrecall.store.base import EPISODE, MEMORY, Hit, Period, Scope, Store

if TYPE_CHECKING:
    import numpy as np

    from cuedrecall.recall.params import RecallParams

Arms = dict[str, list[Hit]]  # arm name -> its ranked hits, in the order the arms ran (the trace's ``arms``)


class Kind(StrEnum):
    """What an arm's raw score is, and so how fusion scales it and which of the gate's signals it feeds."""

    VECTOR = "vector"  # cosine, higher is better; a fused vector arm gives the row its cosine
    LEXICAL = "lexical"  # bm25, better when more negative (rsf negates it); None for the LIKE fallback
    RECENCY = "recency"  # a listing, newest first
    MERGED = "merged"  # other lists merged by reciprocal rank


class Role(StrEnum):
    """Where an arm's list goes."""

    FUSED = "fused"  # an ordinary arm: every recall with a query runs it and fusion joins it (recall/fusion.py)
    LISTING = "listing"  # the blank query's list
    PERIOD = "period"  # run only over a cue's period, one of the cue arm's lists (recall/cue_arm.py)
    SEAT = "seat"  # read by a held seat after the count, never fused
    CUE = "cue"  # a cue arm's merged list


RUN_HERE = (Role.FUSED, Role.LISTING, Role.PERIOD)  # roles whose arms their stage runs through the runner


class Reads(StrEnum):
    """What an arm searches; a memory or an episode is the store's kind (``store.base.MEMORY``, ``EPISODE``)."""

    MEMORIES = MEMORY
    EPISODES = EPISODE
    BLOCKS = "block"


class ArmInputs(Protocol):
    """What a runner may read of the recall (``recall.context.RecallContext`` is one)."""

    @property
    def store(self) -> Store: ...
    @property
    def scope(self) -> Scope: ...
    @property
    def query(self) -> str: ...
    @property
    def query_vector(self) -> np.ndarray | None: ...
    @property
    def params(self) -> RecallParams: ...
    @property
    def terms(self) -> list[str]: ...
    @property
    def words(self) -> list[str]: ...
    @property
    def short_terms(self) -> list[str]: ...
    @property
    def short_words(self) -> list[str]: ...


@dataclass(frozen=True)
class Run:
    """One run of an arm: how deep, over which period, which records (for an arm reading one kind a run)."""

    depth: int
    found: Arms  # the lists this pass already ran (the far arm leaves out what the near arm found)
    period: Period | None = None
    records: str = MEMORY


Runner = Callable[[ArmInputs, Run], list[Hit] | None]  # None: this recall does not run the arm


def _unweighted(params: RecallParams) -> float:
    return 1.0


@dataclass(frozen=True)
class Arm:
    """One arm's declaration."""

    name: str  # its key in the trace's ``arms``, in fusion's votes and in a candidate's ranks
    kind: Kind
    role: Role
    reads: tuple[Reads, ...]
    stage: str  # the module that runs it
    period: bool = False  # the cue arm runs it over the cue's period (docs/recall-process.md#the-cue-arm)
    runner: Runner | None = None  # None: its stage runs it (a held seat, a cue arm)
    listed: bool = False  # in the trace's ``arms`` (empty) even when this recall did not run it
    weight: Callable[[RecallParams], float] = field(default=_unweighted)  # its votes' factor in fusion
    content_words: bool = False  # searches a query's content words only: the gate counts its match (recall/gate.py)
    beside: bool = False  # reads no other arm's list: may run on a helper thread beside the others (recall/arms.py)

    def run(self, ctx: ArmInputs, run: Run) -> list[Hit] | None:
        if self.runner is None:
            raise TypeError(f"the {self.name} arm is run by {self.stage}")
        return self.runner(ctx, run)


class Registry:
    """The declared arms in order, and the views of them the stages read; ``register`` adds one."""

    fused: tuple[Arm, ...]
    fused_names: tuple[str, ...]
    vector_names: tuple[str, ...]
    lexical_names: tuple[str, ...]
    content_word_names: tuple[str, ...]
    period_lists: tuple[Arm, ...]
    fused_here: tuple[Arm, ...]  # the fused arms the recall's own thread runs, in order
    fused_beside: tuple[Arm, ...]  # those a helper thread may run beside them (``Arm.beside``)

    def __init__(self, arms: Iterable[Arm]) -> None:
        self._arms: dict[str, Arm] = {}
        for arm in arms:
            self.register(arm)

    def register(self, arm: Arm) -> None:
        """Add an arm after those declared; it runs, fuses and is traced like them (by its role)."""
        if arm.name in self._arms:
            raise ValueError(f"arm {arm.name!r} is declared twice")
        if arm.runner is None and arm.role in RUN_HERE:
            raise ValueError(f"arm {arm.name!r} needs a runner")
        self._arms[arm.name] = arm
        self._views()

    def unregister(self, name: str) -> None:
        del self._arms[name]
        self._views()

    @contextmanager
    def registered(self, arm: Arm) -> Iterator[Arm]:
        """The arm registered for the block's length (a test's dummy arm)."""
        self.register(arm)
        try:
            yield arm
        finally:
            self.unregister(arm.name)

    def __getitem__(self, name: str) -> Arm:
        return self._arms[name]

    def __iter__(self) -> Iterator[Arm]:
        return iter(self._arms.values())

    def _views(self) -> None:
        arms = tuple(self._arms.values())
        self.fused = tuple(arm for arm in arms if arm.role is Role.FUSED)
        self.fused_names = tuple(arm.name for arm in self.fused)
        self.vector_names = tuple(arm.name for arm in self.fused if arm.kind is Kind.VECTOR)
        self.lexical_names = tuple(arm.name for arm in self.fused if arm.kind is Kind.LEXICAL)
        self.content_word_names = tuple(arm.name for arm in self.fused if arm.content_words)
        self.period_lists = tuple(arm for arm in arms if arm.period and arm.role in RUN_HERE)
        self.fused_here = tuple(arm for arm in self.fused if not arm.beside)
        self.fused_beside = tuple(arm for arm in self.fused if arm.beside)


# -- the runners: one Store method each, isolation inside the query ------------------------------------


def _vector_near(ctx: ArmInputs, run: Run) -> list[Hit] | None:
    if ctx.query_vector is None:
        return None
    p = ctx.params
    return ctx.store.vector_near(ctx.scope, ctx.query_vector, floor=p.vector_floor, depth=run.depth, window=p.window)


def _vector_far(ctx: ArmInputs, run: Run) -> list[Hit] | None:
    p = ctx.params
    if ctx.query_vector is None or not p.far_enabled:
        return None
    far = ctx.store.vector_far(
        ctx.scope,
        ctx.query_vector,
        floor=p.vector_floor,
        limit=min(run.depth, p.far_limit or run.depth),
        window=p.window,
        reach=p.reach,
    )
    near = {hit.ref for hit in run.found.get(VECTOR_NEAR.name, [])}
    return [hit for hit in far if hit.ref not in near]


def _vector_in_period(ctx: ArmInputs, run: Run) -> list[Hit] | None:
    if ctx.query_vector is None or run.period is None:
        return None
    return ctx.store.vector_in_period(
        ctx.scope, run.records, ctx.query_vector, floor=ctx.params.vector_floor, depth=run.depth, period=run.period
    )


def _episode_fts(ctx: ArmInputs, run: Run) -> list[Hit] | None:
    if not ctx.params.fts_enabled:
        return None
    return ctx.store.episode_fts(ctx.scope, ctx.terms, depth=run.depth, period=run.period)


def _memory_keyword(ctx: ArmInputs, run: Run) -> list[Hit] | None:
    if not ctx.params.fts_enabled:
        return None
    return ctx.store.memory_keyword(
        ctx.scope, ctx.terms, ctx.query, depth=run.depth, period=run.period, phrases=ctx.short_terms
    )


def _memory_words(ctx: ArmInputs, run: Run) -> list[Hit] | None:
    if not (ctx.params.fts_enabled and ctx.params.word_arm):
        return None
    return ctx.store.memory_words(ctx.scope, ctx.words, depth=run.depth)


def _memory_short_words(ctx: ArmInputs, run: Run) -> list[Hit] | None:
    """Memories holding one of the query's two-character CJK words, newest first: the lexical evidence the
    trigram index cannot give them (docs/recall-process.md#short-words)."""
    words = ctx.short_words
    if not (ctx.params.fts_enabled and ctx.params.short_word_arm and words):
        return None
    return ctx.store.memory_keyword(ctx.scope, [], "", depth=run.depth, period=run.period, phrases=words)


def _newest(ctx: ArmInputs, run: Run) -> list[Hit] | None:
    return ctx.store.newest(ctx.scope, run.records, run.depth, period=run.period)


def _far_weight(params: RecallParams) -> float:
    return params.far_weight


# -- the declarations, in the order fusion joins and the trace lists them ------------------------------

BOTH = (Reads.MEMORIES, Reads.EPISODES)
MEMORIES = (Reads.MEMORIES,)
EPISODES = (Reads.EPISODES,)
ARMS_STAGE = "recall/arms.py"
CUE_STAGE = "recall/cue_arm.py"

VECTOR_NEAR = Arm("vector_near", Kind.VECTOR, Role.FUSED, BOTH, ARMS_STAGE, runner=_vector_near, listed=True)
VECTOR_FAR = Arm(
    "vector_far", Kind.VECTOR, Role.FUSED, BOTH, ARMS_STAGE, runner=_vector_far, listed=True, weight=_far_weight
)
VECTOR_IN_PERIOD = Arm(
    "vector_in_period", Kind.VECTOR, Role.PERIOD, BOTH, CUE_STAGE, period=True, runner=_vector_in_period
)
EPISODE_FTS = Arm(
    "episode_fts", Kind.LEXICAL, Role.FUSED, EPISODES, ARMS_STAGE, period=True, runner=_episode_fts, listed=True
)
MEMORY_KEYWORD = Arm(
    "memory_keyword",
    Kind.LEXICAL,
    Role.FUSED,
    MEMORIES,
    ARMS_STAGE,
    period=True,
    runner=_memory_keyword,
    listed=True,
    beside=True,
)
MEMORY_WORDS = Arm(
    "memory_words",
    Kind.LEXICAL,
    Role.FUSED,
    MEMORIES,
    ARMS_STAGE,
    runner=_memory_words,
    content_words=True,
    beside=True,
)
MEMORY_SHORT_WORDS = Arm(
    "memory_short_words",
    Kind.LEXICAL,
    Role.FUSED,
    MEMORIES,
    ARMS_STAGE,
    runner=_memory_short_words,
    content_words=True,
    beside=True,
)
NEWEST = Arm("newest", Kind.RECENCY, Role.LISTING, BOTH, ARMS_STAGE, period=True, runner=_newest)
BLOCK = Arm("block", Kind.VECTOR, Role.SEAT, (Reads.BLOCKS,), "recall/block_arm.py")
FAR = Arm("far", Kind.VECTOR, Role.SEAT, MEMORIES, "recall/far_seats.py")
CUE = Arm("cue", Kind.MERGED, Role.CUE, BOTH, CUE_STAGE, period=True)
PROPAGATED_CUE = Arm("propagated_cue", Kind.MERGED, Role.CUE, BOTH, "recall/cue_propagation.py", period=True)
PROPAGATION = Arm("propagation", Kind.MERGED, Role.SEAT, BOTH, "recall/propagation.py")

ARMS = Registry(
    [
        VECTOR_NEAR,
        VECTOR_FAR,
        VECTOR_IN_PERIOD,
        EPISODE_FTS,
        MEMORY_KEYWORD,
        MEMORY_WORDS,
        MEMORY_SHORT_WORDS,
        NEWEST,
        BLOCK,
        FAR,
        CUE,
        PROPAGATED_CUE,
        PROPAGATION,
    ]
)


def cue_stage(stage: int) -> str:
    """The cue arm's name in the trace for one of its stages: ``cue``, then ``cue_stage_1``, ..."""
    return CUE.name if stage == 0 else f"{CUE.name}_stage_{stage}"
