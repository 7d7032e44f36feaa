"""The monitor of a program run measures the program, not the Python worker that launches it: a shell
one-liner whose child process holds 96 MiB and spins for 0.8 s of CPU, run as a campaign's `program` workload,
started by the runner itself (no worker: its figure is a rusage one) and, the same with a figure read from its
output, by the launcher worker. The stored worker.cpu_pct series adds up to the program's CPU time (wait4's
user + sys of the same run), and the stored worker.rss_kib peak to the child's memory, without the launcher's
own."""

from __future__ import annotations

import json
import os
import shlex
import sys
import time

import pytest

from boardlab.store import Store

from helpers import RESULT, rows, run_cli, tagged_env

pytestmark = pytest.mark.integration

CHILD = (
    "import time; b = bytearray(b'x') * (96 << 20); t = time.process_time(); "
    "any(time.process_time() - t > 0.8 for _ in iter(int, 1))"
)
PLAN = f"""\
name = "program-tree"
[runs]
repetitions = 2
[gates]
idle = false
[[workloads]]
kind = "program"
name = "sh.child"
argv = ["sh", "-c", "{shlex.quote(sys.executable)} -c \\"{CHILD}\\" & wait"]
metric = {{ rusage = "cpu_s" }}
timeout_s = 120
[[workloads]]
kind = "program"
name = "sh.child.launched"
argv = ["sh", "-c", "{shlex.quote(sys.executable)} -c \\"{CHILD}\\" & wait; echo done=1"]
# a figure read from the output: only the launcher worker reads it
metric = {{ regex = "done=(?P<done>1)", name = "done", unit = "count", better = "higher" }}
timeout_s = 120
"""


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("program tree")
    (tmp / "tmp").mkdir()
    (tmp / "plan.toml").write_text(PLAN)
    db = tmp / "r.db"
    env = tagged_env(
        f"program-tree-{os.getpid()}-{time.time()}",
        BOARDLAB_STATE_DIR=str(tmp / "state"),
        TMPDIR=str(tmp / "tmp"),
    )
    proc = run_cli("run", str(tmp / "plan.toml"), "--db", str(db), timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr
    return db


def _runs(db) -> list[tuple[int, dict, dict]]:
    """(run id, monitor summary, the program's wait4 figures) of each valid run, two by the runner itself and
    two by the launcher worker."""
    out, tools = [], []
    query = f"SELECT r.id, r.monitor_json, w.worker_json FROM runs r{RESULT} WHERE r.valid = 1 ORDER BY r.seq"
    for run_id, mon, worker in rows(db, query):
        figures = dict(rows(db, f"SELECT metric, median FROM run_metrics WHERE run_id = {run_id}"))
        out.append((run_id, json.loads(mon), figures))
        tools.append(json.loads(worker)["tool"])
    assert sorted(tools) == ["boardlab.pyrun"] * 2 + ["boardlab.runner"] * 2
    return out


def test_the_stored_cpu_is_the_childs_cpu_time(campaign):
    for run_id, mon, figures in _runs(campaign):
        with Store.open(campaign, create=False) as store:  # the samples are packed per run (run_series)
            series = sorted(
                (s["t_ns"], s["value"]) for s in store.series(run_id) if s["source"] == "worker.cpu_pct"
            )
        monitored_s, prev_ns = 0.0, 0
        for t_ns, pct in series:  # each value covers the interval since the sample before
            monitored_s += pct / 100 * (t_ns - prev_ns) / 1e9
            prev_ns = t_ns
        program_s = figures["user_s"] + figures["sys_s"]  # wait4 on the sh and its reaped child
        assert program_s >= 0.75
        # lost at most the last interval before the worker ended (0.1 s), plus a tick per sample rounding
        assert program_s - 0.25 <= monitored_s <= program_s + 0.15, (monitored_s, program_s)
        assert mon["worker_tree"]["processes_max"] >= 2  # the sh and its child


def test_the_stored_memory_is_the_childs_without_the_launcher(campaign):
    for _, mon, figures in _runs(campaign):
        peak_kib = mon["worker.rss_kib_max"]
        assert peak_kib >= 96 << 10  # the child's bytearray, resident
        # the sh and its child, at most: a launcher's own resident set (some 16 MiB) is not in it
        assert peak_kib <= figures["maxrss_kib"] + 4096, (peak_kib, figures["maxrss_kib"])


def test_a_launcher_is_left_out_and_a_program_started_by_the_runner_is_the_worker(campaign):
    launched = [mon["worker_tree"]["launcher_left_out"] for _, mon, _ in _runs(campaign)]
    assert sorted(launched) == [False, False, True, True]
