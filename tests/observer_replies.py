"""The observer's replies a fake Messages API gives the real Claude CLI: an observation per event, a summary per turn."""

from __future__ import annotations

import os
from pathlib import Path
from xml.sax.saxutils import escape

from tests.fakes.messages_api import ApiRequest, FakeMessagesAPI


def observer_reply(request: ApiRequest) -> str:
    """The model stand-in: one observation per event line of the last message, and a summary
    after the observations of each turn it says has ended (or one asked for on its own).
    Deterministic in the events, so "exactly once" can be checked by content."""
    last = request.messages[-1]
    content = last.get("content")
    text = content if isinstance(content, str) else "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
    blocks = []
    for line in text.splitlines():
        if line.startswith("[") and len(line) > 11 and line[9] == "]":
            what = escape(line[11:].strip()[:150])
            blocks.append(f"<observation><type>discovery</type><title>{what}</title><facts><fact>{what}</fact></facts>"
                          f"<narrative>seen in replay</narrative></observation>")
        elif line.startswith("The turn for request #") and " has ended" in line:
            blocks.append(SUMMARY.replace("<summary>", f'<summary request="{line.split("#")[1].split()[0]}">'))
    if not blocks and "<summary" in text:  # asked for on its own: a checkpoint, or a summary left out
        return SUMMARY
    return "\n".join(blocks) or "<nothing/>"


SUMMARY = ("<summary><request>replayed turn</request><investigated>events</investigated><learned>x</learned>"
           "<completed>the turn</completed><next_steps>-</next_steps><notes>-</notes></summary>")


def real_cli_env(folder: Path, api: FakeMessagesAPI, **extra: str) -> dict[str, str]:
    """The environment of a process whose observer is the real bundled CLI talking to `api`: a
    HOME, config and TMPDIR of its own under `folder` (made if missing), a fake key, no
    CLAUDE_MEM_CLI_PATH (that would put a fake CLI in its place), then `extra`."""
    for d in ("home", "config", "tmp"):
        (folder / d).mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-test-not-a-real-key",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "HOME": str(folder / "home"),
           "CLAUDE_CONFIG_DIR": str(folder / "config"), "TMPDIR": str(folder / "tmp"), **extra}
    env.pop("CLAUDE_MEM_CLI_PATH", None)
    return env
