"""The `isolation` condition: isolation guarantees checked against the kernel before anything starts,
/dev/cpu_dma_latency held for the run, and the IRQs of the worker's CPU recorded; /proc/interrupts parsing."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from boardlab.conditions import condition_kinds
from boardlab.conditions.base import ApplyContext
from boardlab.conditions.journal import RestoreJournal
from boardlab.platform import cpuidle, inventory, irq
from boardlab.platform.sysroot import SysRoot

from helpers import SYSFS, copy_board

KIND = condition_kinds()["isolation"]


def context(root: Path, tmp_path: Path, worker_cpu: int | None = -1) -> ApplyContext:
    sr = SysRoot(root)
    info = inventory(sr)
    return ApplyContext(
        root=sr,
        journal=RestoreJournal(sr, tmp_path / "journal.json"),
        info=info,
        worker_cpu=info.online_cpus[-1] if worker_cpu == -1 else worker_cpu,
        online_cpus=info.online_cpus,
    )


# ---- plan load ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "key", "message"),
    [
        ({"mode": "shielded"}, "mode", "expected one of shared, pinned, isolated, found 'shielded'"),
        ({"cpu_dma_latency_us": -1}, "cpu_dma_latency_us", "(0: no C-state exits)"),
        ({"cpu_dma_latency_us": "0"}, "cpu_dma_latency_us", "expected an integer, found a string '0'"),
        ({"cpus": [1]}, "cpus", "unknown parameter"),
    ],
)
def test_malformed_parameters_are_refused_at_plan_load(params, key, message):
    reason = KIND.validate(params)
    assert reason is not None and reason[0] == key and message in reason[1]


def test_the_default_mode_is_pinned():
    assert KIND.validate({}) is None
    assert KIND.validate({"mode": "isolated", "cpu_dma_latency_us": 0}) is None


# ---- against the board -------------------------------------------------------------------------------------


def test_isolated_on_a_kernel_without_isolated_cpus_names_the_boot_parameters(tmp_path):
    root = copy_board("vm", tmp_path)
    reason = KIND.check({"mode": "isolated"}, context(root, tmp_path))
    assert reason == (
        f"unsupported: the kernel isolates no CPU (no isolcpus in {root}/proc/cmdline, "
        f"{root}/sys/devices/system/cpu/isolated empty): boot with "
        "`isolcpus=1 nohz_full=1 rcu_nocbs=1` to isolate the worker's CPU 1, or use mode = 'pinned'"
    )


def test_isolated_on_a_single_cpu_board_is_unsupported(tmp_path):
    root = copy_board("bbb", tmp_path)
    reason = KIND.check({"mode": "isolated"}, context(root, tmp_path))
    assert reason == "unsupported: only one CPU is online, and isolating a CPU needs at least two"
    assert KIND.check({"mode": "pinned"}, context(root, tmp_path)) is None


def test_isolated_needs_the_worker_on_an_isolated_cpu(tmp_path):
    root = copy_board("odroid-xu3", tmp_path)
    assert KIND.check({"mode": "isolated"}, context(root, tmp_path)) is None  # auto = CPU 7, isolated
    reason = KIND.check({"mode": "isolated"}, context(root, tmp_path, worker_cpu=3))
    assert reason == (
        "the worker's CPU 3 is not isolated (isolated CPUs: 7): set runs.cpu = 7, "
        "or boot with `isolcpus=3 nohz_full=3 rcu_nocbs=3`"
    )


def test_an_unpinned_worker_cannot_be_isolated_nor_recorded(tmp_path):
    root = copy_board("odroid-xu3", tmp_path)
    reason = KIND.check({"mode": "pinned"}, context(root, tmp_path, worker_cpu=None))
    assert reason.startswith("the worker is not pinned (runs.cpu = 'none')")
    assert "set runs.cpu to a CPU number or 'auto'" in reason


def test_cpu_dma_latency_without_the_device_is_unsupported(tmp_path):
    root = copy_board("odroid-xu3", tmp_path)
    reason = KIND.check({"cpu_dma_latency_us": 0}, context(root, tmp_path))
    assert reason == (
        f"cpu_dma_latency_us: unsupported: no {root}/dev/cpu_dma_latency "
        "(kernel without PM QoS, or root is not a live system)"
    )


# ---- around a run ------------------------------------------------------------------------------------------


def test_an_isolated_run_records_the_isolation_and_the_irqs_that_may_reach_its_cpu(tmp_path):
    root = copy_board("odroid-xu3", tmp_path)
    ctx = context(root, tmp_path)
    with KIND.apply({"mode": "isolated"}, ctx) as state:
        pass
    assert {
        k: state[k] for k in ("mode", "worker_cpu", "isolated", "isolcpus_flags", "nohz_full", "rcu_nocbs")
    } == {
        "mode": "isolated",
        "worker_cpu": 7,
        "isolated": True,
        "isolcpus_flags": ["domain"],
        "nohz_full": True,
        "rcu_nocbs": True,
    }
    irqs = state["irqs"]
    assert irqs["default_affinity"] == "0-7" and irqs["count"] == 16
    allowed = {a["irq"]: a for a in irqs["allowed_on_worker_cpu"]}
    # isolcpus=domain leaves device IRQs allowed everywhere; only CPU 7's own MCT tick is bound to it
    assert set(allowed) == {20, 28, 34, 35, 40, 52, 56, 60, 61}
    assert allowed[28] == {"irq": 28, "cpus": "7", "effective": "7", "name": "GIC-0 163 Level mct_tick7"}
    assert allowed[60]["cpus"] == "0-7" and allowed[60]["effective"] == "0"
    assert irqs["effective_on_worker_cpu"] == [28]
    assert state["interrupts_on_worker_cpu"] == {"total": 0, "by_irq": []}
    assert ctx.journal.pending() == []  # nothing here is a setting


def test_interrupts_taken_by_the_worker_cpu_during_the_run_are_counted(tmp_path):
    root = copy_board("odroid-xu3", tmp_path)
    interrupts = root / "proc/interrupts"
    text = interrupts.read_text()
    with KIND.apply({"mode": "isolated"}, context(root, tmp_path)) as state:
        # the kernel counts on: CPU 7 takes 250 ticks and 3 reschedule IPIs, CPU 0 some USB interrupts
        text = text.replace("        512    GIC-0 163", "        762    GIC-0 163")
        text = text.replace("3307         96  Resch", "3307         99  Resch")
        text = text.replace("    151904          0", "    152904          0")
        interrupts.write_text(text)
    assert state["interrupts_on_worker_cpu"] == {
        "total": 253,
        "by_irq": [
            {"irq": "28", "count": 250, "name": "GIC-0 163 Level mct_tick7"},
            {"irq": "IPI2", "count": 3, "name": "Rescheduling interrupts"},
        ],
    }


def test_pinned_on_a_plain_kernel_records_that_the_cpu_is_not_isolated(tmp_path):
    root = copy_board("vm", tmp_path)
    with KIND.apply({}, context(root, tmp_path)) as state:
        pass
    assert state["mode"] == "pinned" and state["worker_cpu"] == 1
    assert (state["isolated"], state["nohz_full"], state["rcu_nocbs"]) == (False, False, False)
    assert state["irqs"]["default_affinity"] == "0-1"
    assert len(state["irqs"]["allowed_on_worker_cpu"]) == 19  # every IRQ of this VM may go to either CPU
    assert state["irqs"]["effective_on_worker_cpu"] == [25, 26, 29, 31, 33, 35, 36, 38, 40, 42]


def test_a_board_without_proc_irq_records_why(tmp_path):
    root = copy_board("vm", tmp_path)
    shutil.rmtree(root / "proc/irq")
    (root / "proc/interrupts").unlink()
    with KIND.apply({}, context(root, tmp_path)) as state:
        pass
    assert state["irqs"] == f"unsupported: no {root}/proc/irq/*/smp_affinity_list"
    assert state["interrupts_on_worker_cpu"] == f"unsupported: no {root}/proc/interrupts"


def fds_open_on(path: Path) -> list[int]:
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == str(path):
                out.append(int(fd))
        except OSError:
            continue
    return out


def test_cpu_dma_latency_is_held_open_for_the_run_and_released_after(tmp_path):
    root = copy_board("vm", tmp_path)
    device = root / "dev/cpu_dma_latency"
    ctx = context(root, tmp_path)
    assert KIND.check({"cpu_dma_latency_us": 0}, ctx) is None
    with KIND.apply({"cpu_dma_latency_us": 0}, ctx) as state:
        assert len(fds_open_on(device)) == 1  # the request lasts while the file is open
    assert fds_open_on(device) == []  # closed: the kernel drops the request
    assert state["cpu_dma_latency_us"] == {"requested": 0, "before": 2_000_000_000, "in_force": 0}
    assert ctx.journal.pending() == []  # the kernel ends the request when boardlab dies: no journal


def test_the_fd_is_closed_when_the_run_fails(tmp_path):
    root = copy_board("vm", tmp_path)
    with pytest.raises(RuntimeError):
        with KIND.apply({"cpu_dma_latency_us": 20}, context(root, tmp_path)):
            raise RuntimeError("worker died")
    assert fds_open_on(root / "dev/cpu_dma_latency") == []
    assert cpuidle.read_cpu_dma_latency_us(root) == 20  # a plain file keeps what was written


# ---- platform readers --------------------------------------------------------------------------------------


def test_interrupts_columns_follow_the_header_and_summary_lines_have_no_per_cpu_counts():
    text = (
        "           CPU0       CPU2       \n"
        " 17:         10         20     GICv2  29 Level     arch_timer\n"
        "IPI0:         1          2  Rescheduling interrupts\n"
        "Err:          0\n"
    )
    lines = irq.parse_interrupts(text)
    assert [(x.irq, x.counts, x.total) for x in lines] == [
        ("17", {0: 10, 2: 20}, 30),  # CPU1 is offline: the second column is CPU2
        ("IPI0", {0: 1, 2: 2}, 3),
        ("Err", {}, 0),
    ]
    assert lines[0].name == "GICv2 29 Level arch_timer"
    assert irq.counts_on_cpu(lines, 2) == {"17": 20, "IPI0": 2}


def test_the_format_of_the_vm_snapshot_parses():
    lines = irq.read_interrupts(SYSFS / "vm")
    by = {x.irq: x for x in lines}
    assert by["LOC"].counts == {0: 700117, 1: 479077} and by["LOC"].name == "Local timer interrupts"
    assert by["28"].name == "PCI-MSIX-0000:00:01.0 0-edge virtio0-config"
    assert by["ERR"].counts == {} and by["MIS"].total == 0


def test_affinities_and_the_default_mask():
    assert irq.default_affinity(SYSFS / "odroid-xu3") == tuple(range(8))
    assert irq.default_affinity(SYSFS / "bbb") == (0,)
    bbb = irq.read_affinities(SYSFS / "bbb")
    assert all(a.cpus == (0,) and a.effective_cpus is None for a in bbb)
    assert irq.read_affinities(SYSFS / "vm")[0] == irq.IrqAffinity(24, (0, 1), (0,))
