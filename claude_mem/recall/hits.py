"""What search returns for each memory: a `Hit` (title, the snippet that matched, files, score),
made from a candidate's row, or from a teammate's documents."""

from __future__ import annotations

from dataclasses import dataclass, field

from claude_mem.index.documents import vector_texts
from claude_mem.recall.candidates import Candidate
from claude_mem.store.reads import SUMMARY_FIELDS, json_list, row_files
from claude_mem.store.withheld import is_withheld
from claude_mem.text.shorten import cut
from claude_mem.text.terms import first_position, stem, words

TITLE_CHARS = 120
SNIPPET_CHARS = 200


@dataclass
class Hit:
    """One memory found: what every caller of search shows (`ref(kind, id, origin)` names it)."""

    kind: str                 # "observation" | "summary" | "prompt"
    id: int                   # sqlite row id in its table
    session_id: str
    project: str
    type: str | None          # observation type; None for others
    title: str                # observation title / summary request / prompt text (cut to ~120 chars)
    snippet: str              # short matching text (the fact or field that matched), <= ~200 chars
    created_at_epoch: int     # ms
    files: list[str]
    score: float
    # None for this installation's memory; a teammate's installation name for a memory found on a
    # shared Chroma server (`id` is then the row's id in their database: ref `obs:12@laptop-b`).
    origin: str | None = None
    # The refs of the newer observations that superseded this one (store/marks.py), empty while it is current.
    superseded_by: list[str] = field(default_factory=list)
    # The refs of the decisions this one conflicts with, neither replacing the other (issue 51).
    conflicts_with: list[str] = field(default_factory=list)
    # The agent the memory's session ran in ("claude-code" | "codex"); None for a teammate's.
    host: str | None = None
    # What it was made from (kinds.Provenance values; an observation's), and the write guard's
    # note when it is withheld (store/withheld.py): agents are shown that it is, never its text.
    provenance: list[str] = field(default_factory=list)
    withheld: str = ""

    def kind_label(self) -> str:
        """The type column of search results: a Codex session's memory says so."""
        label = self.type or self.kind
        return f"{label} (codex)" if self.host == "codex" else label


def _best_text(texts: list[str], terms: list[str]) -> str:
    wanted = {stem(t) for t in terms}
    best, best_score = "", -1
    for text in texts:
        if not text or not text.strip():
            continue
        score = len(wanted & {stem(w) for w in words(text)})
        if score > best_score:
            best, best_score = text, score
    return best


def _snippet(text: str, terms: list[str]) -> str:
    text = " ".join((text or "").split())
    if len(text) <= SNIPPET_CHARS:
        return text
    first = first_position(text, terms)
    start = max(0, min(first - 40, len(text) - SNIPPET_CHARS))
    piece = text[start:start + SNIPPET_CHARS - 2].strip()
    return ("…" if start else "") + piece + "…"


def _document_text(c: Candidate) -> str:
    """The text of the document the vector search matched, rebuilt from the SQLite row (or, for
    a teammate's memory, as it came from the server)."""
    if c.remote is not None:
        return c.remote.texts.get(c.doc_id, "")
    return next((text for doc_id, text in vector_texts(c.kind, c.row) if doc_id == c.doc_id), "")


def hit(c: Candidate, score: float, terms: list[str]) -> Hit:
    """The hit of a ranked candidate; its snippet is the document that matched, or the text with
    most query words."""
    row = c.row
    if c.remote is not None:
        return Hit(kind=c.kind, id=c.remote.row_id, session_id=row["session_id"], project=row["project"], type=row["type"],
                   title=cut(row["title"], TITLE_CHARS), snippet=_snippet(_document_text(c), terms),
                   created_at_epoch=row["created_at_epoch"], files=row["files"], score=round(float(score), 6),
                   origin=c.remote.name)
    if c.kind == "observation":
        title = row["title"] or row["subtitle"] or ""
        facts = json_list(row["facts"])
        texts = [" ".join(p for p in (row["title"], row["subtitle"]) if p), row["narrative"] or "", *facts]
        files = row_files(c.kind, row)
        type_: str | None = row["type"]
    elif c.kind == "summary":
        texts = [row[name] or "" for name in SUMMARY_FIELDS]
        title = row["request"] or next((t for t in texts if t.strip()), "")
        files = row_files(c.kind, row)
        type_ = None
    else:
        title = row["prompt_text"] or ""
        texts = [title, row["reply_text"] or ""]
        files = []
        type_ = None
    matched = _document_text(c) if c.doc_id else ""
    # The vector side knows which document matched; keyword hits show the text with most query words.
    snippet = matched if matched and (c.bm25 <= 0 or not terms) else _best_text(texts, terms) or matched
    withheld = str(row["guard_note"]) if "guard_note" in row and is_withheld(row["guard_note"], row["released_at_epoch"]) else ""
    return Hit(kind=c.kind, id=c.id, session_id=row["session_id"] or "", project=row["project"] or "", type=type_,
               title=cut(title, TITLE_CHARS), snippet=_snippet(snippet, terms),
               created_at_epoch=int(row["created_at_epoch"] or 0), files=files, score=round(float(score), 6),
               provenance=json_list(row["provenance"]) if "provenance" in row else [], withheld=withheld)
