"""Check a LoCoMo file as the loader reads it: the rules the benchmarks rely on, on the real data.

    python -m benchmarks.locomo_check --locomo PATH/locomo10.json

The suite checks these rules on its own LoCoMo-shaped fixture (tests/fixtures/locomo_mini.json); the real
file is never shipped, so whether it holds to them is checked here, by hand, when a copy is at hand. Prints
one line per conversation (turns, sessions, summaries, questions per category), then each broken rule; the
exit code is 1 when a rule is broken, 2 when the file is missing.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime, time, timedelta
from pathlib import Path

from benchmarks.datasets import Conversation, load_locomo

CATEGORIES = {"1", "2", "3", "4", "5"}


def _utc(value: str) -> datetime:
    dt = datetime.fromisoformat(value)
    if dt.utcoffset() != timedelta(0):
        raise ValueError(f"not UTC: {value}")
    return dt


def problems(conversation: Conversation) -> list[str]:
    """The loader's rules this conversation breaks (none when it holds to all): turn ids unique and named
    ``<conv>:<dia_id>``, content ``speaker: text``, timestamps in UTC and increasing within a session,
    summaries spanning their session's turns, question ids unique, evidence naming known turns once each,
    questions asked at midnight UTC the day after the last turn, categories 1-5, an answer for each."""
    c, out = conversation, []
    ids = [t.msg_id for t in c.turns]
    if len(ids) != len(set(ids)):
        out.append("turn ids repeat")
    out += [
        f"{t.msg_id}: id or content not as the loader writes them"
        for t in c.turns
        if not t.msg_id.startswith(f"{c.conv_id}:") or not t.content.startswith(f"{t.speaker}: ")
    ]
    by_session: dict[int, list[str]] = defaultdict(list)
    for t in c.turns:
        by_session[t.session].append(t.timestamp)
    for session, stamps in by_session.items():
        times = [_utc(s) for s in stamps]
        if any(a >= b for a, b in itertools.pairwise(times)):
            out.append(f"session {session}: timestamps do not increase")
    for s in c.sessions:
        turns = by_session.get(s.session)
        if not turns or (s.start_time, s.end_time) != (turns[0], turns[-1]) or not s.summary or s.keywords:
            out.append(f"summary of session {s.session} does not span its turns")
    qids = [q.qid for q in c.questions]
    if len(qids) != len(set(qids)):
        out.append("question ids repeat")
    known = set(ids)
    last = max((_utc(t.timestamp) for t in c.turns), default=None)
    asked = None if last is None else datetime.combine(last.date() + timedelta(days=1), time(0), UTC)
    for q in c.questions:
        if not q.evidence or len(set(q.evidence)) != len(q.evidence) or not set(q.evidence) <= known:
            out.append(f"{q.qid}: evidence {q.evidence} is not a set of known turns")
        if _utc(q.asked_at) != asked:
            out.append(f"{q.qid}: asked at {q.asked_at}, not midnight UTC after the last turn")
        if q.category not in CATEGORIES or not q.text or not isinstance(q.answer, str) or not q.answer:
            out.append(f"{q.qid}: category {q.category!r}, text or answer missing")
    return out


def summary(conversation: Conversation) -> str:
    """One line: the conversation's turns, sessions, summaries and questions per category."""
    c = conversation
    per = Counter(q.category for q in c.questions)
    categories = " ".join(f"{k}:{per[k]}" for k in sorted(per))
    return (
        f"{c.conv_id}: {len(c.turns)} turns in {len({t.session for t in c.turns})} sessions, "
        f"{len(c.sessions)} summaries, {len(c.questions)} questions ({categories})"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.locomo_check", description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, help="LoCoMo JSON (locomo10.json or a split of it)")
    args = parser.parse_args(argv)
    conversations = load_locomo(args.locomo)
    broken = 0
    for c in conversations:
        print(summary(c))
        for problem in problems(c):
            print(f"  {problem}")
            broken += 1
    print(f"{len(conversations)} conversations, {broken} broken rules")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
