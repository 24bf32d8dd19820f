"""An embedder that asks a remote /embed endpoint for vectors."""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from .base import EmbeddingError, batches, check_texts, l2_normalize

# The /embed contract caps one request at this many texts.
MAX_TEXTS_PER_REQUEST = 100


def _finite(value: int | float) -> bool:
    """Whether value is a finite number that fits a float."""
    try:
        return math.isfinite(value)
    except OverflowError:  # a JSON integer too big for a float
        return False


def _check_vector(url: str, index: int, vector: Any, width: int | None) -> list[float]:
    """Return one response vector if it is a non-empty list of finite numbers of the given width."""
    if not isinstance(vector, list):
        raise EmbeddingError(f"{url}: embeddings[{index}] is {type(vector).__name__}, not a list")
    if not vector:
        raise EmbeddingError(f"{url}: embeddings[{index}] is empty")
    if width is not None and len(vector) != width:
        raise EmbeddingError(f"{url}: embeddings[{index}] has {len(vector)} dimensions, expected {width}")
    for j, value in enumerate(vector):
        # bool is an int subclass, but true/false in a vector is a broken server.
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise EmbeddingError(f"{url}: embeddings[{index}][{j}] is not a number: {value!r}")
        if not _finite(value):
            raise EmbeddingError(f"{url}: embeddings[{index}][{j}] is not finite: {value!r}")
    return vector


def parse_embeddings(url: str, body: Any, count: int, width: int | None) -> np.ndarray:
    """Validate a decoded /embed response body and return its vectors, unnormalized."""
    if not isinstance(body, dict):
        raise EmbeddingError(f"{url}: response body is {type(body).__name__}, not a JSON object")
    vectors = body.get("embeddings")
    if not isinstance(vectors, list):
        raise EmbeddingError(f"{url}: response 'embeddings' is {type(vectors).__name__}, not a list")
    if len(vectors) != count:
        raise EmbeddingError(f"{url}: sent {count} texts but got {len(vectors)} embeddings")
    rows: list[list[float]] = []
    for i, vector in enumerate(vectors):
        rows.append(_check_vector(url, i, vector, width))
        # With no width known yet, the first row sets it for the rest.
        width = len(rows[0])
    return np.array(rows, dtype=np.float64)


class HttpEmbedder:
    """POSTs {"texts": [...]} to url and reads back {"embeddings": [[...], ...]}."""

    mode = "http"
    available = True

    def __init__(
        self,
        url: str,
        *,
        timeout_s: float = 30.0,
        batch_size: int = MAX_TEXTS_PER_REQUEST,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not url:
            raise ValueError("http embedding mode needs a url")
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.url = url
        self.model = f"http:{url}"
        self.batch_size = min(batch_size, MAX_TEXTS_PER_REQUEST)
        self._client = httpx.Client(timeout=timeout_s, transport=transport)
        self._width: int | None = None
        self._lock = threading.Lock()

    @property
    def dimensions(self) -> int | None:
        """Width of the vectors this server gives, once a response has been accepted."""
        return self._width

    def close(self) -> None:
        """Close the underlying connection pool."""
        self._client.close()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return one unit vector per text, at most 100 texts per request."""
        items = check_texts(texts)
        if not items:
            return np.zeros((0, self._width or 0), dtype=np.float32)
        parts = [self._request(list(chunk)) for chunk in batches(items, self.batch_size)]
        return np.concatenate(parts, axis=0)

    def _request(self, texts: list[str]) -> np.ndarray:
        """Send one batch and return its validated, normalized vectors."""
        body = self._post(texts)
        vectors = parse_embeddings(self.url, body, len(texts), self._width)
        if np.any(np.max(np.abs(vectors), axis=1) == 0):
            raise EmbeddingError(f"{self.url}: response holds an all-zero vector")
        with self._lock:
            # The first accepted response fixes the width for this embedder.
            if self._width is None:
                self._width = vectors.shape[1]
            elif vectors.shape[1] != self._width:
                raise EmbeddingError(f"{self.url}: vectors have {vectors.shape[1]} dimensions, expected {self._width}")
        return l2_normalize(vectors)

    def _post(self, texts: list[str]) -> Any:
        """POST the texts and return the decoded JSON body."""
        try:
            response = self._client.post(self.url, json={"texts": texts})
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise EmbeddingError(f"embedding request to {self.url} failed: {exc!r}") from exc
        if not response.is_success:
            snippet = response.text[:200]
            raise EmbeddingError(f"embedding request to {self.url} returned HTTP {response.status_code}: {snippet}")
        try:
            return response.json()
        except ValueError as exc:
            raise EmbeddingError(f"{self.url}: response is not valid JSON: {exc}") from exc
