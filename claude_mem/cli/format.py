"""Terminal output shared by the commands: aligned tables, labelled fields, colour only on a TTY.

Colour follows https://no-color.org: any non-empty NO_COLOR turns it off, and so does output
that is not a terminal (a pipe, a file, click's test runner), so scripts never see escapes.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import click

# Colours for the values that mean "fine", "waiting" and "wrong" wherever they appear.
STATUS_COLOURS = {
    "ok": "green", "done": "green", "completed": "green", "fixed": "green",
    "pending": "yellow", "processing": "cyan", "active": "cyan", "ended": None,
    "skipped": "red", "failed": "red", "FAIL": "red",
}


def colour_enabled(stream: TextIO | None = None) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    stream = stream if stream is not None else sys.stdout
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


def paint(text: str, fg: str | None = None, *, bold: bool = False, dim: bool = False, err: bool = False) -> str:
    """`text` styled when the stream it goes to (stdout, or stderr with `err`) shows colour."""
    if not (fg or bold or dim) or not colour_enabled(sys.stderr if err else sys.stdout):
        return text
    return click.style(text, fg=fg, bold=bold or None, dim=dim or None)


def status_colour(value: Any) -> str | None:
    return STATUS_COLOURS.get(str(value))


@dataclass(frozen=True)
class Column:
    """One table column. `fit` columns are cut to the terminal's width (only on a terminal:
    piped output keeps every character); `colour` picks a colour from the cell's value."""

    header: str
    align: str = "<"
    fit: bool = False
    colour: Callable[[Any], str | None] | None = None


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    return " ".join(str(value).split())  # one row per line, whatever the text holds


def table_lines(columns: Sequence[Column], rows: Iterable[Sequence[Any]], *, width: int | None = None,
                gap: str = "  ") -> list[str]:
    """Rows under a header, each column padded to its widest cell."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(c.header)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    if width:
        fixed = sum(w for w, c in zip(widths, columns, strict=True) if not c.fit) + len(gap) * (len(columns) - 1)
        flexible = [i for i, c in enumerate(columns) if c.fit]
        room = max(12, (width - fixed) // max(1, len(flexible)))
        for i in flexible:
            widths[i] = min(widths[i], room)

    def line(values: Sequence[str], header: bool) -> str:
        parts = []
        for i, (column, text) in enumerate(zip(columns, values, strict=True)):
            if len(text) > widths[i]:
                text = text[:widths[i] - 1] + "…"
            last = i == len(columns) - 1
            padded = text.rjust(widths[i]) if column.align == ">" else (text if last else text.ljust(widths[i]))
            if header:
                padded = paint(padded, bold=True)
            elif column.colour:
                padded = paint(padded, column.colour(text))
            parts.append(padded)
        return gap.join(parts).rstrip()

    return [line([c.header for c in columns], True)] + [line(r, False) for r in cells]


def terminal_width() -> int | None:
    """The terminal's width when stdout is one, else None (no cutting)."""
    if not sys.stdout.isatty():
        return None
    return shutil.get_terminal_size((100, 24)).columns


def echo_table(columns: Sequence[Column], rows: Iterable[Sequence[Any]], *, empty: str = "nothing to show") -> None:
    rows = list(rows)
    if not rows:
        click.echo(empty)
        return
    for text in table_lines(columns, rows, width=terminal_width()):
        click.echo(text)


def echo_fields(fields: Iterable[tuple[str, Any]], *, indent: str = "") -> None:
    """`label  value` lines with the values aligned; None values are left out."""
    fields = [(label, value) for label, value in fields if value is not None]
    if not fields:
        return
    width = max(len(label) for label, _ in fields)
    for label, value in fields:
        click.echo(f"{indent}{paint(label.ljust(width), dim=True)}  {value}")


def heading(text: str) -> None:
    click.echo(paint(text, bold=True))


def plural(n: int, word: str) -> str:
    """'1 summary', '2 summaries', '3 raw model replies', '0 keys'."""
    if n == 1:
        return f"{n} {word}"
    return f"{n} {word[:-1] + 'ies' if word.endswith('y') and word[-2:-1] not in 'aeiou' else word + 's'}"


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError

