"""Is this the same file (claude_mem/file_paths.py): the rule, and its three readers agreeing on
the cases where they once disagreed (the `pre` hook's file push, the observer's "memory already
holds" lines, the marking rules' candidates)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from claude_mem.file_paths import norm_path, place, same_file
from claude_mem.marks.candidates import candidates
from claude_mem.store.db import connect
from claude_mem.store.marking import rows
from claude_mem.worker.events import Event
from claude_mem.worker.recalled import Recalled
from tests.git_layout import git_checkout, git_worktree
from tests.push_helpers import Memory, pre

PROJECT = "github.com/acme/app"


@pytest.fixture
def trees(tmp_path: Path) -> tuple[Path, Path]:
    """A checkout and a worktree of it, each with src/foo.py, lib/src/foo.py and README.md."""
    main = git_checkout(tmp_path / "app", "git@github.com:acme/app.git")
    wt = git_worktree(main, tmp_path / "app-feature")
    for root in (main, wt):
        for rel in ("src/foo.py", "lib/src/foo.py", "README.md", "docs/README.md"):
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text("x = 1\n")
    return main, wt


def test_paths_are_tidied_before_they_are_compared() -> None:
    assert norm_path(" ./src\\app/config.py/ ") == "src/app/config.py"
    assert same_file(place("./src/app/config.py"), place("src\\app\\config.py"))


def test_the_same_file_from_a_worktree_a_subfolder_or_an_absolute_path(trees: tuple[Path, Path]) -> None:
    main, wt = trees
    current = place(str(wt / "src" / "foo.py"), str(wt))
    assert (current.inside, current.sure) == ("src/foo.py", True)
    assert same_file(place(str(main / "src" / "foo.py"), str(main)), current)  # another worktree of the project
    assert same_file(place("foo.py", str(main / "src")), current)  # a session that ran in src/
    assert same_file(place(str(main / "src" / "foo.py")), current)  # no session folder: the file's own tree
    # A file of another checkout edited from this session's tree is read in its own tree.
    assert place(str(main / "src" / "foo.py"), str(wt)).inside == "src/foo.py"


def test_a_tail_is_not_the_same_file_when_both_trees_are_known(trees: tuple[Path, Path]) -> None:
    main, wt = trees
    current = place(str(wt / "src" / "foo.py"), str(wt))
    assert not same_file(place("lib/src/foo.py", str(main)), current)
    assert not same_file(place(str(main / "lib" / "src" / "foo.py"), str(main)), current)
    assert not same_file(place("foo.py", str(main)), current)  # the root's foo.py, not src/'s


def test_without_a_known_tree_a_tail_at_a_folder_is_enough_a_bare_name_is_not(tmp_path: Path) -> None:
    gone = tmp_path / "deleted-clone"  # a session's folder that no longer exists
    assert same_file(place("src/app/config.py"), place("/home/ana/proj/src/app/config.py"))
    assert same_file(place("lib/src/foo.py"), place("src/foo.py"))  # relative, no folder: perhaps
    assert not same_file(place("config.py"), place("other/config.py"))
    assert not same_file(place("a/__init__.py"), place("b/__init__.py"))
    assert not same_file(place("foo.py"), place("src/foo.py"))
    # The deleted folder is taken as its tree's root: its top-level README.md is the project's.
    assert same_file(place(str(gone / "README.md"), str(gone)), place("README.md"))
    assert not same_file(place(str(gone / "docs" / "README.md"), str(gone)), place("README.md"))
    assert same_file(place(str(gone / "lib" / "src" / "foo.py"), str(gone)), place("src/foo.py"))


def test_a_file_outside_every_tree_is_itself(tmp_path: Path) -> None:
    outside = tmp_path / "notes.txt"
    outside.write_text("x")
    assert same_file(place(str(outside), str(tmp_path / "elsewhere")), place("notes.txt", str(tmp_path)))
    assert not same_file(place(str(outside)), place(str(tmp_path / "other" / "notes.txt")))


# Where the three readers disagreed: (what the earlier session recorded, the folder it ran in,
# the file now edited, the same file?). Their old answers: push / recalled / marks' same_file (its
# candidates then took every observation naming the base name).
CASES = {
    "worktree": ("{main}/src/foo.py", "{main}", "src/foo.py", True),  # yes / no / no
    "deleted clone": ("{gone}/README.md", "{gone}", "README.md", True),  # no / no / no
    "sibling tail": ("lib/src/foo.py", "{main}", "src/foo.py", False),  # no / no / yes
    "subfolder session": ("foo.py", "{main}/src", "src/foo.py", True),  # yes / yes / no
}


@pytest.mark.parametrize("case", CASES)
def test_push_recalled_and_marks_agree(case: str, trees: tuple[Path, Path], data_dir: Path, tmp_path: Path) -> None:
    main, wt = trees
    stored, cwd, now, same = (str(v).format(main=main, gone=tmp_path / "gone") if isinstance(v, str) else v for v in CASES[case])
    mem = Memory(data_dir)
    mem.session("earlier", PROJECT, cwd)
    old = mem.obs("earlier", PROJECT, "Earlier note on the module", files_modified=[stored], at=int(time.time() * 1000) - 60_000)
    mem.session("now", PROJECT, wt)
    new = mem.obs("now", PROJECT, "Rewrote the loader", "change", files_modified=[str(wt / now)])
    mem.close()

    conn = connect(str(data_dir / "claude-mem.db"))
    try:
        edit = Event(id=1, kind="tool", tool_name="Edit", tool_input={"file_path": str(wt / now)}, tool_response={},
                     is_error=False, prompt_number=1, created_at_epoch=0, cwd=str(wt))
        recalled = f"obs:{old} " in Recalled(conn, "now").block([edit])
        [row] = rows(conn, [new])
        marks = old in {c.id for c in candidates(conn, row)}
    finally:
        conn.close()
    pushed = pre(wt, "now", "Edit", {"file_path": str(wt / now)})
    assert (pushed is not None and f"obs:{old}" in pushed, recalled, marks) == (same, same, same)
