"""The leak detector the privacy tests rely on (tests/planted.py): a detector that finds nothing
would make every "no leak" assertion pass."""

from __future__ import annotations

import os
from pathlib import Path

from tests.planted import LEAKS, leaks_in, raw_leaks, snippet


def test_raw_leaks_finds_every_kind_in_any_file_and_nothing_in_clean_bytes(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "model.bin").write_bytes(os.urandom(1 << 20))
    assert raw_leaks(tmp_path) == []
    planted = snippet(424242)
    assert len(leaks_in(planted)) == len(LEAKS)
    # In the middle of binary data, in a nested folder: the bytes are searched, whatever the file.
    (tmp_path / "logs" / "blob").write_bytes(os.urandom(4096) + planted.encode() + os.urandom(4096))
    found = raw_leaks(tmp_path)
    assert len(found) == len(LEAKS) and all(f.startswith("blob: ") for f in found), found
    assert raw_leaks(tmp_path, ["call me at 555-0199"]) == [*found, "blob: call me at 555-0199"]
