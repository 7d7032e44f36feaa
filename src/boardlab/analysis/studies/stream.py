"""The data-stream study's section: throughput against block size, memcpy vs DMA, CPU per pipeline stage,
GFLOPS, instructions per bit and the compute/I-O balance.

The study asks whether a board is a balanced processing unit: about one compute instruction per bit of I/O
(Szalay et al. 2010, after Amdahl). `stream_study(store, campaign_id, inventory, workloads)` reads what the
data-stream workloads' valid runs stored (their worker JSON) and returns a frozen record; `sections` lays it
out. Which workloads it reads is decided by their specs' `roles` and `throughput_curve`, never by name.

Instructions per bit: retired instructions (the run's `counters.instructions.count`, from perf_event_open
where the board has counters) over the payload bits; without counters, cycle-equivalents per bit = CPU time
x clock frequency / bits, labelled as an estimate, with the reason counters were missing. Balance = compute
instructions per second (counters of compute.gemm / compute.linpack runs, else the estimate clock x threads,
one instruction per cycle) over the best measured I/O bit/s.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from boardlab.analysis import document as doc
from boardlab.analysis.format import fmt_num, params_text
from boardlab.analysis.format import fmt_si as _si
from boardlab.model.worker_result import stored_worker_result

if TYPE_CHECKING:
    from boardlab.model.facts import WorkloadFacts
    from boardlab.model.worker_result import WorkerResult
    from boardlab.model.workload import WorkloadSpec
    from boardlab.store import Store

TITLE = "Data-stream study"
# The roles (WorkloadSpec.roles) of the workloads this study reads.
ROLES = frozenset({"io-throughput", "network", "pipeline", "dma", "compute", "rate-search"})
STAGES = ("receive", "filter", "compress", "encrypt", "transmit", "sink")


def _is_stream(workload: str, workloads: WorkloadFacts) -> bool:
    spec = workloads.spec_of(workload)
    return spec is not None and bool(ROLES & set(spec.roles))


@dataclass(frozen=True)
class Curve:
    workload: str
    label: str  # the other parameters
    unit: str
    points: tuple[tuple[int, float, int], ...]  # (block bytes, median over runs, runs)
    to_bit_s: float = 1.0  # the factor from the metric's unit to bit/s (MB/s: 8e6)


@dataclass(frozen=True)
class DmaRow:
    size_bytes: int
    memcpy_mb_s: float | None
    dma_mb_s: float | None
    ratio: float | None
    runs: int


@dataclass(frozen=True)
class RrRow:
    """io.net tcp_rr: transactions per second and the latency percentiles, medians over the cell's runs."""

    label: str
    transactions_s: float | None
    latency_p50_ns: float | None
    latency_p99_ns: float | None
    latency_p999_ns: float | None
    runs: int


@dataclass(frozen=True)
class LinkRow:
    """A pipeline's goodput against the link rate its plan declared (link_bit_s)."""

    label: str
    goodput_bit_s: float
    link_bit_s: float
    efficiency_percent: float
    runs: int


@dataclass(frozen=True)
class StageCpu:
    label: str
    ns_per_byte: tuple[tuple[str, float], ...]  # (stage, median CPU ns per delivered input byte)
    cpu_over_rusage: float | None  # median of the runs' stage sum / process rusage
    block_bytes: int = 0  # for ordering


@dataclass(frozen=True)
class BitCost:
    label: str
    per_bit: float
    kind: str  # "instructions" (counters) or "cycle-equivalents (estimate)"
    reason: str | None  # why counters were not used


@dataclass(frozen=True)
class Gflops:
    label: str
    gflops: float
    runs: int


@dataclass(frozen=True)
class Balance:
    compute_per_s: float
    compute_source: str
    io_bit_s: float
    io_source: str
    # what the I/O rate is: "link" (measured over a real network link), "declared link" (a plan's
    # link_bit_s), "storage", or "loopback" (no link carried it: the balance is then an upper bound)
    io_kind: str = "storage"

    @property
    def ratio(self) -> float:
        return self.compute_per_s / self.io_bit_s

    @property
    def caveat(self) -> str | None:
        if self.io_kind != "loopback":
            return None
        return (
            "The I/O rate is a loopback measurement: no network link carried it, so this balance is an upper "
            "bound of what a board fed over its network does. Run io.net against a peer (`boardlab run "
            "--preset stream --peer HOST`, with `boardlab-kern net-sink` on HOST) or declare the link "
            "(link_bit_s) for a balance against the link."
        )


def _peer_host(docs: list[WorkerResult]) -> str | None:
    """The network peer the runs talked to (io.net's info `peer`, HOST:PORT), or None for loopback."""
    for d in docs:
        peer = str(d.info.get("peer") or "")
        host = peer.rsplit(":", 1)[0].strip("[]")
        if host and not (host.startswith("127.") or host in ("::1", "localhost")):
            return host
    return None


def _energy_measured(store: Store, campaign_id: int) -> bool:
    return any(r["supported"] and r["is_primary"] for r in store.energy_sources(campaign_id))


def _no_gflops_per_watt(inventory: dict) -> str:
    """What GFLOPS/W lacks when no energy was measured: a sensor, or only the plan asking for it."""
    if inventory.get("power_sensors") or inventory.get("powercap"):
        return (
            "GFLOPS/W: missing: the board has a power sensor but this campaign measured no energy; run the "
            "plan with an [energy] table (docs/energy.md) for watts beside the GFLOPS."
        )
    return (
        "GFLOPS/W: missing: no power sensor. The board exposes no hwmon power or energy input and no "
        "powercap zone that boardlab reads, and the plan named no external meter (an INA219/INA231 on I2C, "
        "a USB power meter: [energy] in the plan, docs/energy.md); without the watts during the GEMM and "
        "LINPACK runs there is no GFLOPS per watt."
    )


def _io_for_balance(storage, links, declared, loopback) -> tuple[float, str, str] | None:
    """The I/O rate of the balance: the best of storage and the network as a link carries it (measured over
    a real link, else the declared link rate); a loopback figure only when nothing else exists."""
    net = (max(links), "link") if links else (max(declared), "declared link") if declared else None
    best = [(r, src, "storage") for r, src in storage] + ([(net[0][0], net[0][1], net[1])] if net else [])
    if best:
        return max(best)
    return (*max(loopback), "loopback") if loopback else None


@dataclass(frozen=True)
class StreamStudy:
    curves: tuple[Curve, ...]
    dma: tuple[DmaRow, ...]
    dma_unsupported: str | None
    stages: tuple[StageCpu, ...]
    gflops: tuple[Gflops, ...]
    bit_costs: tuple[BitCost, ...]
    balance: Balance | None
    # (label, zero-loss / knee bit/s, where the rate broke: the first failing trial above it)
    searches: tuple[tuple[str, float, str], ...]
    clock_hz: float | None
    clock_source: str
    notes: tuple[str, ...]
    efficiency: tuple[tuple[str, float, float], ...] = ()  # (pipeline, goodput bit/s, / io.net ceiling)
    ceiling: str = ""  # the io.net cell the efficiency is against
    rr: tuple[RrRow, ...] = ()
    pcie: tuple[dict, ...] = ()  # io.dma from a PCIe endpoint test log: op, size_bytes, memcpy/dma MB/s, ...
    gflops_per_watt: bool = False  # energy was measured for the GFLOPS runs (see the Energy section)
    gflops_per_watt_missing: str = ""  # what is missing for GFLOPS/W, when it is
    link: tuple[LinkRow, ...] = ()


def clock_of(inventory: dict) -> tuple[float | None, str]:
    """The CPU clock for estimates: cpufreq's highest frequency in the campaign's inventory, else the live
    /proc/cpuinfo figure when the report runs on the measured host."""
    khz = [p.get("max_khz") for p in inventory.get("cpufreq_policies") or [] if p.get("max_khz")]
    if khz:
        return max(khz) * 1e3, "cpufreq max frequency (inventory)"
    import socket

    if inventory.get("hostname") == socket.gethostname():
        from boardlab.platform.clock import cpuinfo_hz

        hz = cpuinfo_hz("/")
        if hz:
            return hz, "/proc/cpuinfo cpu MHz (no cpufreq; read now on this host)"
    return None, "unknown (no cpufreq, report not made on the measured host)"


def _label(params: dict, skip: tuple[str, ...]) -> str:
    return (
        params_text({k: v for k, v in sorted(params.items()) if k not in skip and k != "path"}) or "defaults"
    )


def _med(xs: Sequence[float | None]) -> float | None:
    known = [x for x in xs if x is not None]
    return statistics.median(known) if known else None


def _metric(doc: WorkerResult, name: str) -> float | None:
    m = doc.metric(name)
    return m.median if m else None


def _counter_instructions(doc: WorkerResult) -> tuple[float | None, str | None]:
    c = doc.counters.get("instructions") or None
    if c is None:
        return None, "this run has no counters (boardlab-kern without the counters option)"
    if "count" in c and c["count"]:
        return float(c["count"]), None
    return None, str(c.get("unsupported") or "instructions counter not reported")


def _where_broke(docs: list[WorkerResult], metric: str) -> str:
    """Where a rate search's rate broke, over its runs: the stages that dropped in the lowest failing trial
    above each run's figure (a full ring's stage, the transmit's cap, the receive's socket) and that trial's
    shortfall of goodput against the offered rate (a lossless transport holds its sender back instead)."""
    stages: Counter[str] = Counter()
    shortfalls: list[float] = []
    for d in docs:
        value = _metric(d, metric)
        trials = d.info.get("trials") or []
        failed = [
            t for t in trials
            if value is not None and t.get("rate_bit_s", 0) > value
            and (t.get("lost_percent", 0) > 0 or not t.get("sustained", True))
        ]  # fmt: skip
        if not failed:
            continue
        info = min(failed, key=lambda t: t["rate_bit_s"]).get("info") or {}
        dropped = [st for st, n in (info.get("drops_by_stage") or {}).items() if n]
        stages.update(dropped or ["no drops"])
        if info.get("shortfall_percent") is not None:
            shortfalls.append(info["shortfall_percent"])
    if not stages:
        return ""
    where = ", ".join(f"{st} ({n}/{len(docs)} runs)" for st, n in stages.most_common())
    short = _med(shortfalls)
    return where + (f"; goodput short of offered {short:.1f}%" if short is not None else "")


@dataclass
class _Gathered:
    """What the stream study collects cell by cell, before it becomes the frozen `StreamStudy`."""

    curves: dict[tuple[str, str], dict[int, list[float]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    to_bit: dict[str, float] = field(default_factory=dict)
    dma: dict[int, list[WorkerResult]] = field(default_factory=lambda: defaultdict(list))
    stages: list[StageCpu] = field(default_factory=list)
    gflops: list[Gflops] = field(default_factory=list)
    bit_costs: list[BitCost] = field(default_factory=list)
    searches: list[tuple[str, float, str]] = field(default_factory=list)
    compute_ips: list[tuple[float, str]] = field(default_factory=list)
    io_best: list[tuple[float, str]] = field(default_factory=list)  # storage
    io_links: list[tuple[float, str]] = field(default_factory=list)  # network measured over a real link
    io_declared: list[tuple[float, str]] = field(
        default_factory=list
    )  # link rates plans declared (link_bit_s)
    io_loopback: list[tuple[float, str]] = field(default_factory=list)
    net_ceiling: list[tuple[float, str]] = field(default_factory=list)
    pipeline_goodput: list[tuple[int, str, float]] = field(default_factory=list)
    rr_rows: list[RrRow] = field(default_factory=list)
    link_rows: list[LinkRow] = field(default_factory=list)
    pcie_rows: list[dict] = field(default_factory=list)


@dataclass(frozen=True)
class _StreamCell:
    """One cell of a stream workload: its parameters, the label suffix of its condition, its valid runs'
    worker results, and the roles its stored spec gives it."""

    workload: str
    params: dict
    cond: str  # "" under the baseline, else " [condition]"
    docs: list[WorkerResult]
    roles: frozenset[str]

    @property
    def name(self) -> str:
        return f"{self.workload} ({_label(self.params, ())}){self.cond}"


def _stream_runs(
    store: Store, campaign_id: int, workloads: WorkloadFacts
) -> tuple[dict[tuple[str, str, str], list[WorkerResult]], dict[str, str]]:
    """(workload, params, condition) -> the valid runs' worker results, and workload -> why it is
    unsupported."""
    by_cell: dict[tuple[str, str, str], list[WorkerResult]] = defaultdict(list)
    unsupported: dict[str, str] = {}
    for row in store.runs(campaign_id):
        if not _is_stream(row["workload"], workloads):
            continue
        doc = stored_worker_result(row["worker_json"])
        if doc is not None and not doc.supported:
            unsupported[row["workload"]] = doc.reason or "unsupported"
            continue
        if not row["valid"] or doc is None or not doc.ok:
            continue
        by_cell[(row["workload"], row["params_json"], row["condition"])].append(doc)
    camp = store.campaign(campaign_id)
    env = json.loads(camp["environment_json"] or "{}") if camp else {}
    for name, reason in (env.get("skipped_workloads") or {}).items():
        if _is_stream(name, workloads):
            unsupported[name] = reason
    return by_cell, unsupported


def _gather_curve(g: _Gathered, c: _StreamCell, curve: tuple[str, str, float]) -> None:
    """A throughput curve's point, and the cell's rate as storage, link or loopback I/O for the balance."""
    key, metric, factor = curve
    g.to_bit[c.workload] = factor
    if key not in c.params:
        return
    vals = [v for v in (_metric(d, metric) for d in c.docs) if v is not None]
    if not vals:  # tcp_rr reports no goodput
        return
    g.curves[(c.workload, _label(c.params, (key,)) + c.cond)][int(c.params[key])].extend(vals)
    median = statistics.median(vals)  # the cell's median, as the tables show it
    rate = (median * factor, c.name)
    host = _peer_host(c.docs) if c.roles & {"network", "pipeline"} else None
    if host:
        g.io_links.append((rate[0], f"{rate[1]}, measured over the link to {host}"))
    elif c.roles & {"network", "pipeline"}:
        g.io_loopback.append(rate)
    else:
        g.io_best.append(rate)
    if "network" in c.roles:
        g.net_ceiling.append((median, c.name))
    if "pipeline" in c.roles:
        g.pipeline_goodput.append(
            (int(c.params.get("block_bytes", 0)), f"{_label(c.params, ())}{c.cond}", median)
        )


def _gather_links(g: _Gathered, c: _StreamCell) -> None:
    """Request-response rows of the network workloads, and a pipeline's goodput against its declared link."""
    if "network" in c.roles and c.params.get("mode") == "tcp_rr":
        tps, p50, p99, p999 = (
            _med([_metric(d, m) for d in c.docs])
            for m in ("transactions_s", "latency_p50_ns", "latency_p99_ns", "latency_p999_ns")
        )
        g.rr_rows.append(RrRow(f"{_label(c.params, ('mode',))}{c.cond}", tps, p50, p99, p999, len(c.docs)))
    if "pipeline" in c.roles and float(c.params.get("link_bit_s") or 0) > 0:
        goodput = _med([_metric(d, "goodput_bit_s") for d in c.docs])
        if goodput is not None:
            link = float(c.params["link_bit_s"])
            # The runs' own percent when they report it; else the same ratio from their goodput.
            eff = _med([_metric(d, "link_efficiency_percent") for d in c.docs])
            lbl = f"{_label(c.params, ('link_bit_s',))}{c.cond}"
            g.link_rows.append(
                LinkRow(lbl, goodput, link, eff if eff is not None else 100 * goodput / link, len(c.docs))
            )


def _gather_compute(g: _Gathered, c: _StreamCell, spec: WorkloadSpec | None) -> None:
    """GFLOPS and retired instructions per second of compute cells; a rate search's top rate."""
    if "compute" in c.roles:
        gf = _med([_metric(d, "gflops") for d in c.docs])
        if gf is not None:
            g.gflops.append(Gflops(c.name, gf, len(c.docs)))
        for d in c.docs:
            count, _why = _counter_instructions(d)
            if count and d.wall_ns:
                g.compute_ips.append((count / (d.wall_ns * 1e-9), f"{c.workload} retired instructions/s"))
    if "rate-search" in c.roles and spec is not None:
        name = spec.primary_metric.name
        v = _med([_metric(d, name) for d in c.docs])
        if v is not None:
            at_least = any(d.info.get("at_least") for d in c.docs)
            g.searches.append(
                (c.name + (" [top of range: at least]" if at_least else ""), v, _where_broke(c.docs, name))
            )


def _gather_stages(g: _Gathered, c: _StreamCell) -> None:
    """A pipeline's CPU per delivered byte in each stage."""
    per_stage = []
    for st in STAGES:
        vals = []
        for d in c.docs:
            info = d.info
            delivered = info.get("stage.sink.bytes_out") or 0
            if delivered:
                vals.append(info.get(f"stage.{st}.cpu_ns", 0) / delivered)
        if vals:
            per_stage.append((st, statistics.median(vals)))
    ratio = _med([d.info.get("cpu_stages_over_rusage") for d in c.docs])
    g.stages.append(
        StageCpu(
            f"{_label(c.params, ())}{c.cond}", tuple(per_stage), ratio, int(c.params.get("block_bytes", 0))
        )
    )


def _gather_bit_cost(g: _Gathered, c: _StreamCell, hz: float | None) -> None:
    """Instructions per delivered bit (or cycle-equivalents from CPU time and the clock, said so)."""
    costs = []
    reason = None
    kind = "instructions"
    for d in c.docs:
        info = d.info
        if "pipeline" in c.roles:
            bits = 8 * (info.get("stage.sink.bytes_out") or 0)
            cpu_ns = info.get("cpu_ns_stages_sum") or 0
        else:
            bits = 8 * (info.get("sent_bytes") or 0)
            per_b = [_metric(d, "cpu_ns_per_byte_sender"), _metric(d, "cpu_ns_per_byte_receiver")]
            cpu_ns = sum(x for x in per_b if x) * (bits / 8)
        if not bits:
            continue
        count, why = _counter_instructions(d)
        if count:
            costs.append(count / bits)
        elif hz:
            reason, kind = why, "cycle-equivalents (estimate: CPU time x clock)"
            costs.append(cpu_ns * 1e-9 * hz / bits)
        else:
            reason = f"{why}; and no clock frequency for an estimate"
    if costs:
        g.bit_costs.append(BitCost(c.name, statistics.median(costs), kind, reason))


def _gather_cell(g: _Gathered, c: _StreamCell, hz: float | None, spec: WorkloadSpec | None) -> None:
    if spec is not None and spec.throughput_curve is not None:
        _gather_curve(g, c, spec.throughput_curve)
    _gather_links(g, c)
    if "dma" in c.roles and c.params.get("pcitest_log"):
        for d in c.docs[-1:]:  # the same log gives the same table: the last run's
            g.pcie_rows.extend(d.info.get("pcitest_rows") or [])
        return
    if "dma" in c.roles:
        g.dma[int(c.params.get("size_bytes", 0))].extend(c.docs)
    _gather_compute(g, c, spec)
    if "pipeline" in c.roles:
        _gather_stages(g, c)
    if c.roles & {"pipeline", "network"}:
        _gather_bit_cost(g, c, hz)


def _balance(
    g: _Gathered,
    by_cell: dict[tuple[str, str, str], list[WorkerResult]],
    hz: float | None,
    workloads: WorkloadFacts,
) -> Balance | None:
    """Compute against I/O: the best instruction rate measured (else the clock's estimate) and the I/O rate
    the balance uses (measured links, declared links, storage, loopback; `_io_for_balance`)."""
    if not g.compute_ips and hz:
        threads = max(
            [int(json.loads(p)["threads"]) for (w, p, _c) in by_cell
             if workloads.has_role(w, "compute") and "threads" in json.loads(p)]
            or [1]
        )  # fmt: skip
        g.compute_ips.append(
            (hz * threads, f"estimate: clock x {threads} thread(s), one instruction per cycle")
        )
    for _w, params_json, _c in by_cell:
        link = json.loads(params_json).get("link_bit_s")
        if isinstance(link, int | float) and link > 0:
            g.io_declared.append(
                (float(link), f"declared link rate (link_bit_s = {_si(float(link), 'bit/s')})")
            )
    io = _io_for_balance(g.io_best, g.io_links, g.io_declared, g.io_loopback)
    if not (g.compute_ips and io):
        return None
    c = max(g.compute_ips)
    return Balance(c[0], c[1], io[0], io[1], io[2])


def _dma_rows(g: _Gathered) -> tuple[DmaRow, ...]:
    rows = []
    for size, docs in sorted(g.dma.items()):
        mem = _med([_metric(d, "memcpy_mb_s") for d in docs])
        dm = _med([_metric(d, "dma_mb_s") for d in docs])
        rows.append(DmaRow(size, mem, dm, dm / mem if dm and mem else None, len(docs)))
    return tuple(rows)


def stream_study(
    store: Store, campaign_id: int, inventory: dict, workloads: WorkloadFacts
) -> StreamStudy | None:
    by_cell, unsupported = _stream_runs(store, campaign_id, workloads)
    if not by_cell and not unsupported:
        return None
    hz, hz_source = clock_of(inventory)
    g = _Gathered()
    for (workload, params_json, condition), docs in sorted(by_cell.items()):
        spec = workloads.spec_of(workload)
        cond = "" if condition in ("baseline", "") else f" [{condition}]"
        roles = frozenset(spec.roles) if spec else frozenset()
        _gather_cell(g, _StreamCell(workload, json.loads(params_json), cond, docs, roles), hz, spec)
    balance = _balance(g, by_cell, hz, workloads)
    ceiling = max(g.net_ceiling) if g.net_ceiling else None
    return StreamStudy(
        curves=tuple(
            Curve(
                w,
                label,
                "bit/s",
                tuple((b, statistics.median(v), len(v)) for b, v in sorted(pts.items())),
                g.to_bit.get(w, 1.0),
            )
            for (w, label), pts in sorted(g.curves.items())
        ),
        dma=_dma_rows(g),
        dma_unsupported=next(
            (r for w, r in sorted(unsupported.items()) if workloads.has_role(w, "dma")), None
        ),
        stages=tuple(sorted(g.stages, key=lambda st: (st.block_bytes, st.label))),
        gflops=tuple(g.gflops),
        bit_costs=tuple(g.bit_costs),
        balance=balance,
        searches=tuple(g.searches),
        efficiency=tuple((label, gp, gp / ceiling[0]) for _b, label, gp in sorted(g.pipeline_goodput))
        if ceiling
        else (),
        ceiling=f"{ceiling[1]}: {_si(ceiling[0], 'bit/s')}" if ceiling else "",
        rr=tuple(g.rr_rows),
        link=tuple(g.link_rows),
        pcie=tuple(g.pcie_rows),
        gflops_per_watt=bool(g.gflops) and _energy_measured(store, campaign_id),
        gflops_per_watt_missing=_no_gflops_per_watt(inventory),
        clock_hz=hz,
        clock_source=hz_source,
        notes=tuple(
            f"{w}: unsupported here: {r}"
            for w, r in sorted(unsupported.items())
            if not workloads.has_role(w, "dma")
        ),
    )


# ---- the section ----


def _curve_value(c: Curve, v: float) -> float:
    return v * c.to_bit_s


def tables(s: StreamStudy) -> list[tuple[str, tuple[str, ...], list[tuple[str, ...]]]]:
    """(title, headers, rows) of every table of the section, shared by the three renderers."""
    out: list[tuple[str, tuple[str, ...], list[tuple[str, ...]]]] = []
    rows: list[tuple[str, ...]] = [
        (c.workload, c.label, f"{b}", _si(_curve_value(c, v), "bit/s"), str(n))
        for c in s.curves
        for b, v, n in c.points
    ]
    if rows:
        out.append(
            (
                "Throughput against block size",
                ("workload", "parameters", "block_bytes", "throughput_bit_s", "runs"),
                rows,
            )
        )
    if s.dma:
        out.append((
            "CPU memcpy against DMA",
            ("size_bytes", "memcpy_mb_s", "dma_mb_s", "dma / memcpy", "runs"),
            [(str(r.size_bytes), f"{r.memcpy_mb_s:.1f}" if r.memcpy_mb_s else "-",
              f"{r.dma_mb_s:.1f}" if r.dma_mb_s else "-", f"{r.ratio:.2f}" if r.ratio else "-", str(r.runs))
             for r in s.dma],
        ))  # fmt: skip
    elif s.dma_unsupported:
        out.append(("CPU memcpy against DMA", ("io.dma",), [(f"unsupported: {s.dma_unsupported}",)]))
    if s.pcie:

        def mb(v: float | None) -> str:
            return "-" if v is None else f"{v:.1f}"

        # pci-epf-test's READ is the endpoint reading RC memory, WRITE writing it; its DMA is the endpoint's
        # engine. RC-initiated DMA is not in these logs: that column stays empty rather than guessed.
        out.append((
            "PCIe endpoint test: CPU memcpy against DMA (endpoint-initiated)",
            ("op", "size_bytes", "memcpy_mb_s", "dma_ep_mb_s", "dma_rc_mb_s", "dma_ep / memcpy", "samples",
             "pcitest"),
            [(r["op"].lower(), str(r["size_bytes"]), mb(r.get("memcpy_mb_s")), mb(r.get("dma_mb_s")),
              "- (not in the endpoint test's logs)",
              f"{r['dma_mb_s'] / r['memcpy_mb_s']:.2f}"
              if r.get("dma_mb_s") and r.get("memcpy_mb_s") else "-",
              str(r.get("samples", 0)), "NOT OKAY" if r.get("rc_failed") else "ok") for r in s.pcie],
        ))  # fmt: skip
    if s.stages:
        out.append((
            "CPU per pipeline stage (ns per delivered input byte)",
            ("pipeline", *STAGES, "stages / rusage"),
            [(st.label, *(fmt_num(dict(st.ns_per_byte).get(x, 0), 3) for x in STAGES),
              f"{st.cpu_over_rusage:.3f}" if st.cpu_over_rusage else "-") for st in s.stages],
        ))  # fmt: skip
    if s.gflops:
        out.append(
            (
                "GFLOPS",
                ("kernel", "gflops", "runs"),
                [(g.label, fmt_num(g.gflops, 3), str(g.runs)) for g in s.gflops],
            )
        )
    if s.searches:
        out.append(
            (
                "Zero-loss rate and pipeline knee",
                ("search", "rate_bit_s", "where the rate broke"),
                [(n, _si(v, "bit/s"), broke) for n, v, broke in s.searches],
            )
        )
    if s.efficiency:
        out.append((
            f"Pipeline goodput against io.net's ceiling ({s.ceiling})",
            ("pipeline", "goodput_bit_s", "of ceiling"),
            [(label, _si(g, "bit/s"), f"{e:.1%}") for label, g, e in s.efficiency],
        ))  # fmt: skip
    if s.link:
        out.append((
            "Goodput against the declared link rate",
            ("pipeline", "goodput_bit_s", "link_bit_s", "link_efficiency_percent", "runs"),
            [(r.label, _si(r.goodput_bit_s, "bit/s"), _si(r.link_bit_s, "bit/s"),
              f"{r.efficiency_percent:.1f}", str(r.runs)) for r in s.link],
        ))  # fmt: skip
    if s.rr:

        def ns(v: float | None) -> str:
            return "-" if v is None else f"{v:.0f}"

        out.append((
            "TCP request/response (io.net tcp_rr)",
            ("parameters", "transactions_s", "latency_p50_ns", "latency_p99_ns", "latency_p999_ns", "runs"),
            [(r.label, "-" if r.transactions_s is None else f"{r.transactions_s:.0f}", ns(r.latency_p50_ns),
              ns(r.latency_p99_ns), ns(r.latency_p999_ns), str(r.runs)) for r in s.rr],
        ))  # fmt: skip
    if s.bit_costs:
        out.append((
            "Instructions per bit",
            ("workload", "per_bit", "kind", "why not counters"),
            [(b.label, fmt_num(b.per_bit, 3), b.kind, b.reason or "-") for b in s.bit_costs],
        ))  # fmt: skip
    if s.balance:
        b = s.balance
        out.append((
            "Balance (compute instructions per I/O bit; about 1 is balanced)",
            ("compute_per_s", "compute source", "io_bit_s", "io source", "io kind", "balance"),
            [(_si(b.compute_per_s, "/s"), b.compute_source, _si(b.io_bit_s, "bit/s"), b.io_source, b.io_kind,
              fmt_num(b.ratio, 3) + (" (upper bound)" if b.io_kind == "loopback" else ""))],
        ))  # fmt: skip
    return out


INTRO = (
    "Is this board a balanced data-stream processor? About one compute instruction per bit of I/O is the "
    "yardstick (Szalay et al. 2010). Throughput by block size, CPU memcpy against a DMA engine, the CPU each "
    "stage of receive -> filter -> compress -> encrypt -> transmit costs, GFLOPS, instructions per bit and "
    "the balance. Clock for estimates: "
)


def applies(ctx) -> bool:
    skipped = ctx.environment.get("skipped_workloads") or {}
    return any(_is_stream(c.workload, ctx.workloads) for c in ctx.cells) or any(
        _is_stream(w, ctx.workloads) for w in skipped
    )


def analyze(ctx) -> StreamStudy | None:
    return stream_study(ctx.store, ctx.campaign_id, ctx.inventory, ctx.workloads)


def _curve_figure(c: Curve) -> doc.Figure | None:
    """Throughput (log) against block size (log 2), one line with its points labelled."""
    pts = [(float(b), _curve_value(c, v)) for b, v, _n in c.points if v > 0]
    if len(pts) < 2:
        return None
    return doc.Figure(
        doc.LinePlotSpec(
            lines=[doc.Line(c.label, pts)],
            title=f"{c.workload} ({c.label})",
            x_label="block size (bytes, log2 scale)",
            y_label="throughput [bit/s] (log)",
            x_kind="log2",
            y_kind="log10",
            x_format="bytes",
            y_format="si",
            width=420,
            height=220,
            legend=False,
            title_size=11,
        )
    )


def _stage_figure(st: StageCpu) -> doc.Figure | None:
    vals = dict(st.ns_per_byte)
    if max(vals.values(), default=0) <= 0:
        return None
    return doc.Figure(
        doc.BarsSpec(
            bars=[(name, vals.get(name, 0.0)) for name in STAGES],
            unit="ns/B",
            title=f"CPU per stage: {st.label}",
        )
    )


def sections(analysis, s: StreamStudy) -> list[doc.Section]:
    clock = f"{s.clock_hz / 1e6:.0f} MHz ({s.clock_source})" if s.clock_hz else s.clock_source
    figures = [
        f for f in (*(_curve_figure(c) for c in s.curves), *(_stage_figure(st) for st in s.stages)) if f
    ]
    out = [
        doc.section(
            TITLE,
            doc.Prose(INTRO + clock + "."),
            doc.Multiples(tuple(figures)) if figures else None,
            anchor="stream",
        )
    ]
    for title, headers, rows in tables(s):
        caveat = s.balance.caveat if s.balance and title.startswith("Balance") else None
        table = doc.Table(tuple(doc.Column(h) for h in headers), tuple(rows))
        out.append(doc.section(title, table, doc.Prose(caveat, strong=True) if caveat else None, level=3))
    if s.gflops and not s.gflops_per_watt:
        out.append(doc.section("GFLOPS per watt", doc.Prose(s.gflops_per_watt_missing), level=3))
    if s.notes:
        out.append(doc.section("Notes", doc.Items(tuple(s.notes)), level=3))
    return out
