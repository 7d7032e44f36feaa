"""The fairness pieces of bench/bench_scimark.py: SciMark's Stopwatch retimed to the wall clock boardlab-kern
uses, and the callgrind reading behind the instruction ratio (a real callgrind run on a tiny program)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import bench_scimark  # noqa: E402

pytestmark = pytest.mark.spawns  # starts processes: not in make test-unit

STOPWATCH = """#include <stdlib.h>
#include "Stopwatch.h"

double seconds() {
\treturn ((double) clock()) / (double) CLOCKS_PER_SEC;
}
"""


def test_stopwatch_reads_monotonic_raw_instead_of_cpu_time():
    out = bench_scimark.wall_stopwatch(STOPWATCH)
    assert "clock()" not in out
    assert "clock_gettime(CLOCK_MONOTONIC_RAW" in out
    assert out.startswith("#define _GNU_SOURCE")  # before any include, or CLOCK_MONOTONIC_RAW is hidden


def test_an_unknown_stopwatch_is_refused_rather_than_left_on_cpu_time():
    with pytest.raises(SystemExit, match="cannot retime"):
        bench_scimark.wall_stopwatch(STOPWATCH.replace("clock()", "time(NULL)"))


def test_without_sources_it_says_skipped(monkeypatch, capsys):
    monkeypatch.delenv("BOARDLAB_SCIMARK2_SRC", raising=False)
    assert bench_scimark.main([]) == 0
    assert "skipped" in capsys.readouterr().out


def test_fewer_than_eight_pairs_is_bad_input(capsys):
    assert bench_scimark.main(["--scimark-src", "/nonexistent", "--pairs", "7"]) == 2
    assert "--pairs" in capsys.readouterr().err


@pytest.mark.skipif(not shutil.which("valgrind") or not shutil.which("cc"), reason="needs valgrind and cc")
def test_callgrind_counts_instructions_and_calls_of_one_function(tmp_path):
    src = tmp_path / "t.c"
    src.write_text(
        "#include <stdlib.h>\n"
        "volatile double s;\n"
        "__attribute__((noinline)) void work(int n) { for (int i = 0; i < n; i++) s += i; }\n"
        "int main(int c, char **v) { int k = atoi(v[1]); for (int i = 0; i < k; i++) work(1000); "
        "return 0; }\n"
    )
    exe = tmp_path / "t"
    subprocess.run(["cc", "-O2", "-o", str(exe), str(src)], check=True)
    ir3, calls3, _ = bench_scimark.callgrind([str(exe), "3"], "work", tmp_path)
    ir6, calls6, _ = bench_scimark.callgrind([str(exe), "6"], "work", tmp_path)
    assert (calls3, calls6) == (3, 6)
    # Only the inside of work() is collected: twice the calls, twice the instructions (a loop of 1000).
    assert ir3 >= 3 * 1000 * 3
    assert ir6 == 2 * ir3
