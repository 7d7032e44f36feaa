"""rt.cyclictest with the real cyclictest: schema-1 results whose percentiles follow from their histograms, a
campaign that stores every bucket, the censored tail, unprivileged users, and a clean stop on SIGINT/SIGTERM.

The probe needs root (or CAP_SYS_NICE); tests that measure are skipped with the reason elsewhere. Durations
are 1-2 s. The parsing tests at the end need no tool.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from decimal import ROUND_CEILING, Decimal
from pathlib import Path

import pytest

import boardlab
from boardlab.model.worker_result import WORKER_SCHEMA
from boardlab.workloads import rt_cyclictest

from helpers import reaped, run_cli, shared_tmp_dir

pytestmark = pytest.mark.integration

LEVELS = {"p50": 50, "p90": 90, "p99": 99, "p99_9": 99.9, "p99_99": 99.99}


def _rt_reason() -> str | None:
    if shutil.which("cyclictest") is None:
        return "cyclictest is not installed (apt-get install rt-tests)"
    return rt_cyclictest.supported()


RT_REASON = _rt_reason()
needs_rt = pytest.mark.skipif(RT_REASON is not None, reason=f"rt.cyclictest unsupported here: {RT_REASON}")


def worker(*params: str, timeout: float = 60, **kw) -> tuple[int, dict, str]:
    argv = [sys.executable, "-m", "boardlab.pyrun", "rt.cyclictest"]
    for p in params:
        argv += ["--param", p]
    proc = subprocess.run([*argv, "--json"], capture_output=True, text=True, timeout=timeout, **kw)
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else {}, proc.stderr


def independent_percentile(counts: list[int], overflow: int, q) -> tuple[int | None, int | None]:
    """(value, at_least) from the samples the histogram stands for, expanded and sorted: bucket i holds
    latencies of i us, the overflow holds latencies of at least len(counts) us (infinite here)."""
    samples = [i for i, c in enumerate(counts) for _ in range(c)] + [float("inf")] * overflow
    samples.sort()
    rank = max(1, int((Decimal(str(q)) * len(samples) / 100).to_integral_value(rounding=ROUND_CEILING)))
    x = samples[rank - 1]
    return (None, len(counts)) if x == float("inf") else (x, None)


def check_percentiles(metrics: dict, counts: list[int], overflow: int) -> None:
    for name, q in LEVELS.items():
        value, at_least = independent_percentile(counts, overflow, q)
        m = metrics[f"{name}_latency_us"]
        assert m["value"] == value, (name, m)
        assert m.get("at_least") == at_least and bool(m.get("censored")) == (at_least is not None), (name, m)


def merged(histograms: dict) -> tuple[list[int], int]:
    hs = list(histograms.values())
    counts = [sum(col) for col in zip(*(h["counts"] for h in hs), strict=True)]
    return counts, sum(h["overflow"] for h in hs)


# ---- measuring (root) ------------------------------------------------------------------------------------


@needs_rt
def pinned_to_last_cpu() -> dict:
    """Starts the worker pinned to one CPU, as the runner does (runs.cpu = "auto": the last online CPU)."""
    last = max(os.sched_getaffinity(0))
    return {"preexec_fn": lambda: os.sched_setaffinity(0, {last})}


def test_an_unpinned_worker_measures_shared_threads_that_float_over_every_cpu():
    rc, doc, err = worker("duration_s=1", "histogram_us=2000")
    assert rc == 0, err
    info = doc["info"]
    if len(os.sched_getaffinity(0)) > 1:
        assert info["measured_cpus"] == []
        assert not any(a.startswith(("--affinity", "--mainaffinity")) for a in info["command"])
        assert any("shared" in n for n in info["cpu_notes"])


def test_a_two_second_run_gives_a_schema_1_result_whose_percentiles_follow_from_its_histogram():
    rc, doc, err = worker("duration_s=2", "histogram_us=2000", **pinned_to_last_cpu())
    assert rc == 0, err
    assert (
        doc["schema"] == WORKER_SCHEMA
        and doc["ok"] is True
        and doc["supported"] is True
        and doc["errors"] == []
    )
    hist = doc["histograms"]["latency_us"]
    assert set(doc["histograms"]) == {"latency_us"}  # one thread: one histogram, no CPU suffix
    assert hist["bucket_width"] == 1 and hist["unit"] == "us" and len(hist["counts"]) == 2000
    assert hist["total"] == sum(hist["counts"]) + hist["overflow"] == doc["metrics"]["samples"]["value"]
    assert 1800 <= hist["total"] <= 2001  # 2 s at 1 ms, minus periods a late wake-up skipped
    m = doc["metrics"]
    check_percentiles(m, hist["counts"], hist["overflow"])
    assert m["overflow_samples"]["value"] == hist["overflow"]
    assert m["missed_periods"]["value"] == max(0, 2000 - hist["total"])
    nonzero = [i for i, c in enumerate(hist["counts"]) if c]
    assert m["min_latency_us"]["value"] <= nonzero[0] and m["max_latency_us"]["value"] >= nonzero[-1]
    assert m["min_latency_us"]["value"] <= m["avg_latency_us"]["value"] <= m["max_latency_us"]["value"]
    for name, metric in m.items():
        assert metric["unit"] in ("us", "samples", "periods"), name
        assert metric["higher_is_better"] is (name == "samples"), name

    info = doc["info"]
    assert info["probe"] == "cyclictest" and info["cyclictest_version"]
    assert "--mlockall" in info["command"] and "--histogram=2000" in info["command"]
    online = os.sched_getaffinity(0)
    (cpu,) = info["measured_cpus"]
    if len(online) > 1:
        assert info["housekeeping_cpu"] != cpu  # the main thread and the worker stay off the measured CPU
        assert f"--mainaffinity={info['housekeeping_cpu']}" in info["command"]
    env = info["environment"]
    for key in (
        "nohz_full",
        "rcu_nocbs",
        "isolated_cpus",
        "preempt_rt",
        "preempt_rt_evidence",
        "cpu_dma_latency",
    ):
        assert key in env, key
    assert env["preempt_rt_evidence"]  # the evidence either way, not just a flag
    assert set(info["percentiles_us"]) == set(LEVELS)


@needs_rt
def test_a_campaign_stores_every_bucket_and_the_stored_percentiles_follow_from_them(tmp_path):
    plan = tmp_path / "rt.toml"
    plan.write_text(
        'name = "rt-acceptance"\n[runs]\nrepetitions = 2\niterations = 1\n[gates]\nidle = false\n'
        '[[workloads]]\nname = "rt.cyclictest"\nparams = { duration_s = 1, histogram_us = 500 }\n'
    )
    db = tmp_path / "rt.db"
    proc = run_cli("run", str(plan), "--db", str(db), "--json", timeout=120)
    assert proc.returncode == 0, proc.stderr
    with sqlite3.connect(db) as c:
        c.row_factory = sqlite3.Row
        runs = c.execute("SELECT * FROM runs ORDER BY seq").fetchall()
        assert len(runs) == 2
        for run in runs:
            assert run["ok"] == 1 and run["error"] is None
            hists = c.execute("SELECT * FROM run_histograms WHERE run_id=?", (run["id"],)).fetchall()
            assert [h["name"] for h in hists] == ["latency_us"]
            h = hists[0]
            counts = json.loads(h["counts_json"])
            assert len(counts) == 500 and h["bucket_width"] == 1 and h["unit"] == "us"
            assert h["total"] == sum(counts) + h["overflow"]
            stored = {
                r["metric"]: r["median"]
                for r in c.execute("SELECT metric, median FROM run_metrics WHERE run_id=?", (run["id"],))
            }
            for name, q in LEVELS.items():
                value, _ = independent_percentile(counts, h["overflow"], q)
                assert stored[f"{name}_latency_us"] == value, name  # NULL when censored
            assert stored["samples"] == h["total"]
            assert run["value"] == stored["max_latency_us"]  # the cell's metric is the primary one


@needs_rt
def test_a_histogram_too_small_for_the_latencies_reports_at_least_its_limit_never_a_number():
    rc, doc, err = worker("duration_s=1", "histogram_us=1", "threads=2")
    assert rc == 0, err
    hists = doc["histograms"]
    assert len(hists) == 2 and all(len(h["counts"]) == 1 for h in hists.values())
    counts, overflow = merged(hists)
    assert overflow > 0.9 * (sum(counts) + overflow)  # nearly every wake-up takes 1 us or more
    check_percentiles(doc["metrics"], counts, overflow)
    p99 = doc["metrics"]["p99_latency_us"]
    assert p99 == {"unit": "us", "higher_is_better": False, "value": None, "censored": True, "at_least": 1}
    assert doc["info"]["percentiles_us"]["p99"] == ">= 1"
    assert any("overflow" in w for w in doc["info"]["warnings"])
    assert doc["metrics"]["max_latency_us"]["value"] >= 1  # cyclictest's own max covers the overflow


def cyclictest_children(parent: int) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            comm_end = stat.rindex(")")
            comm, ppid = stat[stat.index("(") + 1 : comm_end], int(stat[comm_end + 2 :].split()[1])
            if ppid == parent and comm == "cyclictest":
                pids.append(int(entry))
    return pids


@needs_rt
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_to_the_worker_stops_cyclictest_and_prints_no_half_result(sig):
    argv = [sys.executable, "-m", "boardlab.pyrun", "rt.cyclictest", "--param", "duration_s=60", "--json"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with reaped(proc):
        deadline = time.monotonic() + 15
        children: list[int] = []
        while not children and time.monotonic() < deadline:
            time.sleep(0.05)
            children = cyclictest_children(proc.pid)
        assert children, "cyclictest never started"
        (pid,) = children
        time.sleep(0.3)  # let it reach its measuring loop
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=15)
    assert proc.returncode == 128 + sig, err
    assert out == ""  # nothing on stdout: no half result for the runner to store
    assert f"stopped by {signal.Signals(sig).name}" in err
    assert not os.path.exists(f"/proc/{pid}")  # stopped and reaped, checked by its PID


# ---- without privileges ----------------------------------------------------------------------------------


@pytest.fixture
def readable_site():
    """A copy of the installed boardlab package in a directory user nobody can read: the clone's own site
    directory may sit under a 0700 home (a clone in /root), where nobody cannot import it. Removed after."""
    site = shared_tmp_dir()
    try:
        shutil.copytree(Path(boardlab.__file__).resolve().parent, site / "boardlab")
        for path in [site, *site.rglob("*")]:
            mode = path.stat().st_mode
            path.chmod(mode | 0o444 | (0o111 if path.is_dir() or mode & 0o100 else 0))
        yield str(site)
    finally:
        shutil.rmtree(site, ignore_errors=True)


def _system_python() -> str | None:
    """An interpreter a user other than root can execute (the venv's may live under /root)."""
    for cand in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.access(cand, os.X_OK):
            out = subprocess.run(
                [cand, "-c", "import sys; print(sys.version_info >= (3, 11))"], capture_output=True, text=True
            )
            if out.stdout.strip() == "True":
                return cand
    return None


as_root = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv"
)
NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


@as_root
def test_an_unprivileged_user_gets_unsupported_with_the_fix_never_a_half_result(readable_site):
    python = _system_python()
    if python is None:
        pytest.skip("no Python >= 3.11 outside /root that user nobody could run")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": readable_site}
    argv = [*NOBODY, python, "-m", "boardlab.pyrun", "rt.cyclictest", "--param", "duration_s=1", "--json"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env, cwd="/")
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["supported"] is False and doc["ok"] is False
    assert "SCHED_FIFO" in doc["reason"] and "uid 65534" in doc["reason"] and "run as root" in doc["reason"]
    assert doc["metrics"] == {} and not doc.get("histograms")


@as_root
def test_when_cyclictest_itself_refuses_the_run_is_unsupported_with_its_message(readable_site):
    """Past supported() (as if the check had passed): cyclictest exits 1 without JSON; run() says why."""
    if shutil.which("cyclictest") is None:
        pytest.skip("cyclictest is not installed")
    python = _system_python()
    if python is None:
        pytest.skip("no Python >= 3.11 outside /root that user nobody could run")
    code = (
        "import json; from boardlab.workloads import rt_cyclictest as m; "
        "from boardlab.workloads.params import coerce_params; "
        "print(json.dumps(m.run(coerce_params(m.SPEC, ['duration_s=1']))))"
    )
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": readable_site}
    proc = subprocess.run(
        [*NOBODY, python, "-c", code], capture_output=True, text=True, timeout=60, env=env, cwd="/"
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["supported"] is False and result["ok"] is False and result["metrics"] == {}
    assert "Unable to change scheduling policy" in result["reason"]


@as_root
def test_root_without_cap_sys_nice_is_unsupported_too():
    argv = ["setpriv", "--bounding-set=-all", "--inh-caps=-all", sys.executable, "-m", "boardlab.pyrun"]
    proc = subprocess.run(
        [*argv, "rt.cyclictest", "--param", "duration_s=1", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1 and doc["supported"] is False
    assert "CAP_SYS_NICE no" in doc["reason"] and "uid 0" in doc["reason"]


def test_without_cyclictest_the_workload_is_unsupported_and_names_the_package():
    env = {**os.environ, "PATH": "/nonexistent"}  # neither cyclictest nor rtla can be found
    rc, doc, err = worker("duration_s=1", env=env)
    assert rc == 1 and doc["supported"] is False, err
    assert "cyclictest is not installed: apt-get install rt-tests" in doc["reason"]
    assert doc["metrics"] == {} and not doc.get("histograms")


# ---- the timerlat probe ------------------------------------------------------------------------------------


@needs_rt
def test_the_timerlat_probe_runs_or_says_exactly_why_not():
    from boardlab.platform.rt import tracer_support

    rc, doc, err = worker("probe=timerlat", "duration_s=1", "histogram_us=200")
    support = tracer_support("/", "timerlat")
    if support.available and shutil.which("rtla"):
        assert rc == 0 and doc["ok"], err
        check_percentiles(
            doc["metrics"], *merged({k: v for k, v in doc["histograms"].items() if "irq" not in k})
        )
    else:
        assert rc == 1 and doc["supported"] is False and doc["metrics"] == {}
        assert "timerlat" in doc["reason"] or "rtla" in doc["reason"]
        if support.available is False:
            assert "CONFIG_TIMERLAT_TRACER" in doc["reason"]


# ---- parsing (no tool needed) ------------------------------------------------------------------------------

# research/stressors-rt.md 2.2: a real --json file, trimmed; note the keys ending in ':'
CYCLICTEST_JSON = """{
  "file_version": 1,
  "cmdline:": "cyclictest -m -S -p 95 -i 1000 -D 5 -q -h 200 --json=ct.json",
  "rt_test_version:": "2.40",
  "start_time": "Sat, 21 Nov 2026 19:28:05 +0000",
  "end_time": "Sat, 21 Nov 2026 19:28:10 +0000",
  "return_code": 0,
  "sysinfo": {"sysname": "Linux", "release": "6.18.44", "machine": "x86_64", "realtime": 0},
  "num_threads": 3,
  "resolution_in_ns": 0,
  "thread": {
    "0": {"histogram": {"4": 7, "5": 32, "195": 1}, "cycles": 45, "min": 4, "max": 8911, "avg": 34.06,
          "cpu": 0, "node": -1},
    "1": {"histogram": {"3": 10}, "cycles": 10, "min": 3, "max": 3, "avg": 3.00, "cpu": 1, "node": -1},
    "2": {"histogram": {}, "cycles": 0, "min": 0, "max": 0, "avg": -nan, "cpu": 1, "node": -1}
  }
}"""


def test_cyclictest_json_with_stray_colons_and_nan_is_read():
    doc = rt_cyclictest.parse_cyclictest_json(CYCLICTEST_JSON)
    assert doc["cmdline"].startswith("cyclictest") and doc["rt_test_version"] == "2.40"
    assert doc["thread"]["2"]["avg"] is None
    t0, t1, t2 = rt_cyclictest.cyclictest_threads(doc, 200, 5, 1000)
    assert (t0.name, t1.name, t2.name) == ("latency_us.cpu0", "latency_us.cpu1.t1", "latency_us.cpu1.t2")
    assert len(t0.counts) == 200 and t0.counts[4] == 7 and t0.counts[195] == 1
    assert t0.overflow == 45 - 40 == 5  # no overflow field in the JSON: cycles minus the in-range total
    assert (t0.min_us, t0.avg_us, t0.max_us) == (4, 34.06, 8911)
    assert t0.missed_periods == 5000 - 45
    assert t2.total == 0 and t2.avg_us is None


def test_a_histogram_holding_more_than_cycles_is_refused():
    doc = rt_cyclictest.parse_cyclictest_json(CYCLICTEST_JSON.replace('"cycles": 10', '"cycles": 9'))
    with pytest.raises(ValueError, match="cycles"):
        rt_cyclictest.cyclictest_threads(doc, 200, 5, 1000)


# the layout of `rtla timerlat hist` (tools/tracing/rtla/src/timerlat_hist.c), CPUs 1 and 3, -E 10
TIMERLAT_HIST = """\
# RTLA timerlat histogram
# Time unit is microseconds (us)
# Duration:   0 00:00:02
Index   IRQ-001   Thr-001   IRQ-003   Thr-003
0           900         0       800         0
1            95       850       150       700
2             5       140        40       280
7             0         9         9        15
over:         0         1         1         5
count:     1000      1000      1000      1000
min:          0         1         0         1
avg:          0         1         0         2
max:          5        31        12       250
ALL:        IRQ       Thr
count:     2000      2000
min:          0         1
avg:          0         1
max:         12       250
"""


def test_rtla_timerlat_hist_is_read_per_cpu_and_context():
    cols = rt_cyclictest.parse_timerlat_hist(TIMERLAT_HIST, 10)
    assert [(c.kind, c.cpu) for c in cols] == [("irq", 1), ("thr", 1), ("irq", 3), ("thr", 3)]
    thr3 = cols[3]
    assert thr3.counts[:3] == [0, 700, 280] and thr3.counts[7] == 15 and len(thr3.counts) == 10
    assert (thr3.overflow, thr3.count, thr3.min_us, thr3.avg_us, thr3.max_us) == (5, 1000, 1, 2, 250)
    t = thr3.as_thread("latency_us.cpu3")
    assert t.total == 1000 and t.overflow == 5


# ---- the platform readers, on fixture trees (no tool needed) -----------------------------------------------


def tree(tmp_path: Path, files: dict[str, bytes | str]) -> Path:
    for rel, data in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data if isinstance(data, bytes) else data.encode())
    return tmp_path


def test_timerlat_support_comes_from_tracefs_else_from_the_kernel_config(tmp_path):
    import gzip

    from boardlab.platform.rt import tracer_support

    mounted = tree(
        tmp_path / "a", {"sys/kernel/tracing/available_tracers": "timerlat osnoise function nop\n"}
    )
    s = tracer_support(mounted, "timerlat")
    assert s.available is True and "available_tracers" in s.evidence
    assert tracer_support(mounted, "hwlat").available is False
    config = gzip.compress(b"CONFIG_FTRACE=y\n# CONFIG_TIMERLAT_TRACER is not set\n")
    unmounted = tree(tmp_path / "b", {"sys/kernel/tracing/.keep": "", "proc/config.gz": config})
    s = tracer_support(unmounted, "timerlat")
    assert s.available is False and "CONFIG_TIMERLAT_TRACER is not set in /proc/config.gz" in s.evidence
    s = tracer_support(tree(tmp_path / "c", {"proc/cmdline": "quiet"}), "timerlat")
    assert s.available is None and "mount -t tracefs" in s.evidence


def test_cpu_dma_latency_and_the_preempt_dynamic_mode_are_read_with_their_source(tmp_path):
    import gzip
    import struct

    from boardlab.platform.rt import preempt_dynamic_mode, read_cpu_dma_latency

    root = tree(
        tmp_path,
        {
            "dev/cpu_dma_latency": struct.pack("<i", 2_000_000_000),
            "proc/cmdline": "console=ttyS0 quiet",
            "proc/config.gz": gzip.compress(b"CONFIG_PREEMPT_DYNAMIC=y\nCONFIG_PREEMPT_NONE=y\n"),
        },
    )
    dma = read_cpu_dma_latency(root)
    assert dma.value_us == 2_000_000_000 and dma.constrained is False and "no constraint" in dma.describe()
    assert preempt_dynamic_mode(root) == (
        "none",
        "CONFIG_PREEMPT_NONE=y is the boot default (no preempt= parameter; debugfs not mounted)",
    )
    (root / "proc/cmdline").write_text("quiet preempt=full")
    assert preempt_dynamic_mode(root)[0] == "full"
    tree(root, {"sys/kernel/debug/sched/preempt": "none voluntary (lazy) full\n"})
    assert preempt_dynamic_mode(root)[0] == "lazy"
    (root / "dev/cpu_dma_latency").write_bytes(struct.pack("<i", 0))
    assert read_cpu_dma_latency(root).constrained is True
    assert read_cpu_dma_latency(tmp_path / "nowhere").value_us is None
