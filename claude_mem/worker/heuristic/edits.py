"""What an Edit or Write touched: the functions and classes, and what kind of change it was.

The definitions come from the edited text itself, else from the file around it: Claude Code
hands the whole original file to PostToolUse hooks (`originalFile`), and a Read earlier in the
batch has it too. Regexes cover the definition lines of the common languages; a miss only
means the title names the file alone.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field
from typing import Any

from claude_mem.text.shorten import clip

_KEYWORDS = frozenset(("if", "for", "while", "switch", "catch", "return", "function", "with", "match", "elif", "else", "do",
                       "end", "new", "not", "and", "or"))
_FUNCTION = re.compile(
    r"^(?P<indent>\s*)(?:@\w+\s+)?(?:export\s+)?(?:default\s+)?(?:pub(?:\([\w:]+\))?\s+)?(?:public\s+|private\s+|protected\s+)?"
    r"(?:static\s+)?(?:async\s+)?(?:"
    r"(?:def|defp|defmacro|defmacrop|defdelegate)\s+(?:self\.)?(?P<def>[A-Za-z_]\w*[?!]?)"
    r"|function\*?\s+(?P<function>[A-Za-z_$][\w$]*)"
    r"|fn\s+(?P<fn>[A-Za-z_]\w*)\s*[<(]"
    r"|func\s+(?:\([^)]*\)\s*)?(?P<func>[A-Za-z_]\w*)\s*[\[(]"
    r"|(?:const|let|var)\s+(?P<arrow>[A-Za-z_$][\w$]*)\s*=\s*(?:async\s+)?(?:function\b|\([^)]*\)\s*=>|[A-Za-z_$][\w$]*\s*=>)"
    r")")
_CLASS = re.compile(r"^(?P<indent>\s*)(?:export\s+)?(?:default\s+)?(?:pub(?:\([\w:]+\))?\s+)?(?:public\s+|abstract\s+|final\s+|data\s+)*"
                    r"(?:class|defmodule|module|struct|enum|trait|interface|object|impl|type)\s+(?P<name>[A-Z]\w*(?:(?:\.|::)\w+)*)")
_HEADING = re.compile(r"^(#{1,4})\s+(.+?)\s*#*$")
_CSS_RULE = re.compile(r"^\s*([.#@]?[A-Za-z][^{};]*?)\s*\{\s*$")
_LINE_NUMBER = re.compile(r"^\s*\d+\u2192", re.M)  # Read results as "   12→code"
_DOC_START = ('"""', "'''", "/**", "@doc", "@moduledoc", "@typedoc", "///", "//!")
_COMMENT = ("#", "//", "--", "/*", "*", "<!--", ";")
_IMPORT = re.compile(r"^\s*(?:import|from\s+\S+\s+import|require|use|alias|include|#include|using)\b")
_MAX_LINES = 400  # enough to read a hunk; keeps difflib cheap on big rewrites


@dataclass
class Change:
    path: str
    symbols: list[str] = field(default_factory=list)
    what: str = ""  # "docstring", "comment", "imports", "removed", "new file", ...
    snippet: str = ""  # the new text, one line


def describe(tool: str, tool_input: dict[str, Any], response: Any, known: dict[str, str]) -> Change:
    """One successful Edit/MultiEdit/Write/NotebookEdit; `known` maps paths to file text seen
    earlier in the batch (updated here with what this change leaves behind)."""
    path = str(tool_input.get("file_path") or tool_input.get("notebook_path") or "")
    response = response if isinstance(response, dict) else {}
    original = response.get("originalFile") if isinstance(response.get("originalFile"), str) else known.get(path, "")
    change = Change(path)
    if tool == "Write":
        content = str(tool_input.get("content") or "")
        change.what = "new file" if response.get("type") == "create" or not original else "rewritten"
        change.symbols = _definitions(content, path)
        if change.symbols and change.symbols[0].startswith("section "):  # a document: its title is enough
            change.symbols = change.symbols[:1]
        change.snippet = _first_words(content)
        known[path] = content
        return change
    if tool == "NotebookEdit":
        change.what = f"cell {tool_input.get('cell_id') or tool_input.get('cell_number') or ''}".strip()
        change.snippet = _first_words(str(tool_input.get("new_source") or ""))
        return change
    edits = listed if isinstance(listed := tool_input.get("edits"), list) else [tool_input]
    whats: list[str] = []
    for edit in (e for e in edits if isinstance(e, dict)):
        old, new = str(edit.get("old_string") or ""), str(edit.get("new_string") or "")
        for name in _definitions(new, path) + _definitions(old, path) or _enclosing(original, old, path):
            if name not in change.symbols:
                change.symbols.append(name)
        whats.append(_kind_of_change(old, new, path))
        change.snippet = change.snippet or _first_words(new)
        if original and old and old in original:
            original = original.replace(old, new, -1 if edit.get("replace_all") else 1)
    change.what = whats[0] if whats and all(w == whats[0] for w in whats) else ""
    if original:
        known[path] = original
    return change


def remember_read(path: str, response: Any, known: dict[str, str]) -> None:
    """A Read's text, for finding the definition an edit later lands in."""
    if isinstance(response, dict) and isinstance(response.get("file"), dict):
        text = response["file"].get("content")
    else:
        text = response if isinstance(response, str) else None
    if isinstance(text, str) and text:
        known[path] = _LINE_NUMBER.sub("", text)


def label(change: Change, name: str, max_symbols: int = 3) -> str:
    """`calc.py: add() docstring`: the file, what in it, and what kind of change."""
    parts = change.symbols[:max_symbols]
    text = ", ".join(parts) + (f" +{len(change.symbols) - max_symbols}" if len(change.symbols) > max_symbols else "")
    what = change.what if change.what not in ("new file", "rewritten") else ""
    inner = " ".join(p for p in (text, what) if p)
    return f"{name}: {inner}" if inner else name


def _definitions(text: str, path: str) -> list[str]:
    names: list[str] = []
    ext = os.path.splitext(path)[1].lower()
    for line in text.splitlines()[:_MAX_LINES]:
        name = _definition(line, ext)
        if name and name not in names:
            names.append(name)
    return names


def _definition(line: str, ext: str) -> str:
    if not line.strip():
        return ""
    if ext in (".md", ".markdown", ".rst", ".txt"):
        match = _HEADING.match(line)
        return f"section '{clip(match.group(2), 40)}'" if match else ""
    if ext in (".css", ".scss", ".sass", ".less"):
        match = _CSS_RULE.match(line)
        return clip(match.group(1), 40) if match and not line.startswith((" ", "\t")) else ""
    match = _FUNCTION.match(line)
    if match:
        name = next(v for k, v in match.groupdict().items() if k != "indent" and v)
        return "" if name in _KEYWORDS else f"{name}()"
    match = _CLASS.match(line)
    if match:
        return match.group("name").split(".")[-1].split("::")[-1]
    return ""


def _enclosing(original: str, old: str, path: str) -> list[str]:
    """The definitions around the edited text: the nearest one above it with less indentation,
    and the one around that (a method and its class)."""
    anchor = next((line for line in old.splitlines() if line.strip()), "")
    if not original or not anchor:
        return []
    at = original.find(old) if old in original else original.find(anchor)
    if at < 0:
        return []
    # old_string often starts after the indentation: measure the line it starts on.
    start = original.rfind("\n", 0, at) + 1
    line = original[start : original.find("\n", at) if "\n" in original[at:] else len(original)]
    indent: int | None = len(line) - len(line.lstrip())
    ext = os.path.splitext(path)[1].lower()
    name = _definition(line, ext)
    if name:  # the edit starts on a definition line: that is what it touched
        return [name]
    before = original[:start].splitlines()[-_MAX_LINES:]
    found: list[str] = []
    for line in reversed(before):
        if not line.strip():
            continue
        depth = len(line) - len(line.lstrip())
        if indent is not None and depth >= indent:
            continue
        name = _definition(line, ext)
        if name:
            found.append(name)
            indent = depth
            if depth == 0 or len(found) == 2:
                break
    return [".".join(reversed(found)).replace("().", ".")] if len(found) == 2 and not found[1].endswith(")") else found[:1]


def _kind_of_change(old: str, new: str, path: str) -> str:
    old_lines = old.splitlines()[:_MAX_LINES]
    new_lines = new.splitlines()[:_MAX_LINES]
    added: list[str] = []
    removed: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False).get_opcodes():
        if tag in ("replace", "delete"):
            removed.extend(old_lines[i1:i2])
        if tag in ("replace", "insert"):
            added.extend(new_lines[j1:j2])
    added = [line.strip() for line in added if line.strip()]
    removed = [line.strip() for line in removed if line.strip()]
    if removed and not added:
        return "removed"
    if not added:
        return ""
    if any(added[0].startswith(d) for d in _DOC_START) and not removed:
        return "docstring"
    if all(line.startswith(_COMMENT) for line in added) and not removed:
        return "comment"
    if all(_IMPORT.match(line) for line in added + removed):
        return "imports"
    return ""


def _first_words(text: str) -> str:
    return clip(" ".join(text.split()), 100)
