"""The runner's per-run machinery: collect() (pipes, pidfd, timeout, rusage), the pinned spawn, and one
monitor thread serving consecutive runs."""

from __future__ import annotations

import os
import subprocess
import threading
import time

import pytest

from boardlab.monitor.sampler import Monitor
from boardlab.platform.spawn import collect, spawn


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
