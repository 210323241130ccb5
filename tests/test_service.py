"""The memory service as a real process: one per data folder, started on demand, owner-only
socket, versioned protocol that survives bad requests, concurrent clients, idle exit, SIGKILL
with nothing lost, and front doors that answer from keywords while it is away."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from claude_mem import settings
from claude_mem.processes import take_lock
from claude_mem.service import client, control, protocol
from claude_mem.service.search import search_memory
from claude_mem.store.db import connect, transaction
from claude_mem.store.memories import Observation, insert_observation
from tests import stores
from tests.waiting import wait_until


def _lag(data_dir: Path) -> int | None:
    try:
        return client.call(str(data_dir), "status", timeout_s=5, start=False)["index_lag"]
    except (client.ServiceUnavailable, client.ServiceError):
        return None


@pytest.fixture
def stored(data_dir: Path) -> stores.Stored:
    """The recall tests' store (not the CLI tests' one conftest.py gives)."""
    return stores.build(data_dir)


@pytest.fixture
def service(stored: stores.Stored, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A running service whose index has caught up with the stored rows. It stays up for the
    test (the data dir fixture stops it after): with the suite's 15 s idle, a CLI started on a
    busy machine could reach it only after it had left (seen once under three xdist workers)."""
    monkeypatch.setenv("CLAUDE_MEM_SERVICE_IDLE_S", "300")
    assert client.call(str(data_dir), "ping", timeout_s=30, wait=True)["version"] == protocol.VERSION
    assert wait_until(lambda: _lag(data_dir) == 0, 60), "the first catch-up"
    return str(data_dir)


@pytest.fixture(scope="module")
def shared_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One service for the tests that only talk to it (each start loads the model: ~3 s)."""
    data_dir = tmp_path_factory.mktemp("shared") / "data"
    stores.build(data_dir)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_MEM_")}
    env.update(CLAUDE_MEM_DATA_DIR=str(data_dir), CLAUDE_MEM_EMBEDDER="minilm")  # the embedder conftest sets
    proc = subprocess.Popen([sys.executable, "-m", "claude_mem", "service"], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert client.call(str(data_dir), "ping", timeout_s=30, wait=True, start=False)["pid"] == proc.pid
        assert wait_until(lambda: _lag(data_dir) == 0, 60), "the first catch-up"
        yield str(data_dir)
    finally:
        control.stop_service(str(data_dir))
        proc.wait(10)


def raw_request(path: str, payload: bytes, timeout_s: float = 10) -> dict:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout_s)
        sock.connect(path)
        sock.sendall(payload)
        sock.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return json.loads(data)


def test_it_answers_searches_by_meaning(shared_service: str) -> None:
    config = stores.config_for(Path(shared_service))
    conn = connect(config.db_path)
    try:
        result = search_memory(config, conn, "authentication failure after signing out", project="alpha")
    finally:
        conn.close()
    assert result.mode == "hybrid" and result.note is None
    assert result.hits[0].kind == "observation" and result.hits[0].title == "Fixed login crash"
    # Idle after it, the service gives the heap's free memory back (service/memory.py; glibc only).
    def trimmed() -> bool:
        time.sleep(0.5)  # a status request is a request too: asked more often, the service is never idle
        return client.call(shared_service, "status", timeout_s=5, start=False)["trims"] >= 1

    if sys.platform.startswith("linux"):
        assert wait_until(trimmed, 20)


def test_one_instance_per_data_folder(shared_service: str) -> None:
    info = json.loads(Path(protocol.info_path(shared_service)).read_text())
    env = {**os.environ, "CLAUDE_MEM_DATA_DIR": shared_service}
    racers = [subprocess.Popen([sys.executable, "-m", "claude_mem", "service"], stderr=subprocess.PIPE, text=True, env=env)
              for _ in range(3)]
    outcomes = [(r.wait(30), r.stderr.read()) for r in racers]
    assert all(code == 0 and "another service is running" in err for code, err in outcomes), outcomes
    assert client.call(shared_service, "ping", timeout_s=5, start=False)["pid"] == info["pid"]


@pytest.mark.slow  # a worker, a service or a Chroma server for seconds
def test_a_waiting_client_starts_the_service_again_after_one_left(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A service exiting (idle) holds the lock, without a socket, as a client asks: the service the
    # client starts then finds the lock taken and leaves. Once the lock is free, it is started again.
    monkeypatch.setenv("CLAUDE_MEM_SEMANTIC_INDEX", "0")
    os.makedirs(data_dir, exist_ok=True)
    exiting = take_lock(protocol.lock_path(str(data_dir)), 0)
    assert exiting is not None
    threading.Timer(1.0, os.close, (exiting,)).start()
    assert client.call(str(data_dir), "ping", timeout_s=30, wait=True)["version"] == protocol.VERSION


def test_socket_is_owner_only(shared_service: str) -> None:
    mode = stat.S_IMODE(os.stat(protocol.socket_path(shared_service)).st_mode)
    assert mode == 0o600


V = b'{"v": ' + str(protocol.VERSION).encode() + b", "  # a request's start, in the protocol's version


@pytest.mark.parametrize(("payload", "says"), [
    (b"not json\n", "not JSON"),
    (b"[1, 2]\n", "JSON object"),
    (b'{"v": 99, "op": "ping"}\n', "protocol version"),
    (V + b'"op": "drop_tables"}\n', "unknown op"),
    (V + b'"op": "search", "args": []}\n', "args must be"),
    (V + b'"op": "search", "args": {"query": 5}}\n', "query must be a string"),
    (V + b'"op": "search", "args": {"query": "x", "mode": "psychic"}}\n', "mode must be one of"),
    (V + b'"op": "search", "args": {"query": "x", "projet": "typo"}}\n', "not a search argument: projet"),
    (V + b'"op": "search", "args": {"query": "x", "exclude": [5]}}\n', "list of [kind, id] pairs"),
    (b"\n", "empty request"),
    (V + b'"op": "ping", "args": {"pad": "' + b"x" * (protocol.MAX_REQUEST + 10) + b'"}}\n', "request over"),
])
def test_bad_requests_get_an_error_and_the_service_goes_on(shared_service: str, payload: bytes, says: str) -> None:
    answer = raw_request(protocol.socket_path(shared_service), payload)
    assert answer["ok"] is False and says in answer["error"], answer
    assert client.call(shared_service, "ping", timeout_s=5, start=False)["pid"] > 0


def test_a_lone_surrogate_in_a_query_is_replaced_not_a_failure(shared_service: str) -> None:
    # An MCP argument's escape, or argv's undecodable byte: the search is still answered.
    escaped = V + b'"op": "search", "args": {"query": "login crash \\ud83d", "limit": 3}}\n'
    assert "\\ud83d" in escaped.decode()
    answer = raw_request(protocol.socket_path(shared_service), escaped)
    assert answer["ok"] is True and "Fixed login crash" in {h["title"] for h in answer["result"]["hits"]}, answer
    result = client.call(shared_service, "search", {"query": "login crash \udcff", "limit": 3}, timeout_s=30, start=False)
    assert "Fixed login crash" in {h["title"] for h in result["hits"]}


def test_a_search_request_carries_every_filter_of_search_there_and_back() -> None:
    import inspect

    from claude_mem.recall.search import search

    keywords = [p.name for p in inspect.signature(search).parameters.values() if p.kind is p.KEYWORD_ONLY]
    assert sorted(protocol.SEARCH_ARGS) == sorted(set(keywords) - {"index"}), "a filter the service would drop"
    filters = {"project": "shop", "type_": "bugfix", "session_id": "s1", "since_ms": 1, "until_ms": 2, "file": "a.py",
               "kinds": ("observation", "prompt"), "limit": 7, "mode": "keyword", "exclude": [("prompt", 3)]}
    wire = json.loads(json.dumps(protocol.encode_search("login crash", filters)))
    assert protocol.decode_search(wire) == ("login crash", filters)
    assert protocol.decode_search(protocol.encode_search("q", {"project": None})) == ("q", {})
    with pytest.raises(TypeError, match="not a search argument: projet"):
        protocol.encode_search("q", {"projet": "shop"})


def test_many_clients_at_once(shared_service: str) -> None:
    results: list[object] = []

    def ask(n: int) -> None:
        try:
            answer = client.call(shared_service, "search", {"query": f"login crash {n}", "limit": 5}, timeout_s=30, start=False)
            results.append(len(answer["hits"]))
        except Exception as exc:  # collected: asserted below
            results.append(exc)

    threads = [threading.Thread(target=ask, args=(n,)) for n in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 12 and all(isinstance(r, int) and r > 0 for r in results), results


@pytest.mark.slow
def test_idle_exit_leaves_nothing(stored: stores.Stored, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_SERVICE_IDLE_S", "1")
    pid = client.call(str(data_dir), "ping", timeout_s=30, wait=True)["pid"]
    assert wait_until(lambda: not client.running(str(data_dir)), 60), "the idle exit"
    assert wait_until(lambda: not os.path.exists(f"/proc/{pid}"), 20), "the process to end"
    assert not os.path.exists(protocol.socket_path(str(data_dir))) and not os.path.exists(protocol.info_path(str(data_dir)))


@pytest.mark.slow
def test_sigkill_loses_nothing_and_searches_never_fail(service: str, stored: stores.Stored) -> None:
    config = stored.config
    conn = connect(config.db_path)
    try:
        with transaction(conn):
            new = [insert_observation(conn, "sess-beta", "beta", Observation(
                type="discovery", title=f"Runner cache number {n} was evicted", facts=[f"cache key {n} rotated"]),
                prompt_number=1) for n in range(40)]
        client.call(service, "index", {"observations": new}, timeout_s=5)
        pid = json.loads(Path(protocol.info_path(service)).read_text())["pid"]
        os.kill(pid, signal.SIGKILL)  # mid-indexing, most likely
        assert wait_until(lambda: not os.path.exists(f"/proc/{pid}") or Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z",
                          60), "the kill"
        while_down = search_memory(config, conn, "runner cache evicted", timeout_s=0.2)
        assert while_down.mode == "keyword" and "keyword results only" in (while_down.note or "") and while_down.hits
        # The next request restarts it; it catches up from SQLite.
        assert client.call(service, "ping", timeout_s=30, wait=True)["pid"] != pid
        assert wait_until(lambda: _lag(Path(service)) == 0, 60), "the catch-up after the kill"
        after = search_memory(config, conn, "runner cache evicted", project="beta", limit=50)
        assert after.mode == "hybrid" and {h.id for h in after.hits if h.kind == "observation"} >= set(new[:10])
    finally:
        conn.close()


def test_front_doors_answer_from_keywords_when_the_service_is_slow(shared_service: str) -> None:
    config = stores.config_for(Path(shared_service))
    conn = connect(config.db_path)
    try:
        result = search_memory(config, conn, "login crash", timeout_s=0.0005)
    finally:
        conn.close()
    assert result.mode == "keyword" and result.hits and "keyword results only" in (result.note or "")


def test_heavy_libraries_stay_out_of_workers_and_the_mcp_server() -> None:
    code = ("import sys, claude_mem.worker.loop, claude_mem.mcp.server, claude_mem.service.search;"
            "print(sorted(m for m in ('chromadb', 'onnxruntime', 'tokenizers', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_status_and_doctor_show_it_and_uninstall_stops_it(service: str) -> None:
    env = {**os.environ, "CLAUDE_MEM_DATA_DIR": service}

    def status() -> dict:
        return json.loads(subprocess.run([sys.executable, "-m", "claude_mem", "status", "--json"], capture_output=True,
                                         text=True, timeout=60, env=env).stdout)["service"]

    found = status()
    deadline = time.monotonic() + 60
    while not found["answering"] and time.monotonic() < deadline:  # status waits 3 s for an answer: a busy machine
        found = status()
    assert found["running"] and found["answering"] and found["rss_bytes"] > 0 and found["index_lag"] == 0, found
    doctor = subprocess.run([sys.executable, "-m", "claude_mem", "doctor", "--json"], capture_output=True, text=True,
                            timeout=120, env=env)
    finding = next(f for f in json.loads(doctor.stdout) if f["check"] == "memory service")
    assert finding["ok"] and "answering" in finding["detail"]
    home = Path(service).parent / "home"
    home.mkdir()
    out = subprocess.run([sys.executable, "-m", "claude_mem", "uninstall", "--json"], capture_output=True, text=True,
                         timeout=60, env={**env, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")})
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["service_stopped"] == found["pid"]
    assert not client.running(service)


@pytest.mark.parametrize("launch", ["python -m", "console script"])
def test_a_service_stopped_while_it_loads_is_gone_at_once(data_dir: Path, launch: str) -> None:
    """Before it listens, it has no info file and cannot take a `stop` request: `stop_service`
    finds it by the pid in its lock file and signals it, and it exits without loading on. Started
    on demand (`python -m claude_mem`) or by hand (`claude-mem service`), it is recognised."""
    env = {**os.environ, "CLAUDE_MEM_DATA_DIR": str(data_dir)}
    script = Path(sys.executable).parent / "claude-mem"
    if launch == "console script" and not script.exists():
        pytest.fail(f"no console script beside {sys.executable}: install the project (pip install -e .)")
    argv = [sys.executable, "-m", "claude_mem", "service"] if launch == "python -m" else [str(script), "service"]
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_until(lambda: client.running(str(data_dir)), 30), "the lock taken"
        assert wait_until(lambda: Path(protocol.lock_path(str(data_dir))).read_text() == str(proc.pid), 10)
        assert not os.path.exists(protocol.info_path(str(data_dir))), "still loading: the test needs it not listening yet"
        assert control.stop_service(str(data_dir)) == proc.pid
        assert proc.wait(timeout=10) == 0
        assert not client.running(str(data_dir)) and not os.path.exists(protocol.socket_path(str(data_dir)))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_service_starting_during_a_clients_probe_of_its_lock_still_starts(data_dir: Path) -> None:
    """`running()` probes the lock with a shared flock; a service that tried its exclusive lock
    in that moment gave up as if another service held it, and the client that had started it
    waited out its deadline for a socket that never came (seen under load)."""
    import fcntl

    path = protocol.lock_path(str(data_dir))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    probe = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(probe, fcntl.LOCK_SH)  # a probe, caught holding it as the service starts
    env = {**os.environ, "CLAUDE_MEM_DATA_DIR": str(data_dir), "CLAUDE_MEM_SEMANTIC_INDEX": "0"}
    proc = subprocess.Popen([sys.executable, "-m", "claude_mem", "service"], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        def opened_it() -> bool:  # its lock file among its open files: it is trying the lock now
            try:
                return any(os.readlink(f"/proc/{proc.pid}/fd/{fd}") == path for fd in os.listdir(f"/proc/{proc.pid}/fd"))
            except OSError:
                return False

        assert wait_until(opened_it, 30, step=0.002) or proc.poll() is not None
        time.sleep(0.05)
        fcntl.flock(probe, fcntl.LOCK_UN)  # the probe lets go a moment later
        assert wait_until(lambda: client.running(str(data_dir)) or proc.poll() is not None, 30)
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
    finally:
        os.close(probe)
        control.stop_service(str(data_dir))
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)


@pytest.mark.slow
def test_doctor_fix_removes_what_a_dead_service_left(data_dir: Path, stored: stores.Stored) -> None:
    config = settings.load()
    Path(protocol.info_path(config.data_dir)).write_text('{"pid": 1}')
    env = {**os.environ, "CLAUDE_MEM_DATA_DIR": str(data_dir)}
    out = subprocess.run([sys.executable, "-m", "claude_mem", "doctor", "--fix", "--json"], capture_output=True, text=True,
                         timeout=120, env=env)
    finding = next(f for f in json.loads(out.stdout) if f["check"] == "memory service")
    assert not finding["ok"] and finding["fixed"].startswith("removed 1")
    assert not os.path.exists(protocol.info_path(config.data_dir))


@pytest.mark.slow
def test_a_service_whose_index_is_away_still_exits_when_idle(stored: stores.Stored, data_dir: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Chroma unreachable: every poll hands the indexer a retry, which must not count as being busy
    (it did: such a service never went idle, and lived on after its tests)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    env = {**os.environ, "CLAUDE_MEM_CHROMA_URL": f"http://127.0.0.1:{closed}", "CLAUDE_MEM_SERVICE_IDLE_S": "2"}
    proc = subprocess.Popen([sys.executable, "-m", "claude_mem", "service"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    assert proc.wait(60) == 0
    assert "semantic index unavailable" in (data_dir / "logs" / "claude-mem.log").read_text()


OLDER_SERVICE = """
import json, os, signal, socket, sys
from claude_mem.processes import take_lock
from claude_mem.service import protocol
data_dir = sys.argv[1]
fd = take_lock(protocol.lock_path(data_dir))
os.pwrite(fd, str(os.getpid()).encode(), 0)
path = protocol.socket_path(data_dir)
server = socket.socket(socket.AF_UNIX)
server.bind(path)
server.listen()
signal.signal(signal.SIGTERM, lambda *_: (os.unlink(path), sys.exit(0)))
print("listening", flush=True)
while True:
    conn, _ = server.accept()
    request = json.loads(conn.makefile().readline())
    conn.sendall((json.dumps({"ok": False, "error": f"protocol version {request['v']!r} is not 1"}) + "\\n").encode())
    conn.close()
"""


@pytest.mark.slow  # a real memory service (or the export of a whole store) for seconds
def test_a_service_an_earlier_release_started_is_replaced_by_a_client_that_may_wait(data_dir: Path) -> None:
    """After an upgrade the running service speaks the older protocol: a hook (which never waits)
    gets an error and carries on; the CLI's call stops that service and is answered by a new one."""
    data_dir.mkdir(parents=True, exist_ok=True)
    older = subprocess.Popen([sys.executable, "-c", OLDER_SERVICE, str(data_dir)], stdout=subprocess.PIPE, text=True)
    try:
        assert older.stdout is not None and older.stdout.readline().strip() == "listening"
        with pytest.raises(client.ServiceError, match="protocol version"):
            client.call(str(data_dir), "ping", timeout_s=5, start=False)
        assert older.poll() is None, "a call that does not wait leaves it be"
        answer = client.call(str(data_dir), "ping", timeout_s=60, wait=True)
        assert answer["version"] == protocol.VERSION and answer["pid"] != older.pid
        assert older.wait(timeout=10) == 0
    finally:
        if older.poll() is None:
            older.kill()
        control.stop_service(str(data_dir))
