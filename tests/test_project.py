"""Project identity from real git repositories (made with `git init` in temporary folders)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from claude_mem.project import normalize_remote, project_for


def git(cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def make_repo(path: Path, *remotes: tuple[str, str], commit: bool = False) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q")
    for name, url in remotes:
        git(path, "remote", "add", name, url)
    if commit:
        git(path, "commit", "-q", "--allow-empty", "-m", "init")
    return path


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:Owner/Repo.git",
        "https://github.com/owner/repo",
        "https://github.com/Owner/Repo.git/",
        "ssh://git@github.com/Owner/Repo.git",
        "ssh://git@github.com:22/Owner/Repo.git/",
        "https://user:s3cret-token@github.com/Owner/Repo.git",
        "https://x-access-token:ghs_abc@github.com/owner/repo",
        "git://github.com/owner/repo.git",
        "github.com:owner/repo.git",
    ],
)
def test_forms_of_one_remote_are_one_project(url: str) -> None:
    assert normalize_remote(url) == "github.com/owner/repo"


def test_other_remote_forms() -> None:
    assert normalize_remote("https://gitlab.example.com:8443/group/sub/proj.git") == "gitlab.example.com/group/sub/proj"
    assert normalize_remote("/srv/git/tools.git") == "tools"
    assert normalize_remote("../relative/tools") == "tools"
    assert normalize_remote("file:///srv/git/tools.git") == "tools"


def test_ssh_and_https_clones_give_the_same_project(tmp_path: Path) -> None:
    a = make_repo(tmp_path / "clone-a", ("origin", "git@github.com:Acme/Widget.git"))
    b = make_repo(tmp_path / "clone-b", ("origin", "https://github.com/acme/widget"))
    assert project_for(str(a)) == project_for(str(b)) == "github.com/acme/widget"


def test_credentials_in_the_url_are_stripped(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", ("origin", "https://alice:hunter2tok@github.com/acme/widget.git"))
    project = project_for(str(repo))
    assert project == "github.com/acme/widget"
    assert "hunter2tok" not in project and "alice" not in project


def test_origin_wins_over_other_remotes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", ("aaa", "https://example.com/first/one"), ("origin", "https://github.com/acme/main"))
    assert project_for(str(repo)) == "github.com/acme/main"


def test_without_origin_the_first_remote_is_used(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", ("upstream", "https://gitlab.com/team/app.git"), ("fork", "git@github.com:me/app.git"))
    assert project_for(str(repo)) == "gitlab.com/team/app"


def test_without_a_remote_the_git_root_folder_names_the_project(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "my-tool")
    deep = repo / "src" / "pkg"
    deep.mkdir(parents=True)
    assert project_for(str(repo)) == "my-tool"
    assert project_for(str(deep)) == "my-tool"


def test_a_subdirectory_belongs_to_the_repository(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", ("origin", "git@github.com:acme/widget.git"))
    sub = repo / "a" / "b"
    sub.mkdir(parents=True)
    assert project_for(str(sub)) == project_for(str(repo)) == "github.com/acme/widget"
    assert project_for(str(sub) + "/") == "github.com/acme/widget"


@pytest.mark.parametrize("with_remote", [True, False])
def test_a_worktree_belongs_to_its_main_repository(tmp_path: Path, with_remote: bool) -> None:
    remotes = [("origin", "git@github.com:acme/widget.git")] if with_remote else []
    main = make_repo(tmp_path / "widget", *remotes, commit=True)
    git(main, "worktree", "add", "-q", str(tmp_path / "feature-x"), "-b", "feature-x")
    worktree = tmp_path / "feature-x"
    assert (worktree / ".git").is_file()
    (worktree / "sub").mkdir()
    expected = "github.com/acme/widget" if with_remote else "widget"
    assert project_for(str(main)) == expected
    assert project_for(str(worktree)) == expected
    assert project_for(str(worktree / "sub")) == expected


def test_a_plain_folder_is_named_by_its_basename(tmp_path: Path) -> None:
    folder = tmp_path / "notes folder"
    folder.mkdir()
    assert project_for(str(folder)) == "notes folder"
    assert project_for(str(folder) + "/") == "notes folder"


def test_an_empty_git_folder_above_is_no_repository(tmp_path: Path) -> None:
    """Codex's sandbox leaves an empty `.git` in every folder a command may write (/tmp too) while
    the command runs: the projects below keep their names, and a real repository still wins."""
    (tmp_path / ".git").mkdir()
    folder = tmp_path / "e2e-proj"
    folder.mkdir()
    assert project_for(str(folder)) == "e2e-proj"
    make_repo(tmp_path / "repo", ("origin", "git@github.com:acme/widget.git"))
    (tmp_path / "repo" / "sub" / ".git").mkdir(parents=True)
    assert project_for(str(tmp_path / "repo" / "sub")) == "github.com/acme/widget"


def test_no_cwd_is_unknown() -> None:
    assert project_for(None) == "unknown"
    assert project_for("") == "unknown"
