"""The runner's per-run machinery: collect() (pipes, pidfd, timeout, rusage), the pinned spawn, one monitor
thread serving consecutive runs (the last sample the caller's), and where each thread of a campaign runs."""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time

import pytest

from boardlab.monitor.sampler import Monitor, _Job
from boardlab.platform.spawn import collect, spawn

pytestmark = pytest.mark.spawns  # starts processes: not in make test-unit


def closed(proc: subprocess.Popen) -> None:
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()


def test_collect_reads_both_pipes_to_their_end_and_reaps_with_the_workers_own_rusage():
    big = 300_000  # more than a pipe holds: both pipes must be drained while the worker runs
    proc = spawn(["sh", "-c", f"head -c {big} /dev/zero; echo done >&2; exit 3"])
    out, err, code, rusage, killed = collect(proc, 30)
    closed(proc)
    assert (len(out), err, code, killed) == (big, b"done\n", 3, False)
    assert proc.returncode == 3 and rusage["maxrss_kib"] > 0 and rusage["utime_us"] >= 0


def test_collect_kills_a_hung_worker_with_its_group_at_the_timeout():
    proc = spawn(["sh", "-c", "sleep 60 & sleep 60; echo never"])
    t0 = time.monotonic()
    out, _, code, _, killed = collect(proc, 0.3)
    closed(proc)
    assert killed and code == -9 and out == b""
    assert time.monotonic() - t0 < 10
    with pytest.raises(ProcessLookupError):  # the background sleep of its group went with it
        for _ in range(100):
            os.killpg(proc.pid, 0)
            time.sleep(0.05)


def test_the_worker_runs_on_its_cpu_and_the_spawning_thread_goes_back_to_its_own():
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        pytest.skip("needs two CPUs: the worker's and another")
    target, home = allowed[-1], allowed[0]
    seen: dict = {}

    def spawner() -> None:  # a thread of its own, pinned elsewhere, as the runner keeps off the worker's CPU
        os.sched_setaffinity(0, {home})
        proc = spawn(["sleep", "5"], cpus={target}, self_reaping=True)
        seen["thread_after_spawn"] = os.sched_getaffinity(0)
        seen["worker"] = os.sched_getaffinity(proc.pid)  # inherited at the fork: no race
        proc.kill()
        collect(proc, 30)
        closed(proc)

    t = threading.Thread(target=spawner)
    t.start()
    t.join()
    assert seen == {"thread_after_spawn": {home}, "worker": {target}}


def test_one_monitor_thread_serves_consecutive_runs_and_ends_on_close():
    mon = Monitor("/", interval_s=0.05)
    outputs, threads = [], set()
    for _ in range(3):
        proc = subprocess.Popen(["sleep", "0.2"])
        mon.start(proc.pid, None)
        threads.add(mon._thread)
        proc.wait()
        outputs.append(mon.stop())
    assert len(threads) == 1 and all(o.summary["samples"] >= 1 for o in outputs)
    assert len({id(o) for o in outputs}) == 3  # each run its own output
    (thread,) = threads
    mon.close()
    assert thread is not None and not thread.is_alive()


def test_close_ends_the_thread_of_a_job_nobody_stopped():
    """A stop (SIGTERM) between start() and the runner's record of it leaves the job unstopped: close() must
    still end the sampling thread rather than wait for it for ever (a fresh-machine run hung there)."""
    mon = Monitor("/", interval_s=0.05)
    proc = subprocess.Popen(["sleep", "0.2"])
    mon.start(proc.pid, None)
    thread = mon._thread
    proc.wait()
    closer = threading.Thread(target=mon.close, daemon=True)
    closer.start()
    closer.join(10)
    assert not closer.is_alive(), "close() waited for a thread sampling a job nobody stopped"
    assert thread is not None and not thread.is_alive()


def test_without_pidfd_a_timer_thread_enforces_the_timeout(monkeypatch):
    def no_pidfd(pid: int) -> int:  # Linux before 5.3
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(os, "pidfd_open", no_pidfd)
    proc = spawn(["sh", "-c", "echo started; sleep 60"])
    out, _, code, _, killed = collect(proc, 0.3)
    closed(proc)
    assert (out, code, killed) == (b"started\n", -9, True)
    proc = spawn(["sh", "-c", "echo fine; exit 4"])
    assert collect(proc, 30)[:3] == (b"fine\n", b"", 4)
    closed(proc)


def test_the_last_sample_is_the_callers_and_the_thread_takes_none_after_it(monkeypatch):
    allowed = sorted(os.sched_getaffinity(0))
    takers: list[int] = []
    sample = _Job.sample

    def recorded(job):
        takers.append(threading.get_ident())
        sample(job)

    monkeypatch.setattr(_Job, "sample", recorded)
    mon = Monitor("/", interval_s=0.02, cpus={allowed[0]})
    proc = subprocess.Popen(["sleep", "0.2"])
    mon.start(proc.pid, None)
    proc.wait()
    out = mon.stop()
    assert mon._thread is not None
    assert os.sched_getaffinity(mon._thread.native_id) == {allowed[0]}  # where it was asked to run
    assert takers[-1] == threading.get_ident() and len(set(takers)) == 2  # the thread's, then the caller's
    assert out.summary["samples"] == len(takers) >= 2
    time.sleep(0.1)  # five more intervals: the thread has stopped sampling this run
    assert out.summary["samples"] == len(takers)
    assert out.cpu_s > 0 and out.summary["monitor_cpu_s"] == out.cpu_s
    mon.close()


def test_a_run_the_sampling_thread_never_reached_is_still_sampled_at_stop(monkeypatch):
    """A very short worker on a busy board may end before the monitor thread wakes: stop() takes the start
    values and the last sample itself, and the thread skips the job when it gets to it."""
    monkeypatch.setattr(Monitor, "ready", lambda self: None)  # no thread: the job waits in the queue
    mon = Monitor("/", interval_s=0.05)
    proc = subprocess.Popen(["sleep", "0"])
    mon.start(proc.pid, None)
    proc.wait()
    out = mon.stop()
    assert out.summary["samples"] == 1 and "temp_start_mc" in out.summary
    assert out.summary["worker_tree"]["processes_max"] in (0, 1)
    monkeypatch.undo()
    mon.ready()  # the thread now finds the finished job and leaves it alone
    proc = subprocess.Popen(["sleep", "0.1"])
    mon.start(proc.pid, None)
    proc.wait()
    assert mon.stop().summary["samples"] >= 1 and out.summary["samples"] == 1
    mon.close()


class _PinProbe:
    """A condition kind that records the CPUs of the thread that applies and undoes it."""

    name = "pinprobe"
    summary = "records where it is applied"
    params = ()
    seen: list[tuple[str, set[int]]] = []

    def validate(self, params):
        return None

    def check(self, params, ctx):
        return None

    def prepare(self, params, ctx, note):
        return None

    @contextlib.contextmanager
    def apply(self, params, ctx):
        self.seen.append(("apply", os.sched_getaffinity(0)))
        yield {}
        self.seen.append(("undo", os.sched_getaffinity(0)))


def test_only_the_worker_runs_on_its_cpu_the_loop_monitor_and_conditions_stay_off_it(tmp_path, monkeypatch):
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        pytest.skip("needs two CPUs: the worker's and another")
    import boardlab.campaign.runner as runner_mod
    import boardlab.campaign.session as session_mod
    import boardlab.conditions as conditions
    from boardlab.campaign.plan import parse_plan
    from boardlab.cli.progress import TerminalProgress
    from boardlab.store import Store
    from boardlab.workloads import all_workloads

    kinds = {**conditions.condition_kinds(), "pinprobe": _PinProbe()}
    monkeypatch.setattr(conditions, "condition_kinds", lambda: kinds)
    monkeypatch.setattr(session_mod, "condition_kinds", lambda: kinds)
    worker_cpu, others = allowed[-1], set(allowed[:-1])
    during: list[tuple[set[int], set[int], set[int]]] = []
    real_collect = runner_mod.collect

    def collect(proc, timeout_s):
        (monitor,) = [t for t in threading.enumerate() if t.name == "boardlab-monitor"]
        seen = (
            os.sched_getaffinity(proc.pid),
            os.sched_getaffinity(0),
            os.sched_getaffinity(monitor.native_id),
        )
        during.append(seen)
        return real_collect(proc, timeout_s)

    monkeypatch.setattr(runner_mod, "collect", collect)
    catalog = {w.name: w for w in all_workloads()}
    text = (
        f'name = "pins"\n[runs]\nrepetitions = 2\niterations = 2\ncpu = {worker_cpu}\n[gates]\nidle = false\n'
        'temperature = false\n[[workloads]]\nname = "noop"\n[[conditions]]\nname = "base"\n'
        'kind = "baseline"\n[[conditions]]\nname = "probe"\nkind = "pinprobe"\nbaseline = "base"\n'
    )
    plan = parse_plan(text, "pins.toml", catalog)
    _PinProbe.seen.clear()
    before = os.sched_getaffinity(0)
    with Store.open(str(tmp_path / "pins.db")) as store:
        outcome = runner_mod.Runner(plan, catalog, store, progress=TerminalProgress(quiet=True)).run()
    assert outcome.status == "complete" and outcome.runs_done == 4
    assert during == [({worker_cpu}, others, others)] * 4  # the worker, the loop's thread, the monitor's
    assert _PinProbe.seen == [("apply", others), ("undo", others)] * 2
    assert os.sched_getaffinity(0) == before  # given back when the campaign ends
