"""The observer seam through the real claude-agent-sdk: a scripted fake Claude CLI (tests/fakes/
fake_claude.py) as `cli_path`, and the real bundled CLI with no credentials and against a minimal
fake Messages API on 127.0.0.1. Every test checks that no CLI process is left behind."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import shutil
import socket
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import psutil
import pytest

from claude_mem.processes.census import OBSERVER_ENV
from claude_mem.worker.conversation import ObserverLike
from claude_mem.worker.observer import Observer, Reply
from tests.fakes.fake_claude import write_wrapper
from tests.waiting import wait_until

FAKE = Path(__file__).resolve().parent / "fakes" / "fake_claude.py"
_SDK = importlib.util.find_spec("claude_agent_sdk")
REAL_CLI = Path(_SDK.submodule_search_locations[0] if _SDK and _SDK.submodule_search_locations else "/nonexistent") / "_bundled" / "claude"
MODEL = "claude-haiku-4-5"


def run(coro):
    return asyncio.run(coro)


def marked(env_key: str, value: str) -> list[psutil.Process]:
    """Live processes (zombies included: an unreaped child is a leak too) whose environment has key=value."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.pid != os.getpid() and proc.environ().get(env_key) == value:
                found.append(proc)
        except (psutil.Error, OSError):
            continue
    return found


class FakeCLI:
    """The fake CLI behind a small executable wrapper (cli_path must be one file to exec)."""

    def __init__(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self.path = Path(write_wrapper(root))
        self.log = root / "fake.log"
        self.script = root / "script.json"
        self.sessions = root / "sessions"
        self.env = {"FAKE_CLAUDE_LOG": str(self.log), "FAKE_CLAUDE_SCRIPT": str(self.script), "FAKE_CLAUDE_SESSIONS": str(self.sessions)}
        self.steps([])

    def steps(self, steps: list[dict], default: dict | None = None) -> None:
        self.script.write_text(json.dumps({"steps": steps, "default": default or {"echo": True}}))
        Path(f"{self.script}.cursor").unlink(missing_ok=True)  # start the new script from its first step

    def entries(self, event: str | None = None) -> list[dict]:
        if not self.log.exists():
            return []
        rows = [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]
        return [r for r in rows if event is None or r["event"] == event]

    def user_texts(self) -> list[str]:
        return [r["message"]["message"]["content"] for r in self.entries("recv") if r["message"].get("type") == "user"]

    def processes(self) -> list[psutil.Process]:
        return marked("FAKE_CLAUDE_LOG", str(self.log))


@pytest.fixture
def fake(tmp_path: Path) -> FakeCLI:
    return FakeCLI(tmp_path / "fake")


@pytest.fixture
def observer_dir(tmp_path: Path) -> str:
    path = tmp_path / "data" / "observer"
    path.mkdir(parents=True)
    return str(path)


def test_observer_is_what_the_worker_asks_for(tmp_path: Path) -> None:
    # The worker reaches the model only through this seam (worker/conversation.py's protocol).
    observer = Observer(model=MODEL, system_prompt="s", cwd=str(tmp_path))
    assert isinstance(observer, ObserverLike) and observer.resume_failed is None


def make(fake: FakeCLI, cwd: str, **kwargs) -> Observer:
    options = {"model": MODEL, "system_prompt": "You observe a coding session.", "cwd": cwd, "cli_path": str(fake.path),
               "env": fake.env, "turn_timeout_s": 15, "grace_s": 1.0}
    return Observer(**{**options, **kwargs})


# --- the fake CLI -------------------------------------------------------------------------------


def test_three_turns_share_one_cli_process(fake: FakeCLI, observer_dir: str) -> None:
    fake.steps([{"reply": "<observation><type>discovery</type><title>one</title></observation>"},
                {"reply": "```xml\n<summary><request>r</request></summary>\n```\nDone."},
                {"echo": True}])

    async def scenario() -> tuple[list[Reply], int | None]:
        async with make(fake, observer_dir) as observer:
            pid = observer.pid
            replies = [await observer.send(f"batch {i}\n<event>{i}</event>") for i in range(3)]
            assert observer.pid == pid and observer.turns == 3
            return replies, pid

    replies, pid = run(scenario())
    assert [r.error for r in replies] == [None, None, None]
    assert replies[0].text == "<observation><type>discovery</type><title>one</title></observation>"
    assert replies[1].text.startswith("```xml\n<summary>")
    sent = "batch 2\n<event>2</event>"
    assert replies[2].text == f"ECHO turn=3 chars={len(sent)}\n{sent}"
    assert len({r.session_id for r in replies}) == 1 and replies[0].session_id
    assert all(r.model == MODEL for r in replies)
    assert replies[0].usage and replies[0].usage["output_tokens"] > 0
    starts = fake.entries("start")
    assert len(starts) == 1 and starts[0]["pid"] == pid
    assert fake.user_texts() == [f"batch {i}\n<event>{i}</event>" for i in range(3)]
    assert fake.entries("exit")[-1]["reason"] == "eof"  # closed through stdin EOF, not killed
    assert fake.processes() == []


def option(argv: list[str], name: str) -> str | None:
    """The value of `name` in a command line, written `--name value` or `--name=value`."""
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg[len(name) + 1:]
    return None


def test_cli_flags_and_environment(fake: FakeCLI, observer_dir: str) -> None:
    async def scenario() -> None:
        env = {**fake.env, "CLAUDE_CODE_MAX_RETRIES": "0"}
        async with make(fake, observer_dir, system_prompt="SYSTEM PROMPT", max_turns=2, env=env) as observer:
            assert (await observer.send("hi")).error is None

    run(scenario())
    start = fake.entries("start")[0]
    argv = start["argv"]
    # What the options say, not how the SDK spells them (0.2.190 writes `--tools=` where 0.2.189
    # wrote `--tools ""`). That the model is offered no tools is checked where it shows, in the
    # requests the real CLI sends (test_real_cli_against_a_fake_messages_api).
    assert option(argv, "--tools") == ""
    assert option(argv, "--setting-sources") == ""
    assert "--strict-mcp-config" in argv
    assert option(argv, "--model") == MODEL
    assert option(argv, "--system-prompt") == "SYSTEM PROMPT"
    assert option(argv, "--max-turns") == "2"
    assert not any(a.startswith("--resume") for a in argv)
    assert os.path.realpath(start["cwd"]) == os.path.realpath(observer_dir)
    env = start["env"]
    assert env["CLAUDE_CODE_MAX_RETRIES"] == "0"  # the caller's env wins over the default of 2
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert len(env[OBSERVER_ENV]) == 32


def test_error_categories_keep_the_conversation_usable(fake: FakeCLI, observer_dir: str) -> None:
    fake.steps([{"error": "auth"}, {"error": "overloaded"}, {"error": "rate_limit"}, {"error": "api_error"},
                {"reply": ""}, {"reply": "   "}, {"reply": "<observation/>"}])

    async def scenario() -> list[Reply]:
        async with make(fake, observer_dir) as observer:
            return [await observer.send(f"m{i}") for i in range(7)]

    replies = run(scenario())
    assert [r.error for r in replies] == ["auth", "overloaded", "rate_limit", "api_error", "empty", "empty", None]
    assert replies[0].detail == "Not logged in · Please run /login"
    assert replies[1].detail.startswith("API Error: 529 Overloaded")
    assert "429" in replies[2].detail and "500" in replies[3].detail
    assert all(r.model is None for r in replies[:4])  # "<synthetic>" is not a model
    assert replies[6].text == "<observation/>"
    assert len(fake.entries("start")) == 1
    assert fake.processes() == []


def test_slow_reply_times_out_and_the_conversation_can_be_resumed(fake: FakeCLI, observer_dir: str) -> None:
    fake.steps([{"reply": "first"}, {"sleep": 30, "reply": "too late"}, {"reply": "after restart"}])

    async def scenario() -> None:
        observer = make(fake, observer_dir, turn_timeout_s=1.0)
        await observer.start()
        assert (await observer.send("one")).text == "first"
        reply = await observer.send("two")
        assert reply.error == "timeout" and "1s" in reply.detail
        assert fake.processes() == [] and fake.entries("slept") == []  # stopped mid-sleep, not left sleeping
        assert observer.closed
        after = await observer.send("three")
        assert after.error == "crashed" and "closed" in after.detail
        await observer.close()

        # Cleanly restartable: a new Observer resumes the same conversation.
        again = make(fake, observer_dir, resume=observer.session_id)
        async with again:
            reply = await again.send("three")
        assert reply.text == "after restart" and reply.session_id == observer.session_id
        assert again.resume_failed is None

    run(scenario())
    starts = fake.entries("start")
    assert len(starts) == 2 and any(a.startswith("--resume=") for a in starts[1]["argv"])
    assert fake.processes() == []


def test_cli_ignoring_sigterm_is_killed(fake: FakeCLI, observer_dir: str) -> None:
    fake.steps([{"sleep": 60, "ignore_sigterm": True, "reply": "never"}])

    async def scenario() -> Reply:
        async with make(fake, observer_dir, turn_timeout_s=0.5, grace_s=0.5) as observer:
            return await observer.send("hang")

    reply = run(scenario())
    assert reply.error == "timeout"
    assert fake.processes() == [] and fake.entries("slept") == []  # killed mid-sleep: SIGTERM was ignored


def test_crash_mid_conversation(fake: FakeCLI, observer_dir: str) -> None:
    fake.steps([{"reply": "ok"}, {"crash": True, "exit_code": 3, "partial": "<observation><title>half"}, {"reply": "resumed"}])

    async def scenario() -> tuple[Reply, Reply, Reply]:
        async with make(fake, observer_dir) as observer:
            first = await observer.send("a")
            crashed = await observer.send("b")
            assert fake.processes() == []
            after = await observer.send("c")
        async with make(fake, observer_dir, resume=observer.session_id) as again:
            resumed = await again.send("c")
        assert resumed.session_id == first.session_id
        return crashed, after, resumed

    crashed, after, resumed = run(scenario())
    assert crashed.error == "crashed"
    assert "exit code 3" in crashed.detail and "crashing as scripted" in crashed.detail
    assert after.error == "crashed"
    assert resumed.text == "resumed" and resumed.error is None
    assert fake.processes() == []


def test_cli_killed_between_turns(fake: FakeCLI, observer_dir: str) -> None:
    async def scenario() -> tuple[Reply, Reply]:
        async with make(fake, observer_dir) as observer:
            first = await observer.send("a")
            psutil.Process(observer.pid).kill()  # the OOM killer, say
            await asyncio.sleep(0.3)
            return first, await observer.send("b")

    first, second = run(scenario())
    assert first.error is None
    assert second.error == "killed" and "killed by SIGKILL" in second.detail, second.detail
    assert fake.processes() == []


def test_cli_exiting_cleanly_mid_turn_is_a_crash(fake: FakeCLI, observer_dir: str) -> None:
    fake.steps([{"crash": True, "exit_code": 0}])

    async def scenario() -> Reply:
        async with make(fake, observer_dir) as observer:
            return await observer.send("a")

    reply = run(scenario())
    assert reply.error == "crashed" and "before finishing the turn" in reply.detail
    assert fake.processes() == []


def test_close_is_idempotent_and_leaves_no_process(fake: FakeCLI, observer_dir: str) -> None:
    async def scenario() -> None:
        observer = make(fake, observer_dir)
        await observer.start()
        child = psutil.Process(observer.pid)
        assert child.is_running() and FAKE.name in " ".join(child.cmdline())
        assert child.environ()[OBSERVER_ENV] == observer.observer_id
        await observer.close()
        await observer.close()
        assert not child.is_running()
        assert (await observer.send("late")).error == "crashed"
        await observer.close()

    run(scenario())
    assert fake.processes() == []
    assert fake.entries("exit")[-1]["reason"] == "eof"


async def turn_under_way(fake: FakeCLI) -> None:
    """Until the fake CLI has taken the message and started on its (scripted, slow) answer."""
    async def taken() -> None:
        while not fake.entries("step"):
            await asyncio.sleep(0.02)

    await asyncio.wait_for(taken(), 60)


def test_close_while_a_turn_is_under_way(fake: FakeCLI, observer_dir: str) -> None:
    fake.steps([{"sleep": 30, "reply": "slow"}])

    async def scenario() -> Reply:
        observer = make(fake, observer_dir, grace_s=0.5)
        await observer.start()
        pending = asyncio.ensure_future(observer.send("x"))
        await turn_under_way(fake)
        await observer.close()
        return await asyncio.wait_for(pending, 10)

    reply = run(scenario())
    assert reply.error == "crashed"
    assert fake.processes() == [] and fake.entries("slept") == []


def test_cancelled_send_still_lets_close_stop_the_cli(fake: FakeCLI, observer_dir: str) -> None:
    fake.steps([{"sleep": 30, "reply": "slow"}])

    async def scenario() -> None:
        observer = make(fake, observer_dir, grace_s=0.5)
        await observer.start()
        task = asyncio.ensure_future(observer.send("x"))
        await turn_under_way(fake)
        task.cancel()  # what the worker's SIGTERM handler does
        with pytest.raises(asyncio.CancelledError):
            await task
        await observer.close()

    run(scenario())
    assert fake.processes() == []


def test_resume_id_is_passed_through(fake: FakeCLI, observer_dir: str) -> None:
    fake.steps([{"reply": "first"}], default={"reply_template": "turn {turn} of {session_id}: {chars} chars"})

    async def scenario() -> tuple[str | None, Reply, Observer]:
        async with make(fake, observer_dir) as first:
            first_id = (await first.send("a")).session_id
        again = make(fake, observer_dir, resume=first_id)
        async with again:
            reply = await again.send("b")
        return first_id, reply, again

    first_id, reply, again = run(scenario())
    assert first_id and reply.session_id == first_id and again.resume_failed is None
    assert reply.text == f"turn 1 of {first_id}: 1 chars"
    assert f"--resume={first_id}" in fake.entries("start")[1]["argv"]


def test_unknown_resume_falls_back_to_a_fresh_conversation(fake: FakeCLI, observer_dir: str) -> None:
    unknown = "6f1c3b1e-0000-4000-8000-000000000000"

    async def scenario() -> tuple[Observer, Reply]:
        async with make(fake, observer_dir, resume=unknown) as observer:
            return observer, await observer.send("hello")

    observer, reply = run(scenario())
    assert observer.resume_failed == f"No conversation found with session ID: {unknown}"
    assert reply.error is None and reply.session_id and reply.session_id != unknown
    starts = fake.entries("start")
    assert [any(a.startswith("--resume") for a in s["argv"]) for s in starts] == [True, False]
    assert fake.processes() == []


def test_missing_cli_is_reported_not_raised(tmp_path: Path, observer_dir: str) -> None:
    async def scenario() -> Reply:
        async with Observer(model=MODEL, system_prompt="x", cwd=observer_dir, cli_path=str(tmp_path / "no-such-claude")) as observer:
            return await observer.send("hello")

    reply = run(scenario())
    assert reply.error == "cannot_start" and "cannot start" in reply.detail and "not found" in reply.detail


# What happened while the CLI started, not where: a kill is an outage, only an unrunnable CLI is
# "cannot_start" (the class that may hand a session to heuristics).

def test_cli_killed_while_starting_is_killed_not_cannot_start(fake: FakeCLI, observer_dir: str) -> None:
    async def scenario() -> tuple[Reply, Observer]:
        observer = make(fake, observer_dir, env={**fake.env, "FAKE_CLAUDE_START_SLEEP": "30"})
        starting = asyncio.ensure_future(observer.start())
        assert await asyncio.to_thread(lambda: wait_until(lambda: fake.entries("start"), 15, step=0.05)), "the CLI started"
        for proc in marked(OBSERVER_ENV, observer.observer_id):
            proc.kill()  # the OOM killer, while the CLI loads
        await starting
        reply = await observer.send("hello")
        await observer.close()
        return reply, observer

    reply, observer = run(scenario())
    assert reply.error == "killed" and "killed by SIGKILL while starting" in reply.detail, reply.detail
    assert observer.failed_to_start and not fake.entries("recv"), "killed before the handshake"
    assert fake.processes() == []


@pytest.mark.parametrize("case", ["not executable", "not a program", "exits 2"])
def test_cli_that_cannot_run_or_exits_while_starting(case: str, tmp_path: Path, observer_dir: str) -> None:
    cli = tmp_path / "claude"
    cli.write_text({"not executable": "#!/bin/sh\nexit 0\n", "not a program": "\x7fELF garbage",
                    "exits 2": "#!/bin/sh\necho 'error: unknown option --tools' >&2\nexit 2\n"}[case])
    cli.chmod(0o644 if case == "not executable" else 0o755)

    async def scenario() -> tuple[Reply, Observer]:
        async with Observer(model=MODEL, system_prompt="x", cwd=observer_dir, cli_path=str(cli)) as observer:
            return await observer.send("hello"), observer

    reply, observer = run(scenario())
    assert observer.failed_to_start
    if case == "exits 2":
        assert reply.error == "start_failed" and "exited while starting" in reply.detail, reply.detail
    else:
        assert reply.error == "cannot_start" and "cannot start" in reply.detail, reply.detail


def test_hung_handshake_times_out(tmp_path: Path, observer_dir: str) -> None:
    # A CLI that never answers `initialize`.
    cli = tmp_path / "mute-claude"
    cli.write_text(f'#!/bin/sh\nexec "{sys.executable}" -c "import time; time.sleep(60)"\n')
    cli.chmod(0o755)

    async def scenario() -> tuple[Reply, str]:
        observer = Observer(model=MODEL, system_prompt="x", cwd=observer_dir, cli_path=str(cli), start_timeout_s=1, grace_s=0.5)
        async with observer:
            return await observer.send("hello"), observer.observer_id

    reply, observer_id = run(scenario())
    assert reply.error == "start_failed" and "did not start" in reply.detail  # the start timeout's words
    assert marked(OBSERVER_ENV, observer_id) == []  # and the mute CLI, asleep for a minute, is gone


# --- the real bundled CLI -------------------------------------------------------------------------

needs_real_cli = pytest.mark.skipif(not REAL_CLI.exists(), reason="claude-agent-sdk without its bundled CLI")


@pytest.fixture
def short_tmp():
    # TMPDIR must stay short: the CLI puts a unix socket there.
    path = tempfile.mkdtemp(prefix="cm-", dir="/tmp")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _isolated_env(tmp_path: Path, short_tmp: str, base_url: str) -> dict[str, str]:
    home, config = tmp_path / "home", tmp_path / "config"
    for path in (home, config):
        path.mkdir(parents=True, exist_ok=True)
    return {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(config), "TMPDIR": short_tmp, "ANTHROPIC_BASE_URL": base_url,
            "ANTHROPIC_API_KEY": "", "CLAUDE_CODE_OAUTH_TOKEN": "", "ANTHROPIC_AUTH_TOKEN": ""}


def _unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def no_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)


@needs_real_cli
def test_real_cli_without_credentials_is_auth(tmp_path: Path, short_tmp: str, observer_dir: str, no_api_key: None) -> None:
    env = _isolated_env(tmp_path, short_tmp, f"http://127.0.0.1:{_unused_port()}")
    for name in ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_AUTH_TOKEN"):
        env.pop(name)

    async def scenario() -> tuple[list[Reply], str]:
        async with Observer(model=MODEL, system_prompt="x", cwd=observer_dir, env=env, turn_timeout_s=30) as observer:
            return [await observer.send("hello"), await observer.send("again")], observer.observer_id

    replies, observer_id = run(scenario())
    # Each turn answered "auth" at once: a CLI retrying a login it does not have would have run into
    # the turn's timeout and answered "timeout".
    assert [r.error for r in replies] == ["auth", "auth"]  # the CLI stays up; every turn says the same
    assert "Not logged in" in replies[0].detail
    assert replies[0].session_id
    assert marked(OBSERVER_ENV, observer_id) == []


class _MessagesAPI:
    """Just enough of POST /v1/messages: a streamed text reply, or an error status."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.plan: list[object] = []  # per request: a reply text, or an int HTTP status
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
                if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
                    self._send(404, "application/json", b"{}")
                    return
                api.requests.append(body)
                step = api.plan.pop(0) if api.plan else "(no plan)"
                if isinstance(step, int):
                    kind = {529: "overloaded_error", 429: "rate_limit_error"}.get(step, "api_error")
                    error = {"type": "error", "error": {"type": kind, "message": "Overloaded" if step == 529 else kind}}
                    self._send(step, "application/json", json.dumps(error).encode(), {"x-should-retry": "false"})
                    return
                events = [
                    ("message_start", {"type": "message_start", "message": {
                        "id": "msg_fake", "type": "message", "role": "assistant", "model": body.get("model"), "content": [],
                        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 12, "output_tokens": 1}}}),
                    ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                    ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": step}}),
                    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                       "usage": {"output_tokens": 9}}),
                    ("message_stop", {"type": "message_stop"}),
                ]
                payload = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()
                self._send(200, "text/event-stream", payload)

            def _send(self, status: int, ctype: str, payload: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(payload)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def messages_api():
    api = _MessagesAPI()
    yield api
    api.close()


@pytest.mark.slow
@needs_real_cli
def test_real_cli_against_a_fake_messages_api(tmp_path: Path, short_tmp: str, observer_dir: str, messages_api: _MessagesAPI) -> None:
    env = {**_isolated_env(tmp_path, short_tmp, messages_api.url), "ANTHROPIC_API_KEY": "sk-ant-fake"}
    xml = "<observation><type>discovery</type><title>Parser reads & writes</title></observation>"
    messages_api.plan = [xml, 529, "<summary><request>r</request></summary>", "resumed reply", "fresh reply", "cut reply",
                         "fallback reply"]

    async def scenario() -> tuple[list[Reply], Observer, Observer]:
        async with Observer(model=MODEL, system_prompt="You observe.", cwd=observer_dir, env=env, turn_timeout_s=30) as first:
            replies = [await first.send("events 1"), await first.send("events 2"), await first.send("summary please")]
        async with Observer(model=MODEL, system_prompt="You observe.", cwd=observer_dir, env=env, resume=first.session_id,
                            turn_timeout_s=30) as resumed:
            replies.append(await resumed.send("events 3"))
        unknown = "6f1c3b1e-0000-4000-8000-000000000000"
        async with Observer(model=MODEL, system_prompt="You observe.", cwd=observer_dir, env=env, resume=unknown,
                            turn_timeout_s=30) as fresh:
            replies.append(await fresh.send("events 4"))
        # Cut just after the first turn: the failed "events 2" and everything since are dropped.
        async with Observer(model=MODEL, system_prompt="You observe.", cwd=observer_dir, env=env, resume=first.session_id,
                            resume_at=replies[0].uuid, turn_timeout_s=30) as cut:
            replies.append(await cut.send("events 5"))
        # A cut point the CLI does not know: the plain resume instead.
        async with Observer(model=MODEL, system_prompt="You observe.", cwd=observer_dir, env=env, resume=first.session_id,
                            resume_at=unknown, turn_timeout_s=30) as fallback:
            replies.append(await fallback.send("events 6"))
        return replies, resumed, fresh

    replies, resumed, fresh = run(scenario())
    ok, overloaded, summary, again, new, cut_reply, fallback_reply = replies
    assert ok.uuid and cut_reply.text == "cut reply" and cut_reply.session_id == ok.session_id
    cut_history = json.dumps(messages_api.requests[5]["messages"])
    assert "events 1" in cut_history and "events 2" not in cut_history and "summary please" not in cut_history
    assert fallback_reply.text == "fallback reply" and "events 5" in json.dumps(messages_api.requests[6]["messages"])
    assert ok.error is None and ok.text == xml and ok.model == MODEL
    assert ok.usage == {"input_tokens": 12, "output_tokens": 9, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    assert overloaded.error == "overloaded" and "529" in overloaded.detail and overloaded.status == 529
    assert summary.error is None and summary.text == "<summary><request>r</request></summary>"
    assert ok.session_id == overloaded.session_id == summary.session_id
    # The resumed conversation carries the earlier turns to the model.
    assert again.text == "resumed reply" and again.session_id == ok.session_id and resumed.resume_failed is None
    history = json.dumps(messages_api.requests[3]["messages"])
    assert xml in history
    assert "events 1" in history and "summary please" in history
    # An unknown id: the CLI refuses it, the Observer starts fresh and says so.
    assert fresh.resume_failed and "No conversation found" in fresh.resume_failed
    assert new.text == "fresh reply" and new.session_id not in (None, ok.session_id)
    assert "events 1" not in json.dumps(messages_api.requests[4]["messages"])
    # No tools offered to the observer model, and the system prompt is ours.
    assert all(not r.get("tools") for r in messages_api.requests)
    assert "You observe." in json.dumps(messages_api.requests[0].get("system"))
    for observer in (resumed, fresh):
        assert marked(OBSERVER_ENV, observer.observer_id) == []
