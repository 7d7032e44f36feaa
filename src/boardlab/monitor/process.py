"""Per-process accounting over time, for `boardlab monitor`: each interval, CPU of the process and each of
its threads both from /proc jiffies (the vehicle-services study's method, quantised to USER_HZ ticks) and
from schedstat nanoseconds, as % of one CPU and of all CPUs; RSS, PSS and % of memory; context switches;
network drops and retransmits at system, socket and interface scope. Summaries: min/avg/max per process
and the mean of each hour (the study reported hourly averages)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from boardlab.platform import procacct
from boardlab.platform.sysroot import RootLike

MONITOR_SCHEMA = 1

# Fields of a process interval that get min/avg/max in the summary.
SUMMARY_FIELDS = (
    "cpu_pct_one_cpu",
    "cpu_pct_all_cpus",
    "cpu_jiffies_pct_one_cpu",
    "rss_bytes",
    "pss_bytes",
    "mem_pct",
    "ctxsw_vol_per_s",
    "ctxsw_invol_per_s",
)


@dataclass
class Interval:
    t_s: float  # end of the interval, seconds since the monitor started
    pid: int
    comm: str
    cpu_pct_one_cpu: float | None  # from schedstat ns
    cpu_pct_all_cpus: float | None
    cpu_jiffies_pct_one_cpu: float  # from utime + stime ticks
    rss_bytes: int | None
    pss_bytes: int | None
    mem_pct: float | None
    ctxsw_vol_per_s: float | None
    ctxsw_invol_per_s: float | None
    socket_drops: int | None  # new drops on this process's UDP sockets in the interval
    threads: list[dict] = field(default_factory=list)


def _pct(delta, wall_ns: float, unit_ns: float) -> float | None:
    if delta is None:
        return None
    return 100.0 * delta * unit_ns / wall_ns


def process_cpu_ns_delta(a: procacct.ProcessSample, b: procacct.ProcessSample) -> int | None:
    """CPU ns of the whole process between two samples. /proc/PID/schedstat is the main thread alone, so
    this sums the threads: each live in both samples by its delta, a thread born in between by its total
    (a thread that ended in between loses its last partial interval, which /proc no longer holds; so does one
    that ended while it was read: its stat read, its schedstat gone). None without schedstat."""
    if b.task.cpu_ns is None or a.task.cpu_ns is None:
        return None
    if not b.threads:
        return b.task.cpu_ns - a.task.cpu_ns
    before = {t.tid: t.cpu_ns for t in a.threads}
    total = 0
    for t in b.threads:
        if t.cpu_ns is None:  # the main thread's was read: this one ended between its two reads
            continue
        prev = before.get(t.tid)
        total += t.cpu_ns - prev if prev is not None else t.cpu_ns
    return total


def interval(
    a: procacct.ProcessSample,
    b: procacct.ProcessSample,
    wall_ns: float,
    t_s: float,
    *,
    ncpus: int,
    mem_total: int | None,
    clk_tck: int,
    udp_drops_a: dict[int, int],
    udp_drops_b: dict[int, int],
    keep_threads: bool = True,
) -> Interval:
    """The interval between two samples of one process (pure: the tests feed it fixture samples)."""
    tick_ns = 1e9 / clk_tck
    dns = process_cpu_ns_delta(a, b)
    one = _pct(dns, wall_ns, 1.0)

    def per_s(x, y):
        return None if x is None or y is None else (y - x) * 1e9 / wall_ns

    before = {t.tid: t for t in a.threads}
    threads = []
    for t in b.threads if keep_threads else ():
        p = before.get(t.tid)
        if p is None:
            continue
        tns = t.cpu_ns - p.cpu_ns if t.cpu_ns is not None and p.cpu_ns is not None else None
        threads.append(
            {
                "tid": t.tid,
                "comm": t.comm,
                "cpu_pct_one_cpu": _pct(tns, wall_ns, 1.0),
                "cpu_jiffies_pct_one_cpu": _pct(t.cpu_jiffies - p.cpu_jiffies, wall_ns, tick_ns),
            }
        )
    socks = b.socket_inodes & a.socket_inodes
    drops = (
        sum(udp_drops_b.get(i, 0) - udp_drops_a.get(i, 0) for i in socks if i in udp_drops_b) if socks else 0
    )
    return Interval(
        t_s=t_s,
        pid=b.pid,
        comm=b.task.comm,
        cpu_pct_one_cpu=one,
        cpu_pct_all_cpus=None if one is None else one / ncpus,
        cpu_jiffies_pct_one_cpu=_pct(b.task.cpu_jiffies - a.task.cpu_jiffies, wall_ns, tick_ns) or 0.0,
        rss_bytes=b.rss_bytes,
        pss_bytes=b.pss_bytes,
        mem_pct=None if b.rss_bytes is None or not mem_total else 100.0 * b.rss_bytes / mem_total,
        ctxsw_vol_per_s=per_s(a.task.ctxsw_vol, b.task.ctxsw_vol),
        ctxsw_invol_per_s=per_s(a.task.ctxsw_invol, b.task.ctxsw_invol),
        socket_drops=drops,
        threads=threads,
    )


def summarize(values: list[float | None]) -> dict:
    xs = [v for v in values if v is not None and not math.isnan(v)]
    if not xs:
        return {"min": None, "avg": None, "max": None, "n": 0}
    return {"min": min(xs), "avg": sum(xs) / len(xs), "max": max(xs), "n": len(xs)}


def hourly_means(rows: list[Interval], key: str) -> list[dict]:
    buckets: dict[int, list[float]] = {}
    for r in rows:
        v = getattr(r, key)
        if v is not None:
            buckets.setdefault(int(r.t_s // 3600), []).append(v)
    return [{"hour": h, "mean": sum(v) / len(v), "n": len(v)} for h, v in sorted(buckets.items())]


@dataclass
class Monitor:
    """Samples processes every `interval_s` on an absolute schedule until stopped or they all end."""

    pids: list[int]
    root: RootLike = "/"
    interval_s: float = 1.0
    threads: bool = True
    rows: list[Interval] = field(default_factory=list)
    net: list[dict] = field(default_factory=list)  # per interval: counter deltas
    ifaces: list[dict] = field(default_factory=list)
    net_pid: int | None = None  # read network counters in this process's namespace (None: our own)

    def run(
        self,
        *,
        duration_s: float | None = None,
        on_interval: Callable[[list[Interval], dict], None] | None = None,
        should_stop: Callable[[], bool] = lambda: False,
    ) -> None:
        root = self.root
        ncpus = procacct.online_cpus(root)
        mem_total = procacct.mem_total_bytes(root)
        clk = procacct.clock_ticks()
        self.ncpus, self.mem_total = ncpus, mem_total
        prev = {p: procacct.read_process(root, p) for p in self.pids}
        prev_net = procacct.read_net_counters(root, self.net_pid)
        prev_dev = procacct.read_net_dev(root, self.net_pid)
        prev_udp = procacct.read_udp_socket_drops(root, self.net_pid)
        t0 = t_prev = time.monotonic_ns()
        # the last interval is cut short at the duration, not run whole past it (rates are per second)
        end = None if duration_s is None else t0 + int(duration_s * 1e9)
        k = 0
        while not should_stop():
            k += 1
            due = t0 + int(k * self.interval_s * 1e9)
            due = due if end is None else min(due, end)
            delay = (due - time.monotonic_ns()) / 1e9
            if delay > 0:
                time.sleep(delay)
            now = time.monotonic_ns()
            cur = {p: procacct.read_process(root, p) for p in self.pids}
            net = procacct.read_net_counters(root, self.net_pid)
            dev = procacct.read_net_dev(root, self.net_pid)
            udp = procacct.read_udp_socket_drops(root, self.net_pid)
            wall = float(now - t_prev)
            t_s = (now - t0) / 1e9
            batch = []
            for p in self.pids:
                a, b = prev.get(p), cur.get(p)
                if a is not None and b is not None:
                    batch.append(
                        interval(
                            a,
                            b,
                            wall,
                            t_s,
                            ncpus=ncpus,
                            mem_total=mem_total,
                            clk_tck=clk,
                            udp_drops_a=prev_udp,
                            udp_drops_b=udp,
                            keep_threads=self.threads,
                        )
                    )
            nd = {"t_s": t_s, **{key: net[key] - prev_net.get(key, 0) for key in net}}
            dd = {
                "t_s": t_s,
                **{
                    f"{i}_{c}": dev[i][c] - prev_dev.get(i, {}).get(c, 0)
                    for i in dev
                    for c in ("rx_drop", "tx_drop")
                },
            }
            self.rows.extend(batch)
            self.net.append(nd)
            self.ifaces.append(dd)
            if on_interval:
                on_interval(batch, nd)
            prev, prev_net, prev_dev, prev_udp, t_prev = cur, net, dev, udp, now
            if not batch and all(v is None for v in cur.values()):
                break  # everything monitored has ended
            if duration_s is not None and t_s >= duration_s - 1e-6:
                break

    def document(self, extra: dict | None = None) -> dict:
        procs: dict[int, list] = {}
        for r in self.rows:
            procs.setdefault(r.pid, []).append(r)
        out_procs = []
        for pid, rows in procs.items():
            thread_cpu: dict[int, dict] = {}
            for r in rows:
                for t in r.threads:
                    e = thread_cpu.setdefault(t["tid"], {"tid": t["tid"], "comm": t["comm"], "v": []})
                    e["v"].append(t["cpu_pct_one_cpu"])
            out_procs.append(
                {
                    "pid": pid,
                    "comm": rows[-1].comm,
                    "intervals": len(rows),
                    **{f: summarize([getattr(r, f) for r in rows]) for f in SUMMARY_FIELDS},
                    "socket_drops": sum(r.socket_drops or 0 for r in rows),
                    "hourly_cpu_pct_one_cpu": hourly_means(rows, "cpu_pct_one_cpu"),
                    "hourly_cpu_jiffies_pct_one_cpu": hourly_means(rows, "cpu_jiffies_pct_one_cpu"),
                    "threads": [
                        {"tid": e["tid"], "comm": e["comm"], "cpu_pct_one_cpu": summarize(e["v"])}
                        for e in thread_cpu.values()
                    ],
                }
            )
        totals: dict[str, int] = {}
        for n in self.net:
            for key, v in n.items():
                if key != "t_s":
                    totals[key] = totals.get(key, 0) + v
        iface_totals: dict[str, int] = {}
        for n in self.ifaces:
            for key, v in n.items():
                if key != "t_s":
                    iface_totals[key] = iface_totals.get(key, 0) + v
        return {
            "schema": MONITOR_SCHEMA,
            "kind": "boardlab.monitor",
            "interval_s": self.interval_s,
            "ncpus": getattr(self, "ncpus", None),
            "mem_total_bytes": getattr(self, "mem_total", None),
            "processes": out_procs,
            "net_totals": totals,
            "iface_drop_totals": iface_totals,
            "series": [
                {k: v for k, v in r.__dict__.items() if k != "threads"} | {"threads": r.threads}
                for r in self.rows
            ],
            **(extra or {}),
        }


CSV_FIELDS = ("t_s", "pid", "comm") + SUMMARY_FIELDS + ("socket_drops",)
