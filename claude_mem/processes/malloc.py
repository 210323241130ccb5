"""glibc's malloc told to give large blocks back, for the memory service (standard library only).

glibc serves a block of 128 KiB or more with mmap, and returns it to the system when it is
freed; but each such free raises that threshold to the freed block's size (up to 32 MiB), after
which large blocks come from the heap and the threads' arenas, which keep what was freed. In the
memory service every inference allocates its tensors afresh (onnxruntime's arena is off: it kept
each batch's peak), as do Chroma's writes and queries, from a dozen threads: measured with
bench/footprint.py (3 sessions), the service held 390-430 MiB at its peak with the threshold
moving, 325-337 MiB with it fixed. Setting the threshold once stops the adjustment, and nothing
computed changes: the same code gets the same bytes, from another place (a test compares the
vectors).
"""

from __future__ import annotations

M_MMAP_THRESHOLD = -3  # glibc's malloc.h
LARGE_BLOCK = 128 * 1024  # glibc's own initial threshold, kept for good


def give_large_blocks_back() -> bool:
    """Serve blocks of LARGE_BLOCK and more from mmap for the life of this process, so that
    freeing them returns them. False where the C library has no glibc-style mallopt (macOS)."""
    import ctypes  # here: a second service, finding the lock taken, exits before any import it can skip

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return bool(mallopt(M_MMAP_THRESHOLD, LARGE_BLOCK))
