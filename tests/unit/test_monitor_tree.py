"""The monitor's process tree (platform.sampling.read_tree) on /proc trees written here: the descendants found
through each task's children file and, on a kernel without them, through a scan of every /proc/*/stat, the
same sums either way; a launcher's own time and memory left out but not the children it reaped; and a child
reaped between two samples losing nothing. Then the same walk on this machine's /proc, on a real tree."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from boardlab.platform import sampling

pytestmark = pytest.mark.spawns  # starts processes: not in make test-unit

PAGE_KIB = 4


@dataclass
class P:
    ppid: int
    comm: str
    utime: int
    stime: int
    cutime: int = 0
    cstime: int = 0
    rss_pages: int = 100
    tids: tuple[int, ...] = ()  # its threads besides the main one
    forked_by: int | None = None  # the thread of its parent that forked it (None: the parent's main thread)
    cpu: int = 0


def stat_line(pid: int, p: P) -> str:
    threads = 1 + len(p.tids)
    # fields 3.. after "(comm)": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime
    # stime cutime cstime priority nice num_threads itrealvalue starttime ... processor (field 39)
    after = ["S", p.ppid, pid, pid, 0, -1, 0, 0, 0, 0, 0, p.utime, p.stime, p.cutime, p.cstime, 20, 0,
             threads, 0, 1000 + pid] + [0] * 16 + [p.cpu] + [0] * 13  # fmt: skip
    return f"{pid} ({p.comm}) " + " ".join(map(str, after)) + "\n"


def write_proc(root: Path, procs: dict[int, P], *, children_files: bool) -> sampling.SourceSet:
    """A /proc with these processes: stat, statm, task/TID/ and (if the kernel has them) task/TID/children."""
    proc = root / "proc"
    for pid, p in procs.items():
        d = proc / str(pid)
        d.mkdir(parents=True)
        (d / "stat").write_text(stat_line(pid, p))
        (d / "statm").write_text(f"{p.rss_pages * 3} {p.rss_pages} 50 10 0 200 0\n")
        for tid in (pid, *p.tids):
            (d / "task" / str(tid)).mkdir(parents=True)
            if children_files:
                kids = [c for c, q in procs.items() if q.ppid == pid and (q.forked_by or pid) == tid]
                (d / "task" / str(tid) / "children").write_text("".join(f"{c} " for c in kids))
    (proc / "self").mkdir()  # not a process: the scan must pass over it
    return sampling.SourceSet("", "", (), (), (), (), (), (), clk_tck=100, proc=str(proc), page_kib=PAGE_KIB)


def tree() -> dict[int, P]:
    """boardlab's worker (100) runs `sh` (101), which runs a two-threaded burner (102) whose second thread
    forked a helper (104); 200 is someone else's process, and its child 201 is not ours either."""
    return {
        1: P(0, "init", 900, 900),
        100: P(1, "python3", 50, 10, cutime=30, cstime=5, rss_pages=5000),
        101: P(100, "sh", 2, 1, rss_pages=300, cpu=1),
        102: P(101, "burner ) (x", 400, 20, cutime=4, rss_pages=20000, tids=(103,), cpu=1),
        104: P(102, "helper", 7, 3, rss_pages=700, forked_by=103, cpu=0),
        200: P(1, "other", 5000, 5000, rss_pages=90000),
        201: P(200, "other-child", 5000, 5000, rss_pages=90000),
    }


OWN = 50 + 10 + 30 + 5  # the worker: its own time, and that of the children it reaped
BELOW = (2 + 1) + (400 + 20 + 4) + (7 + 3)


@pytest.mark.parametrize("children_files", [True, False], ids=["children files", "scan of /proc"])
def test_the_tree_is_the_root_and_every_descendant_and_nothing_else(tmp_path, children_files):
    src = write_proc(tmp_path, tree(), children_files=children_files)
    assert sampling.has_children_files(src.proc, 100) is children_files
    t = sampling.read_tree(src, 100, count_root=True, children_files=children_files)
    assert t == sampling.TreeSample(
        cpu_jiffies=OWN + BELOW,
        rss_kib=(5000 + 300 + 20000 + 700) * PAGE_KIB,
        processes=4,
        threads=1 + 1 + 2 + 1,
        last_cpu=0,  # the root's
    )
    # a subtree alone: the burner and the helper its second thread forked
    sub = sampling.read_tree(src, 102, count_root=True, children_files=children_files)
    assert (sub.cpu_jiffies, sub.processes, sub.rss_kib) == (424 + 10, 2, 20700 * PAGE_KIB)


@pytest.mark.parametrize("children_files", [True, False], ids=["children files", "scan of /proc"])
def test_a_process_reaped_before_the_monitor_is_told_of_it_reads_empty_without_a_scan(
    tmp_path, children_files
):
    """A short program's pid reaches the monitor after its end (the launcher reaps it as it ends): the
    children files are then taken as there, whatever the kernel, so its empty tree costs no scan of /proc."""
    src = write_proc(tmp_path, tree(), children_files=children_files)
    assert sampling.has_children_files(src.proc, 999) is True  # no such process
    assert sampling.read_tree(src, 999, count_root=True, children_files=True) is None


@pytest.mark.parametrize("children_files", [True, False], ids=["children files", "scan of /proc"])
def test_a_launcher_is_left_out_but_not_the_time_of_the_children_it_reaped(tmp_path, children_files):
    src = write_proc(tmp_path, tree(), children_files=children_files)
    t = sampling.read_tree(src, 100, count_root=False, children_files=children_files)
    assert t.cpu_jiffies == (30 + 5) + BELOW  # the worker's own 60 jiffies are not the program's
    assert t.rss_kib == (300 + 20000 + 700) * PAGE_KIB and t.processes == 3 and t.threads == 4
    assert t.last_cpu == 1  # sh's, the first process counted


@pytest.mark.parametrize("children_files", [True, False], ids=["children files", "scan of /proc"])
def test_a_child_reaped_between_two_samples_keeps_its_time_in_the_sum(tmp_path, children_files):
    procs = tree()
    before = sampling.read_tree(
        write_proc(tmp_path / "a", procs, children_files=children_files), 100, count_root=False,
        children_files=children_files,
    )  # fmt: skip
    # the helper ends and the burner reaps it: its 10 jiffies move into the burner's cutime + cstime
    del procs[104]
    procs[102].cutime += 7
    procs[102].cstime += 3
    procs[102].tids = ()
    after = sampling.read_tree(
        write_proc(tmp_path / "b", procs, children_files=children_files), 100, count_root=False,
        children_files=children_files,
    )  # fmt: skip
    assert after.cpu_jiffies == before.cpu_jiffies and after.processes == before.processes - 1
    assert after.rss_kib == before.rss_kib - 700 * PAGE_KIB


def test_the_scan_reads_a_process_outside_the_tree_once_and_each_new_pid(tmp_path):
    """Without children files each sample reads the tree's processes and the PIDs new since the last one: a
    process found outside stays outside (here its stat is rewritten to claim the tree: never read again),
    and a process forked in the tree later, or under a PID that had ended, is found."""
    procs = tree()
    src = write_proc(tmp_path, procs, children_files=False)
    reader = sampling.TreeReader(src, 100, count_root=True, children_files=False)
    first = reader.read()
    assert first.processes == 4
    (Path(src.proc) / "200" / "stat").write_text(stat_line(200, P(102, "other", 5000, 5000)))
    forked = P(101, "late", 1, 1, rss_pages=10)
    (Path(src.proc) / "300").mkdir()
    (Path(src.proc) / "300" / "stat").write_text(stat_line(300, forked))
    (Path(src.proc) / "300" / "statm").write_text("30 10 0 0 0 0 0\n")
    second = reader.read()
    assert second.processes == 5 and second.cpu_jiffies == first.cpu_jiffies + 2  # 300, not 200
    # 201 ends; its PID comes back forked by sh: read again, since it left the listing in between
    gone = Path(src.proc) / "201" / "stat"
    gone.rename(tmp_path / "201.stat")
    (Path(src.proc) / "201").rename(tmp_path / "201.dir")
    assert reader.read().processes == 5
    (tmp_path / "201.dir").rename(Path(src.proc) / "201")
    (Path(src.proc) / "201" / "stat").write_text(stat_line(201, P(101, "reborn", 3, 0)))
    assert reader.read().processes == 6


def test_a_root_that_has_ended_reads_none_and_a_child_gone_mid_walk_is_passed_over(tmp_path):
    procs = tree()
    src = write_proc(tmp_path, procs, children_files=True)
    assert sampling.read_tree(src, 4711, count_root=True, children_files=True) is None
    assert sampling.read_tree(src, 4711, count_root=True, children_files=False) is None
    # 104 ended after 102's children file listed it: the walk goes on without it
    for f in (Path(src.proc) / "104").rglob("*"):
        if f.is_file():
            f.unlink()
    t = sampling.read_tree(src, 100, count_root=True, children_files=True)
    assert t.processes == 3 and t.cpu_jiffies == OWN + BELOW - 10


@pytest.mark.parametrize("children_files", [True, False], ids=["children files", "scan of /proc"])
def test_a_real_tree_on_this_machine_counts_the_grandchild_burning_cpu(children_files):
    """sh runs a Python child that holds 64 MiB and spins; read through /proc as the monitor does."""
    src = sampling.resolve_sources("/")
    if children_files and not sampling.has_children_files(src.proc, os.getpid()):
        pytest.skip("this kernel has no /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN is off)")
    child = (
        "import time; b = bytearray(b'x') * (64 << 20); t = time.process_time(); "
        "any(time.process_time() - t > 0.4 for _ in iter(int, 1))"
    )
    proc = subprocess.Popen(["sh", "-c", f'{shlex.quote(sys.executable)} -c "{child}" & wait'])
    files = children_files
    try:
        peak, most = None, 0
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            t = sampling.read_tree(src, proc.pid, count_root=False, children_files=files)
            if t is not None and t.processes and (peak is None or t.rss_kib > peak.rss_kib):
                peak = t
            most = max(most, t.cpu_jiffies if t is not None else 0)
            time.sleep(0.02)
    finally:
        proc.kill()
        proc.wait()
    assert peak is not None and peak.processes == 1  # sh itself left out: the Python grandchild alone
    assert peak.rss_kib >= 64 << 10
    assert most >= 0.3 * src.clk_tck  # the grandchild's 0.4 s of CPU, bar the last sample's


def test_swap_pages_sum_pswpin_and_pswpout_and_no_other_line(tmp_path):
    (tmp_path / "proc").mkdir()
    vmstat = tmp_path / "proc" / "vmstat"
    src = sampling.resolve_sources(str(tmp_path))
    assert sampling.read_swap_pages(src) is None  # no /proc/vmstat: unknown, not zero
    vmstat.write_bytes(b"nr_free_pages 1\npswpin 12\npswpout 30\npswpin_zero 7\nxpswpout 5\npgfault 9\n")
    assert sampling.read_swap_pages(src) == 42
    vmstat.write_bytes(b"nr_free_pages 1\n")  # a kernel without swap accounting
    assert sampling.read_swap_pages(src) == 0


def test_no_active_swap_device_means_no_swapped_page_without_reading_vmstat(tmp_path):
    """/proc/vmstat costs 50 us a read (twice a run); /proc/swaps, which says whether anything can swap, 5
    us."""
    (tmp_path / "proc").mkdir()
    swaps, vmstat = tmp_path / "proc" / "swaps", tmp_path / "proc" / "vmstat"
    vmstat.write_bytes(b"pswpin 12\npswpout 30\n")  # swapped before the device went off
    swaps.write_bytes(b"Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n")
    src = sampling.resolve_sources(str(tmp_path))
    assert sampling.read_swap_pages(src) == 0
    swaps.write_bytes(swaps.read_bytes() + b"/dev/zram0 partition\t1048572\t0\t100\n")
    assert sampling.read_swap_pages(src) == 42
