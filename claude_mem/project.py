"""Project identity: which project a working directory belongs to.

The git root's normalised origin URL (so ssh and https clones of one remote are one project),
else the git root's folder name, else the cwd's. A git root is the nearest folder whose `.git`
is a git dir (one with a HEAD) or a file naming one: a worktree (or a submodule checkout) is
resolved through that file to the main repository's config. Reads files only: spawning
`git` would cost the hook more than all its other work together.
"""

from __future__ import annotations

import os
import re

# Patterns, not compiled ones: every hook imports this module and few need a remote parsed
# (re compiles on first use and caches).
_SCP_LIKE = r"^(?:[^@/\s]+@)?([^:/\s]+):(?!//)(.+)$"  # git@host:owner/repo.git
_URL = r"^[A-Za-z][A-Za-z0-9+.\-]*://(?:[^@/]*@)?([^/:]+)(?::\d+)?/(.*)$"


def normalize_remote(url: str) -> str:
    """`git@github.com:Owner/Repo.git`, `https://user:tok@github.com/Owner/Repo` and
    `ssh://git@github.com:22/Owner/Repo.git/` all give `github.com/owner/repo`."""
    url = url.strip()
    match = re.match(_URL, url)
    if match is None:
        match = re.match(_SCP_LIKE, url)
    if match is None:
        # A local path used as a remote: its last folder is the best name we have.
        return os.path.basename(url.rstrip("/\\")).removesuffix(".git") or url
    host, path = match.group(1), match.group(2)
    path = path.strip("/").removesuffix(".git").strip("/")
    return f"{host.lower()}/{path.lower()}" if path else host.lower()


def find_git_root(start: str) -> tuple[str, str] | None:
    """(work tree root, git dir holding the config) for `start`, or None outside git."""
    path = os.path.abspath(start)
    while True:
        dot_git = os.path.join(path, ".git")
        # A git dir has a HEAD, as git itself checks. An empty `.git` is no repository: Codex's
        # sandbox makes one in each folder it lets a command write (/tmp included) for as long as
        # the command runs, and every project under /tmp would briefly have been called "tmp".
        if os.path.isfile(os.path.join(dot_git, "HEAD")):
            return path, dot_git
        if os.path.isfile(dot_git):
            git_dir = _gitdir_from_file(dot_git, path)
            if git_dir:
                return path, git_dir
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent


def _gitdir_from_file(dot_git_file: str, root: str) -> str | None:
    try:
        with open(dot_git_file, encoding="utf-8", errors="replace") as fh:
            first = fh.readline().strip()
    except OSError:
        return None
    if not first.startswith("gitdir:"):
        return None
    git_dir = os.path.normpath(os.path.join(root, first[len("gitdir:") :].strip()))
    # A worktree's git dir points at the main repository through `commondir`.
    try:
        with open(os.path.join(git_dir, "commondir"), encoding="utf-8") as fh:
            git_dir = os.path.normpath(os.path.join(git_dir, fh.read().strip()))
    except OSError:
        pass
    return git_dir


def read_remote_url(git_dir: str) -> str | None:
    """The origin remote's url from a git config, else the first remote's."""
    try:
        with open(os.path.join(git_dir, "config"), encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    remotes: dict[str, str] = {}
    section: str | None = None
    for raw in lines:
        line = raw.strip()
        if line.startswith("["):
            match = re.match(r'\[\s*remote\s+"([^"]+)"\s*\]', line)
            section = match.group(1) if match else None
        elif section and "=" in line:
            key, value = line.split("=", 1)
            if key.strip().lower() == "url" and section not in remotes:
                remotes[section] = value.strip()
    if "origin" in remotes:
        return remotes["origin"]
    return next(iter(remotes.values()), None)


def main_worktree_root(root: str, git_dir: str) -> str:
    # For a worktree, the main checkout is the folder holding the common git dir.
    if os.path.basename(git_dir) == ".git":
        return os.path.dirname(git_dir)
    return root


def project_for(cwd: str | None) -> str:
    """The project name for a working directory."""
    if not cwd:
        return "unknown"
    found = find_git_root(cwd)
    if found is None:
        return os.path.basename(os.path.normpath(cwd)) or cwd
    root, git_dir = found
    url = read_remote_url(git_dir)
    if url:
        return normalize_remote(url)
    return os.path.basename(main_worktree_root(root, git_dir)) or root
