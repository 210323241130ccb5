"""The observer's replies a fake Messages API gives the real Claude CLI: an observation per event, a summary per turn."""

from __future__ import annotations

from xml.sax.saxutils import escape

from tests.fakes.messages_api import ApiRequest


def observer_reply(request: ApiRequest) -> str:
    """The model stand-in: one observation per event line of the last message, a summary when
    one is asked for. Deterministic in the events, so "exactly once" can be checked by content."""
    last = request.messages[-1]
    content = last.get("content")
    text = content if isinstance(content, str) else "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
    if "<summary>" in text:
        return ("<summary><request>replayed turn</request><investigated>events</investigated><learned>x</learned>"
                "<completed>the turn</completed><next_steps>-</next_steps><notes>-</notes></summary>")
    blocks = []
    for line in text.splitlines():
        if line.startswith("[") and len(line) > 11 and line[9] == "]":
            what = escape(line[11:].strip()[:150])
            blocks.append(f"<observation><type>discovery</type><title>{what}</title><facts><fact>{what}</fact></facts>"
                          f"<narrative>seen in replay</narrative></observation>")
    return "\n".join(blocks) or "<nothing/>"
