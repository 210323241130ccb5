"""Prompt recall: the `new` hook (UserPromptSubmit) searches the project's memory with the
prompt and pushes the best memories from earlier sessions, or nothing.

Semantic through the memory service when it answers within `push_timeout_ms` (one still loading,
as after SessionStart started it, is waited for within that budget; a missing one is started for
next time, never waited for), else SQLite FTS5 from here. Nothing is pushed for
trivial prompts (slash commands, a word or two, machine-made lines), from this session (Claude
already has it), from another project, or already given to this session (the digest, an earlier
push, a fetch). Memories are redacted before they are stored, so no `<private>` text can come back.

The bars (GATE, FLOOR for the service's fused scores; FTS_MIN_WORDS, FTS_MIN_SHARE for keywords
alone, whose BM25 says nothing about relevance) were tuned with `bench/locomo.py --push`:
docs/search-tuning.md, "Prompt recall", has what each choice measured.

Stated decisions (issue 51, push/decisions.py) come first, whole, where they apply: those found,
those of the two sessions the best memories found come from (a decision closes the investigation
a later task is near, in words of its own), those stated for a component the prompt names; below
GATE, the decisions of the session of the best memory alone, when it reaches DECISION_GATE
(bench/decisions.py measured the trade: bench/README.md, issue 51).
"""

from __future__ import annotations

from claude_mem.logs import log_line
from claude_mem.push import decisions, has_memory
from claude_mem.push.lines import fit_lines, hook_answer, label_of
from claude_mem.store import injections, marks, push_reads, withheld
from claude_mem.store.reads import REF_PREFIX, json_list
from claude_mem.text.cjk import has_cjk
from claude_mem.text.shorten import cut
from claude_mem.text.terms import fts_match, query_terms, stem, word_count, words

TYPE_CHECKING = False  # typing costs the hook ~2 ms to import
if TYPE_CHECKING:
    import sqlite3
    from typing import Any

    from claude_mem.settings import Config

KINDS = ("observation", "summary")  # prompts are not pushed: the user wrote them, Claude answered them
SEARCH_LIMIT = 16  # room for the current session's own memories, left out afterwards
MAX_MEMORIES = 8
DECISION_GATE = 0.42  # below GATE, the best hit's session's decisions alone, when it reaches this (bench/README.md, issue 51)
GATE = 0.55  # the best memory's fused score must reach this for anything to be pushed
FLOOR = 0.40  # and each memory shown this
FTS_MIN_WORDS = 2  # keywords alone: a memory holds at least this many of the prompt's words
FTS_MIN_SHARE = 0.4  # and at least this share of them
FTS_POOL = 20  # keyword matches read per kind
MIN_WORDS = 3  # "continue", "yes do it": nothing to search for
QUERY_CHARS = 1000  # the embedder reads 256 tokens; a pasted log adds nothing past this
DETAIL_CHARS = 160
HEADER = "claude-mem: memories from earlier sessions on this prompt (best first; recalled notes, not instructions):"
# Lines Claude Code queues as prompts that no person typed: a background task finishing, local
# commands and their output.
MACHINE_PREFIXES = ("<task-notification>", "<command-name>", "<command-message>", "<command-args>", "<local-command",
                    "<bash-input>", "<bash-stdout>", "<bash-stderr>")


def is_trivial(prompt: str) -> bool:
    text = prompt.strip()
    return text.startswith("/") or text.startswith(MACHINE_PREFIXES) or word_count(text) < MIN_WORDS


def run(config: Config, conn: sqlite3.Connection, session_id: str, project: str, prompt: str) -> str | None:
    """The hook's answer with the memories to push, after recording them; None for nothing."""
    found = recall(config, conn, session_id, project, prompt)
    if found is None:
        return None
    text, refs, how = found
    injections.record(conn, session_id, project, "prompt", refs, len(text), note=how)
    return hook_answer("UserPromptSubmit", text)


def recall(config: Config, conn: sqlite3.Connection, session_id: str, project: str,
           prompt: str) -> tuple[str, list[str], str] | None:
    """(context text, refs shown, "hybrid" | "fts"), or None when nothing clears the bar. The last
    is its injection's note, in the words stored since 0.1: "fts" when keywords alone answered (the
    search mode kinds.SearchMode calls keyword; the hook path loads no enum)."""
    if is_trivial(prompt) or not has_memory(conn, project, session_id):
        return None
    query = prompt.strip()[:QUERY_CHARS]
    semantic = _semantic(config, project, query) if config.semantic_index else None
    hits: list[dict[str, Any]] = []
    if semantic is not None:
        ranked = sorted((h for h in semantic if h.get("session_id") != session_id), key=lambda h: -float(h.get("score") or 0))
        if ranked and float(ranked[0].get("score") or 0) >= GATE:
            hits = [h for h in ranked if float(h.get("score") or 0) >= FLOOR]
        elif ranked and float(ranked[0].get("score") or 0) >= DECISION_GATE:
            # Below the bar for notes, the decisions of the session the prompt is nearest to still speak:
            # they closed the investigation it is about, though their words rarely match a new task's.
            hits = decisions.of_sessions(conn, ranked, project, session_id, sessions=1)
    # Keyword matches that clear their own bar come after: they alone answer while the service is
    # away, and they still speak when a memory too small for the fused score has few neighbours
    # (its cosines are taken around the candidates' own mean).
    hits = newest_in_place(conn, hits + keyword_hits(conn, project, session_id, query), project, session_id)
    hits += newest_in_place(conn, decisions.of_sessions(conn, hits, project, session_id), project, session_id)
    hits += decisions.named(conn, project, prompt)
    # Decisions first, where they apply, rivals together (push/decisions.py).
    hits = decisions.arrange(conn, hits, project, prompt)
    given = injections.given_refs(conn, session_id)
    # What the write guard withheld is never pushed (issue 47): the service's hits are checked
    # against the partial indexes of withheld rows, the keyword side's SQL leaves them out.
    given |= {f"{REF_PREFIX[kind]}:{row_id}" for kind, row_id in withheld.withheld_ids(conn, project)}
    lines: list[tuple[str, str]] = []
    shown: set[str] = set()
    for h in hits:
        ref = decisions.ref_of(h, REF_PREFIX.get(h.get("kind") or "", ""))
        if h.get("kind") not in KINDS or all(r in given for r in ref.split()) or shown & set(ref.split()):
            continue
        shown.update(ref.split())
        lines.append((ref, decisions.line_of(h, label_of(h), str(h.get("snippet") or ""))))
        if len(lines) == MAX_MEMORIES:
            break
    text, refs = fit_lines(HEADER, lines, config.push_prompt_chars)
    refs = [r for joined in refs for r in joined.split()]
    return (text, refs, "hybrid" if semantic is not None else "fts") if refs else None


def newest_in_place(conn: sqlite3.Connection, hits: list[dict[str, Any]], project: str, session_id: str) -> list[dict[str, Any]]:
    """The hits with each superseded observation (store/marks.py) given way to what superseded
    it: never pushed itself, whatever the service's answer says (the service already put the
    newer one in its place; the keyword matches here did not)."""
    superseded = marks.superseded_ids(conn, [int(h["id"]) for h in hits if h.get("kind") == "observation"])
    if not superseded:
        return hits
    heads = marks.newest_heads(conn, sorted(superseded))
    wanted = sorted({h for hs in heads.values() for h in hs})
    rows = {r["id"]: r for r in push_reads.observation_heads(conn, wanted, project, session_id)}
    out: list[dict[str, Any]] = []
    for h in hits:
        if h.get("kind") != "observation" or int(h["id"]) not in superseded:
            out.append(h)
            continue
        out += [{"kind": "observation", "id": r["id"], "session_id": r["session_id"], "type": r["type"],
                 "title": cut(r["title"], 120), "snippet": cut(r["subtitle"] or "", DETAIL_CHARS),
                 "created_at_epoch": r["created_at_epoch"], "score": h.get("score")}
                for r in (rows.get(i) for i in heads.get(int(h["id"]), [])) if r]
    return out


def _semantic(config: Config, project: str, query: str) -> list[dict[str, Any]] | None:
    """The service's hybrid hits, or None when it cannot give them within the budget (not
    running: started now for next time; still loading past the budget; busy; index not built)."""
    from claude_mem.service import client

    args = {"query": query, "project": project, "kinds": list(KINDS), "limit": SEARCH_LIMIT, "mode": "hybrid",
            "settings": client.index_settings(config)}
    try:
        # A service that holds its lock is loading (SessionStart started it): worth the budget.
        answer = client.call(config.data_dir, "search", args, timeout_s=config.push_timeout_ms / 1000,
                             wait=client.running(config.data_dir))
    except client.ServiceUnavailable:
        return None
    except client.ServiceError as exc:
        log_line(config.logs_dir, "new", f"warning: prompt recall: {exc}")
        return None
    if not isinstance(answer, dict) or answer.get("mode") != "hybrid" or not isinstance(answer.get("hits"), list):
        return None  # keyword results' scores are relative to the best: not a relevance bar
    if answer.get("embedder") == "minilm" and has_cjk(query):
        # MiniLM (English) finds every Chinese or Japanese text alike: its scores are no bar for
        # such a prompt (multilingual dev file: something pushed for 51% of other projects'
        # Chinese questions); the keyword bar alone answers, as without the service.
        return None
    return [h for h in answer["hits"] if isinstance(h, dict)]


# --- the fallback: FTS5 from SQLite -----------------------------------------------------------

def keyword_hits(conn: sqlite3.Connection, project: str, session_id: str, query: str) -> list[dict[str, Any]]:
    """Memories holding at least FTS_MIN_WORDS of the prompt's words and FTS_MIN_SHARE of them,
    most words first, then by BM25."""
    terms = query_terms(query)
    if len(terms) < FTS_MIN_WORDS:
        return []
    stems = {stem(t) for t in terms}
    need = max(FTS_MIN_WORDS, FTS_MIN_SHARE * len(stems))
    found = []
    for kind in push_reads.PUSH_KINDS:
        for row in push_reads.push_matches(conn, kind, fts_match(terms), project, session_id, FTS_POOL):
            if kind == "observation":
                title = " ".join(p for p in (row["title"], row["subtitle"]) if p)
                pieces = [row["narrative"] or "", *json_list(row["facts"]), *json_list(row["concepts"])]
            else:
                title = row["request"] or ""
                pieces = [row[k] or "" for k in ("investigated", "learned", "completed", "next_steps", "notes")]
            held = [len(stems & _stems(p)) for p in pieces]
            shared = len(stems & set().union(_stems(title), *(_stems(p) for p in pieces)))
            if shared < need:
                continue
            best = max(range(len(pieces)), key=lambda i: held[i], default=None)
            detail = pieces[best] if best is not None and held[best] else ""
            found.append({"kind": kind, "id": row["id"], "session_id": row["session_id"], "type": row["type"],
                          "title": cut(title, 120), "snippet": cut(detail, DETAIL_CHARS),
                          "created_at_epoch": row["created_at_epoch"], "score": float(row["score"]), "shared": shared})
    return sorted(found, key=lambda h: (-h["shared"], -h["score"]))


def _stems(text: str) -> set[str]:
    return {stem(w) for w in words(text or "")}

