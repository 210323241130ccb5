"""A shell line's commands of interest as `program subcommand` (`npm test`, `pytest tests/x.py`,
`git push`): the key under which the pre hook looks up a command's earlier failures, and under
which marks compare what two observations say of a check. Set-up (`cd`, `export`) and wrappers
(`sudo`, `npx`) are text/shell.py's to drop; programs whose failures teach nothing are left out.

Standard library only: the pre hook uses it.
"""

from __future__ import annotations

from claude_mem.text import shell

SUBCOMMAND_CHARS = 80
# Programs whose failures teach nothing (a grep that found nothing exits 1); set-up (`cd`,
# `export`) and wrappers (`sudo`, `npx`) are left out by shell.py already.
_QUIET_TEXT = """
exit return echo printf true false sleep clear ls cat head tail less more wc
grep egrep fgrep rg ag find fd which type command test [ [[ pwd whoami date env stat file du df tree diff cmp
"""
QUIET_PROGRAMS = frozenset(_QUIET_TEXT.split())
SCRIPT_RUNNERS = frozenset(("npm", "yarn", "pnpm", "bun"))  # `npm run build`: the script is the subcommand


def command_key(command: str) -> str | None:
    """`program subcommand` for the first command of interest in a shell line, or None."""
    for part in shell.commands(command):
        key = None if part.setup else _key(part)
        if key:
            return key
    return None


def command_keys(command: str) -> list[str]:
    """`program subcommand` of every command of interest in a shell line, in order, each once."""
    return list(dict.fromkeys(key for part in shell.commands(command) if not part.setup and (key := _key(part))))


def _key(part: shell.Command) -> str | None:
    program = part.program
    if not program or program in QUIET_PROGRAMS:
        return None
    rest = part.args
    sub = None
    for k, word in enumerate(rest):
        if not word.startswith("-"):
            sub = word.split("::", 1)[0]  # pytest tests/x.py::test_one -> tests/x.py
            if program in SCRIPT_RUNNERS and sub == "run" and k + 1 < len(rest) and not rest[k + 1].startswith("-"):
                sub += " " + rest[k + 1]
            break
    if sub and (len(sub) > SUBCOMMAND_CHARS or "\n" in sub):
        sub = None
    return f"{program} {sub}" if sub else program
