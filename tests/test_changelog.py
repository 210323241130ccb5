"""CHANGELOG.md says what changed in each release, and its newest entry is the version every part
of the package reports (pyproject, `claude-mem --version`, the plugin's manifest)."""

from __future__ import annotations

import datetime as dt
import json
import re
import tomllib

from claude_mem import __version__
from tests.conftest import ROOT

CHANGELOG = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
RELEASE = re.compile(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$")
KINDS = ("Added", "Changed", "Deprecated", "Removed", "Fixed", "Security")  # Keep a Changelog 1.1.0's


def releases() -> list[tuple[str, dt.date, str]]:
    """(version, date, body) of each `## [X.Y.Z] - DATE` section, in the file's order."""
    parts = re.split(r"^(## .*)$", CHANGELOG, flags=re.M)
    found = []
    for heading, body in zip(parts[1::2], parts[2::2], strict=True):
        match = RELEASE.match(heading)
        assert match, f"not a release heading: {heading!r} (an Unreleased section waits until it has a version)"
        found.append((match.group(1), dt.date.fromisoformat(match.group(2)), body))
    return found


def test_the_newest_entry_is_the_version_the_package_reports() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    plugin = json.loads((ROOT / ".claude-plugin" / "plugin.json").read_text(encoding="utf-8"))["version"]
    newest = releases()[0][0]
    assert newest == pyproject == __version__ == plugin, (newest, pyproject, __version__, plugin)


def test_releases_run_newest_first_each_saying_what_changed() -> None:
    found = releases()
    assert len(found) >= 2
    versions = [tuple(int(n) for n in version.split(".")) for version, _, _ in found]
    assert versions == sorted(versions, reverse=True) and len(set(versions)) == len(versions)
    assert [date for _, date, _ in found] == sorted((date for _, date, _ in found), reverse=True)
    for version, _, body in found:
        kinds = re.findall(r"^### (.+)$", body, re.M)
        assert kinds and set(kinds) <= set(KINDS), (version, kinds)
        assert re.search(r"^- \S", body, re.M), version


def test_its_links_resolve() -> None:
    for target in re.findall(r"\]\(([^)\s#]+)[^)]*\)", CHANGELOG):
        assert re.match(r"https?://", target) or (ROOT / target).exists(), target
