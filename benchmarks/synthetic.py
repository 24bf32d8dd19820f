"""Seeded synthetic stores for speed benchmarks: dated English sentences over a year, bulk-loaded."""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from importlib import resources

from cuedrecall.api import Memory
from cuedrecall.clock import iso

# Real English words in a Zipf-shaped frequency, as in chat logs: the packaged tokenizer's
# vocabulary lists words roughly from most to least frequent, from "the" (id 1996) on.
START = datetime(2025, 1, 1, tzinfo=UTC)
AGENT = "bench"
FIRST_WORD_ID = 1996


def _vocabulary() -> list[str]:
    path = resources.files("cuedrecall.embed").joinpath("data/tokenizer.json")
    vocab = json.loads(path.read_text(encoding="utf-8"))["model"]["vocab"]
    words = sorted((i, w) for w, i in vocab.items() if i >= FIRST_WORD_ID and w.isalpha() and w.isascii())
    return [w for _, w in words]


VOCABULARY = _vocabulary()
WEIGHTS = [1.0 / (rank + 1) ** 1.05 for rank in range(len(VOCABULARY))]
CUMULATIVE = list(itertools.accumulate(WEIGHTS))  # what random.choices sums from WEIGHTS on every call


def sentence(rng: random.Random, words: int | None = None) -> str:
    """8 to 20 Zipf-drawn words, now and then an identifier (v1.2.3, bug-123, #45)."""
    count = words or rng.randint(8, 20)
    body = rng.choices(VOCABULARY, cum_weights=CUMULATIVE, k=count)  # the same draws, without the sum each time
    if rng.random() < 0.1:
        body.append(
            rng.choice(
                [
                    f"v{rng.randint(1, 9)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}",
                    f"bug-{rng.randint(1, 999)}",
                    f"#{rng.randint(1, 999)}",
                ]
            )
        )
    return " ".join(body).capitalize() + "."


def records(count: int, seed: int = 7) -> Iterator[tuple[str, str]]:
    """(text, ISO timestamp) pairs spread evenly over a year, oldest first."""
    rng = random.Random(seed)
    step = timedelta(days=365) / max(1, count)
    for i in range(count):
        yield sentence(rng), iso(START + i * step)


def queries(count: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    return [sentence(rng, rng.randint(4, 9)).rstrip(".") for _ in range(count)]


def bulk_load(
    memory: Memory,
    count: int,
    *,
    batch: int = 512,
    seed: int = 7,
    episode_every: int = 0,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Embed in batches and insert in large transactions: the store as an import would build it.

    With ``episode_every`` > 0 an episode (a summary of the last few records) follows every that many
    memories. Returns the number of episodes written.
    """
    pending = list(records(count, seed))
    model = memory.embedder.model
    episodes = 0
    for start in range(0, len(pending), batch):
        chunk = pending[start : start + batch]
        vectors = memory.embed([text for text, _ in chunk])
        closing = [i for i in range(start, start + len(chunk)) if episode_every and (i + 1) % episode_every == 0]
        summaries = [" ".join(text for text, _ in pending[i + 1 - min(3, episode_every) : i + 1]) for i in closing]
        summary_vectors = memory.embed(summaries)
        with memory.store_.write() as conn:
            for (text, stamp), vector in zip(chunk, vectors):
                memory.store_.insert_memory(
                    conn,
                    {
                        "agent_id": AGENT,
                        "content": text,
                        "timestamp": stamp,
                        "ts_epoch": datetime.fromisoformat(stamp).timestamp(),
                        "created_at": stamp,
                        "embedding": vector,
                        "embedding_model": model,
                    },
                )
            for i, summary, vector in zip(closing, summaries, summary_vectors):
                stamp = pending[i][1]
                memory.store_.insert_episode(
                    conn,
                    {
                        "agent_id": AGENT,
                        "summary": summary,
                        "start_time": stamp,
                        "end_time": stamp,
                        "ts_epoch": datetime.fromisoformat(stamp).timestamp(),
                        "created_at": stamp,
                        "embedding": vector,
                        "embedding_model": model,
                    },
                )
                episodes += 1
        if progress:
            progress(len(chunk))
    return episodes
