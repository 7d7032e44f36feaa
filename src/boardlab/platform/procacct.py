"""Per-process accounting for `boardlab monitor`: CPU by jiffies and by nanoseconds, memory, context
switches per process and per thread, and the network drop/retransmit counters at their three scopes
(system-wide /proc/net/snmp and netstat, per socket /proc/net/udp, per interface /proc/net/dev).

Every function takes a root so the tests can point it at a fixture tree. A missing file (a process that
ended, a kernel without schedstat) reads as None, never as zero.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from boardlab.platform.sysroot import RootLike, SysRoot


@dataclass(frozen=True)
class TaskSample:
    """One process or thread at one instant."""

    tid: int
    comm: str
    cpu_jiffies: int  # utime + stime, in USER_HZ ticks
    cpu_ns: int | None  # /proc/.../schedstat run time (None without CONFIG_SCHEDSTATS)
    ctxsw_vol: int | None
    ctxsw_invol: int | None


@dataclass(frozen=True)
class ProcessSample:
    pid: int
    task: TaskSample
    threads: tuple[TaskSample, ...]
    rss_bytes: int | None
    pss_bytes: int | None
    socket_inodes: frozenset[int]


def _text(root: RootLike, rel: str) -> str | None:
    try:
        return SysRoot.of(root).read_text(rel)
    except OSError:
        return None


def parse_stat(text: str) -> tuple[str, int]:
    """/proc/PID/stat -> (comm, utime + stime jiffies). comm may hold spaces and parentheses."""
    comm = text[text.index("(") + 1 : text.rindex(")")]
    f = text[text.rindex(")") + 2 :].split()
    return comm, int(f[11]) + int(f[12])


def parse_schedstat(text: str) -> int:
    """/proc/PID/schedstat -> nanoseconds on a CPU (first field)."""
    return int(text.split()[0])


def parse_status(text: str) -> dict[str, int]:
    out = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"):
            try:
                out[key] = int(rest.split()[0])
            except (IndexError, ValueError):
                pass
    return out


def parse_smaps_rollup(text: str) -> int | None:
    """Pss in bytes from /proc/PID/smaps_rollup."""
    for line in text.splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) * 1024
    return None


def read_task(root: RootLike, base: str, tid: int) -> TaskSample | None:
    stat = _text(root, f"{base}/stat")
    if not stat:
        return None
    try:
        comm, jiffies = parse_stat(stat)
    except (ValueError, IndexError):
        return None
    sched = _text(root, f"{base}/schedstat")
    status = parse_status(_text(root, f"{base}/status") or "")
    try:
        cpu_ns = parse_schedstat(sched) if sched else None
    except (ValueError, IndexError):
        cpu_ns = None
    return TaskSample(
        tid=tid,
        comm=comm,
        cpu_jiffies=jiffies,
        cpu_ns=cpu_ns,
        ctxsw_vol=status.get("voluntary_ctxt_switches"),
        ctxsw_invol=status.get("nonvoluntary_ctxt_switches"),
    )


def socket_inodes(root: RootLike, pid: int) -> frozenset[int]:
    """Inodes of the sockets a process holds (its /proc/PID/fd links 'socket:[N]')."""
    d = SysRoot.of(root).path(f"proc/{pid}/fd")
    out = set()
    try:
        names = os.listdir(d)
    except OSError:
        return frozenset()
    for name in names:
        try:
            target = os.readlink(d / name)
        except OSError:
            continue
        if target.startswith("socket:["):
            out.add(int(target[8:-1]))
    return frozenset(out)


def read_process(root: RootLike, pid: int, *, threads: bool = True) -> ProcessSample | None:
    """A process and its threads now; None once it has ended."""
    base = f"proc/{pid}"
    task = read_task(root, base, pid)
    if task is None:
        return None
    ts: list[TaskSample] = []
    if threads:
        try:
            tids = sorted(int(t) for t in os.listdir(SysRoot.of(root).path(f"{base}/task")) if t.isdigit())
        except OSError:
            tids = []
        for tid in tids:
            t = read_task(root, f"{base}/task/{tid}", tid)
            if t is not None:
                ts.append(t)
    status = parse_status(_text(root, f"{base}/status") or "")
    rollup = _text(root, f"{base}/smaps_rollup")
    rss = status.get("VmRSS")
    return ProcessSample(
        pid=pid,
        task=task,
        threads=tuple(ts),
        rss_bytes=rss * 1024 if rss is not None else None,
        pss_bytes=parse_smaps_rollup(rollup) if rollup else None,
        socket_inodes=socket_inodes(root, pid),
    )


def mem_total_bytes(root: RootLike = "/") -> int | None:
    for line in (_text(root, "proc/meminfo") or "").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return None


def online_cpus(root: RootLike = "/") -> int:
    """CPUs counted in /proc/stat (the denominator of '% of all CPUs')."""
    n = sum(
        1
        for line in (_text(root, "proc/stat") or "").splitlines()
        if line[:3] == "cpu" and line[3:4].isdigit()
    )
    return n or (os.cpu_count() or 1)


def parse_snmp(text: str) -> dict[str, dict[str, int]]:
    """/proc/net/snmp or /proc/net/netstat: header/value line pairs -> {"Udp": {"InErrors": 0, ...}, ...}."""
    out: dict[str, dict[str, int]] = {}
    lines = text.splitlines()
    for head, vals in zip(lines[::2], lines[1::2], strict=False):
        hk, _, hnames = head.partition(":")
        vk, _, vnums = vals.partition(":")
        if hk != vk:
            continue
        try:
            out[hk] = dict(zip(hnames.split(), (int(x) for x in vnums.split()), strict=False))
        except ValueError:
            continue
    return out


# The counters the monitor keeps, as (table, counter) -> name with its unit.
NET_COUNTERS = {
    ("Udp", "InDatagrams"): "udp_in_datagrams",
    ("Udp", "RcvbufErrors"): "udp_rcvbuf_errors",
    ("Udp", "InErrors"): "udp_in_errors",
    ("Udp", "SndbufErrors"): "udp_sndbuf_errors",
    ("Tcp", "RetransSegs"): "tcp_retrans_segs",
    ("Tcp", "InErrs"): "tcp_in_errs",
    ("TcpExt", "ListenOverflows"): "tcp_listen_overflows",
    ("TcpExt", "ListenDrops"): "tcp_listen_drops",
}


def _net(pid: int | None) -> str:
    """/proc/net is this process's network namespace; /proc/PID/net is PID's (a workload in a netns)."""
    return f"proc/{pid}/net" if pid else "proc/net"


def read_net_counters(root: RootLike = "/", pid: int | None = None) -> dict[str, int]:
    """Namespace-wide UDP/TCP drop and retransmit counters (of `pid`'s network namespace if given)."""
    tables = parse_snmp(_text(root, f"{_net(pid)}/snmp") or "")
    tables.update(parse_snmp(_text(root, f"{_net(pid)}/netstat") or ""))
    out = {}
    for (table, key), name in NET_COUNTERS.items():
        v = tables.get(table, {}).get(key)
        if v is not None:
            out[name] = v
    return out


def parse_udp_drops(text: str) -> dict[int, int]:
    """/proc/net/udp -> {socket inode: drops} (the last column, sk_drops)."""
    out = {}
    for line in text.splitlines()[1:]:
        f = line.split()
        if len(f) >= 13:
            try:
                out[int(f[9])] = int(f[-1])
            except ValueError:
                continue
    return out


def read_udp_socket_drops(root: RootLike = "/", pid: int | None = None) -> dict[int, int]:
    return parse_udp_drops(_text(root, f"{_net(pid)}/udp") or "")


def parse_net_dev(text: str) -> dict[str, dict[str, int]]:
    """/proc/net/dev -> {iface: {"rx_drop", "tx_drop", "rx_packets", "tx_packets"}}."""
    out = {}
    for line in text.splitlines()[2:]:
        name, _, rest = line.partition(":")
        f = rest.split()
        if len(f) >= 16:
            out[name.strip()] = {
                "rx_packets": int(f[1]),
                "rx_drop": int(f[3]),
                "tx_packets": int(f[9]),
                "tx_drop": int(f[11]),
            }
    return out


def read_net_dev(root: RootLike = "/", pid: int | None = None) -> dict[str, dict[str, int]]:
    return parse_net_dev(_text(root, f"{_net(pid)}/dev") or "")


def clock_ticks() -> int:
    return os.sysconf("SC_CLK_TCK")
