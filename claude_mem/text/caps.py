"""Texts and JSON values made small enough to keep: redacted (text/redact.py), then cut to head and tail.

Order matters: redaction runs before the final head+tail cut, so a secret or a `<private>`
span straddling the cut can never leave a readable fragment behind. Very large texts are first
clipped to a generous window (4x the cap) at each end so redaction stays linear and fast on a
10 MB response; the windows' cut edges are trimmed after redaction (see `_WINDOW_EDGE`).

On the hook path: standard library only.
"""

from __future__ import annotations

import json

from claude_mem.text.redact import redact, redact_tail

TYPE_CHECKING = False  # typing costs the hook ~2 ms to import
if TYPE_CHECKING:
    from typing import Any


def head_tail(text: str, limit: int, dropped_extra: int = 0) -> str:
    """Cut text to about `limit` chars, keeping 2/3 head and 1/3 tail, with a marker saying how
    much was dropped (errors and results tend to sit at the end)."""
    if len(text) <= limit and not dropped_extra:
        return text
    if len(text) <= limit:
        return text + f"\n[... {dropped_extra} chars dropped ...]"
    head = (limit * 2) // 3
    tail = limit - head
    dropped = len(text) - head - tail + dropped_extra
    return f"{text[:head]}\n[... {dropped} chars dropped ...]\n{text[len(text) - tail:]}"


# Characters trimmed from the cut edge of each window after redaction: a secret cut in two by
# the window (a token shorter than its pattern, a quoted password without its closing quote)
# is not recognised, but survives redaction unchanged at the very edge, so trimming more than
# any such fragment's length removes it even when redaction shrank the window a lot (a large
# <private> span or key block) and would otherwise bring the edge into the kept part.
_WINDOW_EDGE = 2048


def clean_text(text: str, limit: int) -> str:
    """Redact, then cut to head and tail. Safe and linear on any size."""
    window = 4 * limit + _WINDOW_EDGE
    if len(text) > 2 * window:
        # Redact the two ends separately, then drop each one's cut edge (see _WINDOW_EDGE).
        head = redact(text[:window])
        head = head[: max(0, len(head) - _WINDOW_EDGE)][: 2 * limit]
        tail = redact_tail(text[-window:])
        tail = tail[_WINDOW_EDGE:][-limit:]
        dropped = len(text) - len(head) - len(tail)
        if len(head) + len(tail) <= limit:
            return f"{head}\n[... {dropped} chars dropped ...]\n{tail}"
        return head_tail(head + tail, limit, dropped)
    return head_tail(redact(text), limit)


def clean_value(value: Any, limit: int) -> Any:
    """Redact every string (and key) in a JSON-like value and cap each one at `limit` chars."""
    if isinstance(value, str):
        return clean_text(value, limit)
    if isinstance(value, dict):
        return {clean_text(str(k), limit): clean_value(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_value(v, limit) for v in value]
    return value


def to_json_capped(value: Any, limit: int) -> str:
    """JSON text of a cleaned value, at most about 1.25x `limit` chars, in bounded time.

    Lists and objects with very many items keep their head and tail items around a marker (a
    10 MB list of rows would otherwise cost seconds of redaction for text that is cut anyway).
    When the strings add up past `limit`, each long one is cut to a fair share while short
    ones stay whole, so the end of a long stdout survives beside its stderr. If the whole is
    still too long, it is kept as one JSON string cut to head and tail, still valid JSON."""
    trimmed = _trim_containers(value, max(16, limit // 64), [limit])
    cap = _fair_share(_string_lengths(trimmed, []), limit)
    text = json.dumps(clean_value(trimmed, cap), ensure_ascii=False, separators=(",", ":"))
    budget = limit + limit // 4
    if len(text) <= budget:
        return text
    # As one string, its quotes and backslashes are escaped again: cut until that fits too.
    cut = limit
    while True:
        out = json.dumps(head_tail(text, cut), ensure_ascii=False)
        if len(out) <= budget or cut <= 100:
            return out
        cut = max(100, cut * budget // len(out) - 50)


def _trim_containers(value: Any, max_items: int, budget: list[int]) -> Any:
    """Keep the first 2/3 and last 1/3 of `max_items` items of each long list or object; stop
    descending once `budget[0]` nodes have been visited (pathologically wide nesting)."""
    budget[0] -= 1
    if budget[0] < 0 and isinstance(value, (dict, list)):
        return "[... dropped ...]"
    if isinstance(value, list):
        if len(value) > max_items:
            head = (max_items * 2) // 3
            tail = max_items - head
            middle = f"[... {len(value) - head - tail} items dropped ...]"
            value = [*value[:head], middle, *value[len(value) - tail:]]
        return [_trim_containers(v, max_items, budget) for v in value]
    if isinstance(value, dict):
        items = list(value.items())
        if len(items) > max_items:
            head = (max_items * 2) // 3
            tail = max_items - head
            dropped = ("[...]", f"{len(items) - head - tail} keys dropped")
            items = [*items[:head], dropped, *items[len(items) - tail:]]
        return {k: _trim_containers(v, max_items, budget) for k, v in items}
    return value


def _string_lengths(value: Any, out: list[int]) -> list[int]:
    if isinstance(value, str):
        out.append(len(value))
    elif isinstance(value, dict):
        for v in value.values():
            _string_lengths(v, out)
    elif isinstance(value, list):
        for v in value:
            _string_lengths(v, out)
    return out


def _fair_share(lengths: list[int], limit: int) -> int:
    """The cap c (at least 64, at most limit) with sum(min(n, c)) about `limit`: strings shorter
    than their share stay whole, the long ones share what is left."""
    if sum(lengths) <= limit:
        return limit
    remaining = limit
    ordered = sorted(lengths)
    for i, n in enumerate(ordered):
        share = remaining // (len(ordered) - i)
        if n > share:
            return max(64, min(limit, share))
        remaining -= n
    return limit
