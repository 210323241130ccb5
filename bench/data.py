"""Where the benchmarks find their transcripts: the real ones beside the checkout
(../shared/data/transcripts) when they are there, else the project's own fixture."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from claude_mem.replay import find_transcripts

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data" / "transcripts"
FIXTURES = ROOT / "tests" / "fixtures" / "transcripts"


def transcripts(given: Sequence[Path] = ()) -> list[Path]:
    if given:
        return list(given)
    return (find_transcripts(SHARED) if SHARED.is_dir() else []) or find_transcripts(FIXTURES)
