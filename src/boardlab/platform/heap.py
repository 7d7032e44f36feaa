"""This process's own C heap (the C library's malloc): how a report of a large campaign gives back the memory
of the cells it has let go.

Why: glibc serves a block above its mmap threshold (128 KiB at start) with its own mapping, returned to the
kernel when freed, but it raises the threshold to the size of each such block freed (up to 32 MiB). After
the first cell's columns were let go (2.4 MB each at 300,000 runs), every later column came from the heap,
whose free space the kernel gets back only from its top: the report of a campaign of three cells of 294,118
runs peaked at 151 MB resident where its live data was 70 MB. Keeping the threshold where it starts keeps
columns in mappings; `give_back` returns the heap's free pages after a cell's tables go (glibc's
malloc_trim). A C library without these calls (musl) keeps its own policy: both then return False.
"""

from __future__ import annotations

import functools

M_MMAP_THRESHOLD = -3  # mallopt's parameter number (glibc malloc.h)
MMAP_THRESHOLD_BYTES = 128 * 1024  # glibc's own starting value


@functools.cache
def _libc():
    """The C library's malloc controls, or None where it has none (looked up once: a ctypes lookup is tens of
    microseconds, and `give_back` runs once per cell)."""
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None
    except OSError:  # no C library to load (a static build)
        return None


def keep_large_blocks_mapped(threshold_bytes: int = MMAP_THRESHOLD_BYTES) -> bool:
    """Fixes the mmap threshold at `threshold_bytes` for the rest of the process (it no longer rises as
    blocks are freed); whether the C library took it."""
    libc = _libc()
    return bool(libc is not None and libc.mallopt(M_MMAP_THRESHOLD, threshold_bytes))


def give_back() -> bool:
    """Returns the heap's free pages to the kernel; whether any were."""
    libc = _libc()
    return bool(libc is not None and libc.malloc_trim(0))
