"""glibc's malloc told to give memory back, for the memory service (standard library only).

glibc serves a block of 128 KiB or more with mmap, and returns it to the system when it is
freed; but each such free raises that threshold to the freed block's size (up to 32 MiB), after
which large blocks come from the heap and the threads' arenas, which keep what was freed. In the
memory service every inference allocates its tensors afresh (onnxruntime's arena is off: it kept
each batch's peak), as do Chroma's writes and queries, from a dozen threads: measured with
bench/footprint.py (3 sessions), the service held 390-430 MiB at its peak with the threshold
moving, 325-337 MiB with it fixed. Setting the threshold once stops the adjustment, and nothing
computed changes: the same code gets the same bytes, from another place (a test compares the
vectors). What is freed in smaller blocks stays in the arenas until `release_free_memory`
(malloc_trim), which the service calls once idle (service/memory.py).
"""

from __future__ import annotations

from typing import Any

M_MMAP_THRESHOLD = -3  # glibc's malloc.h
LARGE_BLOCK = 128 * 1024  # glibc's own initial threshold, kept for good


def _glibc(name: str) -> Any:
    """A function of the process's C library, or None where it has none by that name (macOS, musl)."""
    import ctypes  # here: a second service, finding the lock taken, exits before any import it can skip

    try:
        return getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None


def give_large_blocks_back() -> bool:
    """Serve blocks of LARGE_BLOCK and more from mmap for the life of this process, so that
    freeing them returns them. False where the C library has no glibc-style mallopt (macOS)."""
    import ctypes

    mallopt = _glibc("mallopt")
    if mallopt is None:
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return bool(mallopt(M_MMAP_THRESHOLD, LARGE_BLOCK))


def release_free_memory() -> bool:
    """Return the heap's free pages to the system (malloc_trim); False where that cannot be done."""
    trim = _glibc("malloc_trim")
    if trim is None:
        return False
    trim(0)
    return True
