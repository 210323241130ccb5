"""The real Codex CLI for the tests: npm's `@openai/codex`, pinned, installed once into
`.venv/codex/` (`.ci/run` does it on a fresh machine; a test does it when it is missing).
Where npm cannot fetch it the tests that need it are skipped, saying why."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT

CODEX_VERSION = "0.171.0"
PREFIX = ROOT / ".venv" / "codex"
BINARY = PREFIX / "node_modules" / ".bin" / "codex"


def codex_binary() -> Path:
    """The pinned codex, installing it when it is not there yet; skips the test when npm cannot."""
    if _runs(BINARY):
        return BINARY
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("the Codex CLI tests need npm (to install @openai/codex), and there is none on PATH")
    PREFIX.mkdir(parents=True, exist_ok=True)
    # One install at a time: xdist's workers each reach here, and two npm installs into one
    # prefix leave a binary neither can run (the README's test command skipped all three tests).
    with open(PREFIX / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _runs(BINARY):  # another worker installed it while this one waited
            return BINARY
        proc = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--prefix", str(PREFIX),
                               f"@openai/codex@{CODEX_VERSION}"], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0 or not _runs(BINARY):
        pytest.skip(f"npm could not install @openai/codex@{CODEX_VERSION}: {(proc.stderr or proc.stdout).strip()[-300:]}")
    return BINARY


def _runs(binary: Path) -> bool:
    if not binary.exists():
        return False
    proc = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60)
    return proc.returncode == 0 and CODEX_VERSION in proc.stdout


def provider_config(url: str) -> str:
    """A user's config.toml that sends Codex to the fake Responses server."""
    return ("# the user's own settings\n"
            'model = "gpt-5-codex"\n'
            'model_provider = "fake"\n\n'
            "[model_providers.fake]\n"
            'name = "fake"\n'
            f'base_url = "{url}"\n'
            'wire_api = "responses"\n'
            'env_key = "FAKE_OPENAI_KEY"\n')


def run_codex(binary: Path, home: Path, cwd: Path, prompt: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`codex exec` as a user runs it: no hook-trust bypass. Its shell (`$SHELL -lc`) gets a HOME of
    its own: this machine's ~/.bashrc runs `pyenv init`, whose "cannot rehash: shims isn't
    writable" inside Codex's sandbox (after a fresh pip install) became the failure a test expected
    to read from the command's own output."""
    shell_home = home.parent / "shell-home"
    shell_home.mkdir(exist_ok=True)
    proc = subprocess.run([str(binary), "exec", "--skip-git-repo-check", "-s", "workspace-write", prompt],
                          cwd=cwd, capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL,
                          env={**env, "CODEX_HOME": str(home), "HOME": str(shell_home), "FAKE_OPENAI_KEY": "fake-key"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def claude_mem(*args: str, env: dict[str, str]) -> Any:
    proc = subprocess.run([sys.executable, "-m", "claude_mem", *args], capture_output=True, text=True, timeout=120,
                          env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout
