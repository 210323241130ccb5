"""The log's tail is read from the end of the file, and is exactly the file's last lines."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from claude_mem.logs import read_tail


@settings(max_examples=60, deadline=None)
@given(lengths=st.lists(st.integers(0, 3000), max_size=400), wanted=st.integers(1, 450))
def test_tail_is_the_last_lines(tmp_path_factory, lengths: list[int], wanted: int) -> None:  # noqa: ANN001
    folder = tmp_path_factory.mktemp("logs")
    lines = [f"{i}:" + "x" * n for i, n in enumerate(lengths)]
    (folder / "claude-mem.log").write_text("".join(line + "\n" for line in lines))
    assert read_tail(str(folder), wanted) == lines[-wanted:]


def test_no_log_is_no_lines(tmp_path: Path) -> None:
    assert read_tail(str(tmp_path), 10) == []
