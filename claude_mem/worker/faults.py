"""What a model failure says, and how long to wait after it (issue 11).

Transient failures — the observer CLI died or was killed, a timeout, a refused or reset
connection, 429, 5xx, 529, no login — say nothing about the events that were being sent: they
never count toward `max_attempts`. They are a session-level outage (store/outages.py) whose tries
back off exponentially with jitter, up to `retry_backoff_max_s`, and clear on the first success.

Failures of the batch itself — the API rejected the request (400 invalid, 413 too long), the
model answered nothing, or a reply that still would not parse after a nudge — count. A batch of
several events is split in halves first (the worker bisects), so only the event that fails on
its own uses up attempts; after `max_attempts` it gets heuristic observations (synthesizer auto)
or is skipped with its reason (synthesizer model).
"""

from __future__ import annotations

import random

from claude_mem.settings import Config

# Categories of worker/observer.py, plus the worker's own "unparseable".
BATCH_FAILURES = frozenset({"invalid_request", "empty", "unparseable"})


def is_transient(category: str) -> bool:
    """True for a failure that says nothing about the events (see the module docstring).
    Unknown categories are transient: an outage costs waiting, a wrong count costs events."""
    return category not in BATCH_FAILURES


def outage_backoff_s(config: Config, failures: int, rng: random.Random | None = None) -> float:
    """Wait before the next try after `failures` tries in a row failed: retry_backoff_s doubled
    per failure, capped at retry_backoff_max_s, then a random share of 50-100 % of it, so the
    workers of many sessions do not all knock on a recovering API at the same moment."""
    ceiling = min(config.retry_backoff_max_s, config.retry_backoff_s * 2 ** min(max(failures - 1, 0), 30))
    return ceiling * (rng or random).uniform(0.5, 1.0)


def attempt_backoff_s(config: Config, attempts: int) -> float:
    """Wait before retrying an event that failed on its own `attempts` times before this one."""
    return min(config.retry_backoff_max_s, config.retry_backoff_s * 4 ** min(attempts, 30))
