"""Shared loading and evaluation for ``benchmarks.retrieval`` and ``benchmarks.time_cue``.

Loading: each conversation goes into a fresh store of its own (one agent per
conversation). Every turn is stored with ``Memory.store`` exactly as a client
would store it (its timestamp, its msg_id, the speaker as source), and every
session summary with ``Memory.archive_episode`` over that session's time. The
only shortcut is the embedding: the texts are embedded in batches first
(``PrefetchEmbedder``) and ``store`` then finds their vectors ready, so a store
built here holds what one-at-a-time ``store`` calls would have written.

Evaluation: a recall's ``messages`` run worst to best (the last is the best), so
the ranking read here is the reversed list of refs. Relevance is binary: a ref is
relevant when it is the stored ref of one of the question's evidence turns.
"""

from __future__ import annotations

import argparse
import math
import os
import pickle
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.datasets import Conversation, Question, generate_long_span, load_locomo

# the studies reach the report helpers and the mean through harness (h.markdown_table, h.mean...)
from benchmarks.report import Rows, code_tree, command_line, markdown_table, print_table, section  # noqa: F401
from benchmarks.stats import mean  # noqa: F401
from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock
from cuedrecall.config import Settings
from cuedrecall.embed import make_embedder
from cuedrecall.handlers.calibrate import TASK as CALIBRATE
from cuedrecall.text.sanitise import sanitise

REPO = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results"
# LoCoMo is never vendored: a study takes its path (--locomo PATH), or CUEDRECALL_LOCOMO names it once for all
DEFAULT_LOCOMO: str | None = os.environ.get("CUEDRECALL_LOCOMO") or None
LIMIT = 10
LOCOMO_CATEGORIES = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop", "5": "adversarial"}
LOCOMO_EXCLUDED = frozenset({"5"})  # adversarial: left out of retrieval metrics


# -- metrics over a best-first ranking of refs ------------------------------------------------


def write_report(out: Path, lines: list[str]) -> None:
    """A results file from its lines (its folder made when missing), echoed to the terminal."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join([*lines, ""]), encoding="utf-8")
    print(out.read_text(encoding="utf-8"))


def dcg(ranked: Sequence[str], gold: Iterable[str]) -> float:
    """Discounted cumulative gain with binary relevance: sum of 1/log2(rank + 1) over relevant ranks."""
    relevant = set(gold)
    return sum(1.0 / math.log2(i + 2) for i, ref in enumerate(ranked) if ref in relevant)


def ndcg(ranked: Sequence[str], gold: Iterable[str], k: int | None = None) -> float:
    """NDCG of the first k refs (all of them when k is None).

    The ideal ranking puts min(|gold|, length) relevant refs first, where length is
    k, or the list's own length when k is None: "NDCG over the returned rows".
    """
    relevant = set(gold)
    if not relevant:
        return 0.0
    top = list(ranked) if k is None else list(ranked)[:k]
    length = len(top) if k is None else k
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(relevant), length)))
    return dcg(top, relevant) / ideal if ideal else 0.0


def recall_any(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """1.0 when any gold ref is among the first k, else 0.0."""
    relevant = set(gold)
    return float(any(ref in relevant for ref in list(ranked)[:k]))


def recall_all(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """1.0 when every gold ref is among the first k, else 0.0 (0.0 for an empty gold set)."""
    relevant = set(gold)
    return float(bool(relevant) and relevant <= set(list(ranked)[:k]))


def session_recall(sessions: Sequence[int | None], gold: Iterable[int], k: int) -> float:
    """1.0 when a session holding evidence is among the sessions of the first k rows (LongMemEval's session
    recall): ``sessions`` is each returned row's session, best first (None for a row of no session)."""
    wanted = set(gold)
    return float(bool(wanted) and any(s in wanted for s in sessions[:k]))


def distinct_session_recall(sessions: Sequence[int | None], gold: Iterable[int], k: int) -> float:
    """1.0 when a session holding evidence is among the first k distinct sessions of the answer, in the order the
    rows first name them (the figure engram-search reports as session recall@k): rows of a session already
    counted, and rows of no session, take no place."""
    wanted = set(gold)
    distinct = list(dict.fromkeys(s for s in sessions if s is not None))[:k]
    return float(bool(wanted) and any(s in wanted for s in distinct))


def best_rank(ranked: Sequence[str], gold: Iterable[str]) -> int | None:
    """The 1-based rank of the first gold ref, or None when none is in the list."""
    relevant = set(gold)
    return next((i + 1 for i, ref in enumerate(ranked) if ref in relevant), None)


def reciprocal_rank(ranked: Sequence[str], gold: Iterable[str]) -> float:
    rank = best_rank(ranked, gold)
    return 0.0 if rank is None else 1.0 / rank


def retrieval_metrics(ranked: Sequence[str], gold: Sequence[str]) -> dict[str, float]:
    """The retrieval table's metrics for one question."""
    return {
        "recall_any@5": recall_any(ranked, gold, 5),
        "recall_any@10": recall_any(ranked, gold, 10),
        "recall_all@10": recall_all(ranked, gold, 10),
        "ndcg@10": ndcg(ranked, gold, 10),
        "mrr": reciprocal_rank(ranked, gold),
    }


# -- reading a recall response ------------------------------------------------------------------


def best_first(response: dict[str, Any]) -> list[str]:
    """The refs of the returned rows, best first (the response lists them worst first)."""
    return [m["ref"] for m in reversed(response.get("messages") or []) if "ref" in m]


def seat_refs(response: dict[str, Any]) -> list[str]:
    """Refs of rows admitted by a held seat (match_reason.admission == "reservation"), best first."""
    return [
        m["ref"]
        for m in reversed(response.get("messages") or [])
        if "ref" in m and (m.get("match_reason") or {}).get("admission") == "reservation"
    ]


# -- embedding in batches -----------------------------------------------------------------------


class PrefetchEmbedder:
    """An embedder that hands out vectors computed ahead in batches, and embeds anything else itself.

    It is shared by every store of a run, so each text (turn, summary, question) is
    embedded once however many stores and fusion modes read it.
    """

    def __init__(self, base: Any, batch: int = 64, cache: Path | None = None) -> None:
        self.base = base
        self.batch = batch
        self._vectors: dict[str, np.ndarray] = {}
        # an optional file of vectors an earlier run of the same model computed (``--embed-cache``): read here,
        # written by ``save``; the vectors are the model's own, so a run with it stores what one without would
        self.cache = None if cache is None else Path(cache) / f"{_safe(base.model)}.pkl"
        if self.cache is not None and self.cache.exists():
            with self.cache.open("rb") as f:
                self._vectors = pickle.load(f)

    def save(self) -> None:
        """Write every vector computed so far to the cache file (nothing without one)."""
        if self.cache is None:
            return
        self.cache.parent.mkdir(parents=True, exist_ok=True)
        part = self.cache.with_suffix(f".{os.getpid()}.part")  # two runs sharing the cache never share a part file
        with part.open("wb") as f:
            pickle.dump(self._vectors, f, protocol=pickle.HIGHEST_PROTOCOL)
        part.replace(self.cache)

    @property
    def mode(self) -> str:
        return self.base.mode

    @property
    def model(self) -> str:
        return self.base.model

    @property
    def available(self) -> bool:
        return self.base.available

    def prefetch(self, texts: Iterable[str], progress: Callable[[int], None] | None = None) -> None:
        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        for start in range(0, len(missing), self.batch):
            chunk = missing[start : start + self.batch]
            for text, vector in zip(chunk, self.base.embed(chunk)):
                self._vectors[text] = vector
            if progress:
                progress(len(chunk))

    def pending(self, texts: Iterable[str]) -> int:
        """How many distinct texts among these have no vector yet."""
        return len({t for t in texts if t not in self._vectors})

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        items = list(texts)
        self.prefetch(items)
        return np.stack([self._vectors[t] for t in items]) if items else self.base.embed(items)


def new_embedder(mode: str, cache: Path | None = None) -> PrefetchEmbedder:
    return PrefetchEmbedder(make_embedder(mode), cache=cache)


def prefetched_embedder(
    mode: str, datasets: Sequence[Dataset], progress: Any, cache: Path | None = None
) -> PrefetchEmbedder:
    """An embedder that has already embedded every text of the datasets, with a progress bar."""
    embedder = new_embedder(mode, cache)
    texts = dataset_texts(datasets)
    task = progress.add_task(f"embedding ({mode})", total=embedder.pending(texts))
    embedder.prefetch(texts, lambda n: progress.advance(task, n))
    embedder.save()
    return embedder


def each_embedder(
    args: argparse.Namespace, console: Any, datasets: Sequence[Dataset], label: str, total: int
) -> Iterator[tuple[PrefetchEmbedder, Callable[[], None]]]:
    """Under one progress bar of ``total`` steps (``label``): each embedder ``--embedders`` names, every text of
    the datasets embedded first (``--embed-cache`` where the study has it), with the step that advances the bar."""
    from rich.progress import Progress

    with Progress(console=console) as progress:
        task = progress.add_task(label, total=total)
        for name in args.embedders:
            embedder = prefetched_embedder(name, datasets, progress, getattr(args, "embed_cache", None))
            yield embedder, lambda: progress.advance(task)


# The block arm and its background build, off for a run that does not measure them (as CPERSONA_* variables,
# so a variant may turn them on).
WITHOUT_BLOCKS = {"CPERSONA_BLOCK_BUILD_ENABLED": "false", "CPERSONA_BLOCK_RETRIEVAL_ENABLED": "false"}
# The shipped defaults: blocks built and searched, as a user runs them. The build is not left to a thread: the
# replay drains the queue after each batch of records (``ConversationStore.advance``), so every question finds
# the blocks of everything stored before it.
SHIPPED = {"CPERSONA_BLOCK_BUILD_ENABLED": "true", "CPERSONA_BLOCK_RETRIEVAL_ENABLED": "true"}
DEFAULTS = {"shipped": SHIPPED, "no-blocks": WITHOUT_BLOCKS}


def add_defaults_option(parser: argparse.ArgumentParser, default: str) -> None:
    """``--defaults shipped|no-blocks`` and ``--embed-cache`` for a study that may run at the shipped defaults."""
    parser.add_argument(
        "--defaults",
        choices=sorted(DEFAULTS),
        default=default,
        help="shipped: every setting at its default, blocks built (drained before each question) "
        "and searched; no-blocks: the same with the block build and arm off, as the "
        "figures before blocks were measured (default: %(default)s)",
    )
    add_embed_cache_option(parser)


def add_embed_cache_option(parser: argparse.ArgumentParser) -> None:
    """``--embed-cache DIR``: the vectors a study computes, kept and reused by a later run (``PrefetchEmbedder``)."""
    parser.add_argument(
        "--embed-cache",
        type=Path,
        metavar="DIR",
        help="keep the computed vectors in DIR and reuse them in a later run (default: none)",
    )


def settings_for(embedder: str, mode: str, path: Path | str, environ: Mapping[str, str] | None = None) -> Settings:
    """Default settings (the environment is not read, so a run does not depend on it).

    ``environ``: ``CPERSONA_*`` values a run sets on purpose (a variant), read as the environment would be.
    Blocks are off unless a variant turns them on: the studies' figures were measured before blocks existed,
    and a background build would make answers depend on how far it got.
    """
    return Settings.from_env(
        {**WITHOUT_BLOCKS, **(environ or {})}, embedding_mode=embedder, recall_mode=mode, db_path=str(path)
    )


def parse_setting(text: str) -> dict[str, str]:
    """``CPERSONA_NAME=VALUE`` (or ``CUEDRECALL_NAME=VALUE``) -> the environment ``settings_for`` reads it from.

    A name no setting has, or a value the setting refuses, fails here, before any store is built.
    """
    name, sep, value = text.partition("=")
    name = name.strip().upper()
    known = {variable for variable, _default, _doc in Settings.describe()}
    if not sep or name not in known:
        raise argparse.ArgumentTypeError(f"wants CPERSONA_NAME=VALUE naming a known setting, not {text!r}")
    environ = {name: value.strip()}
    try:
        Settings.from_env(environ)
    except Exception as exc:  # SettingsError: the message names the variable and what it accepts
        raise argparse.ArgumentTypeError(str(exc)) from exc
    return environ


# -- loading a conversation ---------------------------------------------------------------------

HISTORIES = ("asked", "all")
# asked: the store holds what was stored before the question was asked (a replay in time order);
# all:   the whole conversation is stored first, so a question may see records from after its asked_at.


class ConversationStore:
    """One conversation in a fresh database of its own, one agent, one fusion mode; filled in time order.

    Turns are stored with ``Memory.store`` as a client would store them (timestamp,
    msg_id, the speaker as source), and each session summary is archived with
    ``Memory.archive_episode`` over the session's time once the session is over.
    While a record is written the clock reads the record's own time, so
    ``created_at`` is what a live store would have recorded.
    """

    def __init__(
        self,
        conversation: Conversation,
        embedder: PrefetchEmbedder,
        mode: str,
        workdir: Path,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.conversation = conversation
        self.agent_id = conversation.conv_id
        self.path = workdir / f"{_safe(conversation.conv_id)}-{embedder.mode}-{mode}.db"
        for stale in workdir.glob(self.path.name + "*"):
            stale.unlink()
        settings = settings_for(embedder.mode, mode, self.path, environ)
        embedder.prefetch(store_texts(conversation, settings.max_content_length))
        # no builder thread: while blocks are built, ``advance`` runs the queue itself after each batch of
        # records, so every question sees the blocks of everything stored before it (no race with a thread)
        self.memory = Memory(self.path, settings=settings, embedder=embedder, background=False)
        self.block_tasks = 0  # block-build tasks run by ``advance``
        self.calibrations = 0  # and calibrations
        self.block_build_s = 0.0  # and the seconds they took
        self.refs: dict[str, str] = {}  # msg_id -> ref; a turn skipped as a duplicate maps to the row it repeats
        self.episodes: dict[int, str] = {}  # session number -> episode ref
        self.times: dict[str, datetime] = {}  # ref -> record time (an episode's start time)
        self.duplicates = 0  # turns the store skipped as duplicate content
        self._turns = sorted(conversation.turns, key=lambda t: datetime.fromisoformat(t.timestamp))
        self._sessions = sorted(conversation.sessions, key=lambda s: datetime.fromisoformat(s.end_time))
        self._next_turn = self._next_session = 0

    def close(self) -> None:
        self.memory.close()

    def __enter__(self) -> ConversationStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def using(self, **overrides: Any) -> Iterator[None]:
        """Recall with these settings changed (``gate_relief=False``, ``recall_cue_stages=3``), then as before.

        Recall reads its settings afresh on every call, so one store built once is recalled under several
        policies side by side; the stored rows, blocks and calibration are the same for each.
        """
        before = self.memory.runtime.settings
        self.memory.runtime = replace(self.memory.runtime, settings=replace(before, **overrides))
        try:
            yield
        finally:
            self.memory.runtime = replace(self.memory.runtime, settings=before)

    def advance(self, until: str | None = None, progress: Callable[[int], None] | None = None) -> int:
        """Store every turn timed at or before ``until`` (everything when None); returns how many records.

        The queue is then drained in this thread: while blocks are built (a variant turns them on), so the
        records just written have their blocks before anything is asked, and the calibrations the defaults
        queue as the store grows (at 50, 200 and 1,000 memories), so a question finds them run.
        """
        limit = None if until is None else datetime.fromisoformat(until)
        written = 0
        while self._next_turn < len(self._turns) or self._next_session < len(self._sessions):
            turn = self._turns[self._next_turn] if self._next_turn < len(self._turns) else None
            session = self._sessions[self._next_session] if self._next_session < len(self._sessions) else None
            turn_at = datetime.fromisoformat(turn.timestamp) if turn else None
            session_at = datetime.fromisoformat(session.end_time) if session else None
            if session_at is not None and (turn_at is None or session_at < turn_at):
                if limit is not None and session_at > limit:
                    break
                self._archive(session)
                self._next_session += 1
            else:
                if limit is not None and turn_at > limit:
                    break
                self._store(turn)
                self._next_turn += 1
            written += 1
            if progress:
                progress(1)
        if written and self.memory.blocks is not None:
            calibrations = self.memory.store_.pending_tasks(CALIBRATE)
            started = time.perf_counter()
            self.block_tasks += self.memory.blocks.drain() - calibrations
            self.block_build_s += time.perf_counter() - started  # (a calibration's time included)
            self.calibrations += calibrations
        return written

    def _store(self, turn: Any) -> None:
        answer = store_turn(self.memory, self.agent_id, turn)
        ref = stored_ref(answer)
        if ref is None:
            raise RuntimeError(f"store refused {turn.msg_id}: {answer}")
        self.refs[turn.msg_id] = ref
        if answer["result"] == "stored":
            self.times[ref] = datetime.fromisoformat(turn.timestamp)
        else:
            self.duplicates += 1

    def _archive(self, session: Any) -> None:
        self.memory.clock = fixed_clock(session.end_time)
        answer = self.memory.archive_episode(
            agent_id=self.agent_id,
            summary=session.summary,
            keywords=session.keywords,
            start_time=session.start_time,
            end_time=session.end_time,
        )
        if not answer.get("ok"):
            raise RuntimeError(f"archive_episode refused session {session.session}: {answer}")
        self.episodes[session.session] = answer["ref"]
        self.times[answer["ref"]] = datetime.fromisoformat(session.start_time)

    def gold(self, question: Question, *, with_episodes: bool = False) -> list[str]:
        """The stored refs of the question's evidence turns, in evidence order, each once.

        With ``with_episodes``, also the episode of each evidence turn's session (its
        summary tells the same event): the secondary relevance of the time-cue study.
        """
        refs = [self.refs[m] for m in question.evidence if m in self.refs]
        if with_episodes:
            evidence = set(question.evidence)
            sessions = {t.session for t in self.conversation.turns if t.msg_id in evidence}
            refs += [self.episodes[s] for s in sorted(sessions) if s in self.episodes]
        return list(dict.fromkeys(refs))

    def session_of(self, ref: str) -> int | None:
        """The session a stored ref belongs to: its turn's, or the one its episode summarises."""
        if not hasattr(self, "_session_by_ref"):
            self._session_by_ref = {ref: s for s, ref in self.episodes.items()}
            self._session_by_ref.update(
                {self.refs[t.msg_id]: t.session for t in self.conversation.turns if t.msg_id in self.refs}
            )
        elif len(self._session_by_ref) < len(self.refs):  # more was stored since: read again
            del self._session_by_ref
            return self.session_of(ref)
        return self._session_by_ref.get(ref)

    def gold_sessions(self, question: Question) -> set[int]:
        """The sessions of the question's evidence turns."""
        evidence = set(question.evidence)
        return {t.session for t in self.conversation.turns if t.msg_id in evidence}

    def memory_span(self) -> tuple[datetime, datetime] | None:
        """(oldest, newest) stored memory time: the span the server sizes open and long-ago cues by."""
        times = [t for ref, t in self.times.items() if ref.startswith("mem:")]
        return (min(times), max(times)) if times else None

    def ask(
        self, question: Question, *, limit: int = LIMIT, time_cue: dict[str, Any] | None = None, trace: bool = False
    ) -> dict[str, Any]:
        """One recall with the question's asked_at as now; an ok:false answer is an error here."""
        self.memory.clock = fixed_clock(question.asked_at)
        arguments: dict[str, Any] = {"agent_id": self.agent_id, "query": question.text, "limit": limit}
        if time_cue is not None:
            arguments["time_cue"] = time_cue
        if trace:
            arguments["trace"] = True
        response = self.memory.recall(**arguments)
        if response.get("ok") is False:
            raise RuntimeError(f"recall failed for {question.qid}: {response.get('error')}")
        return response


def store_turn(memory: Memory, agent_id: str, turn: Any) -> dict[str, Any]:
    """One turn stored as a client stores it, at its own time: its text, msg_id and timestamp, the speaker as
    the source; the store's answer."""
    memory.clock = fixed_clock(turn.timestamp)
    message = {"content": turn.content, "id": turn.msg_id, "timestamp": turn.timestamp}
    return memory.store(agent_id=agent_id, message={**message, "source": {"type": "User", "id": turn.speaker}})


def stored_ref(answer: dict[str, Any]) -> str | None:
    """The ref a store answer names: the new row's, or (a duplicate skipped) the row already holding the text."""
    if answer.get("result") == "stored":
        return answer["ref"]
    if answer.get("result") == "skipped":
        return f"mem:{answer['id']}"
    return None


def store_texts(conversation: Conversation, cap: int) -> list[str]:
    """The texts ``store`` and ``archive_episode`` will embed, as they will embed them (sanitised)."""
    return [sanitise(t.content, cap)[0] for t in conversation.turns] + [
        sanitise(s.summary, cap)[0] for s in conversation.sessions
    ]


def repeated_turns(conversation: Conversation) -> int:
    """Turns whose text (as stored) repeats an earlier turn's: the store skips them as duplicates."""
    cap = Settings().max_content_length
    seen: set[str] = set()
    repeats = 0
    for turn in sorted(conversation.turns, key=lambda t: datetime.fromisoformat(t.timestamp)):
        text = sanitise(turn.content, cap)[0]
        repeats += text in seen
        seen.add(text)
    return repeats


def dataset_facts(datasets: Sequence[Dataset]) -> list[str]:
    """One markdown bullet per dataset: its size, and how many turns the store skips as repeats."""
    lines = []
    for d in datasets:
        turns = sum(len(c.turns) for c in d.conversations)
        repeats = sum(repeated_turns(c) for c in d.conversations)
        sessions = sum(len(c.sessions) for c in d.conversations)
        questions = sum(len(c.questions) for c in d.conversations)
        lines.append(
            f"- {d.name}: {len(d.conversations)} conversation(s), {turns:,} turns ({repeats:,} repeat an "
            f"earlier turn's exact text, so the store keeps {turns - repeats:,} memories), {sessions} "
            f"session summaries, {questions} questions."
        )
    return lines


def in_time_order(questions: Iterable[Question]) -> list[Question]:
    return sorted(questions, key=lambda q: (datetime.fromisoformat(q.asked_at), q.qid))


def replay(
    store: ConversationStore, questions: Iterable[Question], history: str, progress: Callable[[int], None] | None = None
) -> Iterator[Question]:
    """Yield the questions in time order with the store filled as ``history`` says."""
    if history not in HISTORIES:
        raise ValueError(f"history must be one of {HISTORIES}, not {history!r}")
    if history == "all":
        store.advance(None, progress)
    for question in in_time_order(questions):
        if history == "asked":
            store.advance(question.asked_at, progress)
        yield question


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name)


def workdir_for(path: Path | None) -> Path:
    out = path or Path(tempfile.mkdtemp(prefix="cuedrecall-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    return out


# -- a study over layouts of stores ---------------------------------------------------------------


Layout = tuple[str, str, list[Conversation], str]  # (layout, dataset, the conversations it stores, history)
# what a study asks of one stored conversation (args, layout, dataset, conversation): the questions, and the row
# made of each (store, question, the row's first fields: layout, dataset, embedder, qid)
Study = Callable[
    [argparse.Namespace, str, str, Conversation],
    tuple[list[Question], Callable[["ConversationStore", Question, dict[str, Any]], dict[str, Any]]],
]


def ask_layouts(
    args: argparse.Namespace, console: Any, datasets: Sequence[Dataset], plan: Sequence[Layout], study: Study
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Every conversation of each layout in a store of its own at the study's defaults (``--defaults``), for each
    embedder and each of ``args.modes``; ``study(args, layout, dataset, conversation)`` says which questions to ask it
    (in time order, the store filled as the layout's history says) and the row to make of each. The rows, and the
    model of each embedder."""
    workdir = workdir_for(args.workdir)
    total = sum(len(c.questions) for _l, _d, cs, _h in plan for c in cs) * len(args.embedders) * len(args.modes)
    rows: list[dict[str, Any]] = []
    models: dict[str, str] = {}
    for embedder, advance in each_embedder(args, console, datasets, "questions", total):
        for mode in args.modes:
            args.mode = mode
            for layout, dataset, conversations, history in plan:
                for conversation in conversations:
                    questions, row_of = study(args, layout, dataset, conversation)
                    with ConversationStore(conversation, embedder, mode, workdir, DEFAULTS[args.defaults]) as store:
                        for question in replay(store, questions, history):
                            where = {"layout": layout, "dataset": dataset, "embedder": embedder.mode}
                            rows.append(row_of(store, question, {**where, "qid": question.qid}))
                            advance()
                        embedder.save()
        models[embedder.mode] = embedder.model
    return rows, models


# -- datasets -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Dataset:
    name: str
    conversations: list[Conversation]

    def category_label(self, category: str) -> str:
        if self.name == "locomo" and category in LOCOMO_CATEGORIES:
            return f"{category} {LOCOMO_CATEGORIES[category]}"
        return category

    def scored(self, question: Question) -> bool:
        """Whether a question counts in the retrieval metrics (LoCoMo category 5 does not)."""
        return not (self.name == "locomo" and question.category in LOCOMO_EXCLUDED)


Datasets = Sequence[Dataset]  # what a study ran over, as its report names them


def load_datasets(
    locomo: str | Path | None, limit_conversations: int | None, long_span: str | None, seed: int = 0
) -> list[Dataset]:
    """LoCoMo from a path (None or "none" skips it) and the long-span generator (size None or "none" skips it)."""
    out: list[Dataset] = []
    if locomo is not None and str(locomo) != "none":
        out.append(Dataset("locomo", load_locomo(locomo, limit_conversations=limit_conversations)))
    if long_span is not None and long_span != "none":
        out.append(Dataset(f"long-span-{long_span}", [generate_long_span(seed=seed, size=long_span)]))
    return out


def count_questions(datasets: Sequence[Dataset], keep: Callable[[Dataset, Question], bool]) -> int:
    return sum(1 for d in datasets for c in d.conversations for q in c.questions if keep(d, q))


def dataset_texts(datasets: Sequence[Dataset]) -> list[str]:
    """Every text a run over the datasets embeds: records as stored, and questions."""
    texts: list[str] = []
    for dataset in datasets:
        for conversation in dataset.conversations:
            texts += store_texts(conversation, Settings().max_content_length)
            texts += [q.text for q in conversation.questions]
    return list(dict.fromkeys(texts))


# -- tables ------------------------------------------------------------------------------------


def group_rows(rows: Iterable[dict[str, Any]], keys: Sequence[str]) -> dict[tuple, list[dict[str, Any]]]:
    out: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        out[tuple(row[k] for k in keys)].append(row)
    return dict(out)


# -- the command line both studies share ------------------------------------------------------


def study_parser(
    prog: str, description: str, out_name: str, embedders: list[str], modes: list[str]
) -> argparse.ArgumentParser:
    """The options of a study over LoCoMo and the long-span history (retrieval, time cue)."""
    parser = argparse.ArgumentParser(prog=f"python -m {prog}", description=description)
    parser.add_argument(
        "--locomo", default=DEFAULT_LOCOMO, help="LoCoMo JSON file, or 'none' to skip it (default: $CUEDRECALL_LOCOMO)"
    )
    parser.add_argument(
        "--long-span",
        choices=["small", "large", "none"],
        default="large",
        help="size of the generated long-span history, or none (default: %(default)s)",
    )
    parser.add_argument("--seed", type=int, default=0, help="long-span generator seed (default: %(default)s)")
    parser.add_argument("--embedders", nargs="+", choices=["local", "hash"], default=embedders)
    parser.add_argument("--modes", nargs="+", choices=["rrf", "rsf"], default=modes)
    parser.add_argument("--limit-conversations", type=int, default=None, help="only the first N LoCoMo conversations")
    parser.add_argument("--limit", type=int, default=LIMIT, help="recall limit (default: %(default)s)")
    parser.add_argument(
        "--history",
        choices=HISTORIES,
        default="asked",
        help="asked: the store holds only what was stored before the question was asked; "
        "all: the whole history first (default: %(default)s)",
    )
    parser.add_argument("--workdir", type=Path, help="keep the databases here (default: a temporary folder)")
    parser.add_argument(
        "--out",
        type=Path,
        default=RESULTS / out_name,
        help="markdown file; the PNG goes next to it (default: %(default)s)",
    )
    return parser


def run_study(
    argv: Sequence[str] | None, parser: argparse.ArgumentParser, study: Any, console: Any, nothing: str
) -> int:
    """Parse, run, plot, write the report and print the summary: the flow of every study script.

    ``study`` is the script's module: it provides run, plot, render and print_summary.
    """
    from rich.console import Console

    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    console = console or Console(stderr=True)
    datasets, rows, models = study.run(args, console)
    if not rows:
        console.print(nothing)
        return 1
    png = args.out.with_suffix(".png")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    study.plot(rows, png)
    args.out.write_text(study.render(argv, args, datasets, rows, models, png), encoding="utf-8")
    study.print_summary(rows, console)
    console.print(f"wrote {args.out} and {png}")
    return 0
