"""Git checkouts and worktrees as files, the way project identity (claude_mem/project.py) reads
them: no git command needed."""

from __future__ import annotations

from pathlib import Path


def git_checkout(path: Path, url: str) -> Path:
    (path / ".git").mkdir(parents=True)
    (path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (path / ".git" / "config").write_text(f'[core]\n\tbare = false\n[remote "origin"]\n\turl = {url}\n')
    return path


def git_worktree(main: Path, path: Path) -> Path:
    """A `git worktree add` checkout of `main`: its `.git` file names the worktree's git dir."""
    git_dir = main / ".git" / "worktrees" / path.name
    git_dir.mkdir(parents=True)
    (git_dir / "commondir").write_text("../..\n")
    path.mkdir(parents=True)
    (path / ".git").write_text(f"gitdir: {git_dir}\n")
    return path
