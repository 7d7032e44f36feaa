"""Fast repeated reads for the monitor: the files are resolved once, then read raw at every sample.

The monitor samples at 10 Hz beside a measurement, so a sample must cost microseconds: no directory
listing, no Path objects, no parsing beyond what the value needs.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from boardlab.platform import cpufreq, power, thermal
from boardlab.platform.sysroot import RootLike, SysRoot

PSI_RESOURCES = ("cpu", "memory", "io")


def _read(path: str) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.read(fd, 65536)
    except OSError:  # some sensors refuse a read (EAGAIN, ENODATA) now and then
        return None
    finally:
        os.close(fd)


class HeldFiles:
    """The kernel's counter files a monitor reads at every run's start and end (/proc/stat, the PSI files,
    /proc/swaps), opened at their first read and read again with pread: opening and closing one cost 8 us of
    the 13 us a read took, 80 us of a 2 ms program's run for five files read twice. Only files under the real
    /proc are held (a fixture's file, which a test may replace by a rename, is opened at each read). `close`
    closes them; a later read opens them again."""

    def __init__(self) -> None:
        self._fds: dict[str, int] = {}

    def read(self, path: str) -> bytes | None:
        if not path.startswith("/proc/"):
            return _read(path)
        fd = self._fds.get(path)
        if fd is None:
            try:
                opened = os.open(path, os.O_RDONLY)
            except OSError:
                return None
            fd = self._fds.setdefault(path, opened)  # the sampling thread may have opened it meanwhile
            if fd != opened:
                os.close(opened)
        try:
            return os.pread(fd, 65536, 0)
        except OSError:
            return None

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()

    def __del__(self) -> None:  # a monitor nobody closed (a test's) leaves no descriptor behind
        self.close()


def _int(path: str) -> int | None:
    raw = _read(path)
    if raw is None:
        return None
    try:
        return int(raw.split()[0])
    except (ValueError, IndexError):
        return None


def cpu_jiffies(raw: bytes) -> dict[int, tuple[int, int]]:
    """/proc/stat -> {cpu: (busy, total)} jiffies; idle and iowait count as not busy."""
    out: dict[int, tuple[int, int]] = {}
    for line in raw.split(b"\n"):
        if line.startswith(b"cpu") and line[3:4].isdigit():
            f = line.split()
            vals = [int(x) for x in f[1:9]]
            total = sum(vals)
            idle = vals[3] + vals[4]
            out[int(f[0][3:])] = (total - idle, total)
    return out


def pid_start_ticks(pid: int, root: RootLike = "/") -> int | None:
    """A process's start time in clock ticks since boot (field 22 of /proc/PID/stat); None once it is gone.
    PID and start time together identify a process: a PID alone may have been reused."""
    raw = _read(str(SysRoot.of(root).path(f"proc/{pid}/stat")))
    if not raw:
        return None
    try:
        return int(raw[raw.rindex(b")") + 2 :].split()[19])
    except (ValueError, IndexError):
        return None


def pid_running(pid: int, start_ticks: int | None, root: RootLike = "/") -> bool:
    """Whether the process `pid` that started at `start_ticks` (None: any start) still runs: not gone, not
    a reused PID, and not a zombie (killed, its /proc entry kept with its start time until its parent
    reaps it: it holds no lock and changes nothing)."""
    raw = _read(str(SysRoot.of(root).path(f"proc/{pid}/stat")))
    if not raw:
        return False
    try:
        fields = raw[raw.rindex(b")") + 2 :].split()
        state, started = fields[0], int(fields[19])
    except (ValueError, IndexError):
        return False
    return state not in (b"Z", b"X", b"x") and (start_ticks is None or started == start_ticks)


def status_kib(raw: bytes, keys: tuple[bytes, ...]) -> dict[str, int]:
    out = {}
    for line in raw.split(b"\n"):
        for k in keys:
            if line.startswith(k):
                out[k[:-1].decode()] = int(line.split()[1])
    return out


def psi_total_us(raw: bytes) -> int | None:
    """/proc/pressure/X: the cumulative stall time of "some" tasks, in microseconds."""
    for line in raw.split(b"\n"):
        if line.startswith(b"some"):
            for tok in line.split():
                if tok.startswith(b"total="):
                    return int(tok[6:])
    return None


@dataclass(frozen=True)
class SourceSet:
    """What this board lets the monitor read, resolved once."""

    stat: str
    vmstat: str
    freq: tuple[tuple[str, str], ...]  # (policy, scaling_cur_freq path)
    temps: tuple[tuple[str, str], ...]  # (zone type, temp path)
    cooling: tuple[tuple[str, str], ...]  # (cpufreq cooling device, cur_state path): > 0 means throttled
    power: tuple[tuple[str, str], ...]  # (hwmon label, power1_input path in uW)
    energy: tuple[tuple[str, str], ...]  # (powercap zone, energy_uj path)
    psi: tuple[tuple[str, str], ...]  # (resource, /proc/pressure path)
    clk_tck: int
    proc: str = "/proc"  # the process tree's directory (a fixture's under --root)
    page_kib: int = 4  # the unit of /proc/PID/statm
    swaps: str = ""  # /proc/swaps: which swap devices are active ("": not known, /proc/vmstat is read)


def zone_key(zone: str, zone_type: str | None) -> str:
    """How the monitor names a thermal zone ("thermal_zone0:cpu_thermal"): its series and summary keys
    (temp.<key>_mc_max) carry it, and whatever compares with them (trip-point limits) must use it too."""
    return f"{zone}:{zone_type or zone}"


def resolve_sources(root: RootLike) -> SourceSet:
    sr = SysRoot.of(root)
    freq = tuple(
        (p, str(sr.path(f"{cpufreq.policy_dir(p)}/scaling_cur_freq"))) for p in cpufreq.list_policies(sr)
    )
    temps = []
    for z in thermal.list_zones(sr):
        key = zone_key(z, sr.read_str(f"{thermal.THERMAL_DIR}/{z}/type"))
        temps.append((key, str(sr.path(f"{thermal.THERMAL_DIR}/{z}/temp"))))
    cooling = tuple(
        (d.name, str(sr.path(f"{thermal.THERMAL_DIR}/{d.name}/cur_state")))
        for d in thermal.read_cooling_devices(sr)
        if thermal.is_cpufreq_cooling(d)
    )
    pw = []
    for h in power.list_hwmon(sr):
        p = sr.path(f"{power.HWMON_DIR}/{h}/power1_input")
        if os.path.exists(p):
            pw.append((f"{h}:{sr.read_str(f'{power.HWMON_DIR}/{h}/name') or h}", str(p)))
    energy = tuple(
        (z.name, str(sr.path(f"{power.POWERCAP_DIR}/{z.name}/energy_uj"))) for z in power.read_powercap(sr)
    )
    psi = tuple(
        (r, str(sr.path(f"proc/pressure/{r}"))) for r in PSI_RESOURCES if sr.exists(f"proc/pressure/{r}")
    )
    return SourceSet(
        stat=str(sr.path("proc/stat")),
        vmstat=str(sr.path("proc/vmstat")),
        freq=freq,
        temps=tuple(temps),
        cooling=cooling,
        power=tuple(pw),
        energy=energy,
        psi=psi,
        clk_tck=os.sysconf("SC_CLK_TCK"),
        proc=str(sr.path("proc")),
        page_kib=os.sysconf("SC_PAGE_SIZE") // 1024,
        swaps=str(sr.path("proc/swaps")),
    )


def read_cpu_jiffies(src: SourceSet, files: HeldFiles | None = None) -> dict[int, tuple[int, int]]:
    raw = files.read(src.stat) if files else _read(src.stat)
    return cpu_jiffies(raw) if raw else {}


def read_status(src: SourceSet, pid: int) -> dict[str, int]:
    """A process's VmHWM and context switches from /proc/PID/status; {} once it is gone."""
    raw = _read(f"{src.proc}/{pid}/status")
    keys = (b"VmHWM:", b"voluntary_ctxt_switches:", b"nonvoluntary_ctxt_switches:")
    return status_kib(raw, keys) if raw else {}


_SWAP_LINES = re.compile(rb"^pswp(?:in|out) (\d+)$", re.MULTILINE)


def read_swap_pages(src: SourceSet, files: HeldFiles | None = None) -> int | None:
    """Pages swapped in and out since boot (/proc/vmstat); read twice per run, so one search, not a loop over
    its two hundred lines. 0 while /proc/swaps lists no active device: nothing can be swapped then, and that
    file costs 5 us to read where /proc/vmstat, whose counters the kernel sums over every CPU, costs 50 us
    (twice a run: a tenth of a 0.5 ms program's run). A device switched on or off during a run makes its
    increase meaningless; the monitor says so (None) when it went down."""
    if src.swaps:
        listed = files.read(src.swaps) if files else _read(src.swaps)
        if listed is not None and listed.strip().count(b"\n") == 0:  # its header line alone
            return 0
    raw = _read(src.vmstat)
    if raw is None:
        return None
    return sum(int(n) for n in _SWAP_LINES.findall(raw))


def read_values(pairs: tuple[tuple[str, str], ...]) -> dict[str, int | None]:
    return {name: _int(path) for name, path in pairs}


def read_psi(src: SourceSet, files: HeldFiles | None = None) -> dict[str, int | None]:
    out = {}
    for name, path in src.psi:
        raw = files.read(path) if files else _read(path)
        out[name] = psi_total_us(raw) if raw else None
    return out


def pid_group_stat(raw: bytes) -> tuple[int, int]:
    """/proc/PID/stat -> (process group, CPU jiffies of the process and of the children it has reaped):
    utime + stime + cutime + cstime (fields 14-17). A child's time moves into its parent's cutime/cstime
    when the parent reaps it, so summing this over the live members of a group loses nothing that ended."""
    f = raw[raw.rindex(b")") + 2 :].split()
    return int(f[2]), int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])


def read_group_cpu(root: RootLike, pgid: int) -> tuple[int, int]:
    """(CPU jiffies, live members) of process group `pgid`: a load started as its own group leader (stress-ng
    and its workers, a command and its children). One pass over /proc; (0, 0) once the group is gone."""
    proc = str(SysRoot.of(root).path("proc"))
    jiffies = members = 0
    try:
        entries = os.listdir(proc)
    except OSError:
        return 0, 0
    for name in entries:
        if not name.isdigit():
            continue
        raw = _read(f"{proc}/{name}/stat")
        if not raw:
            continue
        try:
            group, used = pid_group_stat(raw)
        except (ValueError, IndexError):
            continue
        if group == pgid:
            jiffies += used
            members += 1
    return jiffies, members


def clock_ticks() -> int:
    """The unit of /proc/PID/stat times (USER_HZ, almost always 100)."""
    return os.sysconf("SC_CLK_TCK")


# ---- a process tree: the workload's process and its descendants ----


@dataclass(frozen=True)
class TreeSample:
    """A process tree at one instant, summed over the processes it counts."""

    cpu_jiffies: int  # utime + stime of each, + cutime + cstime (the children each has reaped)
    rss_kib: int  # resident set (statm), summed: pages two processes share count twice
    processes: int  # live processes counted
    threads: int
    last_cpu: int | None  # the CPU the root (or, when the root is not counted, its first child) last ran on


def has_children_files(proc: str, pid: int) -> bool:
    """Whether the kernel lists each task's children (/proc/PID/task/TID/children, CONFIG_PROC_CHILDREN), as
    process `pid` shows it. A process already reaped shows nothing: True then, since its tree reads empty
    either way, and a scan of /proc (a millisecond or more) would be spent finding that out."""
    return os.path.exists(f"{proc}/{pid}/task/{pid}/children") or not os.path.exists(f"{proc}/{pid}")


def _stat_fields(raw: bytes) -> list[bytes]:
    """The fields after comm (which may hold spaces and parentheses): [0] state, [1] ppid, [11] utime,
    [12] stime, [13] cutime, [14] cstime, [17] num_threads, [36] processor."""
    return raw[raw.rindex(b")") + 2 :].split()


def _task_children(proc: str, pid: int, threads: int) -> list[int]:
    """A process's children from its tasks' children files: a child belongs to the thread that forked it."""
    if threads == 1:
        tids = [str(pid)]
    else:
        try:
            tids = os.listdir(f"{proc}/{pid}/task")
        except OSError:
            return []
    out: list[int] = []
    for tid in tids:
        raw = _read(f"{proc}/{pid}/task/{tid}/children")
        if raw:
            out += [int(x) for x in raw.split()]
    return out


def _walk_children_files(proc: str, pid: int) -> dict[int, list[bytes]]:
    """{pid: stat fields} of `pid` and its descendants, found through the children files."""
    found: dict[int, list[bytes]] = {}
    todo = [pid]
    while todo:
        p = todo.pop(0)
        raw = _read(f"{proc}/{p}/stat")
        if not raw or p in found:
            continue  # ended since its parent listed it
        try:
            f = _stat_fields(raw)
            todo += _task_children(proc, p, int(f[17]))
        except (ValueError, IndexError):
            continue
        found[p] = f
    return found


class _Scan:
    """The descendants through /proc/*/stat (a kernel without children files), read as little as possible:
    a process found outside the tree once stays outside (a process joins a tree only by being forked in it,
    under a new PID), so each sample reads the stat of the tree's processes and of the PIDs that are new in
    the listing since the last sample, not of every process. A PID ends and is reused between two listings
    only after the PID counter wrapped around within one sample interval."""

    def __init__(self) -> None:
        self.outside: set[int] = set()

    def walk(self, proc: str, pid: int) -> dict[int, list[bytes]]:
        try:
            listed = {int(n) for n in os.listdir(proc) if n.isdigit()}
        except OSError:
            return {}
        self.outside &= listed  # an ended process's PID may come back, forked in the tree
        stats: dict[int, list[bytes]] = {}
        kids: dict[int, list[int]] = {}
        for p in listed - self.outside:
            raw = _read(f"{proc}/{p}/stat")
            if not raw:
                continue
            try:
                f = _stat_fields(raw)
                kids.setdefault(int(f[1]), []).append(p)
            except (ValueError, IndexError):
                continue
            stats[p] = f
        found: dict[int, list[bytes]] = {}
        todo = [pid] if pid in stats else []
        while todo:
            p = todo.pop(0)
            if p not in found:
                found[p] = stats[p]
                todo += kids.get(p, [])
        self.outside |= stats.keys() - found.keys()
        return found


class TreeReader:
    """CPU time and resident memory of process `pid` and all its descendants, one sample per read().

    With count_root False the root's own time and memory are left out (a launcher that only waits for its
    program), but not the time of the children it has reaped: that is how a program that ended between two
    samples keeps its last slice. A sample reads stat and statm of each process in the tree, and finds the
    tree through each task's children file (CONFIG_PROC_CHILDREN) or, without them, through the stat of the
    processes that are new since the last sample (_Scan)."""

    def __init__(self, src: SourceSet, pid: int, *, count_root: bool, children_files: bool):
        self.src, self.pid, self.count_root = src, pid, count_root
        self._walk = _walk_children_files if children_files else _Scan().walk

    def read(self) -> TreeSample | None:
        """The tree now; None once `pid` is gone."""
        found = self._walk(self.src.proc, self.pid)
        if self.pid not in found:
            return None
        jiffies = rss = threads = processes = 0
        last_cpu = None
        for p, f in found.items():
            try:
                jiffies += int(f[13]) + int(f[14])
                if p == self.pid and not self.count_root:
                    continue
                jiffies += int(f[11]) + int(f[12])
                threads += int(f[17])
                last_cpu = int(f[36]) if last_cpu is None else last_cpu
            except (ValueError, IndexError):
                continue
            processes += 1
            statm = _read(f"{self.src.proc}/{p}/statm")
            if statm:
                rss += int(statm.split()[1]) * self.src.page_kib
        return TreeSample(jiffies, rss, processes, threads, last_cpu)


def read_tree(src: SourceSet, pid: int, *, count_root: bool, children_files: bool) -> TreeSample | None:
    """One sample of a process tree (TreeReader), for a caller that reads it once."""
    return TreeReader(src, pid, count_root=count_root, children_files=children_files).read()
