"""The plugin's launcher: what plugin/claude-mem runs when the plugin's environment is not
current (first use, a new version of the plugin), or for the SessionStart check.

- The environment is built detached (`launcher.py --build`): a virtual environment in the
  plugin's data folder with this copy of the project pip-installed into it, under a lock, so
  that two sessions starting at once build it once. A failed build is retried at the next
  session start, and said there once, in one line.
- Until it is ready, hooks run at once from the plugin's own copy of claude_mem with the Python
  that runs this file: the hook path is standard library only. Events are stored (or spooled)
  as always; only workers wait, since they need the environment: the build starts the workers
  of the sessions whose events queued up meanwhile. After an upgrade, the previous version's
  environment serves until the new one is ready.
- The MCP server (and any other command) waits for the environment, then runs from it.

Standard library only, any Python >= 3.11 (plugin/claude-mem checks the version). See
docs/plugin.md.
"""

from __future__ import annotations

import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CHECK = "plugin-check"  # SessionStart's second hook: start the build, say what is wrong
WAIT_S = 900.0  # how long the MCP server (or a command) waits for a build under way
BUILD_TIMEOUT_S = 1800.0


class Plugin:
    """Where the plugin's runtime lives: `env` links to the current environment, whose
    `built` stamp carries the time its build started."""

    def __init__(self, root: str, data: str) -> None:
        self.root = root
        self.data = data
        self.manifest = os.path.join(root, ".claude-plugin", "plugin.json")
        self.env = os.path.join(data, "env")
        self.lock = os.path.join(data, "build.lock")
        self.log = os.path.join(data, "build.log")
        self.failed = os.path.join(data, "build-failed")
        self.python = os.path.join(data, "python")

    @classmethod
    def here(cls) -> Plugin:
        data = os.environ.get("CLAUDE_PLUGIN_DATA") or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "claude-mem", "plugin")
        return cls(ROOT, data)

    def program(self) -> str:
        return os.path.join(self.env, "bin", "claude-mem")

    def state(self) -> str:
        """current (built after this copy of the plugin was written), stale (an earlier
        version's) or none."""
        try:
            built = os.stat(os.path.join(self.env, "built")).st_mtime_ns
        except OSError:
            return "none"
        if not os.access(self.program(), os.X_OK):
            return "none"
        try:
            written = os.stat(self.manifest).st_mtime_ns
        except OSError:
            return "current"
        return "current" if built > written else "stale"

    def building(self) -> bool:
        from claude_mem.processes import lock_held

        return lock_held(self.lock)


def main(argv: list[str]) -> int:
    plugin = Plugin.here()
    # This copy of claude_mem: its hook path and locks are standard library only.
    sys.path.insert(0, plugin.root)
    # A hook: `hook save` as hooks/hooks.json writes it, or `save` as older copies of it did.
    command = argv[1] if argv[:1] == ["hook"] and len(argv) > 1 else (argv[0] if argv else "")
    if command == "--build":
        return build(plugin)
    if command == "--revive":
        return revive()
    state = plugin.state()
    if state == "current" and command != CHECK:
        run_environment(plugin, argv)
    remember_python(plugin)
    if state != "current":
        start_build(plugin, retry=command == CHECK)
    if command == CHECK:
        return check(plugin, state)
    if state == "stale":
        run_environment(plugin, argv)
    from claude_mem.hosts.hook_table import HOOK_COMMANDS

    if command in HOOK_COMMANDS:
        return run_from_source(command)
    return wait_for_environment(plugin, argv)


def run_environment(plugin: Plugin, argv: list[str]) -> None:
    program = plugin.program()
    os.execv(program, [program, *argv])


def run_from_source(command: str) -> int:
    """The hook, now, from this copy of claude_mem with this Python."""
    # Workers and the memory service need the environment (the build starts the waiting workers
    # once it is ready): none is started from here, and pushes search by keywords meanwhile.
    os.environ["CLAUDE_MEM_WORKER_AUTOSTART"] = "0"
    os.environ["CLAUDE_MEM_SEMANTIC_INDEX"] = "0"
    from claude_mem.entry import main as run

    return run(["hook", command])


def wait_for_environment(plugin: Plugin, argv: list[str]) -> int:
    started = time.monotonic()
    parent = os.getppid()
    while time.monotonic() - started < WAIT_S:
        if plugin.state() != "none":
            run_environment(plugin, argv)
        if os.getppid() != parent or _hung_up(0):
            return 1  # the session that started this MCP server has gone: no one to serve
        # The builder takes its lock a moment after it is started; after a failure, only the
        # session start's check starts another.
        waited = time.monotonic() - started
        if not plugin.building() and (waited > 10 or (waited > 2 and os.path.exists(plugin.failed))):
            break
        time.sleep(0.5)
    reason = _read_line(plugin.failed) or "its build is not running"
    sys.stderr.write(f"claude-mem: the plugin's Python environment is not ready ({reason}); see {plugin.log}\n")
    return 1


def remember_python(plugin: Plugin) -> None:
    """So that plugin/claude-mem finds this interpreter next time without trying others."""
    if _read_line(plugin.python) == sys.executable:
        return
    try:
        os.makedirs(plugin.data, mode=0o700, exist_ok=True)
        _write_atomic(plugin.python, sys.executable + "\n")
    except OSError:
        pass


# --- the SessionStart check -------------------------------------------------------------------

def check(plugin: Plugin, state: str) -> int:
    """One line for the user, when there is something to say: the build failed, the first build
    is under way, or `claude-mem install` registered the same hooks (every hook then runs twice)."""
    notes = []
    failed = _read_line(plugin.failed)
    if failed:
        notes.append(f"claude-mem could not build its Python environment ({failed}; log: {plugin.log});"
                     " it tries again at every session start, and keeps this session's events meanwhile")
    elif state == "none":
        notes.append("claude-mem is setting up its Python environment (first use, about a minute);"
                     " this session's events are kept and processed once it is ready")
    from claude_mem.hosts import claude_code

    notes += claude_code.installed_beside_plugin()
    if notes:
        print(json.dumps({"systemMessage": "; ".join(notes)}))
    return 0


# --- building the environment -------------------------------------------------------------------

def start_build(plugin: Plugin, *, retry: bool) -> None:
    """Start the builder, detached, unless it runs already. After a failure only the session
    start (`retry`) starts another, not every hook."""
    if plugin.building() or (not retry and os.path.exists(plugin.failed)):
        return
    import subprocess

    try:
        os.makedirs(plugin.data, mode=0o700, exist_ok=True)
        log_fd = os.open(plugin.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    except OSError:
        return
    try:
        # Its own session, and none of the hook's pipes: Claude Code waits for those to close.
        subprocess.Popen([sys.executable, os.path.abspath(__file__), "--build"], stdin=subprocess.DEVNULL,
                         stdout=log_fd, stderr=log_fd, close_fds=True, cwd=plugin.data, start_new_session=True)
    except OSError:
        pass
    finally:
        os.close(log_fd)


def build(plugin: Plugin) -> int:
    from claude_mem.processes import take_lock

    try:
        fd = take_lock(plugin.lock, wait_s=0.5)  # past a hook's probe of it
    except OSError as exc:
        _say(f"error: {exc}")
        return 1
    if fd is None:
        return 0  # another builder has it
    try:
        if plugin.state() == "current":
            return 0
        started = time.time()
        target = os.path.join(plugin.data, f"env-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
        _say(f"building {target} for {plugin.root} with {sys.executable}")
        try:
            _run([sys.executable, "-m", "venv", target], "python -m venv")
            _run([os.path.join(target, "bin", "python"), "-m", "pip", "install", "--disable-pip-version-check",
                  "--no-input", "--progress-bar", "off", os.path.abspath(plugin.root)], "pip install")
            stamp = os.path.join(target, "built")
            _write_atomic(stamp, f"{plugin.root}\n{sys.executable}\n")
            os.utime(stamp, (started, started))  # changes made to the plugin during the build are not in it
        except (OSError, BuildError) as exc:
            _write_atomic(plugin.failed, f"{exc}\n")
            _say(f"failed: {exc}")
            _remove(target)
            return 1
        previous = _switch(plugin.env, target)
        # Sessions started before an upgrade may still run from the previous environment.
        _remove_old(plugin, keep={target, previous})
        try:
            os.unlink(plugin.failed)
        except FileNotFoundError:
            pass
        _say(f"ready after {time.time() - started:.0f} s")
        _run([os.path.join(target, "bin", "python"), os.path.abspath(__file__), "--revive"], "starting waiting workers")
        return 0
    except (OSError, BuildError) as exc:
        _say(f"error: {exc}")
        return 1
    finally:
        os.close(fd)


class BuildError(Exception):
    pass


def _run(argv: list[str], what: str) -> None:
    """Run a build step, its output in the build log (this process's stdout)."""
    import subprocess

    sys.stdout.flush()
    try:
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=BUILD_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise BuildError(f"{what} took longer than {BUILD_TIMEOUT_S:.0f} s") from None
    output = proc.stdout.decode(errors="replace")
    sys.stdout.write(output)
    sys.stdout.flush()
    if proc.returncode != 0:
        lines = [line.strip() for line in output.splitlines() if line.strip()]
        errors = [line for line in lines if line.startswith("ERROR")] or lines
        raise BuildError(f"{what} failed (exit {proc.returncode}): {errors[-1][:300] if errors else 'no output'}")


def _switch(link: str, target: str) -> str | None:
    """Point `link` at `target` in one step; returns what it pointed at before."""
    try:
        previous: str | None = os.path.join(os.path.dirname(link), os.readlink(link))
    except OSError:
        previous = None
    tmp = f"{link}.new-{os.getpid()}"
    os.symlink(os.path.basename(target), tmp)
    os.replace(tmp, link)
    return previous


def _remove_old(plugin: Plugin, keep: set[str | None]) -> None:
    for name in os.listdir(plugin.data):
        path = os.path.join(plugin.data, name)
        if name.startswith("env-") and path not in keep:
            _remove(path)


def revive() -> int:
    """Run by the new environment's Python, so that the workers it starts run from there: start
    the workers of the sessions whose events queued up while there was no environment."""
    from claude_mem import settings
    from claude_mem.store.db import connect
    from claude_mem.worker import stranded

    config = settings.load(strict=False)
    if not os.path.exists(config.db_path):
        return 0
    conn = connect(config.db_path)
    try:
        started = stranded.revive(config, conn)
    finally:
        conn.close()
    _say(f"started workers for {len(started)} waiting session(s)")
    return 0


# --- small helpers --------------------------------------------------------------------------------

def _hung_up(fd: int) -> bool:
    """True when the other end of `fd` (stdin: Claude Code's pipe) is closed; reads nothing."""
    import select

    poller = select.poll()
    try:
        poller.register(fd, 0)  # no events asked for: hang-ups and errors are reported anyway
        return any(events & (select.POLLHUP | select.POLLERR | select.POLLNVAL) for _, events in poller.poll(0))
    except (OSError, ValueError):
        return False


def _read_line(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.readline().strip()
    except OSError:
        return ""


def _write_atomic(path: str, text: str) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def _remove(path: str) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def _say(message: str) -> None:
    sys.stdout.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} claude-mem plugin: {message}\n")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
