"""Under `ulimit -v` every thread shares one malloc arena (cli._one_malloc_arena_under_an_address_limit): a
thread's own arena reserves 64 MiB of address space, and where that does not fit glibc makes each of that
thread's allocations an mmap of its own (a report of 10^5 runs took 40 s instead of 2 under the limit of
test_report_memory.py). Checked by glibc's own count of its arenas, after a thread has allocated."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.spawns  # starts processes: not in make test-unit

CHILD = r"""
import ctypes, resource, sqlite3, sys, threading
if sys.argv[1] == "limited":  # far above what the child uses: only the limit's presence matters
    resource.setrlimit(resource.RLIMIT_AS, (8 << 30, resource.RLIM_INFINITY))
from boardlab.cli import _one_malloc_arena_under_an_address_limit
_one_malloc_arena_under_an_address_limit()

def work():
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t(x)")
    conn.executemany("INSERT INTO t VALUES (?)", ((str(i) * 20,) for i in range(20000)))
    conn.close()

t = threading.Thread(target=work)
t.start()
t.join()
ctypes.CDLL(None).malloc_stats()  # glibc: one "Arena N:" block per arena, on stderr
"""


def _arenas(mode: str) -> int:
    proc = subprocess.run([sys.executable, "-c", CHILD, mode], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return sum(line.startswith("Arena ") for line in proc.stderr.splitlines())


def test_threads_share_one_arena_under_an_address_limit_and_not_without_one():
    unlimited = _arenas("unlimited")
    if unlimited == 0:
        pytest.skip("this C library's malloc_stats does not list arenas (not glibc)")
    assert unlimited >= 2  # the control: a thread gets an arena of its own without a limit
    assert _arenas("limited") == 1
