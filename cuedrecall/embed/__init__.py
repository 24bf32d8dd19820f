"""Text embedders: local ONNX model, remote /embed endpoint, feature hashing, or none."""

from __future__ import annotations

from .base import Embedder, EmbeddingError, NullEmbedder, QueryVectorCache
from .hashing import HashEmbedder
from .http import HttpEmbedder
from .local import LocalEmbedder
from .server import embeddings_app, serve_embeddings

MODES = ("local", "http", "hash", "none")

__all__ = [
    "MODES",
    "Embedder",
    "EmbeddingError",
    "HashEmbedder",
    "HttpEmbedder",
    "LocalEmbedder",
    "NullEmbedder",
    "QueryVectorCache",
    "embeddings_app",
    "make_embedder",
    "serve_embeddings",
]


def make_embedder(
    mode: str, *, url: str = "", timeout_s: float = 30.0, batch_size: int = 32
) -> Embedder:
    """Build the embedder for mode; cheap, since the local model loads on first use."""
    if mode == "local":
        return LocalEmbedder(batch_size=batch_size)
    if mode == "http":
        return HttpEmbedder(url, timeout_s=timeout_s, batch_size=batch_size)
    if mode == "hash":
        return HashEmbedder()
    if mode == "none":
        return NullEmbedder()
    raise ValueError(f"unknown embedding mode {mode!r}; accepted: {', '.join(MODES)}")
