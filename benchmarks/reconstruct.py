"""Reconstruct on LoCoMo and the long-span history, ours against CPersona 2.6.14: is the evidence quoted?

    python -m benchmarks.reconstruct --embedders local hash --datasets locomo long_span

``reconstruct`` is the tool an agent calls to answer from memory: a recall (``top_k``
rows, 20 by default), the rows grouped into items, each item quoted within a character
budget. This benchmark asks it every question at its defaults (no count, budget or
top_k: the default budget) and measures whether the evidence comes back *quoted*, what
the answer costs a client's model to read, and how the two systems compare on the same
records and vectors:

- ours (in process, ``Memory.call("reconstruct", ...)``): one fresh store per conversation
  filled by ``harness.ConversationStore`` with the whole conversation (every turn with
  its timestamp, msg_id and speaker; every session summary as an episode), at our
  default settings: block building and the block arm are on by default in ``Settings``,
  so the store's block-build queue is drained before the first question. The clock reads
  the question's asked_at. ``--ours-variant CPERSONA_NAME=VALUE`` adds ours with settings
  changed, as one more system.
- CPersona at its defaults (the headline peer, as ``benchmarks.retrieval_peer`` runs it,
  whose plumbing this reuses): a fresh database per conversation filled through its
  ``import_memories`` with the same texts, timestamps, msg_ids, speakers, episodes and the
  very vectors our store holds; restarted so its start queues the block backfill, its
  task queue drained (``retrieval_peer.ask_peer`` with no questions); then started once
  more on that database, its queue drained again, and asked over MCP stdio. Its query and
  block vectors come from ``cuedrecall embed-server`` running the same embedder.
- Each question is asked without a cue and, when ``benchmarks.cues.extract_cue`` reads a
  cue from its text and asked_at, again with that cue as ``time_cue``. A relative cue
  (``ago``) is turned into the absolute dates it names at the question's asked_at before
  either system sees it (CPersona reads ``ago`` against its wall clock), so both get the
  same arguments. CPersona's refs are mapped to ours through the msg_id (memories) and the
  summary text (episodes); an answer that is ``ok: false`` (ours until our reconstruct
  lands), a tool error or a timeout is an error row, counted as a miss and reported.

Writes benchmarks/results/reconstruct.md (the command at the top, the rule, then the numbers).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from benchmarks import harness as h
from benchmarks import peer as peer_mod
from benchmarks import retrieval_peer as rp
from benchmarks.cues import cue_period, explain_cue
from cuedrecall.clock import fixed_clock
from cuedrecall.config import Settings
from cuedrecall.text.sanitise import sanitise

PROG = "benchmarks.reconstruct"
OURS, PEER = rp.OURS, rp.PEER
TOOL = "reconstruct"
DATASETS = ("locomo", "long_span")
NO_CUE, CUE = "no cue", "cue"
# A quote "holds the evidence text" when it contains this many consecutive characters of the evidence
# record's normalized text (all of it when the text is shorter).
SPAN = 40

# Our block settings at their defaults (``Settings``): the harness turns blocks off unless told, so ours at its
# defaults passes them back in.
BLOCK_SETTINGS = (
    ("CPERSONA_BLOCK_BUILD_ENABLED", "block_build_enabled"),
    ("CPERSONA_BLOCK_RETRIEVAL_ENABLED", "block_retrieval_enabled"),
)


def our_defaults() -> dict[str, str]:
    """The environment that gives ours its default block settings through ``harness.settings_for``."""
    defaults = Settings()
    return {name: str(bool(getattr(defaults, field))).lower() for name, field in BLOCK_SETTINGS}


def blocks_on(environ: Mapping[str, str]) -> bool:
    return all(environ.get(name, "").lower() in ("1", "true", "yes", "on") for name, _ in BLOCK_SETTINGS)


VARIANT_NAMES = {
    (("CPERSONA_BLOCK_BUILD_ENABLED", "false"), ("CPERSONA_BLOCK_RETRIEVAL_ENABLED", "false")): "blocks-off"
}


def parse_variant(texts: Sequence[str]) -> tuple[str, dict[str, str]]:
    """``CPERSONA_NAME=VALUE`` items -> (the variant's label, the environment over our defaults)."""
    return rp.parse_variant(texts, base=our_defaults(), names=VARIANT_NAMES)


# -- reading a reconstruct answer ----------------------------------------------------------------


def normalize(text: str) -> str:
    """NFKC, casefolded, whitespace runs as one space, trimmed: how quotes and evidence texts are compared."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def holds_part(quote: str, evidence: str, span: int = SPAN) -> bool:
    """Whether ``quote`` contains ``span`` consecutive characters of ``evidence`` (all of it when shorter),
    both normalized. An empty evidence text is never held."""
    q, e = normalize(quote), normalize(evidence)
    if not e or not q:
        return False
    n = min(span, len(e))
    return any(e[i : i + n] in q for i in range(len(e) - n + 1))


def mapped(ref: Any, table: Mapping[str, str] | None) -> str | None:
    """A ref of the answer as our ref: as is for ours (``table`` None), through the table for CPersona; a
    CPersona ref the table does not know becomes ``peer:<ref>`` (never evidence). Not a string: None."""
    if not isinstance(ref, str) or not ref:
        return None
    if table is None:
        return ref
    return table.get(ref, f"peer:{ref}")


def passages(response: Mapping[str, Any], table: Mapping[str, str] | None = None) -> list[tuple[int, str, str]]:
    """The quoted passages of an answer as (item index, our ref, text): each item's head quote (``content``,
    attributed to ``head_ref``), then its ``excerpts`` (``content``, attributed to their ``ref``). A passage
    with no text or no ref is left out."""
    out = []
    for index, item in enumerate(response.get("items") or []):
        if not isinstance(item, dict):
            continue
        head, content = mapped(item.get("head_ref"), table), item.get("content")
        if head and isinstance(content, str) and content:
            out.append((index, head, content))
        for excerpt in item.get("excerpts") or []:
            if not isinstance(excerpt, dict):
                continue
            ref, text = mapped(excerpt.get("ref"), table), excerpt.get("content")
            if ref and isinstance(text, str) and text:
                out.append((index, ref, text))
    return out


def cited_refs(response: Mapping[str, Any], table: Mapping[str, str] | None = None) -> set[str]:
    """Every ref an item names as its head or among its claims, quoted or not."""
    out: set[str] = set()
    for item in response.get("items") or []:
        if not isinstance(item, dict):
            continue
        refs = [item.get("head_ref")] + [c.get("ref") for c in item.get("claims") or [] if isinstance(c, dict)]
        out.update(ref for ref in (mapped(r, table) for r in refs) if ref)
    return out


def response_chars(response: Mapping[str, Any]) -> int:
    """What a client's model reads: the answer as JSON, ``json.dumps(..., ensure_ascii=False)``."""
    return len(json.dumps(response, ensure_ascii=False))


def is_error(response: Any) -> str | None:
    """Why an answer is an error row (``ok: false``, or not an answer with items), or None."""
    if not isinstance(response, dict):
        return f"not an answer: {type(response).__name__}"
    if response.get("ok") is False:
        return str(response.get("error") or "ok: false")[:300]
    if not isinstance(response.get("items"), list):
        return "no items list in the answer"
    return None


SCORES = ("quoted", "quoted_text", "all_quoted", "cited", "text_anywhere", "first_item")
SIZES = ("items", "returned_count", "size_chars", "quoted_chars")


def score(
    response: Any, gold: Sequence[str], texts: Mapping[str, str], table: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """One answer against the question's evidence refs (ours) and their texts.

    - quoted: some evidence ref has a quote (a head quote or an excerpt attributed to it);
    - quoted_text: some quote attributed to an evidence ref holds ``SPAN`` consecutive characters of that
      record's text (``holds_part``): the stricter column, a subset of ``quoted``;
    - all_quoted: every evidence ref has a quote (0 without evidence refs);
    - cited: some evidence ref is named as an item's head or among its claims, quoted or not;
    - text_anywhere: some quote, whoever it is attributed to, holds ``SPAN`` characters of an evidence text
      (a check on the ref mapping, not a headline figure);
    - first_item: the first item quotes evidence;
    - items, returned_count, size_chars (``response_chars``), quoted_chars (the quotes' characters).

    An error answer (``is_error``) scores 0 on every rate, None on the sizes, and carries ``error``.
    """
    error = is_error(response)
    if error is not None:
        return {**{k: 0.0 for k in SCORES}, **{k: None for k in SIZES}, "error": error}
    relevant = set(gold)
    quotes = passages(response, table)
    quoted = {ref for _i, ref, _t in quotes if ref in relevant}
    strict = {ref for _i, ref, text in quotes if ref in relevant and holds_part(text, texts.get(ref, ""))}
    anywhere = any(holds_part(text, texts.get(ref, "")) for _i, _r, text in quotes for ref in relevant)
    returned = response.get("returned_count")
    return {
        "quoted": float(bool(quoted)),
        "quoted_text": float(bool(strict)),
        "all_quoted": float(bool(relevant) and relevant <= quoted),
        "cited": float(bool(cited_refs(response, table) & relevant)),
        "text_anywhere": float(anywhere),
        "first_item": float(any(i == 0 and ref in relevant for i, ref, _t in quotes)),
        "items": len(response["items"]),
        "returned_count": returned if isinstance(returned, int) else None,
        "size_chars": response_chars(response),
        "quoted_chars": sum(len(text) for _i, _r, text in quotes),
        "error": None,
    }


# -- cues ----------------------------------------------------------------------------------------


def absolute_cue(cue: Mapping[str, Any], asked_at: str, oldest: str | None) -> tuple[dict[str, Any] | None, bool]:
    """(the cue both systems are sent, whether it was relative): an ``ago`` cue becomes the absolute days its
    nominal period covers at ``asked_at`` (``benchmarks.cues.cue_period``; ``long_ago`` reads ``oldest``, the
    conversation's first record), with the same confidence; any other cue is sent as extracted. (None, True)
    when a relative cue names no period."""
    if "ago" not in cue:
        return dict(cue), False
    found = cue_period(dict(cue), asked_at, oldest=oldest)
    if found is None:
        return None, True
    start, end = found
    return {
        "after": start.date().isoformat(),
        "before": (end - timedelta(microseconds=1)).date().isoformat(),
        "confidence": cue["confidence"],
    }, True


def question_cues(conversation: Any, questions: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """Per qid of a question that gets a cue: {rule, extracted, cue (what is sent), relative}."""
    stamps = [t.timestamp for t in conversation.turns]
    oldest = min(stamps, key=datetime.fromisoformat) if stamps else None
    out = {}
    for question in questions:
        found = explain_cue(question.text, question.asked_at)
        if found is None:
            continue
        rule, extracted = found
        cue, relative = absolute_cue(extracted, question.asked_at, oldest)
        if cue is not None:
            out[question.qid] = {"rule": rule, "extracted": extracted, "cue": cue, "relative": relative}
    return out


def calls_for(
    agent: str, questions: Sequence[Any], cues: Mapping[str, Mapping[str, Any]]
) -> list[tuple[Any, str, dict[str, Any]]]:
    """(question, arm, arguments) in the order both systems are asked: time order, each question without a cue
    then (if it has one) with it; no count, budget or top_k (the defaults)."""
    out = []
    for question in h.in_time_order(questions):
        arguments = {"agent_id": agent, "query": question.text}
        out.append((question, NO_CUE, dict(arguments)))
        if question.qid in cues:
            out.append((question, CUE, {**arguments, "time_cue": dict(cues[question.qid]["cue"])}))
    return out


def scored_questions(dataset: h.Dataset, conversation: Any) -> list[Any]:
    """The questions asked: LoCoMo without category 5 (adversarial), as the retrieval benchmarks; long-span all."""
    return [q for q in conversation.questions if dataset.scored(q)]


def dataset_label(dataset: h.Dataset) -> str:
    return "locomo" if dataset.name == "locomo" else dataset.name


# -- one question's row --------------------------------------------------------------------------


def question_row(
    dataset: h.Dataset,
    embedder: str,
    system: str,
    conversation: str,
    question: Any,
    arm: str,
    cued: bool,
    gold: Sequence[str],
    texts: Mapping[str, str],
    response: Any,
    table: Mapping[str, str] | None = None,
    ms: float | None = None,
) -> dict[str, Any]:
    row = {
        "dataset": dataset_label(dataset),
        "embedder": embedder,
        "system": system,
        "conversation": conversation,
        "qid": question.qid,
        "category": dataset.category_label(question.category),
        "arm": arm,
        "cued": cued,
        "gold": len(gold),
        **score(response, gold, texts, table),
        "ms": ms,
    }
    if isinstance(response, dict) and arm == CUE:
        row["cue_echoed"] = "time_cue" in response
    return row


def evidence_texts(conversation: Any, refs: Mapping[str, str], cap: int) -> dict[str, str]:
    """Our ref -> the text our store keeps for it (sanitised), for every turn; a repeated turn maps to the row
    it repeats, whose text is the same."""
    out: dict[str, str] = {}
    for turn in conversation.turns:
        if turn.msg_id in refs:
            out.setdefault(refs[turn.msg_id], sanitise(turn.content, cap)[0])
    return out


# -- ours ----------------------------------------------------------------------------------------


def evaluate_ours(
    dataset: h.Dataset,
    conversation: Any,
    embedder: h.PrefetchEmbedder,
    workdir: Path,
    calls: Sequence[tuple[Any, str, dict[str, Any]]],
    advance: Callable[[], None],
    system: str = OURS,
    environ: Mapping[str, str] | None = None,
    dump: list[dict[str, Any]] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Our rows for one conversation, and what CPersona's answers are read against (gold refs, texts, ref maps).

    The whole conversation is stored first (CPersona is loaded with all of it too), the block-build queue
    drained when blocks are on; then every call, the clock at the question's asked_at.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    environ = our_defaults() if environ is None else environ
    store = h.ConversationStore(conversation, embedder, Settings().recall_mode, workdir, environ)
    rows: list[dict[str, Any]] = []
    try:
        started = time.perf_counter()
        store.advance(None)
        load_s = time.perf_counter() - started
        cap = store.memory.settings.max_content_length
        texts = evidence_texts(conversation, store.refs, cap)
        gold = {q.qid: store.gold(q) for q, _arm, _args in calls}
        cued = {q.qid for q, arm, _args in calls if arm == CUE}
        for question, arm, arguments in calls:
            store.memory.clock = fixed_clock(question.asked_at)
            started = time.perf_counter()
            try:
                response: Any = store.memory.call(TOOL, dict(arguments))
            except Exception as exc:  # call never raises; if it does, the row says so
                response = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
            ms = (time.perf_counter() - started) * 1000
            rows.append(
                question_row(
                    dataset,
                    embedder.mode,
                    system,
                    conversation.conv_id,
                    question,
                    arm,
                    question.qid in cued,
                    gold[question.qid],
                    texts,
                    response,
                    ms=ms,
                )
            )
            if dump is not None:
                dump.append(
                    {
                        "system": system,
                        "embedder": embedder.mode,
                        "qid": question.qid,
                        "arm": arm,
                        "arguments": arguments,
                        "gold": gold[question.qid],
                        "response": response,
                    }
                )
            advance()
        info = {
            "gold": gold,
            "texts": texts,
            "refs": dict(store.refs),
            "duplicates": store.duplicates,
            "episodes": rp.our_episode_refs(conversation, store.episodes, cap),
            "memories": len(set(store.refs.values())),
            "episode_count": len(store.episodes),
            "block_tasks": store.block_tasks,
            "block_build_s": store.block_build_s,
            "load_s": load_s,
            "blocks": rp.our_block_count(store) if blocks_on(environ) else (0, 0),
        }
    finally:
        store.close()
    return rows, info


# -- CPersona ------------------------------------------------------------------------------------


async def ask_reconstruct(
    calls: Sequence[tuple[Any, str, dict[str, Any]]],
    db: Path,
    embed_url: str,
    log: Path,
    timeout: float,
    start_timeout: float,
    queue_timeout: float,
    advance: Callable[[], None],
    settings: Mapping[str, tuple[str, str]] = rp.PEER_DEFAULTS,
    answers: list[tuple[Any, float | None]] | None = None,
) -> dict[str, Any]:
    """Start CPersona on its filled database, drain its task queue (its start queues a backfill sweep that
    finds the blocks built), and make every call, appending (answer, ms) to ``answers`` in call order (so a
    caller keeps what came back before a failure); returns the facts (start, queue, seconds).

    A tool error or a timeout becomes ``{"ok": false, "error": ...}`` for that call (an error row).
    """
    facts: dict[str, Any] = {}
    answers = [] if answers is None else answers
    queue_on = rp.setting_on(settings, "CPERSONA_TASK_QUEUE_ENABLED")
    with open(log, "a", encoding="utf-8") as out:
        out.write(f"--- reconstruct start ({datetime.now().isoformat()}) ---\n")
    async with peer_mod.peer_server(db, embed_url, log, start_timeout, settings) as server:
        facts["startup_s"] = server.startup_s
        if queue_on:
            facts["queue_again"] = await rp.wait_for_queue(server, queue_timeout, timeout)
        started = time.perf_counter()
        for _question, _arm, arguments in calls:
            try:
                answer, ms = await server.call(TOOL, dict(arguments), timeout)
                answers.append((answer, ms))
            except (peer_mod.ToolError, TimeoutError) as exc:
                answers.append(({"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}, None))
            advance()
        facts["calls_s"] = time.perf_counter() - started
        if queue_on:
            status, _ms = await server.call("get_queue_status", {}, timeout)
            facts["pending_after"] = int(status.get("pending", 0))
    return facts


def evaluate_peer(
    dataset: h.Dataset,
    conversation: Any,
    embedder: h.PrefetchEmbedder,
    ours: Mapping[str, Any],
    calls: Sequence[tuple[Any, str, dict[str, Any]]],
    args: argparse.Namespace,
    embed_url: str,
    workdir: Path,
    advance: Callable[[], None],
    dump: list[dict[str, Any]] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """CPersona's rows for one conversation, read against our gold refs and texts; and the load's facts."""
    settings = rp.PEER_DEFAULTS
    records, episodes = rp.export_items(conversation, embedder, Settings().max_content_length)
    folder = workdir / f"cpersona-{h._safe(conversation.conv_id)}-{embedder.mode}"
    totals: dict[str, Any] = {"system": PEER}
    answers: list[tuple[Any, float | None]] = []
    started = time.perf_counter()
    try:
        # the import, the restart whose start queues the block backfill, the wait for the queue: as retrieval_peer
        loaded, _none = anyio.run(
            rp.ask_peer,
            conversation,
            [],
            records,
            episodes,
            embed_url,
            folder,
            h.LIMIT,
            args.timeout,
            args.start_timeout,
            lambda: None,
            settings,
            args.queue_timeout,
        )
        totals.update(loaded, load_s=time.perf_counter() - started)
        totals.update(
            anyio.run(
                ask_reconstruct,
                calls,
                folder / "cpersona.db",
                embed_url,
                folder / "cpersona.log",
                args.timeout,
                args.start_timeout,
                args.queue_timeout,
                advance,
                settings,
                answers,
            )
        )
    except Exception as exc:  # CPersona failed to load or to answer: every call it did not answer is an error row
        totals["failed"] = f"{type(exc).__name__}: {exc}"[:300]
        for _ in range(len(calls) - len(answers)):
            answers.append(({"ok": False, "error": f"CPersona failed: {totals['failed']}"}, None))
            advance()
    table: dict[str, str] = {}
    try:
        memories, peer_episodes = peer_mod.peer_record_keys(folder / "cpersona.db", conversation.conv_id)
        table = rp.peer_ref_table(memories, peer_episodes, ours["refs"], ours["episodes"])
        totals.update(
            rows=len(memories) + len(peer_episodes),
            mapped=len(table),
            blocks=rp.peer_block_count(folder / "cpersona.db", conversation.conv_id),
        )
    except Exception as exc:  # no database to read: nothing maps, and the failure is already recorded
        totals.setdefault("failed", f"{type(exc).__name__}: {exc}"[:300])
    cued = {q.qid for q, arm, _args in calls if arm == CUE}
    rows = []
    for (question, arm, arguments), (answer, ms) in zip(calls, answers):
        rows.append(
            question_row(
                dataset,
                embedder.mode,
                PEER,
                conversation.conv_id,
                question,
                arm,
                question.qid in cued,
                ours["gold"][question.qid],
                ours["texts"],
                answer,
                table,
                ms,
            )
        )
        if dump is not None:
            dump.append(
                {
                    "system": PEER,
                    "embedder": embedder.mode,
                    "qid": question.qid,
                    "arm": arm,
                    "arguments": arguments,
                    "gold": ours["gold"][question.qid],
                    "response": answer,
                    "mapped_refs": sorted({r for _i, r, _t in passages(answer, table)})
                    if isinstance(answer, dict)
                    else [],
                }
            )
    return rows, totals


# -- running -------------------------------------------------------------------------------------


def load(args: argparse.Namespace) -> list[h.Dataset]:
    """The datasets asked; under ``--layout one-agent`` LoCoMo's conversations stored as one (benchmarks.retrieval)."""
    from benchmarks.retrieval import laid_out

    locomo = args.locomo if "locomo" in args.datasets else None
    long_span = args.long_span if "long_span" in args.datasets else None
    return laid_out(h.load_datasets(locomo, args.limit_conversations, long_span, args.seed), args.layout)


def run(args: argparse.Namespace, console: Console) -> tuple[list[h.Dataset], list[dict[str, Any]], dict[str, Any]]:
    datasets = load(args)
    variants = [parse_variant(args.ours_variant)] if args.ours_variant else []
    workdir = h.workdir_for(args.workdir)
    facts: dict[str, Any] = {
        "models": {},
        "variants": {label: env for label, env in variants},
        "imports": [],
        "ours": [],
        "cues": [],
        "asked": [],
        "late": 0,
        "workdir": str(workdir),
        "seconds": {},
        "ours_environ": our_defaults(),
        "skip_peer": args.skip_peer,
    }
    if not args.skip_peer:
        facts["install"] = peer_mod.ensure_peer(log=workdir / "peer-install.log")
    plan = []  # (dataset, conversation, calls, cues)
    for dataset in datasets:
        for conversation in dataset.conversations:
            questions = scored_questions(dataset, conversation)
            cues = question_cues(conversation, questions)
            plan.append((dataset, conversation, calls_for(conversation.conv_id, questions, cues), cues))
            facts["late"] += rp.late_questions(conversation, questions)
            facts["asked"].append({"dataset": dataset_label(dataset), "questions": len(questions), "cued": len(cues)})
            facts["cues"] += [
                {"dataset": dataset_label(dataset), "conversation": conversation.conv_id, "qid": qid, **cue}
                for qid, cue in cues.items()
            ]
    systems = 1 + len(variants) + (0 if args.skip_peer else 1)
    rows: list[dict[str, Any]] = []
    dump: list[dict[str, Any]] | None = [] if args.dump_responses else None
    with Progress(console=console, transient=False) as progress:
        asked = progress.add_task(
            "reconstruct calls", total=sum(len(p[2]) for p in plan) * systems * len(args.embedders)
        )
        for name in args.embedders:
            clock = time.perf_counter()
            embedder = h.prefetched_embedder(name, datasets, progress)
            facts["models"][name] = embedder.model
            served = (
                None
                if args.skip_peer
                else peer_mod.EmbedServer(name, workdir / f"embed-server-{name}.log", timeout=300)
            )
            try:
                if served is not None:
                    served.__enter__()
                    sample = [q.text for _d, _c, calls, _cues in plan for q, _a, _x in calls][:64]
                    facts.setdefault("vectors", {})[name] = rp.query_vector_gap(served.url, embedder, sample)
                for dataset, conversation, calls, _cues in plan:
                    mine, ours = evaluate_ours(
                        dataset,
                        conversation,
                        embedder,
                        workdir / "ours",
                        calls,
                        lambda: progress.advance(asked),
                        dump=dump,
                    )
                    rows += mine
                    runs = [(OURS, ours)]
                    for i, (label, environ) in enumerate(variants):
                        more, info = evaluate_ours(
                            dataset,
                            conversation,
                            embedder,
                            workdir / f"variant-{i + 1}",
                            calls,
                            lambda: progress.advance(asked),
                            label,
                            environ,
                            dump,
                        )
                        rows += more
                        runs.append((label, info))
                    for system, info in runs:
                        facts["ours"].append(
                            {
                                "dataset": dataset_label(dataset),
                                "embedder": name,
                                "conversation": conversation.conv_id,
                                "system": system,
                                **{
                                    k: info[k]
                                    for k in (
                                        "memories",
                                        "episode_count",
                                        "duplicates",
                                        "block_tasks",
                                        "block_build_s",
                                        "blocks",
                                        "load_s",
                                    )
                                },
                            }
                        )
                    if served is not None:
                        theirs, totals = evaluate_peer(
                            dataset,
                            conversation,
                            embedder,
                            ours,
                            calls,
                            args,
                            served.url,
                            workdir,
                            lambda: progress.advance(asked),
                            dump,
                        )
                        rows += theirs
                        facts["imports"].append(
                            {
                                "dataset": dataset_label(dataset),
                                "embedder": name,
                                "conversation": conversation.conv_id,
                                **totals,
                            }
                        )
            finally:
                if served is not None:
                    served.__exit__()
            facts["seconds"][name] = time.perf_counter() - clock
    if dump is not None:
        args.dump_responses.parent.mkdir(parents=True, exist_ok=True)
        with args.dump_responses.open("w", encoding="utf-8") as out:
            for line in dump:
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
    return datasets, rows, facts


# -- summaries -----------------------------------------------------------------------------------


def systems_in(rows: Iterable[dict[str, Any]]) -> list[str]:
    return rp.systems_in(rows)


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Rates over every row (an error row is a miss), sizes over the rows that are not errors, errors, n."""
    out: dict[str, Any] = {k: h.mean(r[k] for r in rows) for k in SCORES}
    answered = [r for r in rows if r["error"] is None]
    for k in SIZES:
        values = [r[k] for r in answered if r[k] is not None]
        out[k] = h.mean(values)
    out["errors"] = len(rows) - len(answered)
    out["n"] = len(rows)
    return out


# (label of the question set, arm, keep the row?)
SLICES = (
    ("all", NO_CUE, lambda r: r["arm"] == NO_CUE),
    ("cued", NO_CUE, lambda r: r["arm"] == NO_CUE and r["cued"]),
    ("cued", CUE, lambda r: r["arm"] == CUE),
)

# the figures of a headline row: (column, summarise's key)
HEADLINE_FIGURES = (
    ("evidence quoted", "quoted"),
    ("evidence text quoted", "quoted_text"),
    ("all evidence quoted", "all_quoted"),
    ("evidence cited", "cited"),
    ("items", "items"),
    ("response chars", "size_chars"),
    ("quoted chars", "quoted_chars"),
    ("errors", "errors"),
    ("n", "n"),
)
HEADLINE_COLUMNS = ["dataset", "embedder", "system", "questions", "arm", *(column for column, _ in HEADLINE_FIGURES)]


def headline_rows(rows: Sequence[dict[str, Any]]) -> list[list[Any]]:
    """Per dataset, embedder and system: every question without a cue, the cued ones without and with it."""
    out = []
    systems = systems_in(rows)
    for (dataset, embedder), group in h.group_rows(rows, ("dataset", "embedder")).items():
        for system in systems:
            mine = [r for r in group if r["system"] == system]
            for label, arm, keep in SLICES:
                part = [r for r in mine if keep(r)]
                if part:
                    s = summarise(part)
                    out.append([dataset, embedder, system, label, arm, *(s[key] for _, key in HEADLINE_FIGURES)])
    return out


# the figures of a row by category: the headline's, the first item and any quote beside them
DETAIL_FIGURES = (
    *HEADLINE_FIGURES[:4],
    ("evidence in the first item", "first_item"),
    ("evidence text in any quote", "text_anywhere"),
    ("items", "items"),
    ("returned_count", "returned_count"),
    *HEADLINE_FIGURES[5:],
)
DETAIL_COLUMNS = ["dataset", "embedder", "category", "system", "arm", *(column for column, _ in DETAIL_FIGURES)]


def detail_rows(rows: Sequence[dict[str, Any]]) -> list[list[Any]]:
    """Per dataset, embedder and category (all first), system and arm: every figure."""
    out = []
    systems = systems_in(rows)
    for (dataset, embedder), group in h.group_rows(rows, ("dataset", "embedder")).items():
        parts = [("**all**", group)] + [(c, p) for (c,), p in sorted(h.group_rows(group, ("category",)).items())]
        for category, part in parts:
            for system in systems:
                for arm in (NO_CUE, CUE):
                    mine = [r for r in part if r["system"] == system and r["arm"] == arm]
                    if mine:
                        s = summarise(mine)
                        out.append([dataset, embedder, category, system, arm, *(s[k] for _, k in DETAIL_FIGURES)])
    return out


def _key(row: Mapping[str, Any]) -> tuple[str, str, str, str, str]:
    return row["dataset"], row["embedder"], row["conversation"], row["qid"], row["arm"]


def paired_lines(rows: Sequence[dict[str, Any]], metric: str = "quoted") -> list[str]:
    """Question by question: each system of ours against CPersona (same arm), and each system's cue against its
    own no-cue answer, on ``metric``."""
    lines = []
    systems = systems_in(rows)
    theirs = {_key(r): r for r in rows if r["system"] == PEER}
    for (dataset, embedder), group in h.group_rows(rows, ("dataset", "embedder")).items():
        for system in [s for s in systems if rp.is_ours(s)]:
            for arm in (NO_CUE, CUE):
                pairs = [
                    (r, theirs[_key(r)])
                    for r in group
                    if r["system"] == system and r["arm"] == arm and _key(r) in theirs
                ]
                if pairs:
                    won = sum(1 for a, b in pairs if a[metric] > b[metric])
                    lost = sum(1 for a, b in pairs if a[metric] < b[metric])
                    lines.append(
                        f"- `{dataset}`, `{embedder}`, {arm}: `{system}` quotes evidence where `{PEER}` "
                        f"does not on {won} of {len(pairs)} questions, the reverse on {lost}."
                    )
        for system in systems:
            mine = [r for r in group if r["system"] == system]
            uncued = {_key({**r, "arm": CUE}): r for r in mine if r["arm"] == NO_CUE and r["cued"]}
            pairs = [(r, uncued[_key(r)]) for r in mine if r["arm"] == CUE and _key(r) in uncued]
            if pairs:
                won = sum(1 for a, b in pairs if a[metric] > b[metric])
                lost = sum(1 for a, b in pairs if a[metric] < b[metric])
                lines.append(
                    f"- `{dataset}`, `{embedder}`, `{system}`: with the cue, evidence quoted where the "
                    f"answer without it quoted none on {won} of {len(pairs)} cued questions, the reverse "
                    f"on {lost}."
                )
    return lines


def error_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Per system: how many answers were errors, and the most common messages."""
    lines = []
    for system in systems_in(rows):
        errors = [r for r in rows if r["system"] == system and r["error"] is not None]
        if not errors:
            lines.append(f"- `{system}`: no error answers ({sum(1 for r in rows if r['system'] == system)} calls).")
            continue
        counts: dict[str, int] = {}
        for r in errors:
            counts[r["error"]] = counts.get(r["error"], 0) + 1
        common = "; ".join(f"{n} × {msg[:160]!r}" for msg, n in sorted(counts.items(), key=lambda x: -x[1])[:3])
        lines.append(
            f"- `{system}`: {len(errors)} of {sum(1 for r in rows if r['system'] == system)} calls "
            f"answered with an error (counted as misses; left out of the size means): {common}."
        )
    return lines


# -- report --------------------------------------------------------------------------------------

RULE = """## What is measured (fixed before any number below)

1. **Questions.** LoCoMo (development split): every question but category 5 (adversarial), as in the
   retrieval benchmarks; the long-span history: every question. Each is asked once **without a cue**; the
   ones `benchmarks.cues.extract_cue(question.text, question.asked_at)` reads a cue from (the rule-based
   extractor of the time-cue study: the question's text and the date it was asked, never the answer or the
   evidence) are asked a second time **with that cue** as `time_cue`. A relative cue (`ago`: "a month ago",
   "last week", "long ago") is first turned into the absolute days its nominal period covers at the
   question's asked_at (`benchmarks.cues.cue_period`, `long_ago` against the conversation's first record),
   with the same confidence: CPersona reads `ago` against its wall clock, so both systems are sent the same,
   absolute, arguments.
2. **Arguments.** `reconstruct` with `agent_id`, `query` (the question's text) and, in the cue arm,
   `time_cue`; nothing else: `count`, `top_k`, `budget` and every other argument at the server's defaults
   (CPersona: count 10, top_k 20, default budget). Both systems, the same arguments, the same records and
   vectors.
3. **Evidence.** The stored refs of the question's evidence turns (ours; CPersona's refs are mapped to ours
   through the msg_id for memories and the summary text for episodes, read from its database; a ref that maps
   to nothing is never evidence). The evidence *text* of a ref is the text both stores keep for that turn.
4. **A quote** is an item's head quote (its `content`, attributed to its `head_ref`) or an entry of its
   `excerpts` (its `content`, attributed to its `ref`); a quote with empty text does not count.
   - **evidence quoted**: the share of questions where some evidence ref has a quote;
   - **evidence text quoted** (stricter, a subset of the former): the share where some quote attributed to an
     evidence ref actually holds that record's text: its normalised text (NFKC, casefolded, whitespace runs as
     one space, trimmed) contains {span} consecutive characters of the evidence record's normalised text (all
     of it when shorter than {span});
   - **all evidence quoted**: the share where every evidence ref has a quote (0 for a question without
     evidence refs);
   - **evidence cited**: the share where some evidence ref is an item's `head_ref` or among its `claims`,
     quoted or not;
   - secondary: **evidence in the first item** (the first item quotes evidence) and **evidence text in any
     quote** (some quote, whatever ref it is attributed to, holds {span} characters of an evidence text: a
     check on the attribution and the ref mapping).
5. **Cost.** **items**: `len(items)`; **response chars**: `len(json.dumps(answer, ensure_ascii=False))` of the
   answer as the tool returned it (CPersona's as parsed from its MCP text, both dumped the same way): what a
   client's model must read; **quoted chars**: the characters of every quote.
6. **Errors.** An answer with `ok: false`, a tool error or a call that timed out is an **error row**: it
   counts as a miss in every rate (the rates are over all questions) and is left out of the item and size
   means; the error count is beside every figure.
7. **Reported** per dataset, embedder and system: every question without a cue; the cued questions without
   and with the cue (so the cue is compared on the same questions); then per category, and question by
   question (ours against CPersona on "evidence quoted", each system's cue against its own answer without).
"""


def setup_lines(args: argparse.Namespace, datasets: Sequence[h.Dataset], facts: dict[str, Any]) -> list[str]:
    models = ", ".join(f"`{k}` ({v})" for k, v in facts.get("models", {}).items())
    environ = facts.get("ours_environ", our_defaults())
    asked = h.group_rows(facts.get("asked", []), ("dataset",))
    merged = (
        [
            "- Layout `one-agent`: every LoCoMo conversation stored under ONE agent on both sides (one store, one "
            "CPersona database), each question asked of that whole store and scored on its own evidence."
        ]
        if getattr(args, "layout", "per-conversation") == "one-agent"
        else []
    )
    lines = [
        *merged,
        "- Data: " + " ".join(line.removeprefix("- ") for line in h.dataset_facts(datasets)),
        "- Asked: "
        + "; ".join(
            f"{dataset}: {sum(a['questions'] for a in part):,} questions, "
            f"{sum(a['cued'] for a in part):,} of them with a cue"
            for (dataset,), part in asked.items()
        )
        + ".",
        f'- `{OURS}`: in process (`Memory.call("reconstruct", ...)`), our **default settings** (the environment '
        "is not read; no calibration, the heuristic gate; fusion `" + Settings().recall_mode + "`), which build "
        "blocks and read them (" + ", ".join(f"`{k}={v}`" for k, v in environ.items()) + " are the `Settings` "
        "defaults, passed back over the harness's blocks-off). One fresh store per conversation "
        "(`harness.ConversationStore`), the whole conversation stored first (every turn with `Memory.store`: its "
        "timestamp, msg_id, the speaker as source; every session summary with `Memory.archive_episode`), then "
        "the block-build queue drained in this thread (`Memory(..., background=False)`), so every question finds "
        "every block; then the calls, in the questions' time order, the clock at each question's asked_at.",
    ]
    for label, env in facts.get("variants", {}).items():
        lines.append(f"- `{label}`: `{OURS}` with " + ", ".join(f"`{k}={v}`" for k, v in env.items()) + ".")
    if not facts.get("skip_peer"):
        lines += [
            f"- `{PEER}`: CPersona {peer_mod.PEER_VERSION} ({facts.get('install', 'installed')}) at its defaults "
            "(block building and retrieval on, its task queue on), loaded as `benchmarks.retrieval_peer` loads it "
            "(`retrieval_peer.ask_peer`): a fresh database per conversation and embedder, filled over MCP stdio "
            "with `import_memories` from a `cpersona-export/1.0` file holding the same texts (as our store keeps "
            "them), timestamps, msg_ids, speakers, the session summaries as episodes with keywords and start/end "
            "times, and every record's vector as our store holds it (`embedding_b64`); then started again (its "
            "start queues the block backfill an import does not) and its task queue drained (`get_queue_status` "
            "until `pending` is 0 on three polls in a row). Then it is started a third time on that database, "
            "the queue drained again (the start's backfill sweep finds the blocks built), and asked every call "
            "in the questions' time order, without and with the cue, over MCP stdio; its clock is the wall "
            f"clock (hence the absolute cues). Each call may take {args.timeout:.0f} s.",
            f"- `{PEER}` settings changed from its defaults, each because running it here needs it: "
            + "; ".join(f"`{k}={v}` ({why})" for k, (v, why) in rp.PEER_DEFAULTS.items())
            + ".",
            "- Query vectors: ours from the in-process embedder, CPersona's (queries and blocks) from "
            "`cuedrecall embed-server` running the same embedder. Embedders: " + models + ".",
        ]
    else:
        lines.append(f"- `{PEER}` not run (`--skip-peer`). Embedders: " + models + ".")
    lines.append(
        f"- Questions asked before their conversation's last record: {facts.get('late', 0)} (both systems "
        "hold the whole conversation when asked; with 0 that is what each question would have seen)."
    )
    return lines


def check_lines(rows: Sequence[dict[str, Any]], facts: dict[str, Any]) -> list[str]:
    lines = rp.vector_lines(facts)
    ours = facts.get("ours", [])
    for (dataset, name), mine in h.group_rows(facts.get("imports", []), ("dataset", "embedder")).items():
        held = [o for o in ours if o["dataset"] == dataset and o["embedder"] == name and o["system"] == OURS]
        again = [i["queue_again"] for i in mine if "queue_again" in i]
        blocks = [i.get("blocks", (0, 0)) for i in mine]

        def total(key: str, parts: Sequence[dict[str, Any]] = mine) -> Any:
            return sum(p.get(key, 0) for p in parts)

        lines.append(
            f"- Loading, `{dataset}`, `{name}`: CPersona imported {total('imported_memories'):,} memories "
            f"({total('skipped_memories'):,} skipped as duplicates) and {total('imported_episodes'):,} episodes "
            f"({total('skipped_episodes'):,} skipped: a summary text an earlier episode already holds); our stores "
            f"hold {total('memories', held):,} memories ({total('duplicates', held):,} turns skipped as repeats) and "
            f"{total('episode_count', held):,} episodes; {total('mapped'):,} of CPersona's {total('rows'):,} rows map "
            f"to ours. CPersona's database held {sum(b[1] for b in blocks):,} embedded blocks over "
            f"{sum(b[0] for b in blocks):,} records; its queue was empty after the import's restart in "
            f"{sum(i['queue']['seconds'] for i in mine if 'queue' in i):.1f} s in all, and again "
            f"{sum(q['seconds'] for q in again):.1f} s after the start the calls were made on; still empty after the "
            f"calls on {sum(1 for i in mine if i.get('pending_after') == 0)} of {len(mine)} conversations. Loading "
            f"took {total('load_s'):.0f} s, the calls {total('calls_s'):.0f} s."
        )
        for failed in [i for i in mine if i.get("failed")]:
            lines.append(
                f"- **CPersona failed** on `{failed['conversation']}` (`{name}`): {failed['failed']}; the "
                "calls it did not answer are error rows."
            )
    for (dataset, name, system), mine in h.group_rows(ours, ("dataset", "embedder", "system")).items():
        lines.append(
            f"- `{system}`, `{dataset}`, `{name}`: {sum(o['memories'] for o in mine):,} memories, "
            f"{sum(o['episode_count'] for o in mine):,} episodes, loaded in "
            f"{sum(o['load_s'] for o in mine):.0f} s; {sum(o['block_tasks'] for o in mine):,} block-build "
            f"tasks ({sum(o['block_build_s'] for o in mine):.1f} s) left "
            f"{sum(o['blocks'][1] for o in mine):,} embedded blocks over {sum(o['blocks'][0] for o in mine):,} "
            "records."
        )
    cues = facts.get("cues", [])
    for (dataset,), mine in h.group_rows(cues, ("dataset",)).items():
        relative = sum(1 for c in mine if c["relative"])
        lines.append(
            f"- Cues, `{dataset}`: {len(mine)} questions get one; {relative} of them relative (`ago`), sent "
            "as the absolute days they name."
        )
    echoed = [r for r in rows if r["arm"] == CUE and r["error"] is None]
    for system in systems_in(echoed):
        mine = [r for r in echoed if r["system"] == system]
        lines.append(
            f"- `{system}` echoed `time_cue` (the cue was applied) in {sum(1 for r in mine if r.get('cue_echoed'))} "
            f"of {len(mine)} cued answers."
        )
    for system in systems_in(rows):
        timed = [r["ms"] for r in rows if r["system"] == system and r["ms"] is not None and r["error"] is None]
        if timed:
            where = "over MCP stdio, seen from the client" if system == PEER else "in process"
            lines.append(f"- `{system}`: mean {h.mean(timed):.0f} ms a call ({where}; not a speed comparison).")
    for name, seconds in facts.get("seconds", {}).items():
        lines.append(f"- Run time, `{name}`: {seconds / 60:.1f} min (embedding, loading and asking, every system).")
    return lines + error_lines(rows)


def render(
    argv: Sequence[str], args: argparse.Namespace, datasets: h.Datasets, rows: h.Rows, facts: dict[str, Any]
) -> str:
    headline = "ours at its defaults (blocks on)" + (
        "" if facts.get("skip_peer") else "; `cpersona`: CPersona at its defaults (blocks on)"
    )
    lines = [
        "# Reconstruct: ours against CPersona 2.6.14",
        "",
        f"Command: `{h.command_line(PROG, argv)}`",
        "",
        RULE.format(span=SPAN),
        "## Headline",
        "",
        f"`{OURS}`: {headline}. Rates over every question of the slice (an error answer is a miss); items and "
        "characters: means over the answers that were not errors.",
        "",
        *h.markdown_table(HEADLINE_COLUMNS, headline_rows(rows), left=5),
        "",
        *paired_lines(rows),
        "",
        *h.section("Setup", setup_lines(args, datasets, facts)),
        *h.section("Checks", check_lines(rows, facts)),
        *h.section("By category", h.markdown_table(DETAIL_COLUMNS, detail_rows(rows), left=5)),
    ]
    return "\n".join(lines)


# The headline's columns as the console prints them (narrow).
CONSOLE_COLUMNS = [
    "dataset",
    "emb",
    "system",
    "qs",
    "arm",
    "quoted",
    "text",
    "all",
    "cited",
    "items",
    "chars",
    "quoted chars",
    "err",
    "n",
]


def print_summary(rows: Sequence[dict[str, Any]], console: Console) -> None:
    table = Table(title="reconstruct at its defaults: evidence quoted (any / its text / all), cited, size")
    for column in CONSOLE_COLUMNS:
        table.add_column(column, justify="left" if column in ("dataset", "emb", "system", "qs", "arm") else "right")
    for line in headline_rows(rows):
        rates, items, chars = line[5:9], line[9], line[10:12]
        table.add_row(
            *line[:5],
            *(f"{v:.3f}" for v in rates),
            _fmt(items, 1),
            *(_fmt(v, 0) for v in chars),
            str(line[12]),
            str(line[13]),
        )
    console.print(table)


def _fmt(value: float, digits: int) -> str:
    return "n/a" if value != value else f"{value:,.{digits}f}"


# -- command -------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"python -m {PROG}", description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", choices=DATASETS, default=list(DATASETS))
    parser.add_argument("--locomo", default=h.DEFAULT_LOCOMO, help="LoCoMo JSON file (default: $CUEDRECALL_LOCOMO)")
    parser.add_argument(
        "--long-span",
        choices=["small", "large"],
        default="large",
        help="size of the generated long-span history, as benchmarks.time_cue (default: %(default)s)",
    )
    parser.add_argument("--seed", type=int, default=0, help="long-span generator seed (default: %(default)s)")
    parser.add_argument("--embedders", nargs="+", choices=["local", "hash"], default=["local", "hash"])
    parser.add_argument("--limit-conversations", type=int, default=None, help="only the first N LoCoMo conversations")
    parser.add_argument("--skip-peer", action="store_true", help="ours only: CPersona is not installed or run")
    parser.add_argument(
        "--ours-variant",
        action="append",
        default=[],
        metavar="CPERSONA_NAME=VALUE",
        help="also run ours with these settings changed from our defaults, as one more system "
        "(repeatable: every setting given joins the one variant; e.g. "
        "CPERSONA_BLOCK_BUILD_ENABLED=false and CPERSONA_BLOCK_RETRIEVAL_ENABLED=false: blocks-off)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        help="seconds one CPersona tool call may take (an import: ten times that) (default: %(default)s)",
    )
    parser.add_argument(
        "--start-timeout", type=float, default=300.0, help="seconds CPersona may take to start (default: %(default)s)"
    )
    parser.add_argument(
        "--queue-timeout",
        type=float,
        default=1800.0,
        help="seconds CPersona's task queue may take to drain (default: %(default)s)",
    )
    parser.add_argument("--workdir", type=Path, help="keep the databases and logs here (default: a temporary folder)")
    parser.add_argument(
        "--out", type=Path, default=h.RESULTS / "reconstruct.md", help="markdown file (default: %(default)s)"
    )
    parser.add_argument(
        "--layout",
        choices=("per-conversation", "one-agent"),
        default="per-conversation",
        help="one-agent: every LoCoMo conversation under one agent, each question asked of the whole store "
        "(default: %(default)s)",
    )
    parser.add_argument("--dump-rows", type=Path, metavar="PATH.jsonl", help="one line per question, system and arm")
    parser.add_argument(
        "--dump-responses",
        type=Path,
        metavar="PATH.jsonl",
        help="every answer as returned (CPersona's refs unmapped), with its arguments and evidence",
    )
    return parser


def main(argv: Sequence[str] | None = None, console: Console | None = None) -> int:
    return rp.peer_main(argv, build_parser(), sys.modules[__name__], console, "no questions to ask")


if __name__ == "__main__":
    raise SystemExit(main())
