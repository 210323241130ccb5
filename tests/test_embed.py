"""The offline embedding function: the pinned model, our tokenizer, no network."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from claude_mem.index import embed

TEXTS = [
    "Fixed the login crash: the auth token was refreshed after logout.",
    "dark mode",
    "A much longer description of a refactor " * 40,  # > 256 tokens: truncated, not an error
    "",
    "中文文本和表情 🎉",
]


def test_vectors_are_384_unit_float32() -> None:
    vectors = embed.embed_texts(TEXTS)
    assert vectors.shape == (len(TEXTS), 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_deterministic_and_batch_padding_matches_single_texts() -> None:
    batch = embed.embed_texts(TEXTS)
    again = embed.embed_texts(TEXTS)
    singles = np.stack([embed.embed_texts([t])[0] for t in TEXTS])
    np.testing.assert_array_equal(batch, again)
    # Padding to the longest text of the batch must not change any text's vector.
    np.testing.assert_allclose(batch, singles, atol=1e-5)


def test_similar_meaning_is_closer_than_unrelated() -> None:
    a, b, c = embed.embed_texts(["switch the app to a dark colour theme", "add a night mode", "bump the numpy version"])
    assert float(a @ b) > float(a @ c) + 0.1


def test_tokenizer_pads_to_longest_and_truncates_at_256() -> None:
    model = embed.load_model()
    encodings = model.tokenizer.encode_batch(["short", "word " * 1000])
    assert len(encodings[0].ids) == len(encodings[1].ids) == embed.MAX_TOKENS
    encodings = model.tokenizer.encode_batch(["short", "a bit longer text"])
    assert len(encodings[0].ids) == len(encodings[1].ids) < 16  # the shipped file said a fixed 128


def test_model_file_checksum_is_verified(tmp_path: Path) -> None:
    embed.verify_model(embed.model_path())  # the installed, pinned file passes
    tampered = tmp_path / "model.onnx"
    shutil.copyfile(embed.model_path(), tampered)
    with open(tampered, "r+b") as fh:
        fh.seek(1000)
        byte = fh.read(1)
        fh.seek(1000)
        fh.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(embed.EmbeddingModelError, match="sha256"):
        embed.verify_model(tampered)
    with pytest.raises(embed.EmbeddingModelError, match="reinstall"):
        embed._Model(tampered, threads=1)  # the loader refuses it too, before onnxruntime sees it


def test_config_round_trip() -> None:
    function = embed.MiniLMInt8EmbeddingFunction()
    assert function.name() == "claude_mem_minilm_l6_v2_int8"
    assert function.default_space() == "cosine"
    assert not function.is_legacy()
    rebuilt = embed.MiniLMInt8EmbeddingFunction.build_from_config(function.get_config())
    assert isinstance(rebuilt, embed.MiniLMInt8EmbeddingFunction)
    with pytest.raises(ValueError, match="reindex"):
        embed.MiniLMInt8EmbeddingFunction.build_from_config({"model_sha256": "0" * 64})
    assert len(function(["one", "two"])) == 2


# Run in fresh interpreters so that importing chromadb and loading the model both happen with
# the network blocked, and so that the second process knows nothing but the stored collection.
BLOCK_NETWORK = textwrap.dedent("""
    import socket
    attempts = []
    _connect = socket.socket.connect
    def guarded(self, address, *args):
        host = address[0] if isinstance(address, tuple) else str(address)
        if self.family == socket.AF_UNIX or host in ("127.0.0.1", "::1", "localhost"):
            return _connect(self, address, *args)
        attempts.append(host)
        raise OSError("network blocked by test: " + host)
    socket.socket.connect = guarded
    socket.socket.connect_ex = lambda self, address: guarded(self, address) or 0
""")

CREATE = BLOCK_NETWORK + textwrap.dedent("""
    import json, sys
    import chromadb
    from chromadb.config import Settings
    from claude_mem.index.embed import MiniLMInt8EmbeddingFunction
    client = chromadb.PersistentClient(path=sys.argv[1], settings=Settings(anonymized_telemetry=False))
    col = client.get_or_create_collection("reopen-test", embedding_function=MiniLMInt8EmbeddingFunction(),
                                          configuration={"hnsw": {"space": "cosine"}})
    col.add(ids=["a", "b"], documents=["the cat sat on the mat", "quarterly revenue went down"])
    print(json.dumps({"attempts": attempts, "count": col.count()}))
""")

REOPEN = BLOCK_NETWORK + textwrap.dedent("""
    import json, sys
    import chromadb
    from chromadb.config import Settings
    import claude_mem.index.embed  # registers the function; nothing is passed below
    client = chromadb.PersistentClient(path=sys.argv[1], settings=Settings(anonymized_telemetry=False))
    col = client.get_collection("reopen-test")
    found = col.query(query_texts=["a kitten"], n_results=1)
    function = col.configuration["embedding_function"]
    print(json.dumps({"attempts": attempts, "top": found["ids"][0][0], "function": type(function).__name__}))
""")


def _run(code: str, path: Path) -> dict:
    proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_works_offline_and_collection_reopens_without_the_function(tmp_path: Path) -> None:
    created = _run(CREATE, tmp_path / "chroma")
    assert created == {"attempts": [], "count": 2}
    reopened = _run(REOPEN, tmp_path / "chroma")
    assert reopened == {"attempts": [], "top": "a", "function": "MiniLMInt8EmbeddingFunction"}


@pytest.mark.slow
def test_the_saved_optimised_graph_gives_the_same_vectors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The memory service loads a graph optimised once and saved in its data folder (-45 MiB);
    the vectors in the index were made by the default session, so they must not move."""
    texts = ["Fixed the login crash: the refresh token raced with logout", "why did test_add fail", "dark mode added"]
    default = embed._Model(embed.model_path(), 1).embed(texts)
    monkeypatch.setattr(embed, "_optimized_dir", str(tmp_path / "models"))
    first = embed._Model(embed.model_path(), 1)  # saves the graph, then loads it
    saved = list((tmp_path / "models").glob("*.onnx"))
    assert len(saved) == 1 and saved[0].stat().st_size > 1_000_000
    assert np.abs(first.embed(texts) - default).max() < 1e-5
    saved[0].write_bytes(b"half-written")  # a damaged copy is dropped (made again next time), never trusted
    again = embed._Model(embed.model_path(), 1)
    assert np.abs(again.embed(texts) - default).max() < 1e-5
