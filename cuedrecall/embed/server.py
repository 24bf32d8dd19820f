"""An HTTP server that puts any Embedder behind the /embed contract."""

from __future__ import annotations

import json
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from .base import Embedder, EmbeddingError
from .http import MAX_TEXTS_PER_REQUEST


def _error(status: int, message: str) -> JSONResponse:
    """A JSON error response."""
    return JSONResponse({"error": message}, status_code=status)


def check_request(body: Any) -> list[str] | str:
    """Return the texts of a valid /embed body, or a message saying what is wrong."""
    if not isinstance(body, dict):
        return "body must be a JSON object with a 'texts' list"
    texts = body.get("texts")
    if not isinstance(texts, list):
        return "'texts' must be a list of strings"
    if not texts:
        return "'texts' must not be empty"
    if len(texts) > MAX_TEXTS_PER_REQUEST:
        return f"'texts' holds {len(texts)} items, at most {MAX_TEXTS_PER_REQUEST} allowed"
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            return f"texts[{i}] must be a string, not {type(text).__name__}"
    return texts


def embeddings_app(embedder: Embedder) -> Starlette:
    """Return the ASGI app serving POST /embed and GET /health for embedder."""

    async def embed(request: Request) -> JSONResponse:
        """Embed the posted texts."""
        try:
            body = json.loads(await request.body())
        except ValueError:
            return _error(400, "body is not valid JSON")
        texts = check_request(body)
        if isinstance(texts, str):
            return _error(400, texts)
        try:
            # Embedding is CPU-bound or blocking I/O: keep it off the event loop.
            vectors = await run_in_threadpool(embedder.embed, texts)
        except EmbeddingError as exc:
            return _error(502, str(exc))
        return JSONResponse({"embeddings": vectors.tolist(), "dimensions": int(vectors.shape[1])})

    async def health(request: Request) -> JSONResponse:
        """Say the server is up and which embedder it fronts."""
        return JSONResponse({"ok": True, "mode": embedder.mode, "model": embedder.model})

    return Starlette(
        routes=[
            Route("/embed", embed, methods=["POST"]),
            Route("/health", health, methods=["GET"]),
        ]
    )


def serve_embeddings(embedder: Embedder, host: str = "127.0.0.1", port: int = 8401) -> None:
    """Serve embedder over HTTP until interrupted (blocking)."""
    import uvicorn

    uvicorn.run(embeddings_app(embedder), host=host, port=port, log_level="info")
