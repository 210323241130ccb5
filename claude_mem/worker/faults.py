"""What a model failure says, and how long to wait after it.

Fault classes say what happened, not where. Transient ones say nothing about the events being
sent and never count toward `max_attempts`: the observer CLI killed by a signal ("killed"), a CLI
that exited while starting ("start_failed"), one that died mid-turn ("crashed"), a timeout, a
refused or reset connection, 429, 5xx, 529. They are a session-level outage (store/outages.py)
whose tries back off exponentially with jitter, up to `retry_backoff_max_s`, and clear on the
first success.

Only two classes say that waiting will not help (NO_MODEL): no login ("auth") and a CLI that
cannot be run at all ("cannot_start": no binary at the path, not executable). With synthesizer
auto they hand the session to the heuristic synthesizer; with synthesizer model, events wait
for a login, and a CLI that cannot start gets them skipped with the reason (`retry` re-queues
them). A CLI that keeps failing to start for `observer_start_give_up_s` (worker/conversation.py)
is reported and then counts as cannot_start, so no event waits forever.

Failures of the batch itself — the API rejected the request (400 invalid, 413 too long), the
model answered nothing, or a reply that still would not parse after a nudge — count. A batch of
several events is split in halves first (the worker bisects), so only the event that fails on
its own uses up attempts; after `max_attempts` it gets heuristic observations (synthesizer auto)
or is skipped with its reason (synthesizer model).
"""

from __future__ import annotations

import errno
import random
import re
import signal

from claude_mem.settings import Config
from claude_mem.store.outages import NO_MODEL as NO_MODEL  # re-exported: the classes waiting will not fix
from claude_mem.store.outages import Failure

# The failures of the batch itself: they count toward max_attempts.
BATCH_FAILURES = frozenset({Failure.INVALID_REQUEST, Failure.EMPTY, Failure.UNPARSEABLE})

# Why exec() refuses a program: missing, not executable, not a program, a path through a non-folder.
_CANNOT_EXEC = frozenset({errno.ENOENT, errno.EACCES, errno.EPERM, errno.ENOEXEC, errno.ENOTDIR})
_EXIT_CODE = re.compile(r"exit code:? (-?\d+)")


def is_transient(category: Failure) -> bool:
    """True for a failure that says nothing about the events (see the module docstring): the
    events wait. "auth" is one too (the events wait for a login) unless synthesizer auto hands the
    session to heuristics first; "cannot_start" is not: nothing will run the model."""
    return Failure(category) not in BATCH_FAILURES and category != Failure.CANNOT_START


def cli_failure(exc: BaseException, *, starting: bool) -> tuple[Failure, str]:
    """(category, what happened) for an exception claude-agent-sdk raised about the CLI process,
    while it started (`starting`) or during a turn. A CLI killed by a signal surfaces as a
    ProcessError with a negative exit code, at start-up too: that is "killed", not "cannot_start"."""
    from claude_agent_sdk import CLIConnectionError, CLINotFoundError

    when = "while starting" if starting else "while answering"
    code = exit_code(exc)
    if code is not None and code < 0:
        return Failure.KILLED, f"the Claude CLI was killed by {_signal_name(-code)} {when}"
    cause = exc.__cause__
    unrunnable = isinstance(cause, OSError) and cause.errno in _CANNOT_EXEC
    if starting and (isinstance(exc, CLINotFoundError) or (isinstance(exc, CLIConnectionError) and unrunnable)):
        return Failure.CANNOT_START, "the Claude CLI cannot start"
    if starting:
        return Failure.START_FAILED, "the Claude CLI exited while starting" + (f" (exit code {code})" if code is not None else "")
    return Failure.CRASHED, "the Claude CLI failed"


def exit_code(exc: BaseException) -> int | None:
    """The CLI's exit status as the SDK reports it: ProcessError.exit_code, else the "(exit code:
    N)" of a CLIConnectionError's message (a write to a CLI that had died). Negative: a signal."""
    code = getattr(exc, "exit_code", None)
    if isinstance(code, int):
        return code
    found = _EXIT_CODE.search(str(exc))
    return int(found.group(1)) if found else None


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def outage_backoff_s(config: Config, failures: int, rng: random.Random | None = None) -> float:
    """Wait before the next try after `failures` tries in a row failed: retry_backoff_s doubled
    per failure, capped at retry_backoff_max_s, then a random share of 50-100 % of it, so the
    workers of many sessions do not all knock on a recovering API at the same moment."""
    ceiling = min(config.retry_backoff_max_s, config.retry_backoff_s * 2 ** min(max(failures - 1, 0), 30))
    return ceiling * (rng or random).uniform(0.5, 1.0)


def attempt_backoff_s(config: Config, attempts: int) -> float:
    """Wait before retrying an event that failed on its own `attempts` times before this one."""
    return min(config.retry_backoff_max_s, config.retry_backoff_s * 4 ** min(attempts, 30))
