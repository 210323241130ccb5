"""Write each command's `--help` into docs/commands.md, so the reference cannot drift from the CLI.

    python scripts/commands_md.py            # rewrite docs/commands.md
    python scripts/commands_md.py --check    # exit 1 when it is not what this would write

Like cog (sqlite-utils' cli-reference): the page is written by hand, and under the heading of each
command (a level-3 heading naming `claude-mem NAME` in backticks) this writes its help as click
prints it (a group's with its subcommands'), between two marker comments; everything else on the
page is kept as it is.
Every visible command needs its heading (placed where it belongs among the others, with the prose
that explains it); hidden ones (the `hook` group, the names older installs wrote) get no help.
tests/test_docs.py holds the page to what this writes. A development script, not part of the
installed package.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # `python scripts/commands_md.py`: this checkout's claude_mem

import click  # noqa: E402

from claude_mem.cli.app import cli  # noqa: E402

PAGE = ROOT / "docs" / "commands.md"
WIDTH = 100  # help is wrapped to this, whatever the terminal running the script
BEGIN = "<!-- `claude-mem {name} --help`, written by scripts/commands_md.py: change the command's help, then run it -->"
END = "<!-- end of help -->"
HEADING = re.compile(r"^### `claude-mem ([a-z][a-z-]*)`$", re.M)
BLOCK = re.compile(r"\n\n<!-- `claude-mem [a-z -]+ --help`, written by [^\n]*-->\n.*?\n" + re.escape(END), re.S)


class MissingSection(LookupError):
    """A visible command has no heading on the page to put its help under."""


def visible_commands() -> dict[str, click.Command]:
    return {name: command for name, command in sorted(cli.commands.items()) if not command.hidden}


def help_of(*names: str) -> str:
    """`claude-mem NAMES... --help` as click prints it, WIDTH columns wide, without colour."""
    # The group's own settings (`-h` beside `--help`), which the subcommands' contexts inherit, as when run.
    ctx = click.Context(cli, info_name="claude-mem", terminal_width=WIDTH, max_content_width=WIDTH, color=False,
                        **cli.context_settings)
    command: click.Command = cli
    for name in names:
        assert isinstance(command, click.Group)
        found = command.get_command(ctx, name)
        assert found is not None, names
        command = found
        ctx = click.Context(command, info_name=name, parent=ctx, terminal_width=WIDTH, max_content_width=WIDTH, color=False)
    return command.get_help(ctx).rstrip() + "\n"


def block(name: str, command: click.Command) -> str:
    """The help of `claude-mem NAME`, and of each of its visible subcommands, between the markers."""
    parts = [help_of(name)]
    if isinstance(command, click.Group):
        parts += [help_of(name, sub) for sub, c in sorted(command.commands.items()) if not c.hidden]
    return BEGIN.format(name=name) + "\n```text\n" + "\n".join(parts) + "```\n" + END


def generate(page: str) -> str:
    """The page with the help written under each command's heading (and none under a heading
    naming a hidden or unknown command); MissingSection when a visible command has no heading."""
    commands = visible_commands()
    text = BLOCK.sub("", page)
    headed = set(HEADING.findall(text))
    missing = sorted(set(commands) - headed)
    if missing:
        raise MissingSection(f"docs/commands.md has no heading for {', '.join(missing)}: add `### `claude-mem NAME`` "
                             "where it belongs, with a line on what it is for, then run scripts/commands_md.py")

    def with_help(match: re.Match[str]) -> str:
        name = match.group(1)
        return match.group(0) + ("\n\n" + block(name, commands[name]) if name in commands else "")

    return HEADING.sub(with_help, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say whether docs/commands.md is current (exit 1 if not)")
    args = parser.parse_args(argv)
    page = PAGE.read_text(encoding="utf-8")
    try:
        wanted = generate(page)
    except MissingSection as exc:
        print(exc, file=sys.stderr)
        return 1
    if args.check:
        if wanted != page:
            print("docs/commands.md is not the commands' current help: run python scripts/commands_md.py", file=sys.stderr)
            return 1
        return 0
    if wanted != page:
        PAGE.write_text(wanted, encoding="utf-8")
        print("docs/commands.md rewritten")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
