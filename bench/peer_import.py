"""How fast `claude-mem import` takes the npm claude-mem's database, against our own export.

    python bench/peer_import.py [--copies 1250]

The npm claude-mem 13.25.3's own database (tests/fixtures/peer: 5 sessions, 6 prompts, 8
observations, 4 summaries) is grown by copying its rows `--copies` times under new session ids
(1250 copies: 28,773 rows). Then, each into a fresh data dir and without the semantic index:

  peer     claude-mem import of that database (copy of the file, read, redaction, store)
  export   claude-mem import of our own JSON Lines export of the same rows (the baseline)
  again    the peer import once more (everything already here)

CPU seconds of each `claude-mem` process (the machine is shared: wall times wander), rows a second,
and peer / export as a ratio.
"""

from __future__ import annotations

import argparse
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.peer_db import make_peer_db  # noqa: E402


def grow(path: Path, copies: int) -> int:
    """Copy the fixture's rows `copies` times under new ids; returns the rows to import."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    for i in range(copies):
        tag = (f"-{i}", f"-{i}", i)
        conn.execute("INSERT INTO sdk_sessions (content_session_id, memory_session_id, project, platform_source, user_prompt,"
                     " started_at, started_at_epoch, status) SELECT content_session_id || ?, memory_session_id || ?, project,"
                     " platform_source, user_prompt, started_at, started_at_epoch + ?, status FROM sdk_sessions WHERE id <= 5", tag)
        conn.execute("INSERT INTO user_prompts (content_session_id, prompt_number, prompt_text, created_at, created_at_epoch)"
                     " SELECT content_session_id || ?, prompt_number, prompt_text || ?, created_at, created_at_epoch + ?"
                     " FROM user_prompts WHERE id <= 6", tag)
        conn.execute("INSERT INTO observations (memory_session_id, project, type, title, subtitle, facts, narrative, concepts,"
                     " files_read, files_modified, prompt_number, created_at, created_at_epoch) SELECT memory_session_id || ?,"
                     " project, type, title || ?, subtitle, facts, narrative, concepts, files_read, files_modified,"
                     " prompt_number, created_at, created_at_epoch + ? FROM observations WHERE id <= 8", tag)
        conn.execute("INSERT INTO session_summaries (memory_session_id, project, request, investigated, learned, completed,"
                     " next_steps, notes, prompt_number, created_at, created_at_epoch) SELECT memory_session_id || ?, project,"
                     " request || ?, investigated, learned, completed, next_steps, notes, prompt_number, created_at,"
                     " created_at_epoch + ? FROM session_summaries WHERE id <= 4", tag)
    conn.execute("COMMIT")
    rows = sum(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
               for t in ("sdk_sessions", "user_prompts", "observations", "session_summaries"))
    conn.close()
    return rows


def run(data_dir: Path, *args: str) -> float:
    """CPU seconds of one `claude-mem` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "claude_mem", *args], check=True, capture_output=True, timeout=3600,
                   env={**os.environ, "CLAUDE_MEM_DATA_DIR": str(data_dir), "PYTHONPATH": str(ROOT)})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=1250)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-peer-") as tmp:
        work = Path(tmp)
        peer = make_peer_db(work / "peer" / "claude-mem.db")
        rows = grow(peer, args.copies)
        peer_s = run(work / "a", "import", str(peer), "--no-index")
        again_s = run(work / "a", "import", str(peer), "--no-index")
        run(work / "a", "export", "-o", str(work / "export.jsonl"))
        export_s = run(work / "b", "import", str(work / "export.jsonl"), "--no-index")
    print(f"{rows} rows (sessions, prompts, observations, summaries)")
    print(f"peer    {peer_s:6.2f} s CPU  {rows / peer_s:7.0f} rows/s")
    print(f"export  {export_s:6.2f} s CPU  {rows / export_s:7.0f} rows/s   (our own export of the same rows)")
    print(f"again   {again_s:6.2f} s CPU  (all already here)")
    print(f"peer / export: {peer_s / export_s:.2f}x")


if __name__ == "__main__":
    main()
