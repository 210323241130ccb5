"""A rule's scope (observations.scope, migration 0017): the component, path or area a decision was
stated for ('' = the whole project), read out of a statement, and whether a task is within it.

A scope is written as the user wrote it, tidied: `services/billing`, `docs`, `.github/workflows`.
What a task is about is read from its prompt (and the files it has touched, when there are any):

  - paths it names (`web/dashboard/cleanup.py`, `ingest/`): relative, lowercase, a `/` in them or
    after them; URL paths (`/v1/teams`) and `and/or`-like pairs of capitalised words are not paths;
  - words: the scope's own names (`billing` of `services/billing`), compared by stem.

`in_scope` says True (the task names the scope's path or one of its names), False (it names paths,
or another known area's names, and none of this scope's), or None (it says nothing either way:
the rule is kept, since most tasks never name their component). Standard library only: the
prompt hook reads it.
"""

from __future__ import annotations

import re

from claude_mem.text.terms import stem, words

TYPE_CHECKING = False  # typing costs the hook ~2 ms to import
if TYPE_CHECKING:
    from collections.abc import Iterable

# Folder names that say where code lives, not what it is: `services/billing` is about billing.
_CONTAINERS = frozenset({"src", "lib", "app", "apps", "pkg", "packages", "services", "service", "modules", "components",
                         "internal", "source", "code", "main"})
# Patterns, not compiled ones: the prompt hook imports this module, and `re` compiles (and caches)
# a pattern on its first use only.
_PATH = r"(?i)(?<![\w/.:@-])((?:\.?[a-z0-9_][a-z0-9_.-]*/)+(?:[a-z0-9_.-]+)?)"
# "For services/audit only:", "In ingest/:", "Rule for web/dashboard:", "Convention for cmd/:"
_LEADING = (r"(?i)^\s*(?:(?:the\s+)?(?:rule|convention|policy|decision)s?\s+)?(?:for|in|within|inside|under)\s+(?:the\s+)?"
            r"(?P<scope>[\w.-]+(?:/[\w.-]+)*/?)(?:\s+only)?\s*[:,]")
# "money in services/billing is ...", "every container in k8s/ declares ...", "vendored under theme/static"
_WITHIN = r"(?i)\b(?:in|for|under|within|inside)\s+(?P<scope>\.?[\w-]+(?:/[\w.-]+)*/(?:[\w.-]+(?:/[\w.-]+)*)?)(?=[\s,;:.)]|$)"
# "serve/ uses dynamic batching", "client/ retries only ..."
_SUBJECT = r"(?i)^\s*(?P<scope>\.?[\w-]+(?:/[\w-]+)*/)\s"


def norm(scope: str) -> str:
    """A scope tidied: `/` separators, no `./`, no slash at either end, lowercase."""
    text = (scope or "").strip().replace("\\", "/").lower()
    while text.startswith("./"):
        text = text[2:]
    return text.rstrip("/.").lstrip("/")


def scope_of(statement: str) -> str:
    """The component or path a statement was made for, '' when it names none. A file (a last part
    with an extension) is what the rule is about, not where it applies: its folder is not taken."""
    for pattern in (_LEADING, _SUBJECT, _WITHIN):
        found = re.search(pattern, statement or "")
        if found and found.group("scope") == found.group("scope").lower():  # `Australia/Sydney`, `I/O`: not paths
            scope = norm(found.group("scope"))
            if scope and not _is_file(scope):
                return scope
    return ""


def _is_file(path: str) -> bool:
    last = path.rsplit("/", 1)[-1]
    return "." in last.strip(".") and not last.startswith(".")


def names(scope: str) -> set[str]:
    """The stems a scope is called by in prose: its path's parts but folder words (`src`, `services`)."""
    parts = [p for p in norm(scope).split("/") if p]
    found = {stem(p.lstrip(".")) for p in parts if p.lstrip(".") and p.lstrip(".") not in _CONTAINERS}
    return found or {stem(p.lstrip(".")) for p in parts if p.lstrip(".")}


def paths_in(text: str) -> list[str]:
    """The repository paths a prompt names (see the module docstring)."""
    found = []
    for match in re.finditer(_PATH, text or ""):
        path = match.group(1)
        if "://" in text[match.start():match.end() + 3] or path[:1].isupper():
            continue
        found.append(norm(path))
    return [p for p in dict.fromkeys(found) if p]


def _under(path: str, scope: str) -> bool:
    """`path` lies in `scope`, or names a folder holding it (a task in `services/` may be in `services/audit`)."""
    return path == scope or path.startswith(scope + "/") or scope.startswith(path + "/")


def in_scope(scope: str, prompt: str, files: Iterable[str] = (), known: Iterable[str] = ()) -> bool | None:
    """Whether a task (its prompt, the repository paths of the files it touched) is within `scope`;
    `known`: the project's other scopes, whose names in the prompt say the task is elsewhere."""
    scope = norm(scope)
    if not scope:
        return True
    paths = paths_in(prompt) + [norm(f) for f in files if f]
    said = {stem(w) for w in words(prompt or "")}
    if any(_under(p, scope) for p in paths) or names(scope) & said:
        return True
    if paths:
        return False
    others = set().union(*(names(k) for k in known if norm(k) and norm(k) != scope)) - names(scope)
    return False if others & said else None


def related(a: str, b: str) -> bool:
    """Two scopes that can hold rules on one subject: the same, one within the other, or either the whole project."""
    a, b = norm(a), norm(b)
    return not a or not b or _under(a, b)
