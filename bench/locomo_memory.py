"""LoCoMo conversations as claude-mem memory, for bench/locomo.py and bench/push_recall.py: each
fact an observation (its dia_ids kept in a side table, never in the observation), each dialogue
turn a prompt in turns mode, indexed with the embedder the store gets; and a cache of the vectors
of texts embedded before.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import sqlite3
import threading
import time
from typing import Any

from claude_mem.index.embedders import DEFAULT as DEFAULT_EMBEDDER
from claude_mem.index.embedders import choose, embedder_named
from claude_mem.index.semantic_index import Index
from claude_mem.marks.apply import mark_stored
from claude_mem.store.db import transaction
from claude_mem.store.memories import Observation, insert_observation
from claude_mem.store.records import ensure_session, record_prompt

TURN_MS = 10_000  # one dialogue turn to the next: a session stays within its day
_DIA = re.compile(r"^D(\d+):(\d+)$")


def clean_evidence(raw: Any) -> list[str]:
    items = raw if isinstance(raw, list) else [raw]
    out: list[str] = []
    for item in items:
        for part in re.split(r"[;,\s]+", str(item)):
            match = _DIA.match(part.strip())
            if match:
                out.append(f"D{int(match.group(1))}:{int(match.group(2))}")
    return list(dict.fromkeys(out))


def session_epoch_ms(text: str) -> int:
    # "1:56 pm on 8 May, 2023", read as local time like the dates search finds in questions.
    stamp = time.strptime(" ".join(text.split()), "%I:%M %p on %d %B, %Y")
    return int(time.mktime(stamp) * 1000)


def store_fact(conn: Any, session_id: str, project: str, fact: Any, dias: list[str], *, prompt_number: int, at: int,
               provenance: dict[int, list[str]], new_ids: list[int]) -> None:
    """One fact as an observation (type "discovery", the fact as its title), its dia_ids in the
    side table; the same fact twice in one session is one observation of both turns."""
    obs = Observation(type="discovery", title=" ".join(str(fact).split()))
    obs_id = insert_observation(conn, session_id, project, obs, prompt_number=prompt_number, source="import",
                                created_at_epoch=at)
    if obs_id is None:
        obs_id = conn.execute("SELECT id FROM observations WHERE session_id = ? AND content_hash = ?",
                              (session_id, obs.content_hash())).fetchone()[0]
    else:
        new_ids.append(obs_id)
    provenance.setdefault(obs_id, [])
    provenance[obs_id].extend(d for d in dias if d not in provenance[obs_id])


def bench_index(path: str, embedder: str, conn: Any) -> Index:
    """The index of the store at `conn` (its rows stored): `auto` judged by what they are, as
    the memory service judges a data folder (embedders.choose; nothing recorded)."""
    if embedder == "auto":
        judged = argparse.Namespace(embedder="auto", chroma_url="", data_dir=os.path.dirname(path))
        embedder = choose(judged, conn, record=False).name
    return Index(path=path, embedder=embedder_named(embedder))


def ingest(conn: Any, index: Index | None, sample: dict[str, Any]) -> tuple[dict[int, list[str]], int]:
    """Store one conversation and index it (`index` None: store only); returns obs id ->
    dia_ids, and the number of facts."""
    project = sample["sample_id"]
    conversation = sample["conversation"]
    provenance: dict[int, list[str]] = {}
    facts_seen = 0
    ids: list[int] = []
    for key, by_speaker in sample["observation"].items():
        number = int(re.search(r"session_(\d+)", key).group(1))
        session_id = f"{project}-session-{number}"
        start_ms = session_epoch_ms(conversation[f"session_{number}_date_time"])
        with transaction(conn):
            ensure_session(conn, session_id, project=project, cwd=None, transcript_path=None)
            offset = 0
            for facts in by_speaker.values():
                for fact, dia in facts:
                    facts_seen += 1
                    dias = clean_evidence(dia)
                    offset += 1
                    store_fact(conn, session_id, project, fact, dias, prompt_number=number, at=start_ms + offset * 1000,
                               provenance=provenance, new_ids=ids)
    with transaction(conn):  # the marking rules, as the worker and an import run them
        mark_stored(conn, ids)
    if index is not None:
        index.index_rows(conn, "observation", ids)
    return provenance, facts_seen


def ingest_turns(conn: Any, index: Index | None, sample: dict[str, Any]) -> tuple[dict[int, list[str]], dict[int, list[str]], int]:
    """Store one conversation as turns and index it (`index` None: store only): every dialogue turn a prompt of its session,
    every fact an observation of the turn it came from. Returns obs id -> dia_ids, prompt id ->
    [dia_id] (the side tables hits are mapped back through), and the number of facts."""
    project = sample["sample_id"]
    conversation = sample["conversation"]
    provenance: dict[int, list[str]] = {}
    said: dict[int, list[str]] = {}
    facts_seen = 0
    obs_ids: list[int] = []
    numbers = sorted(int(m.group(1)) for key in conversation if (m := re.fullmatch(r"session_(\d+)", key)))
    for number in numbers:
        session_id = f"{project}-session-{number}"
        start_ms = session_epoch_ms(conversation[f"session_{number}_date_time"])
        turn_of: dict[str, tuple[int, int]] = {}  # dia_id -> (prompt number, time)
        with transaction(conn):
            ensure_session(conn, session_id, project=project, cwd=None, transcript_path=None)
            for i, turn in enumerate(conversation[f"session_{number}"]):
                at = start_ms + i * TURN_MS
                prompt_number = record_prompt(conn, session_id, f"{turn['speaker']}: {turn['text']}", None,
                                              created_at_epoch=at)
                prompt_id = conn.execute("SELECT id FROM user_prompts WHERE session_id = ? AND prompt_number = ?",
                                         (session_id, prompt_number)).fetchone()[0]
                dia = clean_evidence(turn["dia_id"])
                said[prompt_id] = dia
                for d in dia:
                    turn_of[d] = (prompt_number, at)
            offset = 0
            for facts in sample["observation"].get(f"session_{number}_observation", {}).values():
                for fact, dia in facts:
                    facts_seen += 1
                    dias = clean_evidence(dia)
                    offset += 1
                    # A fact drawn from several turns is filed under the first; its provenance keeps all.
                    prompt_number, at = next((turn_of[d] for d in dias if d in turn_of), (0, start_ms))
                    store_fact(conn, session_id, project, fact, dias, prompt_number=prompt_number, at=at + offset,
                               provenance=provenance, new_ids=obs_ids)
    with transaction(conn):
        mark_stored(conn, obs_ids)
    if index is not None:
        index.index_rows(conn, "prompt", list(said))
        index.index_rows(conn, "observation", obs_ids)
    return provenance, said, facts_seen


class EmbeddingCache:
    """Vectors of texts embedded before, in an SQLite file, keyed by the model file's sha256 and
    the text: the same vectors the model gives, without running it again."""

    def __init__(self, directory: str, embedder: str = DEFAULT_EMBEDDER) -> None:
        from claude_mem.index import embed, multilingual

        os.makedirs(directory, exist_ok=True)
        # The function each embedder embeds documents with (queries are embedded afresh).
        self.embed, self.name = (multilingual, "embed_passages") if embedder == "multilingual" else (embed, "embed_texts")
        self.original = getattr(self.embed, self.name)
        # Search embeds its query in a thread of its own (recall/semantic.py): one connection, locked.
        self.conn = sqlite3.connect(os.path.join(directory, "embeddings.sqlite"), check_same_thread=False)
        self.lock = threading.Lock()
        self.conn.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")

    def _key(self, text: str) -> str:
        return hashlib.sha256(f"{self.embed.MODEL_SHA256}\x1f{text}".encode()).hexdigest()

    def embed_texts(self, texts: list[str], *, threads: int | None = None) -> Any:
        with self.lock:
            return self._embed_texts(texts, threads=threads)

    def _embed_texts(self, texts: list[str], *, threads: int | None = None) -> Any:
        import numpy as np

        keys = [self._key(t) for t in texts]
        found: dict[str, Any] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            found.update((k, np.frombuffer(v, dtype=np.float32)) for k, v in self.conn.execute(
                f"SELECT key, vector FROM vectors WHERE key IN ({','.join('?' * len(chunk))})", chunk))
        todo = [i for i, k in enumerate(keys) if k not in found]
        if todo:
            fresh = self.original([texts[i] for i in todo])
            with self.conn:
                self.conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                                      [(keys[i], np.asarray(v, dtype=np.float32).tobytes()) for i, v in zip(todo, fresh, strict=True)])
            found.update((keys[i], v) for i, v in zip(todo, fresh, strict=True))
        out = np.empty((len(texts), self.embed.DIMENSIONS), dtype=np.float32)
        for i, k in enumerate(keys):
            out[i] = found[k]
        return out

    def __enter__(self) -> EmbeddingCache:
        setattr(self.embed, self.name, self.embed_texts)
        return self

    def __exit__(self, *exc: object) -> None:
        setattr(self.embed, self.name, self.original)
        self.conn.close()
