"""io.dma's platform side (fixture trees) and its refusal here; the RFC 2544 rate search."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from boardlab.platform import dma
from boardlab.workloads.ratesearch import Trial, search, search_steps

from helpers import SYSFS

pytestmark = pytest.mark.spawns  # starts processes: not in make test-unit

SUMMARY = (
    "6,1234,5678,-;dmatest: dma0chan0-copy0: summary 1000 tests, 0 failures 2341.59 iops 149862 KB/s (0)\n"
)


def test_am335x_edma_channels_are_listed():
    chans = dma.dma_channels(SYSFS / "bbb")
    assert [c.name for c in chans] == ["dma0chan0", "dma0chan1"]
    assert chans[0].device == "49000000.dma" and chans[0].in_use is False and chans[0].bytes_transferred == 0


def test_the_vm_has_no_dma_engine():
    assert dma.dma_channels(SYSFS / "vm") == []


def test_dmatest_is_configured_through_its_module_parameters(tmp_path):
    params = tmp_path / dma.DMATEST
    params.mkdir(parents=True)
    for name in (
        "noverify",
        "test_buf_size",
        "iterations",
        "threads_per_chan",
        "max_channels",
        "channel",
        "run",
    ):
        (params / name).write_text("N\n")
    assert dma.dmatest_loaded(tmp_path)
    dma.dmatest_configure(tmp_path, "dma0chan1", 65536, 500)
    assert (params / "channel").read_text() == "dma0chan1"
    assert (params / "test_buf_size").read_text() == "65536" and (params / "noverify").read_text() == "1"
    assert not dma.dmatest_running(tmp_path)
    dma.dmatest_start(tmp_path)
    assert dma.dmatest_running(tmp_path)


def test_only_new_kernel_log_lines_are_read_and_the_summary_parsed(tmp_path):
    (tmp_path / "dev").mkdir()
    kmsg = tmp_path / dma.KMSG
    kmsg.write_text("6,1,1,-;dmatest: old: summary 1 tests, 0 failures 1 iops 1 KB/s (0)\n")
    fd = dma.kmsg_open(tmp_path)
    with open(kmsg, "a") as f:
        f.write("6,2,2,-;dmatest: Started 1 threads using dma0chan0\n" + SUMMARY)
    lines = dma.kmsg_read(fd)
    (s,) = dma.parse_dmatest_summaries(lines)
    assert (s.thread, s.tests, s.failures, s.iops, s.kb_s) == ("dma0chan0-copy0", 1000, 0, 2341.59, 149862.0)


def test_io_dma_says_why_it_cannot_run_here():
    from boardlab.workloads.io_dma import supported

    reason = supported()
    if not reason:
        pytest.skip("this machine has a DMA engine and root")
    proc = subprocess.run(
        [sys.executable, "-m", "boardlab.pyrun", "io.dma", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1 and doc["supported"] is False and doc["reason"] == reason
    assert "DMA engine" in reason or "root" in reason


def lossy_above(limit):
    calls = []

    def trial(rate):
        calls.append(rate)
        return Trial(rate, 0.0 if rate <= limit else 3.0, min(rate, limit), {})

    return trial, calls


def test_search_finds_the_highest_lossless_rate_within_the_resolution():
    trial, calls = lossy_above(3.3e8)
    best, trials = search(trial, 1e6, 1e10, resolution=0.02, max_trials=40)
    assert best <= 3.3e8 and (3.3e8 - best) / 3.3e8 <= 0.02
    assert calls[:2] == [1e10, 1e6] and len(trials) == len(calls)


def test_a_lossless_top_rate_ends_at_once_and_a_lossy_floor_says_none():
    trial, calls = lossy_above(1e12)
    assert search(trial, 1e6, 1e9)[0] == 1e9 and calls == [1e9]
    trial, _ = lossy_above(1e3)
    assert search(trial, 1e6, 1e9)[0] is None


def test_the_ladder_search_returns_the_highest_passing_step_and_tries_few():
    bauds = [1200.0, 2400, 4800, 9600, 19200, 38400, 57600, 115200, 230400, 460800, 921600]
    trial, calls = lossy_above(60000)
    best, trials = search_steps(trial, bauds)
    assert best == 57600 and calls[:2] == [921600, 1200] and len(calls) <= 2 + 4
    assert search_steps(lossy_above(1e9)[0], bauds)[0] == 921600
    assert search_steps(lossy_above(100)[0], bauds)[0] is None


def test_a_trial_that_lost_nothing_but_fell_short_fails():
    def trial(rate):  # a lossless transport: the sender is held back above 5e8 instead of losing
        return Trial(rate, 0.0, min(rate, 5e8), {}, sustained=rate <= 5e8)

    best, _ = search(trial, 1e6, 1e10, resolution=0.02, max_trials=40)
    assert 0.98 * 5e8 <= best <= 5e8


def test_a_search_trial_is_boardlab_kerns_result_read_by_the_worker_reader():
    from boardlab.workloads.ratesearch import kern_trial, trial_metric

    res = kern_trial(
        "mem.bandwidth", {"op": "memcpy", "array_bytes": 65536}, iterations=3, min_iteration_ms=5
    )
    assert res.workload == "mem.bandwidth" and res.ok and trial_metric(res, "mb_s") > 0
    with pytest.raises(RuntimeError, match="mem.bandwidth reported no goodput_bit_s"):
        trial_metric(res, "goodput_bit_s")
    # boardlab-kern refuses the parameter and prints no result: its own message is the trial's error
    with pytest.raises(RuntimeError, match="array_bytes.*out of range"):
        kern_trial("mem.bandwidth", {"op": "memcpy", "array_bytes": -5}, iterations=3, min_iteration_ms=5)
