"""Starting `python -m claude_mem ARGS` detached: a process session of its own, no stdin, its
output appended to a log file, working in the data folder. Hooks start workers and the memory
service this way and exit at once; nothing waits for the child.

Standard library only: a hook spawns with os.posix_spawn, without subprocess.
"""

from __future__ import annotations

import os
import sys

# Set by the hook dispatcher (hooks.py): a hook has no thread of its own and exits within
# milliseconds, so nothing sees its working folder move while it spawns, and the init process
# reaps its children. Every other process starts them through subprocess and reaps them itself.
HOOK_PROCESS = False


def spawn_detached(data_dir: str, log_file: str, args: list[str], env: dict[str, str] | None = None) -> int:
    """Start `python -m claude_mem ARGS` detached, its output appended to `log_file`, working in
    `data_dir`. Returns the child's pid."""
    os.makedirs(os.path.dirname(log_file), mode=0o700, exist_ok=True)
    log_fd = os.open(log_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    argv = [sys.executable, "-m", "claude_mem", *args]
    try:
        if HOOK_PROCESS and hasattr(os, "posix_spawn"):
            return _posix_spawn(data_dir, log_fd, argv, env)
        return _popen(data_dir, log_fd, argv, env)
    finally:
        os.close(log_fd)


def _posix_spawn(data_dir: str, log_fd: int, argv: list[str], env: dict[str, str] | None) -> int:
    """The hook's way: no `subprocess` to import and no pipe to wait on (~10 ms of the hook's
    ~30). posix_spawn has no working-folder action before Python 3.13, so the hook steps into
    `data_dir` for the spawn, and back where it was at once."""
    actions = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0), (os.POSIX_SPAWN_DUP2, log_fd, 1),
               (os.POSIX_SPAWN_DUP2, log_fd, 2)]
    here = os.open(".", os.O_RDONLY)
    try:
        os.chdir(data_dir)
        return os.posix_spawn(argv[0], argv, os.environ if env is None else env, file_actions=actions, setsid=True)
    finally:
        os.fchdir(here)
        os.close(here)


def _popen(data_dir: str, log_fd: int, argv: list[str], env: dict[str, str] | None) -> int:
    import subprocess

    kwargs: dict = {}
    if sys.platform == "win32":  # pragma: no cover
        kwargs["creationflags"] = subprocess.DETACHED_PROCESS | subprocess.CREATE_NO_WINDOW
    else:
        kwargs["start_new_session"] = True
    child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log_fd, stderr=log_fd, close_fds=True, cwd=data_dir,
                             env=env, **kwargs)
    # A long-lived spawner (the MCP server, the viewer, a worker) would keep a child that exits
    # before it as a zombie: a daemon thread reaps it. A hook exits first anyway.
    import threading

    threading.Thread(target=child.wait, name="reap-detached", daemon=True).start()
    return child.pid
