"""Retrieval quality on LoCoMo, ours against CPersona 2.6.14, on the same records, vectors and questions.

    python -m benchmarks.retrieval_peer --embedders local hash \
        --ours-variant CPERSONA_BLOCK_BUILD_ENABLED=true --ours-variant CPERSONA_BLOCK_RETRIEVAL_ENABLED=true \
        --peer-variant blocks-off

For each embedder and each LoCoMo conversation:

- ours: the conversation is loaded and asked exactly as ``benchmarks.retrieval`` does
  it (``harness.ConversationStore``: one fresh store, one agent, every turn stored
  with its timestamp, msg_id and speaker, every session summary archived as an
  episode over its session's time; the questions replayed in time order), in process,
  with rrf and default settings but blocks off (the harness's ``WITHOUT_BLOCKS``).
  Each question is asked at the limit and again at limit + WIDEN (for the equal-row cut).
- ``--ours-variant``: ours again with these settings changed (all the flags given make
  one variant); with blocks on, the replay drains our block-build queue after each
  batch of records, so every question finds the blocks of what came before it.
- CPersona at its defaults (the headline): a fresh database of its own (so its FTS
  statistics cover the one conversation, as ours do), filled through its
  ``import_memories`` tool with a ``cpersona-export/1.0`` file holding the same texts
  (as our store keeps them), timestamps, msg_ids, speakers, session summaries with
  keywords and start/end times as episodes, and the very vectors our store holds
  (``embedding_b64``); an import queues no block builds, so CPersona is started again on
  the filled database (its start queues the block backfill) and the questions wait
  until its task queue is empty (``get_queue_status``). It is then asked every
  question over MCP stdio with ``limit`` 10 and otherwise default arguments (its
  default fusion is rrf), its query and block vectors coming from
  ``cuedrecall embed-server`` running the same embedder (see ``benchmarks.peer``).
  Only what running it here needs is changed (``PEER_DEFAULTS``, each with why).
- ``--peer-variant blocks-off``: CPersona as this comparison ran it before (blocks and
  its task queue off, ``benchmarks.peer.PEER_SETTINGS``).
- CPersona's refs are mapped to ours through the msg_id for memories and through the
  summary text for episodes (read from its database), and every ranking is scored
  with the metrics of ``benchmarks.retrieval`` against the same evidence refs, at three
  cuts (first 10 rows, every returned row, and as many rows as CPersona returned),
  each with the mean number of rows it was read on.

Writes benchmarks/results/retrieval_peer.md (the command at the top).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import httpx
import numpy as np
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from benchmarks import harness as h
from benchmarks import peer as peer_mod
from benchmarks.retrieval import METRICS as RETRIEVAL_METRICS
from benchmarks.speed import returned_refs
from benchmarks.stats import jaccard
from cuedrecall.config import CPERSONA_PREFIX, PREFIX, Settings
from cuedrecall.text.sanitise import sanitise

PROG = "benchmarks.retrieval_peer"
OURS, PEER = "ours", "cpersona"
# the row metrics both systems are scored on (session recall needs our store's sessions, foreign rows a store of
# several conversations: benchmarks.retrieval has them)
METRICS = tuple(m for m in RETRIEVAL_METRICS if not m.startswith(("session@", "sessions@", "foreign@")))
MODE = "rrf"
ALL = "**all**"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"python -m {PROG}", description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", default=h.DEFAULT_LOCOMO, help="LoCoMo JSON file (default: $CUEDRECALL_LOCOMO)")
    parser.add_argument("--embedders", nargs="+", choices=["local", "hash"], default=["local", "hash"])
    parser.add_argument("--limit-conversations", type=int, default=None, help="only the first N conversations")
    parser.add_argument("--limit", type=int, default=h.LIMIT, help="recall limit (default: %(default)s)")
    parser.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        help="seconds one CPersona tool call may take (an import: ten times that) (default: %(default)s)",
    )
    parser.add_argument(
        "--start-timeout", type=float, default=300.0, help="seconds CPersona may take to start (default: %(default)s)"
    )
    parser.add_argument("--workdir", type=Path, help="keep the databases and logs here (default: a temporary folder)")
    parser.add_argument(
        "--out", type=Path, default=h.RESULTS / "retrieval_peer.md", help="markdown file (default: %(default)s)"
    )
    parser.add_argument(
        "--ours-variant",
        action="append",
        default=[],
        metavar="CPERSONA_NAME=VALUE",
        help="also run ours with these settings changed, as one more system of ours (repeatable: "
        "every setting given joins the one variant; e.g. CPERSONA_BLOCK_BUILD_ENABLED=true "
        "and CPERSONA_BLOCK_RETRIEVAL_ENABLED=true: ours with blocks on)",
    )
    parser.add_argument(
        "--peer-variant",
        action="append",
        default=[],
        choices=sorted(PEER_VARIANTS),
        help="also run CPersona in this configuration (blocks-off: the block arm, its build and the "
        "task queue off, no calibration at start: the configuration before issue 11)",
    )
    parser.add_argument(
        "--queue-timeout",
        type=float,
        default=1800.0,
        help="seconds CPersona's task queue may take to drain after an import (default: %(default)s)",
    )
    parser.add_argument(
        "--layout",
        choices=("per-conversation", "one-agent"),
        default="per-conversation",
        help="per-conversation: one store (one agent) per conversation on both sides; one-agent: every "
        "conversation under ONE agent on both sides, the whole history stored first, each question asked of "
        "that whole store and scored on its own evidence (default: %(default)s)",
    )
    parser.add_argument(
        "--grow",
        type=int,
        default=0,
        metavar="TURNS",
        help="one-agent: also store this many distinct turns of other conversations on both sides (the long-span "
        "generator's histories, seeds 1..), never asked (default: %(default)s)",
    )
    parser.add_argument(
        "--skip-peer",
        action="store_true",
        help="ours only: CPersona is neither installed nor asked (a ladder's sizes where it is not measured)",
    )
    h.add_embed_cache_option(parser)
    parser.add_argument(
        "--dump-rows",
        type=Path,
        metavar="PATH.jsonl",
        help="write one line per question and system: its metrics and returned refs, best first",
    )
    return parser


# Our settings a combination of variant settings is named by, rather than listed.
VARIANT_NAMES = {
    (("CPERSONA_BLOCK_BUILD_ENABLED", "true"), ("CPERSONA_BLOCK_RETRIEVAL_ENABLED", "true")): "blocks-on",
    # the recall before issue 27: no episode or time context, arms as deep as the limit, rrf k 60 (CPersona's)
    (
        ("CPERSONA_EPISODE_CONTEXT_ENABLED", "false"),
        ("CPERSONA_RECALL_DEPTH_FLOOR", "0"),
        ("CPERSONA_RRF_K", "60"),
        ("CPERSONA_TIME_CONTEXT_ENABLED", "false"),
    ): "before-27",
}


def parse_variant(
    text: str | Sequence[str], base: Mapping[str, str] | None = None, names: Mapping[tuple, str] | None = None
) -> tuple[str, dict[str, str]]:
    """``CPERSONA_NAME=VALUE`` (one, or several: one variant with all of them) -> (the system's label, the
    environment our settings read them from, over ``base``; ``names``: labels of known variants).

    The settings are checked over the harness's own (blocks off unless ``base`` or the variant turns them on),
    so a combination our settings refuse (block retrieval without building) fails here, before any store is
    built.
    """
    base = dict(base or {})
    texts = [text] if isinstance(text, str) else list(text)
    known = {variable for variable, _default, _doc in Settings.describe()}
    environ: dict[str, str] = {}
    for item in texts:
        name, sep, value = item.partition("=")
        name = name.strip().upper()
        if not sep or name not in known:
            raise ValueError(f"--ours-variant wants CPERSONA_NAME=VALUE with a known setting, not {item!r}")
        if name.startswith(PREFIX):  # one spelling, the one the harness's own settings use
            name = CPERSONA_PREFIX + name.removeprefix(PREFIX)
        environ[name] = value.strip()
    try:  # a value the setting refuses fails here, before any store is built
        Settings.from_env({**h.WITHOUT_BLOCKS, **base, **environ})
    except Exception as exc:
        raise ValueError(f"--ours-variant {' '.join(texts)!r}: {exc}") from exc
    key = tuple(sorted((k, v.lower()) for k, v in environ.items()))
    name = (VARIANT_NAMES if names is None else names).get(key) or " ".join(
        f"{k.removeprefix('CPERSONA_').lower()}={v}" for k, v in environ.items()
    )
    return f"{OURS} {name}", {**base, **environ}


def systems_in(rows: Iterable[dict[str, Any]]) -> list[str]:
    """The systems the rows hold: ours first, its variants, then CPersona (defaults) and its variants."""
    seen = list(dict.fromkeys(r["system"] for r in rows))
    ours = [x for x in seen if x == OURS] + [x for x in seen if x != OURS and x.startswith(OURS + " ")]
    peers = [x for x in seen if x == PEER] + [x for x in seen if x not in ours and x != PEER]
    return ours + peers


def is_ours(system: str) -> bool:
    return system == OURS or system.startswith(OURS + " ")


# -- CPersona's configurations ------------------------------------------------------------------

# CPersona at its defaults, the headline peer: only what running it here needs is changed, each with why.
PEER_DEFAULTS: dict[str, tuple[str, str]] = {
    "CPERSONA_EMBEDDING_MODE": (
        "http",
        "query and block vectors come from the shared `cuedrecall embed-server`, the embedder ours runs in process",
    ),
    "CPERSONA_UPDATE_CHECK": ("false", "no outbound request to the package index at start (none can be reached)"),
    "CPERSONA_OPERATING_CONTEXT": ("off", "no operator sidecar read from the home directory"),
}
# CPersona's start-up calibration stays on (its default): the start after the import calibrates its gate over the
# imported conversation, as ours calibrates itself while the conversation is stored (at 50, 200, 1,000 memories).
# name -> (system label, settings); "defaults" always runs, the others on --peer-variant
PEER_VARIANTS: dict[str, tuple[str, dict[str, tuple[str, str]]]] = {
    "defaults": (PEER, PEER_DEFAULTS),
    "blocks-off": (f"{PEER} blocks-off", dict(peer_mod.PEER_SETTINGS)),
    "uncalibrated": (
        f"{PEER} uncalibrated",
        {
            **PEER_DEFAULTS,
            "CPERSONA_CALIBRATE_ON_MODEL_CHANGE": (
                "false",
                "its start-up calibration off, so its gate stays on the heuristic: the headline of earlier runs",
            ),
        },
    ),
}
CALIBRATION_LINE = "Vector threshold startup calibration:"


def setting_on(settings: Mapping[str, tuple[str, str]], name: str) -> bool:
    """Whether a CPersona boolean setting is on (absent: its default, on, for the ones read here)."""
    value = settings.get(name, ("true", ""))[0].strip().lower()
    return value in ("1", "true", "yes", "on")


async def wait_for_log_line(path: Path, marker: str, timeout: float, skip: str = "") -> tuple[str | None, float]:
    """(the text after ``marker`` on the first log line holding it, after the line holding ``skip`` when given;
    seconds waited); (None, seconds) when it did not come within ``timeout``."""
    started = time.perf_counter()
    while True:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
            if skip:
                text = text.split(skip, 1)[1] if skip in text else ""
            for line in text.splitlines():
                if marker in line:
                    return line.split(marker, 1)[1].strip(), time.perf_counter() - started
        except OSError:
            pass
        if time.perf_counter() - started > timeout:
            return None, time.perf_counter() - started
        await anyio.sleep(0.2)


async def wait_for_queue(
    server: Any, timeout: float, call_timeout: float, settle: int = 3, interval: float = 0.5
) -> dict[str, Any]:
    """Poll ``get_queue_status`` until ``pending`` is 0 on ``settle`` polls in a row (a task that queues the next
    one is not mistaken for the end); {"seconds", "polls", "first_pending", "peak_pending"}.

    Raises TimeoutError when the queue is not empty after ``timeout`` seconds.
    """
    started = time.perf_counter()
    polls, quiet, first, peak = 0, 0, None, 0
    while True:
        answer, _ms = await server.call("get_queue_status", {}, call_timeout)
        pending = int(answer.get("pending", 0))
        polls += 1
        first = pending if first is None else first
        peak = max(peak, pending)
        quiet = quiet + 1 if pending == 0 else 0
        if quiet >= settle:
            return {
                "seconds": time.perf_counter() - started - interval * (settle - 1),
                "polls": polls,
                "first_pending": first,
                "peak_pending": peak,
                "enabled": bool(answer.get("enabled", True)),
            }
        if time.perf_counter() - started > timeout:
            raise TimeoutError(f"CPersona's task queue still holds {pending} tasks after {timeout:.0f} s")
        await anyio.sleep(interval)


def peer_block_count(peer_db: Path, agent_id: str) -> tuple[int, int]:
    """(records with embedded blocks, embedded blocks) in CPersona's database for the agent ((0, 0) without
    the table)."""
    import sqlite3

    conn = sqlite3.connect(f"file:{peer_db}?mode=ro", uri=True)
    try:
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "record_blocks" not in tables:
            return 0, 0
        records, embedded = conn.execute(
            "SELECT COUNT(DISTINCT parent_kind || ':' || parent_id), COUNT(*) FROM record_blocks "
            "WHERE embedding_bits IS NOT NULL AND agent_id = ?",
            (agent_id,),
        ).fetchone()
        return int(records or 0), int(embedded or 0)
    finally:
        conn.close()


# -- what CPersona is given, and how its answers are read ---------------------------------------


def export_items(
    conversation: Any, embedder: Any, cap: int
) -> tuple[list[peer_mod.ExportRecord], list[peer_mod.ExportEpisode]]:
    """The conversation as CPersona import records: turns and session summaries in time order.

    The texts are sanitised as our store sanitises them (so they are the texts it keeps),
    each turn carries its msg_id and its speaker as a User source, and every vector is the
    one our store holds (the shared embedder hands out the same prefetched vector).
    """
    turns = sorted(conversation.turns, key=lambda t: datetime.fromisoformat(t.timestamp))
    sessions = sorted(conversation.sessions, key=lambda s: datetime.fromisoformat(s.end_time))
    texts = [sanitise(t.content, cap)[0] for t in turns]
    summaries = [sanitise(s.summary, cap)[0] for s in sessions]
    vectors = embedder.embed(texts) if texts else []
    summary_vectors = embedder.embed(summaries) if summaries else []
    records = [
        peer_mod.ExportRecord(
            i + 1,
            text,
            turn.timestamp,
            np.asarray(vector),
            msg_id=turn.msg_id,
            source={"type": "User", "id": turn.speaker},
        )
        for i, (turn, text, vector) in enumerate(zip(turns, texts, vectors))
    ]
    episodes = [
        peer_mod.ExportEpisode(
            i + 1, summary, session.keywords, session.start_time, session.end_time, np.asarray(vector)
        )
        for i, (session, summary, vector) in enumerate(zip(sessions, summaries, summary_vectors))
    ]
    return records, episodes


def our_episode_refs(conversation: Any, episodes: Mapping[int, str], cap: int) -> dict[str, str]:
    """Our episode refs by their summary text as stored (session number -> ref, read through the summary)."""
    out: dict[str, str] = {}
    for session in conversation.sessions:
        if session.session in episodes:
            out.setdefault(sanitise(session.summary, cap)[0].strip(), episodes[session.session])
    return out


def peer_ref_table(
    memories: Iterable[tuple[int, str]],
    episodes: Iterable[tuple[int, str]],
    our_refs: Mapping[str, str],
    our_episodes: Mapping[str, str],
) -> dict[str, str]:
    """CPersona's ``mem:<id>``/``ep:<id>`` -> our ref: memories through their msg_id, episodes through their summary.

    ``memories`` are CPersona's (id, msg_id), ``episodes`` its (id, summary); ``our_refs`` maps
    a msg_id to our ref (a repeated turn to the row it repeats), ``our_episodes`` a summary
    text to our episode ref. A row found in neither stays out of the table.
    """
    table = {}
    for row_id, msg_id in memories:
        if msg_id and msg_id in our_refs:
            table[f"mem:{row_id}"] = our_refs[msg_id]
    for row_id, summary in episodes:
        key = summary.strip()
        if key in our_episodes:
            table[f"ep:{row_id}"] = our_episodes[key]
    return table


def ranking(response: dict[str, Any], table: Mapping[str, str] | None = None) -> list[str]:
    """The returned refs best first (the response lists them worst first), translated through ``table``.

    A CPersona ref the table does not know becomes ``peer:<ref>``: never relevant, never shared.
    """
    return list(reversed(returned_refs(response, dict(table) if table is not None else None)))


def held_count(response: dict[str, Any]) -> int:
    """Rows admitted by a held place (a seat) rather than by the ranking: ``match_reason.admission``."""
    return len(h.seat_refs(response))


def held_kinds(response: dict[str, Any]) -> dict[str, int]:
    """The held rows by the signal that seated them (``match_reason.signal``: block, keyword, far, ...)."""
    kinds: dict[str, int] = {}
    for message in response.get("messages") or []:
        reason = message.get("match_reason") or {}
        if "ref" in message and reason.get("admission") == "reservation":
            kind = str(reason.get("signal") or "?")
            kinds[kind] = kinds.get(kind, 0) + 1
    return kinds


def question_row(
    embedder: str,
    system: str,
    conversation: str,
    question: Any,
    category: str,
    gold: Sequence[str],
    ranked: Sequence[str],
    held: int,
    wide: Sequence[str] | None = None,
    kinds: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """One question's row: the metrics of the answer at the limit (``ranked``, best first, seats included), how
    many rows it returned and how many of them held seats admitted; ``wide``: a longer answer of the same
    system to the same question (ours asked at limit + WIDEN), read by the equal-row-count cut."""
    return {
        "embedder": embedder,
        "system": system,
        "conversation": conversation,
        "qid": question.qid,
        "category": category,
        "gold": len(gold),
        **h.retrieval_metrics(ranked, gold),
        "any_all": float(h.best_rank(ranked, gold) is not None),
        "ndcg_all": h.ndcg(ranked, gold),
        "returned": len(ranked),
        "held": held,
        "refs": list(ranked),
        "wide": list(ranked if wide is None else wide),
        "gold_refs": list(gold),
        "held_kinds": dict(kinds or {}),
    }


# -- running ----------------------------------------------------------------------------------

# Ours is asked a second time at limit + WIDEN (a recall of ours writes nothing, so the second ask changes
# nothing), so an answer of ours shorter than CPersona's can be topped up to its row count. Through the recall
# tool CPersona 2.6.14 holds at most its 2 block seats after the limit (its keyword seats are held only when a
# caller asks for them, which the recall tool never does; far and propagation seats are off by default); 4 leaves
# room, and the report says so if CPersona ever returns more.
WIDEN = 4


def evaluate_ours(
    dataset: h.Dataset,
    conversation: Any,
    embedder: h.PrefetchEmbedder,
    limit: int,
    workdir: Path,
    advance: Callable[[], None],
    system: str = OURS,
    environ: Mapping[str, str] | None = None,
    history: str = "asked",
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Our rows for one conversation, and what CPersona's answers are read against (gold refs, ref maps);
    ``history``: as ``harness.replay`` fills the store (``all`` for a merged store)."""
    workdir.mkdir(parents=True, exist_ok=True)
    store = h.ConversationStore(conversation, embedder, MODE, workdir, environ)
    rows, gold = [], {}
    try:
        scored = [q for q in conversation.questions if dataset.scored(q)]
        questions = {q.qid: q for q in scored}
        for question in h.replay(store, scored, history):
            gold[question.qid] = store.gold(question)
            response = store.ask(question, limit=limit)
            wide = store.ask(question, limit=limit + WIDEN)
            rows.append(
                question_row(
                    embedder.mode,
                    system,
                    conversation.conv_id,
                    question,
                    dataset.category_label(question.category),
                    gold[question.qid],
                    h.best_first(response),
                    held_count(response),
                    h.best_first(wide),
                    held_kinds(response),
                )
            )
            advance()
        cap = store.memory.settings.max_content_length
        info = {
            "gold": gold,
            "refs": dict(store.refs),
            "duplicates": store.duplicates,
            "episodes": our_episode_refs(conversation, store.episodes, cap),
            "memories": len(set(store.refs.values())),
            "episode_count": len(store.episodes),
            "block_tasks": store.block_tasks,
            "block_build_s": store.block_build_s,
            "blocks": our_block_count(store),
            # a merged store's conversation of each ref and each question (benchmarks.retrieval.SESSION_BLOCK)
            "ref_home": {ref: store.session_of(ref) for ref in [*store.refs.values(), *store.episodes.values()]},
            "question_home": {q: sorted(store.gold_sessions(question)) for q, question in questions.items()},
        }
    finally:
        store.close()
    return rows, info


def our_block_count(store: h.ConversationStore) -> tuple[int, int]:
    """(records with embedded blocks, embedded blocks) in our store ((0, 0) when blocks are off)."""
    import sqlite3

    conn = sqlite3.connect(f"file:{store.path}?mode=ro", uri=True)
    try:
        records, blocks = conn.execute(
            "SELECT COUNT(DISTINCT kind || ':' || record_id), COUNT(*) FROM blocks "
            "WHERE bits IS NOT NULL AND agent_id = ?",
            (store.agent_id,),
        ).fetchone()
        return int(records or 0), int(blocks or 0)
    finally:
        conn.close()


async def ask_peer(
    conversation: Any,
    questions: Sequence[Any],
    records: Sequence[peer_mod.ExportRecord],
    episodes: Sequence[peer_mod.ExportEpisode],
    embed_url: str,
    folder: Path,
    limit: int,
    timeout: float,
    start_timeout: float,
    advance: Callable[[], None],
    settings: Mapping[str, tuple[str, str]] = PEER_DEFAULTS,
    queue_timeout: float = 1800.0,
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Import the conversation into a fresh CPersona database, let its background work finish, then ask every
    question; (import answer with the waits, answers).

    An import queues no block builds (CPersona documents it: a restart's backfill or a health repair builds
    them), so with block building on, CPersona is started a second time on the filled database: its start
    queues the bounded backfill sweep, and the questions wait until its task queue is empty
    (``get_queue_status``, ``pending`` 0 on three polls in a row), every record's blocks built. With the
    start-up calibration on, each start waits for its log line first (on the empty database it has nothing to
    calibrate; beside the import it would calibrate whatever part of the conversation had landed).
    """
    agent = conversation.conv_id
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    files = peer_mod.write_cpersona_export(records, folder / "export", agent, episodes=episodes)
    totals: dict[str, Any] = {
        "imported_memories": 0,
        "skipped_memories": 0,
        "imported_episodes": 0,
        "skipped_episodes": 0,
    }
    answers: dict[str, dict[str, Any]] = {}
    log = folder / "cpersona.log"
    queue_on = setting_on(settings, "CPERSONA_TASK_QUEUE_ENABLED")
    restart = queue_on and setting_on(settings, "CPERSONA_BLOCK_BUILD_ENABLED")

    async def started(server: Any, key: str) -> None:
        totals.setdefault("startup_s", []).append(server.startup_s)
        if setting_on(settings, "CPERSONA_CALIBRATE_ON_MODEL_CHANGE"):
            status, _waited = await wait_for_log_line(log, CALIBRATION_LINE, start_timeout, skip=key)
            if status is None:
                raise RuntimeError(
                    f"CPersona's startup calibration did not report within {start_timeout:.0f} s (see {log})"
                )
            totals.setdefault("calibration", []).append(status)

    async def ask(server: Any) -> None:
        if queue_on:
            totals["queue"] = await wait_for_queue(server, queue_timeout, timeout)
        for question in h.in_time_order(questions):
            answer, _ms = await server.call(
                "recall", {"agent_id": agent, "query": question.text, "limit": limit}, timeout
            )
            if "error" in answer or answer.get("ok") is False:
                raise RuntimeError(f"CPersona recall failed for {question.qid}: {str(answer)[:300]}")
            answers[question.qid] = answer
            advance()
        if queue_on:  # what the recalls left queued (none expected)
            status, _ms = await server.call("get_queue_status", {}, timeout)
            totals["pending_after"] = int(status.get("pending", 0))

    async with peer_mod.peer_server(folder / "cpersona.db", embed_url, log, start_timeout, settings) as server:
        await started(server, "")
        clock = time.perf_counter()
        analyzed = len(files) > 1  # the planner's statistics for the import's later files, then dropped
        for i, path in enumerate(files):
            answer, _ms = await server.call(
                "import_memories", {"input_path": str(path), "target_agent_id": agent}, timeout * 10
            )
            if not answer.get("ok") or answer.get("errors"):
                raise RuntimeError(f"CPersona import of {agent} failed: {str(answer)[:400]}")
            for key in ("imported_memories", "skipped_memories", "imported_episodes", "skipped_episodes"):
                totals[key] += int(answer.get(key, 0))
            if analyzed and i == 0:
                peer_mod.planner_statistics(folder / "cpersona.db", keep=True)
        if analyzed:
            peer_mod.planner_statistics(folder / "cpersona.db", keep=False)
        totals["import_s"] = time.perf_counter() - clock
        if not restart:
            await ask(server)
    if restart:
        marker = f"--- restart after the import ({datetime.now().isoformat()}) ---"
        with open(log, "a", encoding="utf-8") as out:
            out.write(marker + "\n")
        async with peer_mod.peer_server(folder / "cpersona.db", embed_url, log, start_timeout, settings) as server:
            await started(server, marker)
            await ask(server)
    return totals, answers


def evaluate_peer(
    dataset: h.Dataset,
    conversation: Any,
    embedder: h.PrefetchEmbedder,
    ours: dict[str, Any],
    args: argparse.Namespace,
    embed_url: str,
    workdir: Path,
    advance: Callable[[], None],
    variant: str = "defaults",
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """CPersona's rows for one conversation in one configuration, scored against our gold refs; and the
    import's counts and waits."""
    system, settings = PEER_VARIANTS[variant]
    cap = Settings().max_content_length
    records, episodes = export_items(conversation, embedder, cap)
    scored = [q for q in conversation.questions if dataset.scored(q)]
    folder = workdir / f"cpersona-{variant}-{h._safe(conversation.conv_id)}-{embedder.mode}"
    totals, answers = anyio.run(
        ask_peer,
        conversation,
        scored,
        records,
        episodes,
        embed_url,
        folder,
        args.limit,
        args.timeout,
        args.start_timeout,
        advance,
        settings,
        args.queue_timeout,
    )
    memories, peer_episodes = peer_mod.peer_record_keys(folder / "cpersona.db", conversation.conv_id)
    table = peer_ref_table(memories, peer_episodes, ours["refs"], ours["episodes"])
    totals.update(
        rows=len(memories) + len(peer_episodes),
        mapped=len(table),
        system=system,
        variant=variant,
        blocks=peer_block_count(folder / "cpersona.db", conversation.conv_id),
    )
    rows = []
    for question in scored:
        answer = answers[question.qid]
        rows.append(
            question_row(
                embedder.mode,
                system,
                conversation.conv_id,
                question,
                dataset.category_label(question.category),
                ours["gold"][question.qid],
                ranking(answer, table),
                held_count(answer),
                kinds=held_kinds(answer),
            )
        )
    return rows, totals


def query_vector_gap(url: str, embedder: h.PrefetchEmbedder, texts: Sequence[str]) -> dict[str, float]:
    """How far the embed-server's vectors (CPersona's queries) are from our in-process ones, on these texts."""
    texts = list(dict.fromkeys(texts))
    served = []
    for start in range(0, len(texts), 32):
        answer = httpx.post(url, json={"texts": texts[start : start + 32]}, timeout=120)
        answer.raise_for_status()
        served += answer.json()["embeddings"]
    theirs = np.asarray(served, dtype=np.float32)
    ours = np.asarray(embedder.embed(texts), dtype=np.float32)
    cosines = np.sum(theirs * ours, axis=1) / (np.linalg.norm(theirs, axis=1) * np.linalg.norm(ours, axis=1))
    return {"texts": len(texts), "max_abs": float(np.max(np.abs(theirs - ours))), "min_cosine": float(np.min(cosines))}


def peer_rows_all(rows: Sequence[dict[str, Any]], embedder: str) -> list[dict[str, Any]]:
    """Every row of this embedder that is not yet marked with ``foreign@10`` (the systems asked since the last)."""
    return [r for r in rows if r["embedder"] == embedder and "foreign@10" not in r]


def mark_foreign(rows: Iterable[dict[str, Any]], ours: Mapping[str, Any]) -> None:
    """``foreign@10`` on each row: the share of its first 10 rows from another conversation than the question's
    (a row that maps to none of our refs counts as foreign)."""
    from benchmarks.retrieval import SESSION_BLOCK

    for row in rows:
        homes = {s // SESSION_BLOCK for s in ours["question_home"].get(row["qid"], [])}
        first = row["refs"][:10]
        sessions = [ours["ref_home"].get(ref) for ref in first]
        row["foreign@10"] = (
            sum(1 for s in sessions if s is None or s // SESSION_BLOCK not in homes) / len(first) if first else 0.0
        )


def foreign_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Per embedder and system, the mean share of the first 10 rows from another conversation (one-agent only)."""
    if not any("foreign@10" in r for r in rows):
        return []
    lines = []
    for (embedder,), group in h.group_rows(rows, ("embedder",)).items():
        parts = [
            f"{system} {h.mean(r['foreign@10'] for r in group if r['system'] == system):.3f}"
            for system in systems_in(group)
        ]
        lines.append(
            f"- `{embedder}`: share of the first 10 rows from another conversation than the question's (foreign@10): "
            + ", ".join(parts)
            + "."
        )
    return lines


def late_questions(conversation: Any, questions: Iterable[Any]) -> int:
    """Questions asked before the conversation's last record: there CPersona (whole history) sees more than ours."""
    stamps = [t.timestamp for t in conversation.turns] + [s.end_time for s in conversation.sessions]
    last = max(datetime.fromisoformat(s) for s in stamps)
    return sum(1 for q in questions if datetime.fromisoformat(q.asked_at) < last)


def run(args: argparse.Namespace, console: Console) -> tuple[list[h.Dataset], list[dict[str, Any]], dict[str, Any]]:
    from benchmarks.retrieval import laid_out

    datasets = laid_out(h.load_datasets(args.locomo, args.limit_conversations, "none"), args.layout, args.grow)
    history = "all" if args.layout == "one-agent" else "asked"
    variants = [parse_variant(args.ours_variant)] if args.ours_variant else []
    peer_variants = [] if getattr(args, "skip_peer", False) else list(dict.fromkeys(["defaults", *args.peer_variant]))
    workdir = h.workdir_for(args.workdir)
    facts: dict[str, Any] = {
        "install": None if not peer_variants else peer_mod.ensure_peer(log=workdir / "peer-install.log"),
        "models": {},
        "variants": {label: environ for label, environ in variants},
        "peer_variants": peer_variants,
        "vectors": {},
        "imports": [],
        "ours": [],
        "late": 0,
        "workdir": str(workdir),
    }
    rows: list[dict[str, Any]] = []
    scored_total = h.count_questions(datasets, lambda d, q: d.scored(q))
    for dataset in datasets:
        for conversation in dataset.conversations:
            if history == "asked":  # a merged store is stored whole on both sides before any question
                facts["late"] += late_questions(conversation, [q for q in conversation.questions if dataset.scored(q)])
    with Progress(console=console, transient=False) as progress:
        asked = progress.add_task(
            "recalls", total=scored_total * len(args.embedders) * (1 + len(variants) + len(peer_variants))
        )
        for name in args.embedders:
            embedder = h.prefetched_embedder(name, datasets, progress, args.embed_cache)
            facts["models"][name] = embedder.model
            with peer_mod.EmbedServer(name, workdir / f"embed-server-{name}.log", timeout=300) as served:
                sample = [q.text for d in datasets for c in d.conversations for q in c.questions if d.scored(q)]
                facts["vectors"][name] = query_vector_gap(served.url, embedder, sample[:64])
                for dataset in datasets:
                    for conversation in dataset.conversations:
                        ours_rows, ours = evaluate_ours(
                            dataset,
                            conversation,
                            embedder,
                            args.limit,
                            workdir,
                            lambda: progress.advance(asked),
                            history=history,
                        )
                        rows += ours_rows
                        runs = [(OURS, ours)]
                        for i, (label, environ) in enumerate(variants):
                            mine, info = evaluate_ours(
                                dataset,
                                conversation,
                                embedder,
                                args.limit,
                                workdir / f"variant-{i + 1}",
                                lambda: progress.advance(asked),
                                label,
                                environ,
                                history,
                            )
                            rows += mine
                            runs.append((label, info))
                        for system, info in runs:
                            facts["ours"].append(
                                {
                                    "embedder": name,
                                    "conversation": conversation.conv_id,
                                    "system": system,
                                    "memories": info["memories"],
                                    "episodes": info["episode_count"],
                                    "duplicates": info["duplicates"],
                                    "block_tasks": info["block_tasks"],
                                    "block_build_s": info["block_build_s"],
                                    "blocks": info["blocks"],
                                }
                            )
                        peer_rows: list[dict[str, Any]] = []
                        totals: dict[str, Any] = {}
                        for variant in peer_variants:
                            peer_rows, totals = evaluate_peer(
                                dataset,
                                conversation,
                                embedder,
                                ours,
                                args,
                                served.url,
                                workdir,
                                lambda: progress.advance(asked),
                                variant,
                            )
                            rows += peer_rows
                        if args.layout == "one-agent":
                            mark_foreign([*ours_rows, *peer_rows_all(rows, name)], ours)
                            if totals:
                                facts["imports"].append(
                                    {"embedder": name, "conversation": conversation.conv_id, **totals}
                                )
    return datasets, rows, facts


# -- reporting ----------------------------------------------------------------------------------

# The three cuts every quality figure is read at, each with its mean row count beside it:
#   first 10: the first 10 rows of each answer (the figures before held seats existed);
#   returned: every row the answer at limit 10 holds, held seats included (CPersona's defaults return up to 14);
#   equal:    each system's n rows, n the number of rows CPersona (defaults) returned for that question: its
#             answer cut to n rows, or topped up from its answer at limit + WIDEN (ours) when shorter.
CUTS = ("first 10", "returned", "equal")


def equal_cut(row: dict[str, Any], n: int) -> list[str]:
    """A system's n rows for one question: its answer at the limit cut to n rows, or, when that answer is shorter,
    topped up with the rows its wider answer (ours at limit + WIDEN) holds beyond it, in that answer's order."""
    refs = list(row["refs"])
    if len(refs) >= n:
        return refs[:n]
    have = set(refs)
    return (refs + [ref for ref in row["wide"] if ref not in have])[:n]


def cut_metrics(row: dict[str, Any], n: int | None = None) -> dict[str, float]:
    """recall_any, NDCG and rows of one row at each cut; ``n``: CPersona's row count (None: no equal cut)."""
    gold = row["gold_refs"]
    out = {
        "any@10": row["recall_any@10"],
        "ndcg@10": row["ndcg@10"],
        "rows@10": float(min(row["returned"], 10)),
        "any_all": row["any_all"],
        "ndcg_all": row["ndcg_all"],
        "rows": float(row["returned"]),
    }
    if n is not None:
        ranked = equal_cut(row, n)
        out.update(
            {"any_eq": h.recall_any(ranked, gold, n), "ndcg_eq": h.ndcg(ranked, gold, n), "rows_eq": float(len(ranked))}
        )
    return out


def _key(row: dict[str, Any]) -> tuple[str, str, str]:
    return row["embedder"], row["conversation"], row["qid"]


def peer_counts(rows: Iterable[dict[str, Any]]) -> dict[tuple[str, str, str], int]:
    """CPersona's (defaults) row count per question: the equal cut's n."""
    return {_key(r): r["returned"] for r in rows if r["system"] == PEER}


def summarise(
    rows: Sequence[dict[str, Any]], counts: Mapping[tuple[str, str, str], int] | None = None
) -> dict[str, float]:
    """Means over the rows: the per-question metrics, rows returned and held, and the cuts' figures."""
    out = {m: h.mean(r[m] for r in rows) for m in METRICS}
    out["returned"] = h.mean(r["returned"] for r in rows)
    out["held"] = h.mean(r["held"] for r in rows)
    out["n"] = len(rows)
    counts = counts or {}
    cuts = [cut_metrics(r, counts.get(_key(r))) for r in rows]
    for name in ("any@10", "ndcg@10", "rows@10", "any_all", "ndcg_all", "rows"):
        out[name] = h.mean(c[name] for c in cuts)
    for name in ("any_eq", "ndcg_eq", "rows_eq"):
        out[name] = h.mean(c[name] for c in cuts if name in c) if any(name in c for c in cuts) else float("nan")
    return out


def _by_category(rows: Sequence[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """(ALL, every row), then (category, its rows) in category order."""
    parts = sorted(h.group_rows(rows, ("category",)).items())
    return [(ALL, list(rows))] + [(category, part) for (category,), part in parts]


RESULT_COLUMNS = [
    "recall_any@5",
    "recall_any@10",
    "recall_all@10",
    "ndcg@10",
    "rows@10",
    "recall_any (returned)",
    "ndcg (returned)",
    "mrr",
    "rows",
    "recall_any (equal)",
    "ndcg (equal)",
    "rows (equal)",
]


def metric_rows(rows: Sequence[dict[str, Any]]) -> list[list[Any]]:
    """Per embedder and category (all first): one line per system, ours first and CPersona last; the columns of
    RESULT_COLUMNS, then n."""
    out = []
    systems = systems_in(rows)
    counts = peer_counts(rows)
    for (embedder,), group in h.group_rows(rows, ("embedder",)).items():
        for category, part in _by_category(group):
            for system in systems:
                mine = [r for r in part if r["system"] == system]
                if not mine:
                    continue
                s = summarise(mine, counts)
                out.append(
                    [
                        embedder,
                        category,
                        system,
                        s["recall_any@5"],
                        s["recall_any@10"],
                        s["recall_all@10"],
                        s["ndcg@10"],
                        s["rows@10"],
                        s["any_all"],
                        s["ndcg_all"],
                        s["mrr"],
                        s["returned"],
                        s["any_eq"],
                        s["ndcg_eq"],
                        s["rows_eq"],
                        s["n"],
                    ]
                )
    return out


def pairs(
    rows: Sequence[dict[str, Any]], system: str = OURS, peer: str = PEER
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(one of ours, CPersona) rows of the same question under the same embedder."""
    theirs = {_key(r): r for r in rows if r["system"] == peer}
    return [(r, theirs[_key(r)]) for r in rows if r["system"] == system and _key(r) in theirs]


def agreement(pair_list: Sequence[tuple[dict[str, Any], dict[str, Any]]], k: int | None = None) -> float:
    """Mean Jaccard of the two systems' returned ref sets (the first k of each when k is given)."""
    return h.mean(jaccard(a["refs"][:k], b["refs"][:k]) for a, b in pair_list)


def identical(pair_list: Sequence[tuple[dict[str, Any], dict[str, Any]]]) -> float:
    """Share of questions where both returned the same refs in the same order."""
    return h.mean(float(a["refs"] == b["refs"]) for a, b in pair_list)


AGREEMENT_COLUMNS = ["embedder", "category", "system", "jaccard", "jaccard@10", "identical", "n"]


def agreement_rows(rows: Sequence[dict[str, Any]]) -> list[list[Any]]:
    """Per embedder, category and system of ours against CPersona (defaults): mean Jaccard of all returned refs
    and of the first 10, the share of identical rankings, and n."""
    out = []
    ours = [x for x in systems_in(rows) if is_ours(x)]
    for (embedder,), group in h.group_rows(rows, ("embedder",)).items():
        for category, part in _by_category(group):
            for system in ours:
                matched = pairs(part, system)
                if matched:
                    out.append(
                        [
                            embedder,
                            category,
                            system,
                            agreement(matched),
                            agreement(matched, 10),
                            identical(matched),
                            len(matched),
                        ]
                    )
    return out


# the figures of a headline row: (column, summarise's key)
HEADLINE_FIGURES = (
    ("recall_any@10", "any@10"),
    ("NDCG@10", "ndcg@10"),
    ("rows (first 10)", "rows@10"),
    ("recall_any (returned)", "any_all"),
    ("NDCG (returned)", "ndcg_all"),
    ("rows (returned)", "rows"),
    ("recall_any (equal rows)", "any_eq"),
    ("NDCG (equal rows)", "ndcg_eq"),
    ("rows (equal)", "rows_eq"),
    ("n", "n"),
)
HEADLINE_COLUMNS = ["embedder", "system", *(column for column, _ in HEADLINE_FIGURES)]


def headline_rows(rows: Sequence[dict[str, Any]]) -> list[list[Any]]:
    """Per embedder and system, all questions: each cut's recall_any and NDCG with its mean rows."""
    out = []
    counts = peer_counts(rows)
    for (embedder,), group in h.group_rows(rows, ("embedder",)).items():
        for system in systems_in(group):
            s = summarise([r for r in group if r["system"] == system], counts)
            out.append([embedder, system, *(s[key] for _, key in HEADLINE_FIGURES)])
    return out


def wins(pair_list: Sequence[tuple[dict[str, Any], dict[str, Any]]], cut: str) -> tuple[int, int]:
    """(questions where ours finds evidence in the cut and CPersona none, the reverse) at one cut."""

    def found(row: dict[str, Any], n: int) -> float:
        return {
            "first 10": row["recall_any@10"],
            "returned": row["any_all"],
            "equal": h.recall_any(equal_cut(row, n), row["gold_refs"], n),
        }[cut]

    won = lost = 0
    for a, b in pair_list:
        mine, theirs = found(a, b["returned"]), found(b, b["returned"])
        won += mine > theirs
        lost += mine < theirs
    return won, lost


def identity_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Per system of ours: identical answers, and question by question who finds evidence the other misses."""
    lines = []
    peers = [x for x in systems_in(rows) if not is_ours(x)]
    for system in [x for x in systems_in(rows) if is_ours(x)]:
        parts = []
        for (embedder,), group in h.group_rows(rows, ("embedder",)).items():
            matched = pairs(group, system)
            same = sum(1 for a, b in matched if a["refs"] == b["refs"])
            parts.append(f"{same} of {len(matched)} questions (`{embedder}`)")
        lines.append(f"- `{system}` returned exactly CPersona's rows in CPersona's order on " + ", ".join(parts) + ".")
    for (embedder,), group in h.group_rows(rows, ("embedder",)).items():
        for peer in peers:
            for system in [x for x in systems_in(group) if is_ours(x)]:
                matched = pairs(group, system, peer)
                if not matched:
                    continue
                cuts = CUTS if peer == PEER else CUTS[:2]
                counts = [(cut, *wins(matched, cut)) for cut in cuts]
                text = "; ".join(f"{cut}: {won} questions, the reverse on {lost}" for cut, won, lost in counts)
                lines.append(
                    f"- `{embedder}`, `{system}` against `{peer}`, question by question, `{system}` finds "
                    f"evidence where `{peer}` finds none: {text}."
                )
    return lines


def unequal_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Where a comparison is at unequal row counts, say so: each system's mean rows at the first two cuts."""
    lines = []
    for (embedder,), group in h.group_rows(rows, ("embedder",)).items():
        returned = {
            system: h.mean(r["returned"] for r in group if r["system"] == system) for system in systems_in(group)
        }
        if len({round(v, 3) for v in returned.values()}) > 1:
            lines.append(
                f"- `{embedder}`: the answers at limit 10 hold unequal numbers of rows ("
                + ", ".join(f"{system} {v:.2f}" for system, v in returned.items())
                + " on average): the `returned` figures compare unequal row counts; the `first 10` and "
                "`equal` figures do not (a system that returned fewer rows than the cut is read on what "
                "it returned: see the rows columns)."
            )
    return lines


def setup_lines(args: argparse.Namespace, datasets: Sequence[h.Dataset], facts: dict[str, Any]) -> list[str]:
    models = ", ".join(f"`{k}` ({v})" for k, v in facts.get("models", {}).items())
    merged = (
        [
            "- Layout `one-agent`: every conversation stored under ONE agent on both sides (one store of ours, one "
            "CPersona database, one import), the whole history stored before the first question; each question "
            "asked of that whole store and scored on its own evidence (where the text below says one store per "
            "conversation, read one store for all)."
            + (
                f" Grown: the store also holds {args.grow:,} distinct turns of other conversations (the long-span "
                "generator's histories, seeds 1 and up, each turn's text once and never an asked turn's) with their "
                "session summaries, on both sides; no question is asked of them, and a row of theirs in the first 10 "
                "counts as foreign."
                if getattr(args, "grow", 0)
                else ""
            )
        ]
        if getattr(args, "layout", "per-conversation") == "one-agent"
        else []
    )
    lines = [
        *merged,
        "- Data: LoCoMo, category 5 (adversarial) left out; categories 1 multi-hop, 2 temporal, 3 open-domain, "
        "4 single-hop. " + " ".join(line.removeprefix("- ") for line in h.dataset_facts(datasets)),
        "- `ours`: exactly as `benchmarks.retrieval` (`harness.ConversationStore`, in process): one fresh store "
        "per conversation (one agent), default settings except the block arm, which the harness turns off "
        "(`harness.WITHOUT_BLOCKS`: build and retrieval off), the gate calibrating itself in the background as "
        "the store grows (at 50, 200 and 1,000 memories, as shipped), fusion rrf; "
        "every turn stored with `Memory.store` (its timestamp, msg_id, the speaker as source), every session "
        "summary archived with `Memory.archive_episode` (keywords, start/end time); questions replayed in time "
        f"order with limit {args.limit}, asked_at as now, no time cue. Each question is asked a second time at "
        f"limit {args.limit + WIDEN} for the equal-row cut (a recall of ours writes nothing, so the two asks do "
        "not disturb each other).",
    ]
    for label, environ in facts.get("variants", {}).items():
        settings = ", ".join(f"`{k}={v}`" for k, v in environ.items())
        building = environ.get("CPERSONA_BLOCK_BUILD_ENABLED", "").lower() in ("1", "true", "yes", "on")
        lines.append(
            f"- `{label}`: `ours` with {settings}"
            + (
                " (all our settings at their defaults: blocks built and read, the block arm's held seats on). "
                "`Memory(..., background=False)`: no builder thread; after each batch of records the replay "
                "stores before a question, the harness drains the block-build queue in its own thread "
                "(`memory.blocks.drain()`), so every question finds the blocks of everything stored before it, "
                "deterministically."
                if building
                else "."
            )
        )
    peer_variants = facts.get("peer_variants", ["defaults"])
    lines += [
        f"- `{PEER}`: CPersona {peer_mod.PEER_VERSION} ({facts.get('install', 'installed')}) at its defaults "
        "(block building and retrieval on, its task queue on, up to 2 block seats held after the limit; its "
        "keyword seats are held only when a caller asks for them, which its recall tool never does, and far and "
        "propagation seats are off by default) but for the settings listed below; one fresh database per "
        "conversation and embedder (its FTS5 statistics are per table, so a shared database would change its "
        "keyword ranking), started over MCP stdio as "
        "`python -m cpersona`, filled with `import_memories` from a `cpersona-export/1.0` file: the same turn "
        "texts (as our store keeps them), timestamps, msg_ids, speakers, and the session summaries as episodes "
        "with their keywords and start/end times, every record with the vector our store holds "
        "(`embedding_b64`). An import of several files (20,000 records each) runs with SQLite's planner statistics "
        "gathered after its first file (`ANALYZE`: CPersona never gathers them, and without them its msg_id probe "
        "reads every row of the agent per record, about 2 hours for 100,000 records) and dropped when the last "
        "file is in, so what it stores and how its recall plans are as at its defaults. An import queues no "
        "block builds (CPersona documents it: the next start's backfill "
        "or a health repair builds them), so CPersona is then started again on the filled database, as a "
        "deployment would be: its start queues the block backfill, and the questions wait until its task queue "
        "is empty (`get_queue_status` polled every 0.5 s until `pending` is 0 on three polls in a row; its "
        f"timeout {args.queue_timeout:.0f} s). Then `recall` with the question's text, the conversation's "
        f"agent_id and limit {args.limit}, every other argument at its default (default fusion `rrf`), in "
        "time order.",
        f"- `{PEER}` settings changed from its defaults, each because running it here needs it: "
        + "; ".join(f"`{k}={v}` ({why})" for k, (v, why) in PEER_DEFAULTS.items())
        + ".",
    ]
    if "blocks-off" in peer_variants:
        lines.append(
            f"- `{PEER_VARIANTS['blocks-off'][0]}` (a variant, not the headline): CPersona as this comparison ran it "
            "before, one start, no restart, no wait: "
            + "; ".join(f"`{k}={v}` ({why})" for k, (v, why) in PEER_VARIANTS["blocks-off"][1].items())
            + "."
        )
    lines += [
        "- Query vectors: ours from the in-process embedder, CPersona's from `cuedrecall embed-server` running "
        "the same embedder (CPERSONA_EMBEDDING_MODE=http; its block vectors come from there too). Embedders: "
        + models
        + ".",
        "- Relevance: the evidence turns' refs in our store (binary), the same for every system. CPersona's refs "
        "are mapped to ours through the msg_id (memories) and the summary text (episodes), read from its "
        "database; a row that maps to nothing counts as irrelevant.",
        "- Ranking: the returned rows best first (the reversed `messages`), held seats included (they come after "
        "the ranked rows). Three cuts, each with its mean row count beside it: `first 10` (recall_any@10: any "
        "evidence in the first 10 rows; NDCG@10 with the ideal of min(|evidence|, 10) relevant rows first; "
        "`rows@10` = mean min(rows, 10)); `returned` (every row of the answer at limit 10, seats included; NDCG "
        "over the returned rows, its ideal as long as the answer; MRR: 1 / rank of the first evidence over "
        "every returned row); `equal` (per question, n = the number of rows `cpersona` returned; each system "
        "read on n rows: its answer at limit 10 cut to n rows, or, when it holds fewer, topped up with the "
        f"further rows of its answer at limit {args.limit + WIDEN} in that answer's order (ours only; a CPersona "
        "variant is read on what it returned, its `rows (equal)` says so); recall_any@n and NDCG@n). "
        "recall_any@5 and recall_all@10 (all evidence in the first 10) are on the first rows too.",
        "- Agreement: per question, the Jaccard similarity of the two systems' returned ref sets (CPersona's "
        "mapped to ours); `jaccard@10` uses the first 10 of each; `identical`: the share of questions where "
        "both returned the same rows in the same order; each of ours against `cpersona` (defaults).",
    ]
    return lines


def vector_lines(facts: dict[str, Any]) -> list[str]:
    """How far the embed-server's query vectors (CPersona's) are from ours, per embedder."""
    return [
        f"- Query vectors, `{name}`: on {gap['texts']} question texts the embed-server's vectors differ from "
        f"ours by at most {gap['max_abs']:.2e} per component (lowest cosine {gap['min_cosine']:.6f})."
        for name, gap in facts.get("vectors", {}).items()
    ]


def check_lines(facts: dict[str, Any]) -> list[str]:
    lines = vector_lines(facts)
    imports = facts.get("imports", [])
    ours = facts.get("ours", [])
    for name in dict.fromkeys(i["embedder"] for i in imports):
        for system in dict.fromkeys(i.get("system", PEER) for i in imports if i["embedder"] == name):
            mine = [i for i in imports if i["embedder"] == name and i.get("system", PEER) == system]
            held = [o for o in ours if o["embedder"] == name and o.get("system", OURS) == OURS]
            lines.append(
                f"- Loading, `{name}`, `{system}`: CPersona imported {sum(i['imported_memories'] for i in mine):,} "
                f"memories ({sum(i['skipped_memories'] for i in mine):,} skipped as duplicates) and "
                f"{sum(i['imported_episodes'] for i in mine):,} episodes "
                f"({sum(i['skipped_episodes'] for i in mine):,} skipped); our stores hold "
                f"{sum(o.get('memories', 0) for o in held):,} memories "
                f"({sum(o.get('duplicates', 0) for o in held):,} turns skipped as repeats) and "
                f"{sum(o.get('episodes', 0) for o in held):,} episodes; {sum(i['mapped'] for i in mine):,} of "
                f"CPersona's {sum(i['rows'] for i in mine):,} rows map to ours."
            )
            queues = [i["queue"] for i in mine if "queue" in i]
            if queues:
                seconds = [q["seconds"] for q in queues]
                blocks = [i.get("blocks", (0, 0)) for i in mine]
                lines.append(
                    f"- CPersona's queue, `{name}`, `{system}`: after the restart it held up to "
                    f"{max(q['peak_pending'] for q in queues)} tasks; it was empty after {sum(seconds):.1f} s in all "
                    f"({min(seconds):.1f}–{max(seconds):.1f} s a conversation, from the restart's initialize to "
                    f"the last of the three empty polls) and still empty after the questions on "
                    f"{sum(1 for i in mine if i.get('pending_after') == 0)} of {len(mine)} conversations; its "
                    f"database then held {sum(b[1] for b in blocks):,} embedded blocks over "
                    f"{sum(b[0] for b in blocks):,} records."
                )
    for name in dict.fromkeys(o["embedder"] for o in facts.get("ours", [])):
        for system in dict.fromkeys(o.get("system", OURS) for o in facts["ours"] if o["embedder"] == name):
            mine = [o for o in facts["ours"] if o["embedder"] == name and o.get("system", OURS) == system]
            if sum(o.get("block_tasks", 0) for o in mine):
                lines.append(
                    f"- Our block builds, `{name}`, `{system}`: {sum(o['block_tasks'] for o in mine):,} tasks run "
                    f"by the replay in {sum(o['block_build_s'] for o in mine):.1f} s, leaving "
                    f"{sum(o['blocks'][1] for o in mine):,} embedded blocks over "
                    f"{sum(o['blocks'][0] for o in mine):,} records."
                )
    if "late" in facts:
        lines.append(
            f"- Questions asked before their conversation's last record: {facts['late']} (CPersona is "
            "loaded with the whole conversation, ours replays up to asked_at; with 0 both see the same "
            "records)."
        )
    return lines


def short_window_lines(rows: Sequence[dict[str, Any]], limit: int) -> list[str]:
    """Per embedder and system: answers whose ranked rows (held seats aside) number fewer than the limit, and
    answers that carry held seats (only where the ranked rows fall short can a seat land inside the first 10)."""
    lines = []
    order = {system: i for i, system in enumerate(systems_in(rows))}
    embedders = {e: i for i, e in enumerate(dict.fromkeys(r["embedder"] for r in rows))}
    groups = h.group_rows(rows, ("embedder", "system")).items()
    for (embedder, system), group in sorted(groups, key=lambda item: (embedders[item[0][0]], order[item[0][1]])):
        short = sum(1 for r in group if r["returned"] - r["held"] < limit)
        held = sum(1 for r in group if r["held"])
        kinds: dict[str, int] = {}
        for r in group:
            for kind, count in r.get("held_kinds", {}).items():
                kinds[kind] = kinds.get(kind, 0) + count
        by_kind = ", ".join(f"{count:,} {kind}" for kind, count in sorted(kinds.items()))
        lines.append(
            f"- `{embedder}`, {system}: {short} of {len(group)} answers hold fewer than {limit} ranked rows; "
            f"{held} carry held seats (mean {h.mean(r['held'] for r in group):.2f} a question"
            + (f"; by kind: {by_kind}" if by_kind else "")
            + f"), mean "
            f"{h.mean(r['returned'] for r in group):.2f} rows, at most {max(r['returned'] for r in group)}."
        )
    most = max((r["returned"] for r in rows if r["system"] == PEER), default=0)
    if most > limit + WIDEN:
        lines.append(
            f"- CPersona returned up to {most} rows, more than ours was asked for ({limit + WIDEN}): on "
            "those questions the equal cut reads ours on fewer rows."
        )
    return lines


def render(
    argv: Sequence[str], args: argparse.Namespace, datasets: h.Datasets, rows: h.Rows, facts: dict[str, Any]
) -> str:
    header = ["embedder", "category", "system", *RESULT_COLUMNS, "n"]
    lines = [
        "# Retrieval quality: ours against CPersona 2.6.14",
        "",
        f"Command: `{h.command_line(PROG, argv)}`",
        "",
        "## Headline (LoCoMo, all scored questions)",
        "",
        f"`{PEER}` is CPersona at its defaults (blocks built before the first question); `rows` columns: the mean "
        "number of rows each figure was read on. `equal rows`: every system read on as many rows as `cpersona` "
        f"returned for the question (an answer of ours that holds fewer is topped up from its answer at limit "
        f"{args.limit + WIDEN}).",
        "",
        *h.markdown_table(HEADLINE_COLUMNS, headline_rows(rows), left=2),
        "",
        *foreign_lines(rows),
        *identity_lines(rows),
        *unequal_lines(rows),
        "",
        *h.section("Setup", setup_lines(args, datasets, facts)),
        *h.section("Checks", [*check_lines(facts), *short_window_lines(rows, args.limit)]),
        *h.section("Results", h.markdown_table(header, metric_rows(rows), left=3)),
        *h.section("Agreement", h.markdown_table(AGREEMENT_COLUMNS, agreement_rows(rows), left=3)),
    ]
    return "\n".join(lines)


def print_summary(rows: Sequence[dict[str, Any]], console: Console) -> None:
    table = Table(title="retrieval on LoCoMo, ours vs CPersona (all scored questions)")
    for column in HEADLINE_COLUMNS:
        table.add_column(column, justify="left" if column in ("embedder", "system") else "right")
    for line in headline_rows(rows):
        table.add_row(line[0], line[1], *(f"{v:.3f}" for v in line[2:-1]), str(line[-1]))
    console.print(table)


def main(argv: Sequence[str] | None = None, console: Console | None = None) -> int:
    return peer_main(argv, build_parser(), sys.modules[__name__], console, "no questions to evaluate")


def peer_main(
    argv: Sequence[str] | None, parser: argparse.ArgumentParser, study: Any, console: Console | None, nothing: str
) -> int:
    """Parse, run, write the report (and the rows with ``--dump-rows``), print the summary: the flow of the
    scripts that ask CPersona too. ``study`` is the script's module: it provides parse_variant, run, render and
    print_summary."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    if args.ours_variant:
        try:
            study.parse_variant(args.ours_variant)
        except ValueError as exc:
            parser.error(str(exc))
    console = console or Console(stderr=True)
    datasets, rows, facts = study.run(args, console)
    if not rows:
        console.print(nothing)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(study.render(argv, args, datasets, rows, facts), encoding="utf-8")
    if args.dump_rows:
        args.dump_rows.parent.mkdir(parents=True, exist_ok=True)
        with args.dump_rows.open("w", encoding="utf-8") as out:
            for row in rows:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
    study.print_summary(rows, console)
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
