"""A row's documents in the semantic index: their texts, ids and metadata.

Documents, one per retrievable piece of text (ids are stable, so re-indexing a row replaces it),
each named by its key and the installation that wrote it (`obs:12:main@<installation id>`, see
`document_id`: one collection on a Chroma server is shared by a team). Their metadata
carries what a teammate needs to show the document without this machine's SQLite (kind, type,
title, dates, project, session, files, the installation's id and name)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from claude_mem.store.reads import KIND_OF_PREFIX, SUMMARY_FIELDS, json_items, ref, row_files
from claude_mem.text.shorten import cut

TITLE_CHARS = 200
FACT_PROBE = 32  # fact ids looked up per step when finding an observation's stale facts
# What a row's documents are, the only layout written: 2, an observation's facts inside its one
# document, each fact's own vector kept in SQLite only (vector_texts). Layout 1 (before issue 39)
# gave each fact a document of its own; index_state records the layout with the collection, so a
# store of layout 1 is laid out anew by the next catch-up (Index._state_key, legacy.upgrade_layout;
# docs/search-tuning.md, "One document per observation").
LAYOUT = 2


@dataclass(frozen=True)
class Document:
    id: str
    text: str
    metadata: dict[str, Any]


@dataclass(frozen=True)
class RemoteDocument:
    """A document another installation wrote to the shared server: what search and `show` know
    of a teammate's memory (no SQLite row of theirs is here)."""

    installation: str  # its id
    name: str  # its readable name (`installation_name` over there)
    row_id: int  # the row's id in their database
    text: str
    metadata: dict[str, Any] = field(compare=False, repr=False)


@dataclass(frozen=True)
class VectorMatch:
    """One matching document: which row it belongs to and how close it is (cosine distance).
    `doc_id` is the document's key (`obs:12:main`) for this installation's documents."""

    kind: str
    sqlite_id: int
    distance: float
    doc_id: str
    # The stored unit vector (numpy float32), when asked for or read anyway.
    embedding: Any = field(default=None, compare=False, repr=False)
    # Set for a teammate's document (doc_id is then its full id); None for this installation's.
    origin: RemoteDocument | None = field(default=None, compare=False)


def _base_metadata(kind: str, row: sqlite3.Row | dict[str, Any], project: str | None, files: list[str],
                   title: str | None) -> dict[str, Any]:
    created_ms = int(row["created_at_epoch"] or 0)
    return {
        "sqlite_id": int(row["id"]),
        "kind": kind,
        "title": cut(title, TITLE_CHARS),  # a teammate's search shows it; they have no row to read it from
        "project": project or "",
        "session_id": row["session_id"] or "",
        "created_at": created_ms // 1000,
        # Seconds are what the spec asked for; the millisecond copy keeps since/until filters exact.
        "created_at_ms": created_ms,
        "prompt_number": int(row["prompt_number"] or 0),
        "files": "\n".join(files),
    }


def document_texts(kind: str, row: sqlite3.Row | dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(document key, text, metadata of the part) for each document of a row. Needs only the row's
    id and text columns, so search can name a row's documents from what it read anyway. The key
    is the document's id within one installation; `document_id` makes its id in Chroma:

      obs:<id>:main       title + subtitle + narrative + facts, a line each
      sum:<id>:<field>    one per non-empty summary field  prompt:<id>         the prompt text
      prompt:<id>:reply   Claude's final reply to the prompt (kept with it since migration 0007)
    """
    row_id = row["id"]
    name = ref(kind, row_id)  # a document's key starts with its row's ref
    if kind == "observation":
        heading = [p.strip() for p in (row["title"], row["subtitle"], row["narrative"]) if p and p.strip()]
        # A document per fact made 340k documents for 100k observations, most of the memory
        # service's RSS (docs/search-tuning.md, "One document per observation"). Each fact is one
        # line, last, so a teammate's `show` can tell them from the text (`metadata["facts"]`
        # says how many).
        facts = [fact for _, fact in _facts(row)]
        if not heading and not facts:
            return []
        return [(f"{name}:main", "\n".join(heading + facts), {"part": "main", "facts": len(facts)})]
    if kind == "summary":
        return [(f"{name}:{part}", row[part].strip(), {"part": part}) for part in SUMMARY_FIELDS
                if row[part] and row[part].strip()]
    text = (row["prompt_text"] or "").strip()
    docs = [(name, text, {"part": "prompt"})] if text else []
    # Claude's reply to it (migration 0007): a document of the prompt's row, so a match on it is
    # a match on the turn.
    reply = (row["reply_text"] or "").strip()
    if reply:
        docs.append((f"{name}:reply", reply, {"part": "reply"}))
    return docs


def _facts(row: sqlite3.Row | dict[str, Any]) -> list[tuple[int, str]]:
    """(n, text) of an observation's non-empty facts, n counting from 0 over all of them."""
    return [(n, " ".join(fact.split())) for n, fact in enumerate(json_items(row["facts"])) if isinstance(fact, str) and fact.strip()]


def vector_texts(kind: str, row: sqlite3.Row | dict[str, Any]) -> list[tuple[str, str]]:
    """(key, text) of every text of a row that has a vector (index/vectors.py): its documents,
    and each of an observation's facts as well (`obs:12:fact:0`, as layout 1 named their
    documents), kept in SQLite only: search scores an observation by its best fact too, so a
    question about one fact is measured against that fact alone."""
    texts = [(key, text) for key, text, _ in document_texts(kind, row)]
    if kind == "observation" and texts:
        texts += [(f"{ref(kind, row['id'])}:fact:{n}", fact) for n, fact in _facts(row)]
    return texts


def observation_documents(row: sqlite3.Row | dict[str, Any]) -> list[Document]:
    meta = _base_metadata("observation", row, row["project"], row_files("observation", row),
                          row["title"] or row["subtitle"])
    meta["type"] = row["type"]
    return [Document(doc_id, text, {**meta, **part}) for doc_id, text, part in document_texts("observation", row)]


def summary_documents(row: sqlite3.Row | dict[str, Any]) -> list[Document]:
    title = row["request"] or next((row[name] for name in SUMMARY_FIELDS if row[name] and row[name].strip()), "")
    meta = _base_metadata("summary", row, row["project"], row_files("summary", row), title)
    return [Document(doc_id, text, {**meta, **part}) for doc_id, text, part in document_texts("summary", row)]


def prompt_documents(row: sqlite3.Row | dict[str, Any]) -> list[Document]:
    meta = _base_metadata("prompt", row, row["project"], [], row["prompt_text"])
    return [Document(doc_id, text, {**meta, **part}) for doc_id, text, part in document_texts("prompt", row)]
BUILD = {"observation": observation_documents, "summary": summary_documents, "prompt": prompt_documents}


# A row of each kind with every part present: its document ids are all the ids such a row can have.
ALL_PARTS = {"prompt": {"prompt_text": "x", "reply_text": "x"}, "summary": {name: "x" for name in SUMMARY_FIELDS}}


def document_id(key: str, installation_id: str) -> str:
    """A document's id in Chroma: its key (`obs:12:fact:0`, as `document_texts` names it) and the
    installation that wrote it, `obs:12:fact:0@3f9c...`. Keys never hold '@'."""
    return f"{key}@{installation_id}"


def split_doc_id(doc_id: str) -> tuple[str, str | None]:
    """(key, installation id) of a document id; the id is None for a document written before
    installations had ids (`obs:12:main`: index/legacy.py upgrades them)."""
    key, sep, owner = doc_id.partition("@")
    return key, (owner if sep else None)


def parse_doc_id(doc_id: str) -> tuple[str, int] | None:
    """("observation", 12) from "obs:12:fact:3" or "obs:12:fact:3@<installation id>"; None for a
    kind this claude-mem does not know (a teammate's newer one may write it): it is skipped."""
    # Plain string work: search reads a few hundred of these per query.
    prefix, _, rest = doc_id.partition("@")[0].partition(":")
    number = rest.partition(":")[0]
    kind = KIND_OF_PREFIX.get(prefix)
    return (kind, int(number)) if kind and number.isascii() and number.isdigit() else None


def kind_where(kind: str, ids: Iterable[int] | None = None) -> dict[str, Any]:
    clauses: list[dict[str, Any]] = [{"kind": kind}]
    if ids is not None:
        clauses.append({"sqlite_id": {"$in": [int(i) for i in ids]}})
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def fact_number(doc_id: str) -> int | None:
    """n of a fact's own document (`obs:12:fact:n`, with or without its owner), else None."""
    parts = split_doc_id(doc_id)[0].split(":")
    return int(parts[3]) if len(parts) >= 4 and parts[2] == "fact" and parts[3].isascii() and parts[3].isdigit() else None


def document_order(doc_id: str) -> tuple[int, int, str]:
    # A row's documents as they were made: main text first, then facts by number, then the rest.
    key = split_doc_id(doc_id)[0]
    parts = key.split(":")
    if len(parts) >= 3 and parts[2] == "main":
        return 0, 0, key
    if (fact := fact_number(key)) is not None:
        return 1, fact, key
    if len(parts) >= 3 and parts[2] in SUMMARY_FIELDS:
        return 2, SUMMARY_FIELDS.index(parts[2]), key
    return 3, 0, key


def stale_documents(collection: Any, kind: str, rows: list[int], keep: set[str], me: str) -> list[str]:
    """Ids of documents these rows have in `collection` (this installation's, `me`) and are not in `keep`, looked up by id:
    a row is rewritten in place and only its leftovers deleted (delete-then-add grew the
    service 14% in 4 minutes; a filtered delete scans the collection)."""
    found: set[str] = set()
    if kind == "observation":
        # Facts are numbered from 0 without gaps: probe a window past the last one found
        # until a window comes back empty.
        start, window = 0, FACT_PROBE
        while True:
            ids = [document_id(f"{ref(kind, i)}:main", me) for i in rows if start == 0]
            ids += [document_id(f"{ref(kind, i)}:fact:{n}", me) for i in rows for n in range(start, start + window)]
            hits = set(collection.get(ids=ids, include=[])["ids"])
            found |= hits
            if not any((n := fact_number(h)) is not None and n >= start + window - 1 for h in hits):
                break
            start += window
    else:
        every = ALL_PARTS[kind]
        ids = [document_id(key, me) for i in rows for key, _, _ in document_texts(kind, every | {"id": i})]
        found = set(collection.get(ids=ids, include=[])["ids"])
    return sorted(found - keep)
