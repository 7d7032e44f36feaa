"""When a background load begins: its warm-up counts from when its loop began, not from its process's start
(a program's Python start, a second on a slow board, was counted as warm-up), and the programs hold the run's
stop off while they start a child (a stop landing inside Popen left a dd they did not know of filling a full
disk). The full-disk case itself runs in tests/integration/test_load_health.py."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from boardlab.conditions import background, programs
from boardlab.conditions.base import ApplyContext
from boardlab.conditions.journal import RestoreJournal
from boardlab.errors import MeasurementError
from boardlab.platform.inventory import inventory
from boardlab.platform.sysroot import SysRoot

from helpers import sleeping

pytestmark = pytest.mark.spawns


@pytest.fixture
def ctx(tmp_path):
    sr = SysRoot("/")
    info = inventory(sr)
    ctx = ApplyContext(sr, RestoreJournal(sr, tmp_path / "journal.json"), info, None, info.online_cpus)
    yield ctx
    ctx.cleanup()


def _load(ctx: ApplyContext, argv: list[str], **kw):
    return background.running_load(
        argv, ctx=ctx, cpus=ctx.online_cpus, what="the test's load", stop_first_to="group", **kw
    )


def test_the_warm_up_counts_from_when_the_load_says_its_loop_began(ctx, tmp_path):
    began = tmp_path / "began"
    argv = ["sh", "-c", 'sleep 0.5; touch "$0"; exec sleep 60', str(began)]
    t0 = time.monotonic()
    with _load(ctx, argv, warmup_s=0.3, started=began.exists) as load:
        waited_s = time.monotonic() - t0
        since_began_s = time.time() - began.stat().st_mtime
        assert not load.exited()
    assert waited_s >= 0.8, waited_s  # its 0.5 s start, then the whole 0.3 s warm-up
    assert since_began_s >= 0.29, since_began_s
    assert load.usage is not None and load.usage.exit_code == -signal.SIGINT


def test_a_load_that_never_says_it_began_is_an_error_and_is_stopped(ctx):
    tag = f"60.{os.getpid()}{time.monotonic_ns() % 1000}"  # a duration no other process sleeps
    with pytest.raises(MeasurementError, match=r"^the test's load did not start within 0\.3 s$"):
        with _load(ctx, ["sleep", tag], warmup_s=0.1, started=lambda: False, start_timeout_s=0.3):
            pytest.fail("the workload ran beside a load that never began")
    assert not sleeping(tag)


def test_a_load_that_ends_before_its_loop_began_says_how(ctx):
    argv = ["sh", "-c", "echo no room for its status >&2; exit 3"]
    with pytest.raises(MeasurementError) as caught:
        with _load(ctx, argv, warmup_s=0.1, started=lambda: False):
            pytest.fail("the workload ran beside a load that ended")
    assert str(caught.value) == (
        "the test's load ended before its loop began (exit 3) instead of running beside the workload: "
        "no room for its status"
    )


def _blocked(pid: int, sig: int) -> bool:
    mask = next(ln for ln in Path(f"/proc/{pid}/status").read_text().splitlines() if ln.startswith("SigBlk:"))
    return bool(int(mask.split()[1], 16) >> (sig - 1) & 1)


def test_a_stop_landing_while_a_child_starts_is_raised_once_the_child_is_recorded():
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # xdist's workers may ignore it
    proc = None
    try:
        with pytest.raises(KeyboardInterrupt):
            with programs._held_stop():
                # the run's stop, as the child starts; to this thread, as to the single-threaded program
                # (sent to the process, one of xdist's own threads would take it)
                signal.pthread_kill(threading.get_ident(), signal.SIGINT)
                proc = programs._popen(["sleep", "60"], stdout=subprocess.DEVNULL)
                assert _blocked(os.getpid(), signal.SIGINT)
        assert proc is not None and proc.poll() is None, "the child is known to the program, to be stopped"
        assert not _blocked(proc.pid, signal.SIGINT), "the child must get the stop's SIGINT itself"
        assert not _blocked(os.getpid(), signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, previous)
        if proc is not None:
            proc.kill()
            proc.wait()
