"""Is this the same file: the one answer, for every reader of memory that compares two recorded
paths (the `pre` hook's file push, the observer's "memory already holds" lines, the marking
rules' shared file).

A path is recorded as Claude Code or the model wrote it: absolute, or relative to the folder its
session ran in (`cwd`), with `./`, `\\` or a trailing `/` now and then. `place` reads it as a
`Place`: the absolute path, where it lies inside its work tree (the git root holding the session's
folder, that folder when it is not in git; for a path outside it or with no session folder, the
git checkout holding the file itself), and whether that tree is known from disk. The two places
of one project are compared by `same_file` (callers look only within a project):

1. the same absolute path: the same file;
2. the same path inside their work trees: the same file, from another worktree or clone of the
   project, or a session started in a subfolder (`auth.py` from `src/` is `src/auth.py`);
3. both trees known from disk and the paths inside them differ: not the same file (a tail is
   not enough: `lib/src/foo.py` is not `src/foo.py`);
4. otherwise (a session's folder is gone, a path was recorded without its folder) the shorter
   path must be the longer one's tail at a `/` and name a folder itself: `src/foo.py` is
   `/old/clone/src/foo.py`, but a bare `foo.py` or `__init__.py` names too many files to be
   taken for one.

A session's folder that no longer exists is taken as its work tree's root (sessions mostly run at
the project's root), not known from disk: so a deleted clone's `README.md` is still the project's
`README.md`. Relative paths recorded without any folder are read as relative to the project's
root, unsure. Git roots are cached per process (a worker meets the same few folders again and
again). Standard library only: the hook path imports it.
"""

from __future__ import annotations

import functools
import os
from collections import namedtuple

from claude_mem.project import find_git_root

# path: the recorded path, tidied (what its base name is read from); absolute: None for a relative
# path with no folder to read it from; inside: its path within its work tree, None when outside;
# sure: that tree's root was found on disk.
Place = namedtuple("Place", "path absolute inside sure")


def norm_path(path: str) -> str:
    """A recorded path tidied: separators as `/`, no leading `./`, no trailing `/`."""
    path = path.strip().replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path.rstrip("/")


@functools.lru_cache(maxsize=512)
def _git_root(folder: str) -> str | None:
    """The work tree root of the git checkout holding `folder`, if it is on disk and in one.
    Cached: a worker or a marking run meets the same few folders again and again."""
    found = find_git_root(folder) if os.path.isdir(folder) else None
    return found[0] if found else None


def _tree(cwd: str) -> tuple[str, bool]:
    """(root of the work tree a session in `cwd` ran in, whether it was found on disk)."""
    if os.path.isdir(cwd):
        return _git_root(cwd) or os.path.normpath(cwd), True
    return os.path.normpath(cwd), False


def _inside(path: str, root: str) -> str | None:
    prefix = root.rstrip("/") + "/"
    return path[len(prefix):] if path.startswith(prefix) else None


def place(path: str, cwd: str | None = None) -> Place:
    """Where a path recorded by a session that ran in `cwd` (None: not known) points."""
    tidy = norm_path(os.path.expanduser(path))
    if not os.path.isabs(tidy) and not cwd:
        inside = os.path.normpath(tidy) if tidy else None
        # Read as relative to the project's root, its usual form, without being sure of it.
        return Place(tidy, None, inside if inside and not inside.startswith("..") else None, False)
    absolute = os.path.normpath(os.path.join(cwd or "/", tidy))
    root, sure = _tree(cwd) if cwd else (None, False)
    inside = _inside(absolute, root) if root else None
    if inside is None:
        # No session folder, or a file outside its tree (another checkout edited from this
        # session): the git work tree holding the file itself, if any (a plain folder holding it
        # says nothing of where a project starts).
        root = _git_root(os.path.dirname(absolute))
        sure = root is not None
        inside = _inside(absolute, root) if root else None
    return Place(tidy, absolute, inside, sure and inside is not None)


def same_file(a: Place, b: Place) -> bool:
    """Whether two recorded paths of one project name the same file (the rules in the module doc)."""
    if a.absolute is not None and a.absolute == b.absolute:
        return True
    if a.inside is not None and b.inside is not None:
        if a.inside == b.inside:
            return True
        if a.sure and b.sure:
            return False
    x, y = a.inside or a.absolute, b.inside or b.absolute
    if not x or not y:
        return False
    short, long = sorted((x, y), key=len)
    return "/" in short and not short.startswith("/") and long.endswith("/" + short)
