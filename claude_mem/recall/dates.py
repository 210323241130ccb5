"""Dates named in a query ("on 8 May, 2023", "in November 2022") as epoch-ms windows: a
memory from such a day or month is boosted (fusion.py)."""

from __future__ import annotations

import datetime as dt
import re
import time
from typing import Any

# English names on purpose (not `calendar`, which follows the locale and imports it).
_MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
                "november", "december")
_MONTHS = {name: i for i, name in enumerate(_MONTH_NAMES, 1)} | {name[:3]: i for i, name in enumerate(_MONTH_NAMES, 1)}
_MONTHS["sept"] = 9
_MON = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_DAY_MONTH_YEAR = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MON},?\s*{_YEAR}\b", re.I)
_MONTH_DAY_YEAR = re.compile(rf"\b{_MON}\s+{_DAY},?\s*{_YEAR}\b", re.I)
_MONTH_YEAR = re.compile(rf"\b{_MON},?\s+(?:of\s+)?{_YEAR}\b", re.I)
_MONTH_DAY = re.compile(rf"\b{_MON}\s+{_DAY}\b(?!\s*,?\s*\d)", re.I)
_DAY_MONTH = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MON}\b(?!\s*,?\s*\d)", re.I)


def date_windows(text: str) -> list[tuple[int, int]]:
    """Calendar days and months named in the text, as [start, end) epoch-ms windows in local
    time ("on 8 May, 2023", "May 8 2023", "2023-05-08", "in November 2022"). A day without a
    year borrows the year of another date in the same text ("between August 11 and August 15
    2023"); alone it is ignored rather than guessed."""
    spans: list[tuple[dt.date, dt.date]] = []
    rest = text or ""

    def take(pattern: re.Pattern[str], build: Any) -> None:
        nonlocal rest
        for match in pattern.finditer(rest):
            try:
                spans.append(build(match))
            except (ValueError, KeyError):
                pass
        rest = pattern.sub(" ", rest)

    def day(y: int, m: int, d: int) -> tuple[dt.date, dt.date]:
        start = dt.date(y, m, d)
        return start, start + dt.timedelta(days=1)

    def month(y: int, m: int) -> tuple[dt.date, dt.date]:
        return dt.date(y, m, 1), dt.date(y + (m == 12), m % 12 + 1, 1)

    take(_ISO, lambda m: day(int(m[1]), int(m[2]), int(m[3])))
    take(_DAY_MONTH_YEAR, lambda m: day(int(m[3]), _MONTHS[m[2].lower()], int(m[1])))
    take(_MONTH_DAY_YEAR, lambda m: day(int(m[3]), _MONTHS[m[1].lower()], int(m[2])))
    take(_MONTH_YEAR, lambda m: month(int(m[2]), _MONTHS[m[1].lower()]))
    years = {start.year for start, _ in spans}
    if len(years) == 1:
        year = years.pop()
        take(_MONTH_DAY, lambda m: day(year, _MONTHS[m[1].lower()], int(m[2])))
        take(_DAY_MONTH, lambda m: day(year, _MONTHS[m[2].lower()], int(m[1])))
    days = sorted(s for s in spans if (s[1] - s[0]).days == 1)
    if len(days) == 2 and re.search(r"\b(between|from)\b", text or "", re.I):
        spans.append((days[0][0], days[1][1]))  # "between A and B": the whole range
    return [(_local_ms(a), _local_ms(b)) for a, b in spans]


def _local_ms(day: dt.date) -> int:
    return int(time.mktime((day.year, day.month, day.day, 0, 0, 0, 0, 0, -1)) * 1000)
