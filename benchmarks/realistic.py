"""A realistic speed corpus: conversational turns (LoCoMo's, and the long-span generator's), bulk-loaded.

The synthetic store (benchmarks/synthetic.py) draws words by a Zipf law, so most of a
query's words are rare and the keyword arms read short lists. Conversation turns are
full of common words ("what", "going", "really"), and there the keyword arms read long
ones: this corpus is what the speed figures lead with.

The turns are LoCoMo's (the file given, as a path) followed by the long-span
generator's (large size, seeds 1, 2, ...: 5,000 distinct turns each), interleaved so
that any prefix mixes both. Past ``DISTINCT_SEEDS`` seeds the pool is cycled, a repeat
marked " [n]" so every memory's text is distinct. Questions are LoCoMo's and the
long-span generator's, alternating.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from itertools import zip_longest
from pathlib import Path

from benchmarks.bulk import insert_memories
from benchmarks.datasets import generate_long_span, load_locomo
from benchmarks.harness import SHIPPED, WITHOUT_BLOCKS
from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock, iso
from cuedrecall.config import Settings

AGENT = "bench"
HASH = "hash"  # the speed stores' embedder: cheap to build at a million rows; "local" is the packaged model
NOW = "2026-01-02T00:00:00+00:00"
START = datetime(2025, 1, 1, tzinfo=UTC)
DISTINCT_SEEDS = 20  # long-span seeds drawn before the pool repeats (about 100,000 distinct turns)
TURNS_PER_SEED = 5000


def _interleave(*lists: list[str]) -> list[str]:
    return [item for group in zip_longest(*lists) for item in group if item is not None]


def turn_pool(locomo: Path, size: int) -> list[str]:
    """Distinct turn texts, LoCoMo's and long-span's interleaved, enough for ``size`` (or all DISTINCT_SEEDS)."""
    locomo_turns = [turn.content for conv in load_locomo(locomo) for turn in conv.turns]
    seeds = max(1, min(DISTINCT_SEEDS, -(-(size - len(locomo_turns)) // TURNS_PER_SEED)))
    long_span = [
        turn.content for seed in range(1, seeds + 1) for turn in generate_long_span(seed=seed, size="large").turns
    ]
    return list(dict.fromkeys(_interleave(locomo_turns, long_span)))


def texts(locomo: Path, size: int) -> list[str]:
    """``size`` distinct memory texts: the pool, cycled with a repeat marker past its end."""
    pool = turn_pool(locomo, size)
    return [pool[i % len(pool)] + (f" [{i // len(pool)}]" if i >= len(pool) else "") for i in range(size)]


def questions(locomo: Path, count: int) -> list[str]:
    """``count`` question texts, LoCoMo's and long-span's (seed 1) alternating."""
    locomo_q = [q.text for conv in load_locomo(locomo) for q in conv.questions if q.category != "5"]
    long_q = [q.text for q in generate_long_span(seed=1, size="large").questions]
    return _interleave(locomo_q, long_q)[:count]


def bulk_load(
    memory: Memory,
    rows: list[str],
    *,
    agent: str | Sequence[str] = AGENT,
    batch: int = 1024,
    progress: Callable[[int], None] | None = None,
) -> float:
    """Embed in batches and insert in large transactions, times spread over 2025; returns the seconds taken.

    ``agent`` is every row's agent, or a sequence of one agent per row.
    """
    owners = [agent] * len(rows) if isinstance(agent, str) else list(agent)
    started = time.perf_counter()
    step = timedelta(days=365) / max(1, len(rows))
    for start in range(0, len(rows), batch):
        chunk = rows[start : start + batch]
        insert_memories(
            memory, [(owners[start + i], text, iso(START + (start + i) * step)) for i, text in enumerate(chunk)]
        )
        if progress:
            progress(len(chunk))
    return time.perf_counter() - started


# -- the store: built once per size, reused while its marker is there --------------------------------


def settings(path: Path, blocks: bool = False, embedding: str = HASH, query_cache: int | None = None) -> Settings:
    """Hash vectors (or ``embedding``'s), no calibration as the store grows: what the speed figures time. Blocks
    off, or (``blocks``) built and searched as the shipped defaults have them. ``query_cache``: how many query
    vectors the recall's cache keeps (1: every new question is embedded, as an agent's new questions are)."""
    env = SHIPPED if blocks else WITHOUT_BLOCKS
    cache = {} if query_cache is None else {"embedding_cache_size": query_cache}
    return Settings.from_env(env, embedding_mode=embedding, db_path=str(path), calibrate_on_growth=False, **cache)


def open_store(path: Path, blocks: bool = False, embedding: str = HASH, query_cache: int | None = None) -> Memory:
    """The store at ``path`` under ``settings``, its clock just after the corpus's year, no background work."""
    return Memory(settings=settings(path, blocks, embedding, query_cache), clock=fixed_clock(NOW), background=False)


def stem(size: int, embedding: str = HASH) -> str:
    """The file name of a store of ``size`` with ``embedding``'s vectors (the hash store's keeps its old name)."""
    return f"realistic-{size}" if embedding == HASH else f"realistic-{size}-{embedding}"


def build_blocks(workdir: Path, locomo: Path, size: int, embedding: str = HASH) -> tuple[Path, float, float]:
    """The store of ``size`` with every record's blocks built (a copy of ``build``'s, the builder drained in this
    process; reused while its marker is there): (path, build seconds, block build seconds)."""
    source, build_s = build(workdir, locomo, size, embedding)
    name = stem(size, embedding)
    path, marker = workdir / f"{name}-blocks.db", workdir / f"{name}-blocks.json"
    if path.exists() and marker.exists():
        return path, build_s, json.loads(marker.read_text())["blocks_s"]
    path.unlink(missing_ok=True)
    from benchmarks import peer

    peer.db_copy(source, path)
    started = time.perf_counter()
    with open_store(path, blocks=True, embedding=embedding) as memory:
        assert memory.blocks is not None
        memory.blocks.queue_backfill()
        memory.blocks.drain()
    seconds = time.perf_counter() - started
    marker.write_text(json.dumps({"blocks_s": seconds}))
    return path, build_s, seconds


def build(workdir: Path, locomo: Path, size: int, embedding: str = HASH) -> tuple[Path, float]:
    """The store of ``size`` (reused while its marker is there): (path, build seconds)."""
    name = stem(size, embedding)
    path, marker = workdir / f"{name}.db", workdir / f"{name}.json"
    if path.exists() and marker.exists():
        return path, json.loads(marker.read_text())["build_s"]
    path.unlink(missing_ok=True)
    rows = texts(locomo, size)
    with open_store(path, embedding=embedding) as memory:
        seconds = bulk_load(memory, rows)
    marker.write_text(json.dumps({"build_s": seconds}))
    return path, seconds
