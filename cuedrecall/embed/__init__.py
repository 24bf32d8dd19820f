"""Text embedders: local ONNX model, remote /embed endpoint, feature hashing, or none.

The http embedder (httpx) and the /embed server (Starlette) load on first use, so
importing the package, or ``cuedrecall`` itself, pulls in neither.
"""

from __future__ import annotations

from typing import Any

from .base import Embedder, EmbeddingError, NullEmbedder, QueryVectorCache
from .hashing import HashEmbedder
from .local import LocalEmbedder

MODES = ("local", "http", "hash", "none")

# name -> the submodule that defines it, imported when the name is first read
_LAZY = {"HttpEmbedder": "http", "embeddings_app": "server", "serve_embeddings": "server"}

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


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def make_embedder(
    mode: str, *, url: str = "", timeout_s: float = 30.0, batch_size: int = 32
) -> Embedder:
    """Build the embedder for mode; cheap, since the local model loads on first use."""
    if mode == "local":
        return LocalEmbedder(batch_size=batch_size)
    if mode == "http":
        from .http import HttpEmbedder

        return HttpEmbedder(url, timeout_s=timeout_s, batch_size=batch_size)
    if mode == "hash":
        return HashEmbedder()
    if mode == "none":
        return NullEmbedder()
    raise ValueError(f"unknown embedding mode {mode!r}; accepted: {', '.join(MODES)}")
