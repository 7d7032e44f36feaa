"""Fast repeated reads for the monitor: the files are resolved once, then read raw at every sample.

The monitor samples at 10 Hz beside a measurement, so a sample must cost microseconds: no directory
listing, no Path objects, no parsing beyond what the value needs.
"""

from __future__ import annotations

import os
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


def pid_stat(raw: bytes) -> tuple[int, int, int]:
    """/proc/PID/stat -> (utime + stime jiffies, last CPU, threads). comm may hold spaces: split after ')'."""
    f = raw[raw.rindex(b")") + 2 :].split()
    # fields after comm start at field 3 (state): utime is field 14, stime 15, num_threads 20, processor 39
    return int(f[11]) + int(f[12]), int(f[36]), int(f[17])


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
    )


def read_cpu_jiffies(src: SourceSet) -> dict[int, tuple[int, int]]:
    raw = _read(src.stat)
    return cpu_jiffies(raw) if raw else {}


def read_pid(root: RootLike, pid: int) -> tuple[tuple[int, int, int] | None, dict[str, int]]:
    """A process's (cpu jiffies, last CPU, threads) and its VmRSS/VmHWM/ctxt switches; (None, {}) once gone."""
    sr = SysRoot.of(root)
    raw = _read(str(sr.path(f"proc/{pid}/stat")))
    st = _read(str(sr.path(f"proc/{pid}/status")))
    try:
        stat = pid_stat(raw) if raw else None
    except (ValueError, IndexError):
        stat = None
    keys = (b"VmRSS:", b"VmHWM:", b"voluntary_ctxt_switches:", b"nonvoluntary_ctxt_switches:")
    return stat, status_kib(st, keys) if st else {}


def read_swap_pages(src: SourceSet) -> int | None:
    raw = _read(src.vmstat)
    if raw is None:
        return None
    total = 0
    for line in raw.split(b"\n"):
        if line.startswith((b"pswpin ", b"pswpout ")):
            total += int(line.split()[1])
    return total


def read_values(pairs: tuple[tuple[str, str], ...]) -> dict[str, int | None]:
    return {name: _int(path) for name, path in pairs}


def read_psi(src: SourceSet) -> dict[str, int | None]:
    out = {}
    for name, path in src.psi:
        raw = _read(path)
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
