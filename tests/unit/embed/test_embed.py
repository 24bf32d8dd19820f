"""Rules of the embedder package: modes, vectors, the /embed contract, the cache."""

from __future__ import annotations

import json
import math
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import httpx
import numpy as np
import pytest
import uvicorn
from starlette.testclient import TestClient

from benchmarks import serving
from cuedrecall.embed import (
    EmbeddingError,
    HashEmbedder,
    HttpEmbedder,
    LocalEmbedder,
    NullEmbedder,
    QueryVectorCache,
    embeddings_app,
    make_embedder,
)
from cuedrecall.embed import local as local_module
from tests.conftest import REPO_ROOT

URL = "http://embed.test/embed"
REPO = REPO_ROOT


# --- helpers -----------------------------------------------------------------


def json_server(reply: Callable[[list[str]], object], status: int = 200) -> httpx.MockTransport:
    """A transport answering each /embed POST with reply(texts) as JSON."""

    def handle(request: httpx.Request) -> httpx.Response:
        texts = json.loads(request.content)["texts"]
        return httpx.Response(status, json=reply(texts))

    return httpx.MockTransport(handle)


def http_embedder(reply: Callable[[list[str]], object], status: int = 200) -> HttpEmbedder:
    """An HttpEmbedder talking to a fake server."""
    return HttpEmbedder(URL, transport=json_server(reply, status))


def app_transport(app) -> httpx.MockTransport:
    """A transport that hands each request to an ASGI app through starlette's TestClient."""
    client = TestClient(app)

    def handle(request: httpx.Request) -> httpx.Response:
        answer = client.request(
            request.method, request.url.path, content=request.content, headers=dict(request.headers)
        )
        return httpx.Response(answer.status_code, content=answer.content, headers=answer.headers)

    return httpx.MockTransport(handle)


class CountingEmbedder:
    """Wraps an embedder and records every batch it is asked to embed."""

    mode = "hash"
    model = "hash-384"
    available = True

    def __init__(self, inner=None) -> None:
        self.inner = inner or HashEmbedder()
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return self.inner.embed(texts)


class FailingEmbedder:
    """An embedder whose every call fails."""

    mode = "http"
    model = "http:broken"
    available = True

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        raise EmbeddingError("upstream http://broken/embed returned HTTP 500")


@pytest.fixture
def live_server() -> Iterator[str]:
    """Run embeddings_app(HashEmbedder()) with uvicorn on a free local port; yield its /embed URL."""
    port = serving.free_port()
    config = uvicorn.Config(embeddings_app(HashEmbedder()), host="127.0.0.1", port=port, log_level="error")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    assert serving.wait_until(lambda: server.started, 10, 0.02), "uvicorn did not start"
    yield f"http://127.0.0.1:{port}/embed"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def local() -> LocalEmbedder:
    """One LocalEmbedder shared by the tests that need the real model."""
    return LocalEmbedder()


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine of two unit vectors."""
    return float(np.dot(a, b))


# --- make_embedder -----------------------------------------------------------


def test_unknown_mode_names_accepted_values() -> None:
    with pytest.raises(ValueError) as info:
        make_embedder("openai")
    message = str(info.value)
    assert "'openai'" in message
    for mode in ("local", "http", "hash", "none"):
        assert mode in message


@pytest.mark.parametrize(
    ("mode", "kind", "model", "available"),
    [
        ("local", LocalEmbedder, "paraphrase-MiniLM-L3-v2-onnx", True),  # the default packaged model
        ("http", HttpEmbedder, f"http:{URL}", True),
        ("hash", HashEmbedder, "hash-384", True),
        ("none", NullEmbedder, "", False),
    ],
)
def test_make_embedder_builds_each_mode_with_its_labels(mode, kind, model, available) -> None:
    embedder = make_embedder(mode, url=URL)
    assert isinstance(embedder, kind)
    assert (embedder.mode, embedder.model, embedder.available) == (mode, model, available)


def test_http_mode_requires_a_url() -> None:
    with pytest.raises(ValueError, match="url"):
        make_embedder("http")


def test_embedders_refuse_a_bare_string_for_texts() -> None:
    with pytest.raises(TypeError):
        HashEmbedder().embed("one text")


# --- none --------------------------------------------------------------------


def test_null_embedder_is_unavailable_and_refuses_to_embed() -> None:
    embedder = make_embedder("none")
    assert embedder.available is False
    with pytest.raises(EmbeddingError, match="embedding mode is none: no vectors"):
        embedder.embed(["anything"])


# --- hash --------------------------------------------------------------------


def test_hash_embedder_is_deterministic_and_unit_length() -> None:
    texts = ["The cat sits on the mat", "Zürich café ☕ 2024", "x"]
    first, second = HashEmbedder().embed(texts), HashEmbedder().embed(texts)
    assert first.dtype == np.float32 and first.shape == (3, 384)
    assert np.array_equal(first, second)
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-6)


def test_hash_embedder_matches_pinned_golden_vector() -> None:
    # Pinned so a change of hash, tokenising or weighting cannot slip through:
    # "cat" and "mat" weigh 1.0 each, their trigrams 0.5 each.
    vector = HashEmbedder().embed(["Cat MAT"])[0]
    expected = {0: 2.0, 84: -1.0, 298: 1.0, 376: 2.0}
    assert set(np.flatnonzero(vector)) == set(expected)
    for index, weight in expected.items():
        assert vector[index] == pytest.approx(weight / math.sqrt(10), abs=1e-6)


def test_hash_embedder_is_identical_across_processes() -> None:
    code = "from cuedrecall.embed import HashEmbedder; print(HashEmbedder().embed(['salted hash?']).tobytes().hex())"
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            cwd=REPO,
            env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2")
    }
    assert outputs == {HashEmbedder().embed(["salted hash?"]).tobytes().hex() + "\n"}


def test_hash_embedder_scores_shared_words_above_unrelated_text() -> None:
    a, b, c = HashEmbedder().embed(["The cat sits on the mat", "the cat sat on a mat", "Quarterly revenue grew by 5%"])
    assert cosine(a, b) > cosine(a, c)


@pytest.mark.parametrize("text", ["", "   ", "?!…"])
def test_hash_embedder_gives_featureless_text_the_fixed_unit_vector(text: str) -> None:
    vector = HashEmbedder().embed([text])[0]
    expected = np.zeros(384, dtype=np.float32)
    expected[0] = 1.0
    assert np.array_equal(vector, expected)


def test_embedding_no_texts_gives_an_empty_matrix() -> None:
    assert HashEmbedder().embed([]).shape == (0, 384)
    assert LocalEmbedder().embed([]).shape == (0, 384)


# --- query cache -------------------------------------------------------------


def test_query_cache_embeds_each_text_once() -> None:
    inner = CountingEmbedder()
    cache = QueryVectorCache(inner)
    first = cache.embed_query("where did I park")
    again = cache.embed_query("where did I park")
    cache.embed_query("something else")
    assert inner.calls == [["where did I park"], ["something else"]]
    assert first.shape == (384,) and first.dtype == np.float32
    assert np.array_equal(first, again)


def test_query_cache_evicts_least_recently_used_text() -> None:
    inner = CountingEmbedder()
    cache = QueryVectorCache(inner, size=2)
    cache.embed_query("a")
    cache.embed_query("b")
    cache.embed_query("a")  # "a" is now more recent than "b"
    cache.embed_query("c")  # evicts "b"
    cache.embed_query("a")
    cache.embed_query("b")
    assert inner.calls == [["a"], ["b"], ["c"], ["b"]]
    assert len(cache) == 2


def test_query_cache_does_not_cache_failures() -> None:
    cache = QueryVectorCache(FailingEmbedder())
    for _ in range(2):
        with pytest.raises(EmbeddingError):
            cache.embed_query("q")
    assert len(cache) == 0


def test_query_cache_vectors_cannot_be_changed_in_place() -> None:
    cache = QueryVectorCache(HashEmbedder())
    vector = cache.embed_query("q")
    with pytest.raises(ValueError):
        vector[0] = 5.0
    assert np.linalg.norm(cache.embed_query("q")) == pytest.approx(1.0, abs=1e-6)


# --- http client -------------------------------------------------------------


def test_http_embedder_round_trips_through_embed_server() -> None:
    texts = [f"memory {i}" for i in range(7)]
    embedder = HttpEmbedder(URL, transport=app_transport(embeddings_app(HashEmbedder())))
    assert np.allclose(embedder.embed(texts), HashEmbedder().embed(texts), atol=1e-6)


def test_http_embedder_round_trips_through_a_real_socket(live_server: str) -> None:
    embedder = HttpEmbedder(live_server, timeout_s=10)
    texts = ["over the wire", "and back"]
    try:
        assert np.allclose(embedder.embed(texts), HashEmbedder().embed(texts), atol=1e-6)
    finally:
        embedder.close()
    health = httpx.get(live_server.replace("/embed", "/health")).json()
    assert health == {"ok": True, "mode": "hash", "model": "hash-384"}


def test_http_embedder_normalises_vectors_client_side() -> None:
    embedder = http_embedder(lambda texts: {"embeddings": [[3, 4.0] for _ in texts]})
    vectors = embedder.embed(["a", "b"])
    assert vectors.dtype == np.float32
    assert np.allclose(vectors, [[0.6, 0.8], [0.6, 0.8]])


def test_http_embedder_reads_only_the_embeddings_field() -> None:
    embedder = http_embedder(lambda texts: {"embeddings": [[1.0, 0.0]], "dimensions": 999, "x": 1})
    assert embedder.embed(["a"]).shape == (1, 2)


def test_http_embedder_sends_at_most_100_texts_per_request() -> None:
    sizes: list[int] = []

    def reply(texts: list[str]) -> dict:
        sizes.append(len(texts))
        return {"embeddings": [[1.0, float(len(t))] for t in texts]}

    embedder = HttpEmbedder(URL, batch_size=500, transport=json_server(reply))
    texts = ["x" * (i % 5) for i in range(250)]
    vectors = embedder.embed(texts)
    assert sizes == [100, 100, 50]
    # Rows come back in the order the texts were given.
    assert np.allclose(vectors, HttpEmbedder(URL, transport=json_server(reply)).embed(texts))


def test_http_embedder_rejects_non_2xx_status_naming_url_and_status() -> None:
    embedder = http_embedder(lambda texts: {"error": "overloaded"}, status=503)
    with pytest.raises(EmbeddingError) as info:
        embedder.embed(["a"])
    assert URL in str(info.value) and "503" in str(info.value)


def test_http_embedder_reports_connection_failure_with_url() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    embedder = HttpEmbedder(URL, transport=httpx.MockTransport(refuse))
    with pytest.raises(EmbeddingError, match=URL):
        embedder.embed(["a"])


def test_http_embedder_rejects_a_body_that_is_not_json() -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(200, text="<html>"))
    with pytest.raises(EmbeddingError, match="not valid JSON"):
        HttpEmbedder(URL, transport=transport).embed(["a"])


@pytest.mark.parametrize("raw", ["[[1.0]]", '"vectors"', "null", "3"])
def test_http_embedder_rejects_a_body_that_is_not_an_object(raw: str) -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(200, text=raw))
    with pytest.raises(EmbeddingError, match="not a JSON object"):
        HttpEmbedder(URL, transport=transport).embed(["a"])


@pytest.mark.parametrize("value", [None, "[[1.0]]", {"0": [1.0]}])
def test_http_embedder_rejects_embeddings_that_are_not_a_list(value) -> None:
    with pytest.raises(EmbeddingError, match=r"'embeddings' is .* not a list"):
        http_embedder(lambda texts: {"embeddings": value}).embed(["a"])


def test_http_embedder_rejects_wrong_count() -> None:
    embedder = http_embedder(lambda texts: {"embeddings": [[1.0, 0.0]]})
    with pytest.raises(EmbeddingError, match="sent 2 texts but got 1 embeddings"):
        embedder.embed(["a", "b"])


def test_http_embedder_rejects_an_empty_vector() -> None:
    with pytest.raises(EmbeddingError, match=r"embeddings\[0\] is empty"):
        http_embedder(lambda texts: {"embeddings": [[]]}).embed(["a"])


def test_http_embedder_rejects_rows_of_different_widths_in_one_response() -> None:
    embedder = http_embedder(lambda texts: {"embeddings": [[1.0, 0.0], [1.0, 0.0, 0.0]]})
    with pytest.raises(EmbeddingError, match=r"embeddings\[1\] has 3 dimensions, expected 2"):
        embedder.embed(["a", "b"])


def test_http_embedder_rejects_a_width_change_after_its_first_response() -> None:
    widths = iter([3, 4])
    embedder = http_embedder(lambda texts: {"embeddings": [[1.0] * next(widths)]})
    assert embedder.embed(["a"]).shape == (1, 3)
    with pytest.raises(EmbeddingError, match="4 dimensions, expected 3"):
        embedder.embed(["b"])


@pytest.mark.parametrize("bad", ["NaN", "Infinity", "-Infinity", "1e999", "9" * 400, '"0.5"', "true", "null", "[1.0]"])
def test_http_embedder_rejects_non_finite_or_non_number_elements(bad: str) -> None:
    # Raw JSON text, since NaN and Infinity cannot be produced by strict encoders.
    raw = f'{{"embeddings": [[0.5, {bad}]]}}'
    transport = httpx.MockTransport(lambda request: httpx.Response(200, text=raw))
    with pytest.raises(EmbeddingError, match=r"embeddings\[0\]\[1\] is not (a number|finite)"):
        HttpEmbedder(URL, transport=transport).embed(["a"])


def test_http_embedder_rejects_an_all_zero_vector() -> None:
    with pytest.raises(EmbeddingError, match="all-zero"):
        http_embedder(lambda texts: {"embeddings": [[0, 0.0]]}).embed(["a"])


# --- embed server ------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "complaint"),
    [
        (b"{not json", "not valid JSON"),
        (b'["a"]', "JSON object"),
        (b"{}", "'texts' must be a list"),
        (b'{"texts": "a"}', "'texts' must be a list"),
        (b'{"texts": []}', "must not be empty"),
        (json.dumps({"texts": ["t"] * 101}).encode(), "101 items, at most 100"),
        (b'{"texts": ["a", 2]}', r"texts\[1\] must be a string"),
    ],
)
def test_embed_server_rejects_malformed_requests_with_400(body: bytes, complaint: str) -> None:
    client = TestClient(embeddings_app(HashEmbedder()))
    response = client.post("/embed", content=body)
    assert response.status_code == 400
    assert re.search(complaint, response.json()["error"])


def test_embed_server_answers_embeddings_and_dimensions() -> None:
    client = TestClient(embeddings_app(HashEmbedder()))
    reply = client.post("/embed", json={"texts": ["a", ""]}).json()
    assert reply["dimensions"] == 384
    assert np.allclose(reply["embeddings"], HashEmbedder().embed(["a", ""]))


def test_embed_server_maps_embedder_errors_to_502() -> None:
    client = TestClient(embeddings_app(FailingEmbedder()))
    response = client.post("/embed", json={"texts": ["a"]})
    assert response.status_code == 502
    assert "HTTP 500" in response.json()["error"]


def test_embed_server_health_reports_mode_and_model() -> None:
    client = TestClient(embeddings_app(NullEmbedder()))
    assert client.get("/health").json() == {"ok": True, "mode": "none", "model": ""}


# --- local -------------------------------------------------------------------


def test_local_embedder_ranks_paraphrase_above_unrelated_text(local: LocalEmbedder) -> None:
    cat, paraphrase, revenue = local.embed(
        ["The cat sits on the mat", "A cat is sitting on a mat", "Quarterly revenue grew by 5%"]
    )
    assert cosine(cat, paraphrase) > cosine(cat, revenue)


def test_local_embedder_returns_unit_vectors_of_384_dims(local: LocalEmbedder) -> None:
    vectors = local.embed(["one", "two words", "", "a much longer sentence " * 10])
    assert vectors.shape == (4, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_local_embedder_rows_do_not_depend_on_batching(local: LocalEmbedder) -> None:
    texts = [f"note {i}: " + "remember the milk " * (i % 7) for i in range(40)]
    batched = local.embed(texts)
    one_by_one = np.stack([local.embed([t])[0] for t in texts])
    assert np.allclose(batched, one_by_one, atol=1e-5)


def test_a_local_session_computes_on_its_callers_thread_without_a_spinning_pool(local: LocalEmbedder) -> None:
    """README.md#embedding-models: no pool of the session's own spins beside a recall's full-text arms."""
    local.embed(["load it"])
    options = local._get_runtime().session.get_session_options()
    assert options.intra_op_num_threads == 1 and options.inter_op_num_threads == 1
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"


def test_a_batch_of_several_chunks_runs_them_on_the_embedding_threads_in_order(
    local: LocalEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local_module, "WORKERS", 2)
    seen: set[str] = set()
    embed_batch = local._embed_batch

    def watched(runtime: object, texts: list[str]) -> np.ndarray:
        seen.add(threading.current_thread().name)
        return embed_batch(runtime, texts)  # type: ignore[arg-type]

    monkeypatch.setattr(local, "_embed_batch", watched)
    texts = [f"line {i}: " + "the harbour at dawn " * (i % 5) for i in range(3 * local.batch_size)]
    together = local.embed(texts)
    assert seen and all(name.startswith("cuedrecall-embed") for name in seen)  # the chunks ran on the pool
    one_by_one = np.stack([embed_batch(local._get_runtime(), [t])[0] for t in texts])
    assert np.allclose(together, one_by_one, atol=1e-5)


def test_local_embedder_truncates_long_texts_instead_of_failing(local: LocalEmbedder) -> None:
    long_text = "word " * 5000
    vector = local.embed([long_text])[0]
    # Past 256 tokens the rest is cut off, so more of the same text changes nothing.
    assert np.allclose(vector, local.embed([long_text + "zebra " * 100])[0], atol=1e-6)


def test_local_embedder_loads_nothing_until_first_use(tmp_path: Path) -> None:
    missing = tmp_path / "absent.onnx"
    embedder = LocalEmbedder(model_path=missing)
    assert not embedder.loaded
    with pytest.raises(EmbeddingError, match=re.escape("absent.onnx")):
        embedder.embed(["a"])


def test_local_embedder_loads_its_model_once_under_concurrent_first_use(monkeypatch) -> None:
    loads: list[int] = []
    real_load = local_module.load_runtime

    def counting_load(model_path: Path, tokenizer_path: Path, *rest: int):
        loads.append(1)
        time.sleep(0.05)  # widen the race window
        return real_load(model_path, tokenizer_path, *rest)

    monkeypatch.setattr(local_module, "load_runtime", counting_load)
    embedder = LocalEmbedder()
    results: list[np.ndarray] = []
    threads = [threading.Thread(target=lambda: results.append(embedder.embed(["hi"]))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(loads) == 1 and len(results) == 4


def test_local_embedder_never_downloads(monkeypatch) -> None:
    # Any socket connection attempt during a fresh load fails the test.
    def no_network(*args, **kwargs):
        raise AssertionError("local embedder tried to use the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    assert LocalEmbedder().embed(["offline"]).shape == (1, 384)
