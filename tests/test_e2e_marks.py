"""Memory that knows what is no longer true, end to end under the real Claude Code CLI:
a first session records the server's port, a second one changes it, and the observer (the real
CLI as the worker's model, answered by a fake Messages API) is shown the first memory in its
batch and says the new observation `<supersedes>` it; the third session's prompt push then
carries the new observation and not the old one."""

from __future__ import annotations

import re
import sqlite3
import subprocess
from pathlib import Path
from xml.sax.saxutils import escape

import pytest

from tests.claude_cli import CLAUDE_MEM, TIMEOUT, allow_tools, mem, run_claude, system_messages  # noqa: F401
from tests.fakes.messages_api import ApiRequest, FakeMessagesAPI, edit, write

pytestmark = pytest.mark.slow

OLD_TITLE = "Server listens on port 8080 (PORT in config.py)"
NEW_TITLE = "Server port changed from 8080 to 8443 in config.py"
_SHOWN = re.compile(r"^obs:(\d+) \d{4}-\d\d-\d\d .*port", re.MULTILINE | re.IGNORECASE)


def _last_text(request: ApiRequest) -> str:
    content = request.messages[-1].get("content") if request.messages else ""
    return content if isinstance(content, str) else "\n".join(b.get("text", "") for b in content if isinstance(b, dict))


class Observer:
    """The model stand-in: the port it sees in a batch, as an observation; a batch that shows the
    older port memory gets `<supersedes>` naming the id it was shown."""

    def __init__(self) -> None:
        self.shown: list[int] = []
        self.asked: list[str] = []  # every message it answered, for a failure's message

    def __call__(self, request: ApiRequest) -> str:
        text = _last_text(request)
        self.asked.append(text)
        # A turn's end rides with its events: its summary comes after the observation.
        summary = "<summary><request>port work</request><completed>done</completed></summary>" if "<summary" in text else ""
        self.shown += [int(n) for n in _SHOWN.findall(text)]
        files = "<files_modified><file>config.py</file></files_modified><concepts><concept>port</concept></concepts>"
        if "8443" in text:
            said = "".join(f"<supersedes>obs:{n}</supersedes>" for n in self.shown)
            return (f"<observation><type>change</type><title>{escape(NEW_TITLE)}</title><facts><fact>config.py sets PORT = 8443"
                    f"</fact></facts>{files}{said}</observation>{summary}")
        if "8080" in text:
            return (f"<observation><type>discovery</type><title>{escape(OLD_TITLE)}</title><facts><fact>config.py sets"
                    f" PORT = 8080</fact></facts>{files}</observation>{summary}")
        return summary or "<nothing/>"


def _observe(sandbox: dict, session_id: str, observer: Observer, tmp: Path) -> str:  # noqa: F811
    """The session's events through a worker whose model is the real CLI talking to the fake API;
    what went on, for a failure's message."""
    home = tmp / f"observer-{session_id[:8]}"
    for d in ("home", "config", "tmp"):
        (home / d).mkdir(parents=True)
    with FakeMessagesAPI(observer) as api:
        env = {**sandbox["env"], "ANTHROPIC_BASE_URL": api.url, "HOME": str(home / "home"), "CLAUDE_CONFIG_DIR": str(home / "config"),
               "TMPDIR": str(home / "tmp"), "CLAUDE_MEM_SYNTHESIZER": "model", "CLAUDE_MEM_RETRY_BACKOFF_S": "0.2"}
        proc = subprocess.run([str(CLAUDE_MEM), "worker", "--session", session_id, "--drain"], env=env, capture_output=True,
                              text=True, timeout=TIMEOUT * 3)
    assert proc.returncode == 0, proc.stderr[-2000:]
    queued = mem(sandbox, "queue", "--session", session_id)
    assert all(r["status"] == "done" for r in queued)
    logs = "".join(p.read_text(errors="replace")[-3000:] for p in sorted((sandbox["data"] / "logs").glob("*")) if p.is_file())
    return (f"queue: {[(r.get('tool_name') or r.get('kind'), r['status']) for r in queued]}\nworker stderr: {proc.stderr[-1500:]}\n"
            f"logs: {logs}\n{_rows(sandbox['data'])}\nthe observer was asked:\n" + "\n---\n".join(t[-1500:] for t in observer.asked))


def _rows(data: Path) -> str:
    """What the lookups behind the observer's memory lines read, for a failure's message."""
    conn = sqlite3.connect(f"file:{data / 'claude-mem.db'}?mode=ro", uri=True)
    try:
        return "\n".join(f"{table}: {conn.execute(sql).fetchall()}" for table, sql in (
            ("sessions", "SELECT claude_session_id, project, cwd, prompt_counter FROM sdk_sessions"),
            ("prompts", "SELECT session_id, prompt_number, prompt_text FROM user_prompts"),
            ("observations", "SELECT id, session_id, project, title, files_modified, created_at_epoch FROM observations"),
            ("observation_files", "SELECT * FROM observation_files"), ("marks", "SELECT * FROM marks"),
            ("queue", "SELECT id, session_id, kind, prompt_number, cwd, is_error, tool_input FROM observation_queue")))
    finally:
        conn.close()


def test_the_observer_says_what_a_change_supersedes_and_the_next_prompt_gets_only_the_new(sandbox, tmp_path: Path) -> None:  # noqa: F811
    proc = subprocess.run([str(CLAUDE_MEM), "install"], env=sandbox["env"], capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    allow_tools(sandbox["settings"])
    # Keywords only (no memory service in this test); a digest too small to list observations, so
    # the prompt push is what brings them.
    sandbox["env"].update(CLAUDE_MEM_SEMANTIC_INDEX="0", CLAUDE_MEM_CONTEXT_CHARS="200")
    config = sandbox["project"] / "config.py"
    observer = Observer()

    with FakeMessagesAPI([write(str(config), "PORT = 8080\n")], final_text="Config written.") as api:
        first = run_claude(sandbox, api, "Write config.py with the server port")
    _observe(sandbox, first["session_id"], observer, tmp_path)
    [old] = [o for o in mem(sandbox, "observations", "--session", first["session_id"]) if o["title"] == OLD_TITLE]

    with FakeMessagesAPI([edit(str(config), "8080", "8443")], final_text="Port changed.") as api:
        second = run_claude(sandbox, api, "Move the server to port 8443")
    went = _observe(sandbox, second["session_id"], observer, tmp_path)
    assert observer.shown == [old["id"]], f"the batch message showed the older memory of config.py\n{went}"
    [new] = [o for o in mem(sandbox, "observations", "--session", second["session_id"]) if o["title"] == NEW_TITLE]
    [mark] = mem(sandbox, "marks")
    assert (mark["old"], mark["new"], mark["author"]) == (f"obs:{old['id']}", f"obs:{new['id']}", "model")
    shown = {o["id"]: o for o in mem(sandbox, "observations")}
    assert shown[old["id"]]["superseded_by"] == [f"obs:{new['id']}"] and shown[new["id"]]["superseded_by"] == []

    with FakeMessagesAPI([], final_text="It is 8443.") as api:
        run_claude(sandbox, api, "Which port does the server listen on now?")
        system = system_messages(api)
    pushed = [t for t in system if "claude-mem: memories from earlier sessions" in t]
    assert pushed, system
    assert f"obs:{new['id']} " in pushed[0] and f"obs:{old['id']} " not in pushed[0], pushed[0]
