"""The process's C heap (platform/heap.py): glibc takes a fixed mmap threshold and gives free pages back; a
C library without those calls is said by False, never an error."""

from __future__ import annotations

import platform

import pytest

from boardlab.platform import heap

GLIBC = platform.libc_ver()[0] == "glibc"


@pytest.mark.skipif(not GLIBC, reason="not glibc: mallopt and malloc_trim are glibc's")
def test_glibc_takes_the_threshold_and_a_trim_runs():
    assert heap.keep_large_blocks_mapped() is True
    assert heap.keep_large_blocks_mapped(heap.MMAP_THRESHOLD_BYTES * 2) is True
    heap.keep_large_blocks_mapped()  # glibc's own start again, for the rest of this test process
    junk = [bytearray(64 * 1024) for _ in range(200)]  # 12.5 MiB below the threshold: from the heap
    del junk[::2]  # holes the heap keeps
    assert heap.give_back() is True  # the holes' pages went back


def test_a_c_library_without_the_calls_is_false_not_an_error(monkeypatch):
    monkeypatch.setattr(heap, "_libc", lambda: None)
    assert heap.keep_large_blocks_mapped() is False and heap.give_back() is False
