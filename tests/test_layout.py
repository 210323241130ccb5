"""The house's layout: imports run one way (no cycle, no floor importing one above it), one
module defines each name that others import, and no function or module is too long to read.

Read from the source with `ast`, so every import counts: module level, inside functions (the
lazy imports that keep the hook path light) and under `if TYPE_CHECKING:`. A cycle is looked for
among the imports that run (annotations only, under TYPE_CHECKING, name a type without running
anything); the floors are kept by all of them.
"""

from __future__ import annotations

import ast
import functools
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT

MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 450

# From the top down: a room imports from the rooms of the floors below its own, and from itself,
# never from another room of its own floor (the ground's rooms excepted: they build on each other,
# the cycle test keeps that one-way) or from a floor above. A room is a module or package
# of claude_mem (a module not listed fails the test: say where it lives).
FLOORS: tuple[tuple[str, ...], ...] = (
    ("__main__",),
    ("entry",),
    ("cli",),
    ("demo",),
    ("replay", "viewer"),
    ("doctor",),
    ("mcp",),
    ("status", "hooks"),
    ("ask",),
    ("worker", "push", "writes"),
    ("service",),
    ("recall",),
    ("index",),
    ("marks", "memory_file"),
    ("store",),
    ("settings", "logs", "hosts"),
    # The ground: what every floor may need. Standard library only, save `processes.census`
    # (psutil): the hook path loads them.
    ("processes", "text", "jsonfile", "project", "file_paths", "identity", "resources", "kinds", "login", "guard", "progress",
     "__init__"),
)
# Above the ground but loaded by every hook (or, the shim, by every session's `claude-mem mcp`):
# standard library only too, as the ground is.
STANDARD_LIBRARY_TOO = ("claude_mem.hosts", "claude_mem.hosts.hook_table", "claude_mem.hosts.payloads", "claude_mem.mcp",
                        "claude_mem.mcp.shim")
# The walls the floors alone would not keep.
NEVER: dict[str, tuple[str, ...]] = {
    "recall": ("service", "worker", "push", "cli", "viewer", "mcp", "hooks", "entry", "demo", "replay", "status", "doctor"),
    "index": ("recall", "service", "worker", "push", "cli", "viewer", "mcp", "hooks", "entry", "demo", "replay", "status", "doctor"),
    "service": ("worker", "push"),
    "worker": ("push", "recall", "index"),
}


@dataclass(frozen=True)
class Import:
    source: str  # the importing module, dotted
    target: str  # the imported module, dotted (a package stands for its __init__)
    line: int
    runs: bool  # False under `if TYPE_CHECKING:`


def module_files(package: str) -> dict[str, Path]:
    found = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = {**module_files("claude_mem"), **module_files("bench")}


@functools.cache
def parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _walk(node: ast.AST, typing_only: bool = False) -> Iterator[tuple[ast.AST, bool]]:
    """The statements under `node` (an import is one: no expression holds one), each with whether
    it is only for the type checker (under `if TYPE_CHECKING:`)."""
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, ast.stmt | ast.excepthandler | ast.match_case):
            continue
        guarded = isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test)
        if guarded:
            for stmt in child.body:
                yield stmt, True
                yield from _walk(stmt, True)
            for stmt in child.orelse:
                yield stmt, typing_only
                yield from _walk(stmt, typing_only)
            continue
        yield child, typing_only
        yield from _walk(child, typing_only)


def imports_of(module: str) -> list[Import]:
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node, typing_only in _walk(parsed(path)):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            # `from pkg import sub` imports the module pkg.sub; `from mod import name` the module mod.
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        for target in dict.fromkeys(targets):
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != module:
                found.append(Import(module, target, node.lineno, not typing_only))
    return found


@functools.cache
def every_import() -> list[Import]:
    """Read when a test asks, not at collection: every xdist worker collects this module."""
    return [imp for module in MODULES for imp in imports_of(module)]


@pytest.fixture(scope="module")
def imports() -> list[Import]:
    """The import graph, for the module's tests: they run in one xdist worker (tests/conftest.py,
    SHARED_FIXTURE_MODULES), which reads it once (~2 s), not one reading per worker."""
    return every_import()


def room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def floor(module: str) -> int:
    for n, rooms in enumerate(FLOORS):
        if room(module) in rooms:
            return n
    raise AssertionError(f"{module} is on no floor: add its room to FLOORS in {__file__}")


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(MODULES)))
    try:
        for v in sorted(edges):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return found


def test_the_walker_sees_every_kind_of_import() -> None:
    """The rules below are only as good as the walk: lazy, relative and TYPE_CHECKING imports count."""
    of_search = {(i.target, i.runs) for i in imports_of("claude_mem.recall.search")}
    assert ("claude_mem.index.semantic_index", False) in of_search  # under TYPE_CHECKING
    lazy = {i.target for i in imports_of("claude_mem.hooks") if i.runs}
    assert "claude_mem.store.spool" in lazy  # inside run_event
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle(imports: list[Import]) -> None:
    """None even counting the imports under TYPE_CHECKING: two modules that name each other's
    types are one module cut in two (a protocol of what one needs of the other breaks it)."""
    edges: dict[str, set[str]] = {}
    for imp in imports:
        edges.setdefault(imp.source, set()).add(imp.target)
    assert cycles(edges) == []


def test_no_floor_imports_one_above_it_or_beside_it(imports: list[Import]) -> None:
    ground = len(FLOORS) - 1
    wrong = [f"{i.source}:{i.line} imports {i.target}" for i in imports
             if i.source.startswith("claude_mem") and room(i.source) != room(i.target) and floor(i.target) <= floor(i.source)
             and not floor(i.source) == floor(i.target) == ground]
    assert wrong == []


def test_the_floors_are_stated_in_the_docs_as_kept_here() -> None:
    """docs/how-it-works.md states the import order for people; this file keeps it: the same."""
    page = (ROOT / "docs" / "how-it-works.md").read_text(encoding="utf-8")
    block = page.split("## Who may import what", 1)[1].split("```", 2)[1]
    assert tuple(tuple(line.split("(", 1)[0].split()) for line in block.strip().splitlines()) == FLOORS


def test_no_room_imports_one_its_walls_forbid(imports: list[Import]) -> None:
    wrong = [f"{i.source}:{i.line} imports {i.target}" for i in imports
             if i.source.startswith("claude_mem") and room(i.target) in NEVER.get(room(i.source), ())]
    assert wrong == []


def test_the_ground_floor_is_the_standard_library() -> None:
    """And the modules above it that every hook loads (STANDARD_LIBRARY_TOO): counted are the
    imports a run may never reach, which a test of what one hook loaded would miss."""
    allowed = set(sys.stdlib_module_names) | {"claude_mem", "psutil"}
    wrong = []
    for module, path in MODULES.items():
        if not module.startswith("claude_mem") or (floor(module) != len(FLOORS) - 1 and module not in STANDARD_LIBRARY_TOO):
            continue
        for node, _ in _walk(parsed(path)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            top = {n.split(".")[0] for n in names} - allowed
            if top or ("psutil" in {n.split(".")[0] for n in names} and module != "claude_mem.processes.census"):
                wrong.append(f"{module}:{node.lineno} imports {', '.join(names)}")
    assert wrong == []


def _defined_names(module: str) -> set[str]:
    """Names `module` defines itself (not those it imports), its submodules, and what a package
    names in `__all__` (its public face: `from claude_mem.worker.heuristic import observe`)."""
    tree = parsed(MODULES[module])
    names = {m.rpartition(".")[2] for m in MODULES if m.rpartition(".")[0] == module}
    if MODULES[module].name == "__init__.py":
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
                names |= set(ast.literal_eval(node.value))
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.If, ast.Try)):
            for inner in ast.walk(node):
                if isinstance(inner, (ast.FunctionDef, ast.ClassDef)):
                    names.add(inner.name)
                elif isinstance(inner, ast.Assign):
                    names |= {n.id for t in inner.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def test_each_name_is_imported_from_the_module_that_defines_it() -> None:
    """One import path per name: nothing of ours is imported from a module that only imports it."""
    roots = [ROOT / "claude_mem", ROOT / "bench", ROOT / "tests"]
    defined: dict[str, set[str]] = {}
    wrong = []
    for path in sorted(p for r in roots for p in r.rglob("*.py")):
        for node, _ in _walk(parsed(path)):
            if not isinstance(node, ast.ImportFrom) or node.level or node.module not in MODULES:
                continue
            if not node.module.startswith("claude_mem"):
                continue
            names = defined.setdefault(node.module, _defined_names(node.module))
            wrong += [f"{path.relative_to(ROOT)}:{node.lineno} {node.module}.{a.name}" for a in node.names if a.name not in names]
    assert wrong == []


def test_no_function_or_module_is_too_long() -> None:
    long_functions = []
    long_modules = []
    for module, path in MODULES.items():
        if not module.startswith("claude_mem"):
            continue
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > MAX_MODULE_LINES:
            long_modules.append(f"{module}: {len(text.splitlines())} lines")
        for node in ast.walk(parsed(path)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1  # type: ignore[operator]
                if lines > MAX_FUNCTION_LINES:
                    long_functions.append(f"{module}.{node.name}: {lines} lines")
    assert long_modules == [] and long_functions == []


def test_every_sql_statement_is_run_in_store() -> None:
    """store/ owns the SQL: a column renamed is one package to read, not thirty. A call of a
    connection's or cursor's execute (any of its three forms) anywhere else in the package fails."""
    wrong = [f"{module}:{node.lineno}" for module, path in MODULES.items()
             if module.startswith("claude_mem") and not module.startswith("claude_mem.store")
             for node in ast.walk(parsed(path))
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
             and node.func.attr in ("execute", "executemany", "executescript")]
    assert wrong == []


# --- bench/: scripts run as their usage lines say ------------------------------------------------

BENCH_SCRIPTS = sorted(m for m, path in MODULES.items() if m.startswith("bench.") and "__main__" in path.read_text(encoding="utf-8"))


def test_temporary_files_are_named_in_one_place() -> None:
    """A file written whole through a temporary beside it is made by jsonfile alone (one naming,
    one clean-up on failure), not by hand in each module that needs one."""
    wrong = [f"{module}:{node.lineno}" for module, path in MODULES.items()
             if module.startswith("claude_mem") and module != "claude_mem.jsonfile"
             for node in ast.walk(parsed(path))
             if isinstance(node, ast.Constant) and isinstance(node.value, str) and ".tmp" in node.value]
    assert wrong == []


def test_bench_scripts_put_the_checkout_on_the_path_before_importing_their_siblings() -> None:
    """`python bench/x.py` puts bench/ on sys.path, not the repository: `from bench.y import ...`
    needs the checkout inserted first (at module level, or the function-level import fails later)."""
    wrong = []
    for module, path in MODULES.items():
        if not module.startswith("bench."):
            continue
        tree = parsed(path)
        inserts = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func) == "sys.path.insert"]
        siblings = [i for i in imports_of(module) if i.target.startswith("bench.")]
        wrong += [f"{module}:{i.line} imports {i.target} without the checkout on sys.path"
                  for i in siblings if not any(line < i.line for line in inserts) and module in BENCH_SCRIPTS]
        wrong += [f"{module} (imported by scripts) imports {i.target}: only scripts that insert the checkout may"
                  for i in siblings if module not in BENCH_SCRIPTS and not _imported_only_by_scripts_that_insert(module)]
    assert BENCH_SCRIPTS and wrong == []


def _imported_only_by_scripts_that_insert(module: str) -> bool:
    importers = {i.source for i in every_import() if i.target == module}
    return all(imp in BENCH_SCRIPTS or _imported_only_by_scripts_that_insert(imp) for imp in importers)


# `python bench/x.py` as it runs where claude-mem is installed (not editable): bench/ first on
# sys.path, claude_mem importable, the repository itself not (an editable install puts it there,
# and hides a script that forgot to).
AS_INSTALLED = """import os, runpy, sys
root, script, installed = sys.argv[1:4]
sys.path[:] = [os.path.dirname(script), installed] + [p for p in sys.path[1:] if os.path.realpath(p or ".") != root]
sys.argv = [script, "--help"]
runpy.run_path(script, run_name="__main__")
"""


@pytest.mark.parametrize("module", BENCH_SCRIPTS)
def test_bench_scripts_start_from_the_repository_root(module: str, tmp_path: Path) -> None:
    (tmp_path / "claude_mem").symlink_to(ROOT / "claude_mem")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-c", AS_INSTALLED, str(ROOT), str(MODULES[module]), str(tmp_path)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "usage:" in proc.stdout, proc.stderr[-2000:]
