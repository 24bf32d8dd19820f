"""Text embedders: a packaged local model (``models``: by name), remote /embed endpoint, feature hashing, or none.

The http embedder (httpx) and the /embed server (Starlette) load on first use, so
importing the package, or ``cuedrecall`` itself, pulls in neither.
"""

from __future__ import annotations

from typing import Any

from .base import Embedder, EmbeddingError, NullEmbedder, QueryVectorCache, embed_queries
from .hashing import HashEmbedder
from .local import LocalEmbedder
from .models import DEFAULT_MODEL, MODEL_NAMES, MODELS, local_embedder

MODES = ("local", "http", "hash", "none")

# name -> the submodule that defines it, imported when the name is first read
_LAZY = {"HttpEmbedder": "http", "embeddings_app": "server", "serve_embeddings": "server"}

__all__ = [
    "DEFAULT_MODEL",
    "MODELS",
    "MODEL_NAMES",
    "MODES",
    "Embedder",
    "EmbeddingError",
    "HashEmbedder",
    "HttpEmbedder",
    "LocalEmbedder",
    "NullEmbedder",
    "QueryVectorCache",
    "embed_queries",
    "embeddings_app",
    "local_embedder",
    "make_embedder",
    "serve_embeddings",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def make_embedder(
    mode: str, *, model: str = DEFAULT_MODEL, url: str = "", timeout_s: float = 30.0, batch_size: int = 32
) -> Embedder:
    """Build the embedder for mode (the packaged ``model`` by name for local); cheap, since a local model loads on
    first use."""
    if mode == "local":
        return local_embedder(model, batch_size=batch_size)
    if mode == "http":
        from .http import HttpEmbedder

        return HttpEmbedder(url, timeout_s=timeout_s, batch_size=batch_size)
    if mode == "hash":
        return HashEmbedder()
    if mode == "none":
        return NullEmbedder()
    raise ValueError(f"unknown embedding mode {mode!r}; accepted: {', '.join(MODES)}")
