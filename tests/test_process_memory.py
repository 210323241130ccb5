"""What a session's processes load and keep (bench/footprint.py measures the sum): a worker
imports claude-agent-sdk without the `mcp` package (worker/sdk_import.py), and the memory
service has glibc give large freed blocks back (processes/malloc.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from claude_mem import settings
from claude_mem.worker import spawn
from tests.cli_helpers import invoke_json
from tests.worker_helpers import GOOD_XML, SUMMARY_XML, fake_env, play_demo

# What a worker never needs: the SDK's in-process MCP servers (mcp, its pydantic models and web
# stack, jsonschema) and the memory service's index (chromadb, onnxruntime, numpy). The SDK's
# connect does import opentelemetry's API (~5 MiB), to hand a trace on to the CLI.
NOT_IN_A_WORKER = ("mcp", "mcp_types", "pydantic", "pydantic_core", "jsonschema", "starlette", "uvicorn", "sse_starlette",
                   "httpx2", "cryptography", "chromadb", "onnxruntime", "numpy")


def _python(code: str, env: dict[str, str] | None = None) -> dict:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.mark.slow
def test_a_worker_observes_through_the_sdk_without_importing_mcp(tmp_path: Path, data_dir: Path) -> None:
    play_demo(tmp_path / "proj")
    env = fake_env(tmp_path, [{"reply": GOOD_XML}, {"reply": SUMMARY_XML}, {"reply": "<nothing/>"}, {"reply": SUMMARY_XML}])
    # As the hooks start it (worker/main.py), idle for a second once done; -X importtime lists
    # every module the process imported, on its stderr.
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "claude_mem", "worker", "--session", "sess-demo"],
                          env={**os.environ, **env, "CLAUDE_MEM_WORKER_IDLE_S": "1"}, capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert [o["source"] for o in invoke_json("observations")] == ["model"]  # the SDK and its CLI did the work
    imported = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "claude_agent_sdk._internal.query" in imported
    tops = {name.split(".")[0] for name in imported}
    assert tops.isdisjoint(NOT_IN_A_WORKER), sorted(tops & set(NOT_IN_A_WORKER))


def test_a_worker_finding_its_session_taken_exits_before_loading_anything(data_dir: Path) -> None:
    workers_dir = settings.load(strict=False).workers_dir
    os.makedirs(workers_dir, exist_ok=True)
    held = spawn.acquire_lock(workers_dir, "sess-taken")
    assert held is not None
    try:
        proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "claude_mem", "worker", "--session", "sess-taken"],
                              capture_output=True, text=True, timeout=60)
    finally:
        os.close(held)
    assert proc.returncode == 0 and "another worker is running for this session" in proc.stderr
    imported = {line.rsplit("|", 1)[1].strip().split(".")[0] for line in proc.stderr.splitlines() if line.startswith("import time:")}
    heavy = {"claude_agent_sdk", "click", "lxml", "anyio"}
    assert imported.isdisjoint(heavy), sorted(imported & heavy)


def test_the_placeholders_leave_and_the_real_mcp_imports_after_them() -> None:
    code = ("import json, sys\nfrom claude_mem.worker.sdk_import import import_sdk_without_mcp\n"
            "served = import_sdk_without_mcp()\nleft = sorted(n for n in sys.modules if n.split('.')[0] in ('mcp', 'jsonschema'))\n"
            "from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient\nimport mcp.types\n"
            "print(json.dumps({'served': served, 'left': left, 'real': hasattr(mcp.types.Tool, 'model_validate'),"
            " 'options': ClaudeAgentOptions(tools=[]).tools, 'client': ClaudeSDKClient.__module__}))")
    assert _python(code) == {"served": True, "left": [], "real": True, "options": [], "client": "claude_agent_sdk.client"}


def test_no_placeholders_where_mcp_is_loaded_already() -> None:
    # The memory service holds the real `mcp`: the SDK it may import (ask) must be the whole one.
    code = ("import json, mcp.types\nfrom claude_mem.worker.sdk_import import import_sdk_without_mcp\n"
            "served = import_sdk_without_mcp()\nimport claude_agent_sdk\n"
            "print(json.dumps({'served': served, 'same': claude_agent_sdk.CallToolResult is mcp.types.CallToolResult}))")
    assert _python(code) == {"served": False, "same": True}


_FRAGMENTED = """
import json
from claude_mem.processes.malloc import give_large_blocks_back
tuned = {tuned} and give_large_blocks_back()
def rss_mib():
    with open('/proc/self/status') as fh:
        return int(fh.read().split('VmRSS:')[1].split()[0]) // 1024
big = bytearray(8 << 20)
del big  # a freed 8 MiB block: glibc's own rule now serves 1 MiB blocks from the heap
blocks, kept = [], []
for _ in range(100):
    blocks.append(bytearray(1 << 20))
    kept.append(bytearray(64 << 10))  # a smaller block after each large one, still in use
held = rss_mib()
del blocks
print(json.dumps({{'tuned': tuned, 'held': held, 'after': rss_mib()}}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt, /proc")
def test_large_blocks_go_back_to_the_system_once_freed() -> None:
    default, tuned = _python(_FRAGMENTED.format(tuned=False)), _python(_FRAGMENTED.format(tuned=True))
    assert default["held"] >= 100 and tuned["held"] >= 100
    assert default["after"] >= 90  # glibc's moving threshold kept the freed 100 MiB
    assert tuned["tuned"] and tuned["after"] <= default["after"] - 80


_EMBED = """
import hashlib, json
from claude_mem.processes.malloc import give_large_blocks_back
if {tuned}:
    give_large_blocks_back()
from claude_mem.index import embed
texts = ['the test failed on add()', 'which files were edited'] + ['a longer observation about a bug fix ' * (i + 1) for i in range(40)]
vectors = embed.embed_texts(texts)
print(json.dumps({{'sha': hashlib.sha256(vectors.tobytes()).hexdigest()}}))
"""


@pytest.mark.slow
def test_the_vectors_are_the_same_bytes_with_large_blocks_given_back() -> None:
    assert _python(_EMBED.format(tuned=True)) == _python(_EMBED.format(tuned=False))
