"""Planted secrets: every kind the privacy promise names, numbered so that one regex finds any
leak (even a partial one) in text or in raw bytes. Shared by the replay and hardening tests."""

from __future__ import annotations

import copy
import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from claude_mem.hooks import matches_skip_list
from claude_mem.replay import TOOL_EVENTS, HookEvent
from claude_mem.settings import DEFAULT_SKIP_TOOLS

# One regex per planted kind; each matches every planted instance (any serial number), so one
# pass over the database bytes finds any leak, even a partial one.
LEAKS = {
    "anthropic": r"Pl\d{6}antedAnthropicKey",
    "openai": r"Pl\d{6}antedOpenAIKey",
    "aws": r"AKIAPL\d{6}ANTEDXYZ",
    "github": r"Pl\d{6}antedGitHubToken",
    "bearer": r"pl\d{6}\.bearerTokenValue",
    "private key": r"PlantedKeyBody\d{6}",
    "password": r"pw-\d{6}-Hunter2",
    "postgres": r"pgpass-\d{6}-Zq",
    "private span": r"private-note-\d{6}",
}
LEAK_TEXT = re.compile("|".join(f"(?P<{re.sub(r'[^a-z]', '_', k)}>{v})" for k, v in LEAKS.items()))
LEAK_BYTES = re.compile(LEAK_TEXT.pattern.encode())
# The longest literal piece of each pattern above (each is literal text around one \d{6}), which any match
# contains: `bytes.find` rules a file out at memory speed, where the regex took ~20 s over the
# memory service's 90 MB model copy in a data dir.
LEAK_PIECES = [max(re.split(r"\\d\{6\}", v), key=len).replace("\\.", ".").encode() for v in LEAKS.values()]
MARKER = re.compile(r"planted-ctx-(\d{6})")  # plain text beside the secrets: it must survive


def leaks_in(text: str) -> list[str]:
    return [m.group() for m in LEAK_TEXT.finditer(text)]


def snippet(k: int) -> str:
    """Secrets of every kind the brief names, in the contexts they turn up in, numbered k."""
    auth = f"Authorization: Bearer pl{k:06d}.bearerTokenValue.Zz9" if k % 2 else f"then sent Bearer pl{k:06d}.bearerTokenValue.Zz9 upstream"
    password = f"password=pw-{k:06d}-Hunter2" if k % 2 else f'{{"db_password": "pw-{k:06d}-Hunter2"}}'
    return (
        f"\nplanted-ctx-{k:06d}\n"
        f"ANTHROPIC key sk-ant-api03-Pl{k:06d}antedAnthropicKey0123456789abcdef-XYZ and "
        f"openai sk-proj-Pl{k:06d}antedOpenAIKey0123456789abcdefGH\n"
        f"aws id AKIAPL{k:06d}ANTEDXYZ, github ghp_Pl{k:06d}antedGitHubToken0123456789ab\n"
        f"curl -H '{auth}' https://api.example.com/v1\n"
        f"-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nPlantedKeyBody{k:06d}AAAA\n-----END PRIVATE KEY-----\n"
        f"{password}\n"
        f"DATABASE_URL=postgres://app:pgpass-{k:06d}-Zq@db.internal:5432/app\n"
        f"<private>private-note-{k:06d}: call me at 555-0199</private>\n"
    )


def _strings(value: Any, path: tuple = ()) -> Iterator[tuple[tuple, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, (*path, i))


def _set(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    value[path[0]] = _set(value[path[0]], path[1:], new)
    return value


def _plant_in(value: Any, text: str, *, at_start: bool) -> Any:
    """Put text into a JSON-like value: into its longest string (at the start or the end, so a
    head+tail cut keeps it), or as a new field when it has no string."""
    found = list(_strings(value))
    if found:
        path, s = max(found, key=lambda f: len(f[1]))
        return _set(value, path, text + s if at_start else s + text)
    if isinstance(value, dict):
        return {**value, "planted": text}
    if isinstance(value, list):
        return [*value, text]
    return text


@dataclass
class Planted:
    events: list[HookEvent]
    markers: dict[int, str]  # serial -> what it was planted into ("prompt", "tool", "stop")


def plant(events: list[HookEvent], start: int) -> Planted:
    out: list[HookEvent] = []
    markers: dict[int, str] = {}
    k = start

    def next_snippet(kind: str) -> str:
        nonlocal k
        k += 1
        markers[k] = kind
        return snippet(k)

    for e in events:
        p = copy.deepcopy(e.payload)
        if e.event == "UserPromptSubmit":
            p["prompt"] = next_snippet("prompt") + p["prompt"] + next_snippet("prompt")
        elif e.event in TOOL_EVENTS:
            skipped = matches_skip_list(p["tool_name"], DEFAULT_SKIP_TOOLS)
            kind = "skipped tool" if skipped else "tool"
            p["tool_input"] = _plant_in(p.get("tool_input"), next_snippet(kind), at_start=True)
            if e.event == "PostToolUseFailure":
                p["error"] = str(p.get("error", "")) + next_snippet(kind)
            else:
                p["tool_response"] = _plant_in(p.get("tool_response"), next_snippet(kind), at_start=False)
        elif e.event in ("Stop", "SubagentStop"):
            kind = "stop" if e.event == "Stop" else "subagent"
            p["last_assistant_message"] = (p.get("last_assistant_message") or "") + next_snippet(kind)
        out.append(HookEvent(p, e.timestamp, e.source, e.group))
    return Planted(out, markers)


def stored_text(db: Path) -> str:
    """Every value of every table, as text: raw bytes can split a long value across overflow
    pages, where a byte search would miss it."""
    conn = sqlite3.connect(db)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        parts = []
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                parts.extend(str(v) for v in row if v is not None)
        return "\n".join(parts)
    finally:
        conn.close()


def raw_leaks(data_dir: Path, needles: list[str] | None = None) -> list[str]:
    """Planted secrets found in the bytes of any file under the data dir (database, -wal,
    -shm, logs, spool): freed pages and old WAL frames included."""
    found = []
    for path in sorted(data_dir.rglob("*")):
        if not path.is_file():
            continue
        data = path.read_bytes()
        if any(piece in data for piece in LEAK_PIECES):
            found += [f"{path.name}: {m.group()}" for m in LEAK_BYTES.finditer(data)]
        found += [f"{path.name}: {n}" for n in needles or [] if n.encode() in data]
    return found
