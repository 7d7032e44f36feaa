"""The report of a large campaign renders in bounded address space (docs/results.md "Scale and memory").

The goal is a 10^6-run campaign's report under `ulimit -v` 512 MiB (a 512 MB board). Here: 10^5 runs, with
the limit scaled to the runs: BASE (the interpreter, boardlab's imports, SQLite: 31-34 MiB of address space
measured at 10^3 runs here, doubled for other machines' libraries) plus (512 MiB - BASE) x runs / 10^6.
Before a cell's runs were held as typed columns (analysis/runs.py), a record per run took about 600 bytes:
the HTML report of 10^5 runs (108 MB resident) failed here with a MemoryError; the Markdown one (71 MB)
fitted, but at 10^6 runs it peaked at 433 MB resident (103 MB now).
"""

from __future__ import annotations

import resource
import subprocess
import sys

import pytest

from helpers import make_campaign_db_bulk

RUNS = 100_000
MIB = 1 << 20
AT_A_MILLION = 512 * MIB
BASE = 64 * MIB
LIMIT = BASE + (AT_A_MILLION - BASE) * RUNS // 10**6  # 108.8 MiB


def _limited():
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *argv], preexec_fn=_limited, capture_output=True, text=True, timeout=600
    )


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    return make_campaign_db_bulk(tmp_path_factory.mktemp("memory") / "campaign of 100k runs.db", RUNS)


def test_the_limit_is_enforced_here():
    """The control: under the same limit, holding 200 MiB fails (so a report that renders did fit)."""
    proc = _run("-c", "x = bytearray(200 * 2**20)")
    assert proc.returncode != 0 and "MemoryError" in proc.stderr


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_the_report_of_100k_runs_renders_in_a_proportional_address_space(campaign, tmp_path, fmt):
    out = tmp_path / f"report.{fmt}"
    proc = _run("-m", "boardlab", "report", "--db", str(campaign), "--format", fmt, "-o", str(out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "99994 runs" in proc.stdout and "MemoryError" not in proc.stderr
    text = out.read_text()
    assert "scimark.fft" in text and "cpu-stress" in text
    if fmt == "html":  # the monitor's plots, reduced to the points drawn
        assert "<title>CPU load</title>" in text and "<title>Temperature</title>" in text
