"""Moments (epoch milliseconds, as the database keeps them) as people read them: in local time,
the zone they type dates in. Standard library only: the digest and the pushes show them."""

from __future__ import annotations

import time


def local_day(epoch_ms: int) -> str:
    """'2026-11-22'."""
    return time.strftime("%Y-%m-%d", time.localtime(epoch_ms / 1000))


def local_clock(epoch_ms: int) -> str:
    """'14:30'."""
    return time.strftime("%H:%M", time.localtime(epoch_ms / 1000))


def local_stamp(epoch_ms: int | None) -> str:
    """'2026-11-22 14:30', or '-' for no moment at all."""
    if epoch_ms is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(epoch_ms / 1000))
