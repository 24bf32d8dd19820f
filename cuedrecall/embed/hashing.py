"""A deterministic feature-hashing embedder for tests and goldens."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from .base import check_texts

DIMENSIONS = 384
WORD_WEIGHT = 1.0
TRIGRAM_WEIGHT = 0.5
_WORD = re.compile(r"\w+")


@lru_cache(maxsize=65536)
def feature_slot(feature: str) -> tuple[int, float]:
    """Return the (index, sign) a feature hashes to, the same on every platform."""
    # blake2b, not hash(): Python's string hash is salted per process.
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    sign = 1.0 if (value >> 63) & 1 else -1.0
    return value % DIMENSIONS, sign


def features(text: str) -> list[tuple[str, float]]:
    """Return the weighted features of text: its words and their trigrams."""
    found: list[tuple[str, float]] = []
    for word in _WORD.findall(text.lower()):
        # Prefixes keep the word "cat" and the trigram "cat" apart.
        found.append(("w:" + word, WORD_WEIGHT))
        for i in range(len(word) - 2):
            found.append(("t:" + word[i : i + 3], TRIGRAM_WEIGHT))
    return found


def hash_vector(text: str) -> np.ndarray:
    """Return the unit float32 vector of one text."""
    vector = np.zeros(DIMENSIONS, dtype=np.float64)
    for feature, weight in features(text):
        index, sign = feature_slot(feature)
        vector[index] += sign * weight
    norm = float(np.sqrt(np.dot(vector, vector)))
    if norm == 0.0:
        # No features (or features that cancelled out): a fixed unit vector.
        vector[0], norm = 1.0, 1.0
    return (vector / norm).astype(np.float32)


class HashEmbedder:
    """Feature hashing of words and character trigrams into 384 dimensions."""

    mode = "hash"
    model = f"hash-{DIMENSIONS}"
    available = True
    dimensions = DIMENSIONS

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return one unit vector per text; texts sharing words get similar vectors."""
        items = check_texts(texts)
        out = np.zeros((len(items), DIMENSIONS), dtype=np.float32)
        for row, text in enumerate(items):
            out[row] = hash_vector(text)
        return out
