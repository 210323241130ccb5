"""Teammates' memories: documents other installations wrote to a shared Chroma server.

Their SQLite is on another machine, so what is known of such a memory is what its documents
carry (the text each embeds, and metadata: kind, type, title, project, session, dates, files,
the installation's id and name, see `documents.py`). Search checks its filters against that metadata
(`passes`) and shows it beside local hits as `obs:12@laptop-b`; `show` and `get_observations`
of such a ref answer from its documents (`find_record`). Only the semantic side can find them:
keyword search runs on this machine's SQLite.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from claude_mem.store.reads import SUMMARY_FIELDS, ref

if TYPE_CHECKING:
    from claude_mem.index.documents import RemoteDocument, VectorMatch
    from claude_mem.index.semantic_index import Index

def note(names: list[str]) -> str:
    shown = ", ".join(dict.fromkeys(names))
    return (f"hits from other installations ({shown}) were found by meaning only: keyword search covers this"
            " machine's memory")


def passes(meta: dict[str, Any], kind: str, f: Any) -> bool:
    """The search filters (`candidates.Filters`) checked on a teammate's document metadata, with the
    meaning the SQL of the keyword side gives them."""
    if f.type_ and (kind != "observation" or meta.get("type") != f.type_):
        return False
    for key, wanted in (("project", f.project), ("session_id", f.session_id)):
        if wanted and meta.get(key) != wanted:
            return False
    created = _int(meta.get("created_at_ms"))
    if (f.since_ms is not None and created < f.since_ms) or (f.until_ms is not None and created >= f.until_ms):
        return False
    if f.file:
        needle = f.file.lower()  # SQLite's LIKE ignores ASCII case: so does this
        return kind != "prompt" and any(needle in path.lower() for path in _files(meta))
    return True


class Aliases:
    """Ids for teammates' rows within one search. Search keys its candidates by (kind, row id),
    and a teammate's obs:12 is not ours: each of their rows gets a negative id of its own (ours
    are positive), which `RemoteRow.row_id` maps back."""

    def __init__(self) -> None:
        self._ids: dict[tuple[str, str, int], int] = {}

    def local(self, match: VectorMatch) -> VectorMatch:
        if match.origin is None:
            return match
        key = (match.origin.installation, match.kind, match.origin.row_id)
        return replace(match, sqlite_id=self._ids.setdefault(key, -(len(self._ids) + 1)))


@dataclass
class RemoteRow:
    """A teammate's row as search sees it: a row-like dict from its metadata (what ranking reads:
    session, date), and the texts of its documents that matched."""

    name: str
    installation: str
    row_id: int
    row: dict[str, Any]
    texts: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, match: VectorMatch) -> RemoteRow:
        doc = match.origin
        assert doc is not None
        meta = doc.metadata
        row = {"session_id": str(meta.get("session_id") or ""), "project": str(meta.get("project") or ""),
               "type": meta.get("type") if match.kind == "observation" else None, "title": str(meta.get("title") or ""),
               "created_at_epoch": _int(meta.get("created_at_ms")), "files": _files(meta)}
        return cls(doc.name, doc.installation, doc.row_id, row)


def find_record(index: Index, kind: str, row_id: int, origin: str) -> dict[str, Any] | None:
    """What is known of a teammate's row, from its documents; None when the server has none.
    Raises LookupError when the name belongs to several installations."""
    docs = index.remote_documents(kind, row_id, origin)
    if not docs:
        return None
    owners = {d.installation: d.name for d in docs}
    if len(owners) > 1:
        named = ", ".join(f"{name} ({owner})" for owner, name in owners.items())
        raise LookupError(f"{len(owners)} installations are called {origin!r} ({named}): name one by its id, "
                          f"{ref(kind, row_id)}@<id>, or give them distinct installation_name settings")
    return record(kind, docs)


def record(kind: str, docs: list[RemoteDocument]) -> dict[str, Any]:
    meta = docs[0].metadata
    parts = {str(d.metadata.get("part") or ""): d.text for d in docs}
    out: dict[str, Any] = {
        "ref": ref(kind, docs[0].row_id, docs[0].name), "kind": kind, "id": docs[0].row_id, "origin": docs[0].name,
        "installation": docs[0].installation, "type": meta.get("type") if kind == "observation" else None,
        "title": str(meta.get("title") or ""), "project": str(meta.get("project") or ""),
        "session_id": str(meta.get("session_id") or ""), "prompt_number": _int(meta.get("prompt_number")),
        "created_at_epoch": _int(meta.get("created_at_ms")), "files": _files(meta),
    }
    if kind == "observation":
        main = next((d for d in docs if d.metadata.get("part") == "main"), None)
        lines = main.text.split("\n") if main else []
        held = max(0, min(len(lines), _int(main.metadata.get("facts")))) if main else 0  # its last lines (documents.LAYOUT 2)
        out["text"] = "\n".join(lines[:len(lines) - held])
        out["facts"] = lines[len(lines) - held:] + [d.text for d in docs if d.metadata.get("part") == "fact"]  # layout 1
    elif kind == "summary":
        out["fields"] = {name: parts[name] for name in SUMMARY_FIELDS if name in parts}
    else:
        out["text"] = parts.get("prompt", "")
    return out


def record_lines(rec: dict[str, Any], stamp: str) -> list[str]:
    """A teammate's record as plain text (MCP, CLI); `stamp` is its date as the caller shows dates."""
    kind = rec["kind"]
    lines = [f"## {rec['ref']} · {rec['type'] or kind} · {stamp} · project {rec['project'] or '?'} · session "
             f"{rec['session_id'] or '?'} turn {rec['prompt_number']} · from {rec['origin']} (installation {rec['installation']})"]
    if kind == "summary":
        lines += [f"{name.replace('_', ' ')}: {text}" for name, text in rec["fields"].items()]
    else:
        lines.append(rec["text"] or rec["title"])
    if rec.get("facts"):
        lines.append("Facts:")
        lines += [f"- {fact}" for fact in rec["facts"]]
    if rec["files"]:
        lines.append("Files: " + ", ".join(rec["files"]))
    lines.append("(A teammate's memory, as their installation shared it with the server; its concepts stay on their"
                 " machine.)")
    return lines


def _files(meta: dict[str, Any]) -> list[str]:
    return [p for p in str(meta.get("files") or "").split("\n") if p]


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0
