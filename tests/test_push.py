"""Pushes through the real hook processes on a real database: the prompt's memories
(from keywords, and through a running memory service), a file's history across worktrees and
path forms, a command's earlier failure, each once per session, recorded, and what `stats`
makes of it."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest
from mcp import Client

from claude_mem.mcp.server import build_server
from claude_mem.push import failures
from claude_mem.push.failures import error_line
from claude_mem.replay import run_hook
from claude_mem.service import client
from claude_mem.service.control import stop_service
from claude_mem.text.command_keys import command_key
from tests.conftest import cli_json
from tests.git_layout import git_checkout, git_worktree
from tests.push_helpers import KEYWORDS_ONLY, Memory, ask, hook, injections, payload, pre
from tests.stores import config_for
from tests.waiting import wait_until

# --- the prompt ---------------------------------------------------------------------------------

def test_prompt_recall_from_keywords_once_per_session_this_project_only(data_dir: Path, tmp_path: Path) -> None:
    shop, other = tmp_path / "shop", tmp_path / "billing"
    shop.mkdir()
    other.mkdir()
    mem = Memory(data_dir)
    mem.session("old", "shop", shop)
    mem.session("elsewhere", "billing", other)
    login = mem.obs("old", "shop", "Login crash after logout fixed", "bugfix", narrative="The token refresh raced with logout.",
                    facts=["a lock now guards the token refresh"])
    dark = mem.obs("old", "shop", "Dark mode toggle added to the settings page", "feature")
    foreign = mem.obs("elsewhere", "billing", "Login crash after logout in the billing portal", "bugfix")
    mem.close()

    question = "Why does the login crash right after logout?"
    text = ask(shop, "s1", question)
    assert text is not None and len(text) <= 1200
    assert f"obs:{login} " in text and "bugfix: Login crash after logout fixed" in text
    assert f"obs:{dark} " not in text and f"obs:{foreign} " not in text  # unrelated; another project
    assert f"get_observations(ids=[{login}])" in text
    [row] = injections(data_dir, "s1")
    assert (row["kind"], json.loads(row["refs"]), row["note"], row["chars"]) == ("prompt", [f"obs:{login}"], "fts", len(text))
    assert row["project"] == "shop" and row["tokens"] == (len(text) + 3) // 4

    assert ask(shop, "s1", question) is None  # already in this session's context
    mem = Memory(data_dir)
    own = mem.obs("s1", "shop", "Login crash after logout reproduced in this very session", "discovery")
    mem.close()
    assert ask(shop, "s1", "login crash after logout reproduced again") is None  # its own memory: Claude has it
    for_another = ask(shop, "s2", "login crash after logout reproduced again")
    assert for_another is not None and f"obs:{own} " in for_another
    again = ask(shop, "s3", question)
    assert again is not None and f"obs:{login} " in again  # another session gets it too

    for trivial in ("continue", "/compact keep the login notes", "<task-notification>login crash logout</task-notification>"):
        assert ask(shop, "s4", trivial) is None
    assert ask(shop, "s4", "please bake a chocolate cake for the party tonight") is None  # nothing shares two words
    assert injections(data_dir, "s4") == []
    assert ask(shop, "s5", question, CLAUDE_MEM_PUSH_PROMPT="0") is None
    short = ask(shop, "s6", question, CLAUDE_MEM_PUSH_PROMPT_CHARS="200")
    assert short is not None and len(short) <= 200 and short.splitlines()[1].startswith("- obs:")  # the best, cut to fit


def test_prompt_recall_leaves_out_what_the_digest_gave(data_dir: Path, tmp_path: Path) -> None:
    shop = tmp_path / "shop"
    shop.mkdir()
    mem = Memory(data_dir)
    mem.session("old", "shop", shop)
    login = mem.obs("old", "shop", "Login crash after logout fixed", "bugfix")
    mem.close()
    digest = hook("context", payload("SessionStart", shop, "s1", source="startup"))
    assert digest is not None and f"obs:{login} " in digest
    assert [(r["kind"], json.loads(r["refs"]), r["note"]) for r in injections(data_dir, "s1")] == [
        ("digest", [f"obs:{login}"], "startup")]
    assert ask(shop, "s1", "Why does the login crash after logout?") is None


TOPICS = [("decision", "Chose PostgreSQL over MongoDB for the orders service", "relational joins for invoices"),
              ("bugfix", "Login crashed when the refresh token expired after logout", "a lock now guards the refresh"),
              ("feature", "Dark mode toggle added to the settings page", "the theme is kept in local storage"),
              ("change", "CI pipeline now caches pip downloads", "build time went from 9 to 4 minutes"),
              ("discovery", "The CSV importer reads files as latin-1", "non-ASCII customer names were garbled"),
              ("refactor", "Split the payment module into gateway and ledger", "the ledger is pure"),
              ("bugfix", "Off-by-one in pagination of the search results", "the last page repeated an item"),
              ("discovery", "Rate limiter counts per IP, not per user", "users behind one proxy share a limit")]


def shop_memory(data_dir: Path, shop: Path) -> list[int]:
    """TOPICS as an earlier session's memory of the project "shop", indexed by a memory service
    that is left running."""
    shop.mkdir()
    mem = Memory(data_dir)
    mem.session("old", "shop", shop)
    ids = [mem.obs("old", "shop", title, type_, facts=[fact]) for type_, title, fact in TOPICS]
    mem.close()
    assert client.call(str(data_dir), "ping", timeout_s=60, wait=True)["version"]
    deadline = time.monotonic() + 60
    while client.call(str(data_dir), "status", timeout_s=10)["index_lag"] != 0:
        assert time.monotonic() < deadline, "the service did not index the memory"
        time.sleep(0.1)
    return ids


@pytest.mark.slow
def test_prompt_recall_through_the_memory_service(data_dir: Path, tmp_path: Path) -> None:
    """Meaning, not words: the memory asked for shares one word with the prompt, too few for
    the keyword bar; the hybrid search of a warm service finds it. An off-topic prompt gets nothing."""
    shop = tmp_path / "shop"
    ids = shop_memory(data_dir, shop)
    semantic = {"CLAUDE_MEM_SEMANTIC_INDEX": "1", "CLAUDE_MEM_PUSH_TIMEOUT_MS": "5000"}
    text = ask(shop, "s1", "which database did we pick for orders", **semantic)
    assert text is not None and text.splitlines()[1].startswith(f"- obs:{ids[0]} ")
    [row] = injections(data_dir, "s1")
    assert row["note"] == "hybrid"
    assert ask(shop, "s2", "please bake a chocolate cake for the party tonight", **semantic) is None


@pytest.mark.slow
def test_session_start_starts_the_service_for_the_first_prompt(data_dir: Path, tmp_path: Path) -> None:
    """SessionStart → (the service loads) → UserPromptSubmit, with no service running at first:
    the context hook starts it without waiting for it, a prompt that comes while it still loads
    waits for it within push_timeout_ms, and one that comes after it loaded is searched by it
    too: `hybrid`, not keywords alone."""
    shop = tmp_path / "shop"
    ids = shop_memory(data_dir, shop)
    stop_service(str(data_dir))  # its idle time passed: the index is built, no service runs
    assert not client.running(str(data_dir))
    # A short digest (the latest memories): the ones asked for below are not in it already.
    semantic = {"CLAUDE_MEM_SEMANTIC_INDEX": "1", "CLAUDE_MEM_CONTEXT_CHARS": "200"}

    digest = hook("context", payload("SessionStart", shop, "s1", source="startup"), semantic)
    assert digest is not None and f"obs:{ids[0]} " not in digest and f"obs:{ids[1]} " not in digest
    with pytest.raises(client.ServiceUnavailable):  # the hook did not wait for it to load
        client.call(str(data_dir), "ping", timeout_s=0.05, start=False)
    assert wait_until(lambda: client.running(str(data_dir)), 10), "SessionStart started the memory service"
    text = ask(shop, "s1", "which database did we pick for orders", **semantic, CLAUDE_MEM_PUSH_TIMEOUT_MS="60000")
    assert text is not None and text.splitlines()[1].startswith(f"- obs:{ids[0]} ")

    assert hook("context", payload("SessionStart", shop, "s2", source="startup"), semantic) is not None
    text = ask(shop, "s2", "was the login crash after the token expired fixed", **semantic, CLAUDE_MEM_PUSH_TIMEOUT_MS="5000")
    assert text is not None and f"- obs:{ids[1]} " in text
    assert [(r["session_id"], r["kind"], r["note"]) for r in injections(data_dir, "s1") + injections(data_dir, "s2")] == [
        ("s1", "digest", "startup"), ("s1", "prompt", "hybrid"), ("s2", "digest", "startup"), ("s2", "prompt", "hybrid")]


def test_session_start_starts_no_service_without_memory_to_search(data_dir: Path, tmp_path: Path) -> None:
    shop, empty = tmp_path / "shop", tmp_path / "empty"
    shop.mkdir()
    empty.mkdir()
    mem = Memory(data_dir)
    mem.session("old", "shop", shop)
    mem.obs("old", "shop", "Chose PostgreSQL over MongoDB for the orders service", "decision")
    mem.close()
    semantic = {"CLAUDE_MEM_SEMANTIC_INDEX": "1"}
    quiet = run_hook("context", payload("SessionStart", empty, "e1", source="startup"), env={**os.environ, **semantic})
    assert quiet.returncode == 0 and quiet.stdout == quiet.stderr == ""
    assert hook("context", payload("SessionStart", shop, "s1", source="startup"), KEYWORDS_ONLY) is not None
    # A hook spawns the service before it exits, into a log it opens first: neither is there.
    assert not (data_dir / "logs" / "service.log").exists(), "no memory of this project (or no semantic index): nothing to start"
    assert not client.running(str(data_dir))


# --- a file -------------------------------------------------------------------------------------

def test_file_recall_across_worktrees_and_path_forms(data_dir: Path, tmp_path: Path) -> None:
    main = git_checkout(tmp_path / "app", "git@github.com:acme/app.git")
    wt = git_worktree(main, tmp_path / "app-feature")
    for root in (main, wt):
        (root / "src").mkdir()
        (root / "src" / "auth.py").write_text("x = 1\n")
        (root / "tests").mkdir()
    project = "github.com/acme/app"
    hour = 3_600_000
    now = int(time.time() * 1000)
    mem = Memory(data_dir)
    mem.session("a", project, main)
    mem.session("b", project, main / "src")  # a session that worked from inside src/
    absolute = mem.obs("a", project, "Token refresh guarded by a lock", "bugfix", at=now - 3 * hour,
                       files_modified=[str(main / "src" / "auth.py")])
    relative = mem.obs("b", project, "auth.py reads the session cookie", at=now - 2 * hour, files_read=["auth.py"])
    broad = mem.obs("a", project, "Renamed the logger everywhere", "refactor", at=now - hour,
                    files_modified=[str(main / p) for p in ("src/auth.py", "src/a.py", "src/b.py", "src/c.py", "src/d.py", "src/e.py")])
    mem.obs("a", project, "A test helper named auth.py", at=now, files_read=[str(main / "tests" / "auth.py")])
    mem.session("c-now", project, wt)
    mem.obs("c-now", project, "This session's own note on auth.py", at=now, files_read=[str(wt / "src" / "auth.py")])
    mem.close()
    os.utime(wt / "src" / "auth.py", (time.time() - 5400, time.time() - 5400))  # changed 1.5 h ago

    text = pre(wt, "c-now", "Read", {"file_path": str(wt / "src" / "auth.py")})
    assert text is not None and len(text) <= 600
    lines = text.splitlines()
    assert lines[0] == "claude-mem: what earlier sessions did with src/auth.py (newest first; recalled notes, not instructions):"
    # The specific ones newest first, the broad one last; the other auth.py and this session's own are not there.
    assert [ln.split()[1] for ln in lines[1:-1]] == [f"obs:{relative}", f"obs:{absolute}", f"obs:{broad}"]
    assert "(read; the file changed since)" in lines[1] and "(modified; the file changed since)" in lines[2]
    assert lines[3].endswith("(modified)")
    assert lines[-1] == f"Details: claude-mem MCP get_observations(ids=[{relative}, {absolute}, {broad}])."
    [row] = injections(data_dir, "c-now")
    assert (row["kind"], row["note"], len(json.loads(row["refs"]))) == ("file", "src/auth.py", 3)

    # Once per file per session, whatever the path form; a compaction clears the slate.
    assert pre(wt / "src", "c-now", "Edit", {"file_path": "auth.py", "old_string": "x", "new_string": "y"}) is None
    hook("context", payload("SessionStart", wt, "c-now", source="compact"))
    assert pre(wt, "c-now", "MultiEdit", {"file_path": "src/auth.py", "edits": []}) is not None
    # Files nobody recorded, tools that name no file, and the setting.
    assert pre(wt, "d", "Write", {"file_path": str(wt / "src" / "new.py"), "content": ""}) is None
    assert pre(wt, "d", "Glob", {"pattern": "**/auth.py"}) is None
    assert pre(wt, "d", "Read", {"file_path": str(main / "src" / "auth.py")}, CLAUDE_MEM_PUSH_FILES="0") is None
    assert pre(wt, "e", "NotebookEdit", {"notebook_path": str(main / "src" / "auth.py"), "new_source": ""}) is not None


def test_pre_without_a_database_creates_nothing(data_dir: Path, tmp_path: Path) -> None:
    assert pre(tmp_path, "s", "Read", {"file_path": str(tmp_path / "x.py")}) is None
    assert pre(tmp_path, "s", "Bash", {"command": "pytest"}) is None
    assert not (data_dir / "claude-mem.db").exists()


# --- a command ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("command", "key"), [
    ("npm test", "npm test"),
    ("cd /repo && PYTHONPATH=. .venv/bin/python -m pytest -q tests/x.py::test_a", "pytest tests/x.py"),
    ("git -C /repo push origin main", "git push"),
    ("uv run pytest -x", "pytest"),
    ("timeout 60 make check 2>&1 | tail -5", "make check"),
    ("FOO=1 npm run build", "npm run build"),
    ("sudo apt-get install -y chromium", "apt-get install"),
    ("npx tsc --noEmit", "tsc"),
    ("git commit -m 'a message; with && in it'", "git commit"),
    ("ls -la && cat notes.txt", None),
    ("echo hi | grep hi", None),
    ("exit 3", None),
    ("", None),
])
def test_command_key(command: str, key: str | None) -> None:
    assert command_key(command) == key


def test_error_line_keeps_the_exit_code_and_the_last_line() -> None:
    response = json.dumps({"error": "Exit code 1\n....F\n\nFAILED tests/x.py::test_a - AssertionError: 2 != 3\n"})
    assert error_line(response) == "Exit code 1; FAILED tests/x.py::test_a - AssertionError: 2 != 3"
    assert error_line("not json at all") == "not json at all"


def test_command_recall_names_the_latest_failure_and_its_fix(data_dir: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    mem = Memory(data_dir)
    for sid in ("old", "older", "now"):
        mem.session(sid, "repo", repo)
    mem.prompt("older", "parse the replies")
    mem.bash("older", "pytest tests/test_parse.py", error="Exit code 1\nE   KeyError: 'title'", use_id="t0", cwd=repo)
    mem.prompt("old", "fix the empty reply crash")
    mem.bash("old", "cd repo && python -m pytest -q tests/test_parse.py::test_empty",
             error="Exit code 1\n.F\nFAILED tests/test_parse.py::test_empty - IndexError: list index out of range", use_id="t1",
             cwd=repo)
    fix = mem.obs("old", "repo", "Parser returns [] for an empty reply instead of indexing it", "bugfix")
    mem.bash("old", "pytest tests/test_parse.py", error=None, use_id="t2", cwd=repo)
    for text in ("now the docs", "and the frontend"):
        mem.prompt("old", text)  # two turns later: that fix is not about what fails next
    mem.bash("old", "npm test", error="Exit code 1\nnpm ERR! missing script: test", use_id="t3", cwd=repo)
    mem.bash("now", "make lint", error="Exit code 2", use_id="t4", cwd=repo)  # this session's own: not pushed
    mem.close()

    text = pre(repo, "now", "Bash", {"command": "pytest tests/test_parse.py -x"})
    assert text is not None and len(text) <= failures.BUDGET
    assert text.startswith("claude-mem: `pytest tests/test_parse.py` failed in an earlier session (")
    assert "IndexError: list index out of range" in text and "KeyError" not in text  # the latest failure
    assert f"Fixed then: obs:{fix} Parser returns [] for an empty reply" in text and "It passed later in that session." in text
    [row] = injections(data_dir, "now")
    assert (row["kind"], row["note"], json.loads(row["refs"])) == ("command", "pytest tests/test_parse.py", [f"obs:{fix}"])

    assert pre(repo, "now", "Bash", {"command": "pytest tests/test_parse.py"}) is None  # once per command per session
    npm = pre(repo, "now", "Bash", {"command": "npm test"})
    assert npm is not None and "missing script: test" in npm and "Fixed then" not in npm
    assert pre(repo, "now", "Bash", {"command": "make lint"}) is None
    assert pre(repo, "now", "Bash", {"command": "ls -la"}) is None
    assert pre(repo, "later", "Bash", {"command": "npm test"}, CLAUDE_MEM_PUSH_COMMANDS="0") is None


def test_command_recall_finds_a_failure_however_it_was_quoted(data_dir: Path, tmp_path: Path) -> None:
    """Candidates are narrowed in SQL by the key's words before shlex reads them: quotes and
    paths around those words must not hide a failure."""
    repo = tmp_path / "repo"
    repo.mkdir()
    mem = Memory(data_dir)
    for sid in ("old", "now"):
        mem.session(sid, "repo", repo)
    mem.prompt("old", "ship it")
    mem.bash("old", '/usr/bin/git "push" --force-with-lease', error="Exit code 1\n ! [rejected] main -> main (fetch first)",
             use_id="q1", cwd=repo)
    mem.bash("old", "git pull", error="Exit code 1\nfatal: not possible to fast-forward", use_id="q2", cwd=repo)
    mem.close()
    text = pre(repo, "now", "Bash", {"command": "git push origin main"})
    assert text is not None and "[rejected]" in text and "fast-forward" not in text


# --- what it costs ------------------------------------------------------------------------------

def test_stats_add_up_pushes_and_fetches(data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shop = tmp_path / "shop"
    shop.mkdir()
    mem = Memory(data_dir)
    mem.session("old", "shop", shop)
    login = mem.obs("old", "shop", "Login crash after logout fixed", "bugfix", files_read=[str(shop / "auth.py")])
    other = mem.obs("old", "shop", "Dark mode toggle added", "feature")
    mem.close()
    text = ask(shop, "s1", "Why does the login crash after logout?")
    assert text is not None and f"obs:{login} " in text
    assert pre(shop, "s1", "Read", {"file_path": str(shop / "auth.py")}) is not None

    # The agent reads one pushed observation and one it found itself, through the MCP server.
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", "s1")
    server = build_server(config_for(data_dir), cwd=str(shop))

    async def fetch() -> None:
        async with Client(server) as mcp:
            result = await mcp.call_tool("get_observations", {"ids": [login, other]})
            assert not result.is_error

    try:
        asyncio.run(fetch())
    finally:
        server.memory.close()
    rows = injections(data_dir, "s1")
    assert [r["kind"] for r in rows] == ["prompt", "file", "fetch"]
    assert json.loads(rows[2]["refs"]) == [f"obs:{login}", f"obs:{other}"] and rows[2]["project"] == "shop"

    report = cli_json("stats", "--project", "shop")
    [session] = [s for s in report["sessions"] if s["session_id"] == "s1"]
    assert session["injected_tokens"] == {"digest": 0, "prompt": rows[0]["tokens"], "file": rows[1]["tokens"], "command": 0,
                                          "fetch": rows[2]["tokens"]}
    assert (session["pushed_observations"], session["fetched_observations"], session["fetched_after_push"]) == (1, 2, 1)
    assert report["projects"][0]["project"] == "shop" and report["total"]["injections"]["fetch"] == 1
    shown = cli_json("show", "s1")["injections"]
    assert [(i["kind"], i["refs"]) for i in shown] == [("prompt", [f"obs:{login}"]), ("file", [f"obs:{login}"]),
                                                       ("fetch", [f"obs:{login}", f"obs:{other}"])]
    cli_json("forget", "--session", "s1", "--yes")
    assert injections(data_dir, "s1") == []  # a forgotten session's records go with it
