"""What a run of Messages API requests would be billed, with Anthropic's prompt cache modelled
from the requests' own `cache_control` breakpoints (used by bench/observer_bill.py).

Each request is cut into blocks (system blocks, then every message's content blocks, in order);
a block's tokens are estimated as characters / 4, the same for every system measured. A prefix
ending at a breakpoint is written to the cache when it holds at least MIN_CACHE_TOKENS (Haiku
4.5: 4,096; a shorter prefix is not cached at all); a later request reads the longest written
prefix it starts with, looked for at its breakpoints and up to 20 blocks before each, as the API
does. Usage then follows the API's split: cache reads, cache writes (from the read point to the
last breakpoint), fresh input (the rest), output (the reply). Entries live 5 minutes after their
last use; a replay runs in minutes, so none expires here (a real session's pauses would expire
some, for every system alike).

Billed-equivalent tokens count each at its price against a fresh input token (Haiku 4.5: input
$1, output $5, cache read $0.10, cache write $1.25 per million).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

MIN_CACHE_TOKENS = 4096
LOOKBACK_BLOCKS = 20
PRICES = {"input": 1.0, "output": 5.0, "cache_read": 0.1, "cache_write": 1.25}  # USD per million tokens, Haiku 4.5


def tokens(text: str) -> int:
    return max(1, len(text) // 4) if text else 0


def _blocks(body: dict[str, Any]) -> list[tuple[str, bool]]:
    """(text, carries a breakpoint) of every block, in the order the API caches them."""
    out: list[tuple[str, bool]] = []
    tools = body.get("tools") or []
    for tool in tools:
        out.append((json.dumps(tool, sort_keys=True), "cache_control" in tool))
    system = body.get("system") or []
    for block in [{"type": "text", "text": system}] if isinstance(system, str) else system:
        out.append((block.get("text", ""), "cache_control" in block))
    for message in body.get("messages") or []:
        content = message.get("content")
        items = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for block in items:
            text = block.get("text") if block.get("type") == "text" else json.dumps(block, sort_keys=True)
            out.append((f"{message.get('role')}:{text}", "cache_control" in block))
    return out


class CacheBill:
    """Usage of a sequence of requests, the prompt cache shared between them."""

    def __init__(self, min_tokens: int = MIN_CACHE_TOKENS) -> None:
        self.min_tokens = min_tokens
        self.cached: set[str] = set()
        self.usage = {"input": 0, "cache_read": 0, "cache_write": 0, "output": 0}
        self.requests = 0
        self.largest = 0  # the most tokens one request carried

    def add(self, body: dict[str, Any], reply: str) -> None:
        blocks = _blocks(body)
        digest = hashlib.sha256()
        prefix, cumulative, hashes = 0, [], []
        for text, _ in blocks:
            digest.update(text.encode("utf-8", "replace") + b"\x1e")
            prefix += tokens(text)
            cumulative.append(prefix)
            hashes.append(digest.copy().hexdigest())
        breakpoints = [i for i, (_, bp) in enumerate(blocks) if bp]
        looked = {j for i in breakpoints for j in range(max(0, i - LOOKBACK_BLOCKS), i + 1)}
        read = max((cumulative[j] for j in looked if hashes[j] in self.cached), default=0)
        write = 0
        if breakpoints and cumulative[breakpoints[-1]] >= self.min_tokens and cumulative[breakpoints[-1]] > read:
            write = cumulative[breakpoints[-1]] - read
        for i in breakpoints:
            if cumulative[i] >= self.min_tokens:
                self.cached.add(hashes[i])
        self.usage["cache_read"] += read
        self.usage["cache_write"] += write
        self.usage["input"] += prefix - read - write
        self.usage["output"] += tokens(reply)
        self.requests += 1
        self.largest = max(self.largest, prefix)

    def billed_tokens(self) -> float:
        """In fresh input tokens."""
        return sum(self.usage[k] * PRICES[k] / PRICES["input"] for k in self.usage)

    def dollars(self) -> float:
        return sum(self.usage[k] * PRICES[k] for k in self.usage) / 1e6
