"""The embedder contract, the null embedder and the query-vector cache.

A stored text (a memory, an episode, a block) is embedded with ``embed``; a
query with ``embed_queries``, which asks the embedder's own ``embed_queries``
when it has one (a model trained with a query form: e5's "query: " beside its
"passage: ") and is ``embed`` otherwise: most models embed both alike.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from typing import Protocol, runtime_checkable

import numpy as np


class EmbeddingError(Exception):
    """Any failure to produce vectors; the message says what failed."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalized float32 vectors, one row per text."""

    mode: str
    model: str
    available: bool

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return a float32 array of shape (len(texts), d) with unit rows, the texts as stored texts."""
        ...


def embed_queries(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """The texts' vectors as queries: the embedder's ``embed_queries`` when it has one, else its ``embed``."""
    own = getattr(embedder, "embed_queries", None)
    return own(texts) if callable(own) else embedder.embed(texts)


def check_texts(texts: Sequence[str]) -> list[str]:
    """Return texts as a list, refusing a bare string or non-string items."""
    # A bare str is a Sequence[str] too; embedding it character by character
    # is never what the caller meant, so treat it as the bug it is.
    if isinstance(texts, (str, bytes)):
        raise TypeError("texts must be a sequence of strings, not a single string")
    items = list(texts)
    for i, text in enumerate(items):
        if not isinstance(text, str):
            raise TypeError(f"texts[{i}] is {type(text).__name__}, not str")
    return items


def batches(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    """Yield consecutive slices of at most size items."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def l2_normalize(vectors: np.ndarray) -> np.ndarray:
    """Return the rows of a 2-D array scaled to unit length, as float32."""
    rows = np.asarray(vectors, dtype=np.float64)
    if rows.size == 0:
        return rows.astype(np.float32)
    # Divide by the largest magnitude first so squaring cannot overflow.
    peak = np.max(np.abs(rows), axis=1, keepdims=True)
    if np.any(peak == 0):
        raise EmbeddingError("cannot normalise an all-zero vector")
    scaled = rows / peak
    return (scaled / np.linalg.norm(scaled, axis=1, keepdims=True)).astype(np.float32)


class NullEmbedder:
    """The embedder of mode none: no model, no vectors."""

    mode = "none"
    model = ""
    available = False

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Always fail: this mode has no vectors to give."""
        raise EmbeddingError("embedding mode is none: no vectors")


class QueryVectorCache:
    """LRU cache (default 256 entries, keyed by the text) in front of an Embedder for single query texts, embedded
    as queries (``embed_queries``)."""

    def __init__(self, embedder: Embedder, size: int = 256) -> None:
        if size < 1:
            raise ValueError(f"cache size must be at least 1, got {size}")
        self.embedder = embedder
        self.size = size
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        """Number of cached vectors."""
        return len(self._vectors)

    def embed_query(self, text: str) -> np.ndarray:
        """Return the (d,) float32 vector of text, embedding it on a miss."""
        with self._lock:
            cached = self._vectors.get(text)
            if cached is not None:
                self._vectors.move_to_end(text)
                return cached
        # Embed outside the lock so one slow query does not stall the others;
        # failures raise here and so are never cached.
        vector = embed_queries(self.embedder, [text])[0].copy()
        # Shared between callers, so nobody may change it in place.
        vector.setflags(write=False)
        with self._lock:
            self._vectors[text] = vector
            self._vectors.move_to_end(text)
            while len(self._vectors) > self.size:
                self._vectors.popitem(last=False)
        return vector
