"""The vehicle-services study's report section: per svc.scenario cell, CPU and memory per service (by
schedstat ns and by jiffies, the study's method), message build/send times and one-way latency, the SOAP
sweep's latency per rate (corrected from the intended start, and service time), the saturation knee,
drops, and energy per message (or why it is unsupported here).

Each value is the median over the cell's valid runs of the run's own figure (runs are the unit,
docs/method.md). Applies to cells whose workload spec has the "services" role; `services_cells` reads the
store once and `sections` lays the tables out.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from boardlab.analysis import document as doc
from boardlab.model.worker_result import stored_worker_result

if TYPE_CHECKING:
    from boardlab.analysis.records import CellAnalysis
    from boardlab.model.facts import WorkloadFacts
    from boardlab.store import Store

TITLE = "Vehicle services"
ROLE = "services"


@dataclass(frozen=True)
class ServiceCell:
    label: str
    scenario: str
    params: dict
    condition: str
    condition_text: str  # as a reader reads it (`CellAnalysis.condition_text`)
    n_valid: int
    metrics: dict[str, float] = field(default_factory=dict)  # metric -> median over valid runs
    per_service_cpu_pct: dict[str, float] = field(default_factory=dict)  # service -> median of run means
    per_service_jiffies_pct: dict[str, float] = field(default_factory=dict)
    per_service_rss_bytes: dict[str, float] = field(default_factory=dict)
    knee_rate_hz: float | None = None
    unsupported: str | None = None
    power_source: str | None = None  # rest/operating: the power sensor read (energy.sources' name)
    # open-loop sweep: target rate -> medians over the runs that reached it, and how many saturated there
    sweep: dict[float, dict[str, float | None]] = field(default_factory=dict)
    cell_id: int | None = None


def _median(xs: list[float]) -> float | None:
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def _cell(runs: dict, cell: CellAnalysis) -> ServiceCell:
    valid = [r for r in runs.values() if r["valid"]]
    per_metric: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    jif: dict[str, list[float]] = {}
    rss: dict[str, list[float]] = {}
    unsupported = None
    power_source = None
    steps: dict[float, dict[str, list]] = {}
    for r in runs.values():
        doc = stored_worker_result(r["worker_json"])
        if doc is not None and not doc.supported:
            unsupported = doc.reason
        if not r["valid"] or doc is None:
            continue
        info = doc.info
        power_source = (info.get("power_source") or {}).get("name") or power_source
        for m in doc.metrics:
            if m.median is not None:  # the reader's median: a metric's one "value" included
                per_metric.setdefault(m.name, []).append(m.median)
        for st in (info.get("sweep") or {}).get("steps", []):
            e = steps.setdefault(st["target_rate_hz"], {})
            for k in (
                "achieved_rate_hz",
                "corrected_p50_ns",
                "corrected_p99_ns",
                "service_p50_ns",
                "service_p99_ns",
            ):
                e.setdefault(k, []).append(st[k])
            e.setdefault("saturated", []).append(1.0 if st["saturated_reason"] else 0.0)
        acc = info.get("accounting") or {}
        for svc, a in (acc.get("per_service") or {}).items():
            cpu.setdefault(svc, []).append(a["cpu_pct_one_cpu"]["avg"])
            jif.setdefault(svc, []).append(a["cpu_jiffies_pct_one_cpu"]["avg"])
            rss.setdefault(svc, []).append(a["rss_bytes"]["avg"])
    metrics = {k: v for k, xs in per_metric.items() if (v := _median(xs)) is not None}
    return ServiceCell(
        cell_id=cell.cell_id,
        label=cell.label,
        scenario=str(cell.params.get("scenario", "position")),
        params=dict(cell.params),
        condition=cell.condition,
        condition_text=cell.condition_text,
        n_valid=len(valid),
        metrics=metrics,
        per_service_cpu_pct={k: v for k, xs in cpu.items() if (v := _median(xs)) is not None},
        per_service_jiffies_pct={k: v for k, xs in jif.items() if (v := _median(xs)) is not None},
        per_service_rss_bytes={k: v for k, xs in rss.items() if (v := _median(xs)) is not None},
        knee_rate_hz=metrics.get("knee_rate_hz"),
        unsupported=unsupported,
        power_source=power_source,
        sweep={
            rate: {k: (sum(v) if k == "saturated" else _median(v)) for k, v in e.items()}
            for rate, e in sorted(steps.items())
        },
    )


def services_cells(
    store: Store, campaign_id: int, cells: Sequence[CellAnalysis], workloads: WorkloadFacts
) -> tuple[ServiceCell, ...]:
    mine = [c for c in cells if workloads.has_role(c.workload, ROLE)]
    if not mine:
        return ()
    by_cell: dict[int, dict] = {c.cell_id: {} for c in mine}  # its cells' runs only, not the campaign's
    for r in store.runs(campaign_id):
        if r["cell_id"] in by_cell:
            by_cell[r["cell_id"]][r["id"]] = r
    return tuple(_cell(by_cell.get(c.cell_id, {}), c) for c in mine)


@dataclass(frozen=True)
class ServicesStudy:
    cells: tuple[ServiceCell, ...]
    # how the board measured energy per message, or why it could not, as stored with the campaign
    energy_reason: str | None = None


def applies(ctx) -> bool:
    return any(ctx.workloads.has_role(c.workload, ROLE) for c in ctx.cells)


def analyze(ctx) -> ServicesStudy:
    return ServicesStudy(
        services_cells(ctx.store, ctx.campaign_id, ctx.cells, ctx.workloads), ctx.workloads.energy_reason
    )


def shows(study: ServicesStudy) -> list[int]:
    return []  # its cells keep their boxplots: the section adds tables, not figures


def covers(study: ServicesStudy) -> list[int]:
    return [c.cell_id for c in study.cells if c.cell_id is not None]


def _f(v, scale=1.0, digits=3) -> str:
    return "–" if v is None else f"{v / scale:.{digits}f}"


def _name(c: ServiceCell) -> str:
    p = c.params
    if c.scenario == "position":
        src = p.get("source", "synthetic")
        return f"Position, {src}" + (f" ({p.get('read_mode', 'canonical')} reads)" if src == "nmea" else "")
    if c.scenario == "orientation":
        return f"Orientation, {p.get('source', 'synthetic')}"
    if c.scenario == "three":
        return "Position + Orientation + DirectionOfTravel"
    ka = "keep-alive" if int(p.get("keepalive", 1)) else "no keep-alive"
    if c.scenario == "soap":
        return f"SOAP {p.get('mode', 'closed')} loop {float(p.get('rate_hz', 10)):g} Hz, {ka}"
    if c.scenario == "soap-saturation":
        return f"SOAP open loop to saturation, {ka}"
    return c.scenario


# Each service with a sensor: (scenario, the sensor's source, the service's process in the accounting).
# Position's GPS is read in canonical mode for the pair, as the study's service did.
SENSORS = (("position", "nmea", "position"), ("orientation", "ins", "orientation"))


def sensor_shares(cells: Sequence[ServiceCell]) -> list[tuple[str, ...]]:
    """Per service with a sensor: its process's CPU from synthetic values and from the sensor, and the
    sensor's share of the latter ((sensor - synthetic) / sensor), where both cells ran under the same
    condition."""
    rows: list[tuple[str, ...]] = []
    for scenario, sensor, proc in SENSORS:
        mine = [c for c in cells if c.scenario == scenario and c.n_valid]
        for syn in (c for c in mine if c.params.get("source", "synthetic") == "synthetic"):
            real = next((c for c in mine if c.params.get("source") == sensor and c.condition == syn.condition
                         and c.params.get("read_mode", "canonical") == "canonical"), None)  # fmt: skip
            a, b = syn.per_service_cpu_pct.get(proc), real.per_service_cpu_pct.get(proc) if real else None
            if a is None or b is None:
                continue
            share = "–" if b <= 0 else f"{100 * (b - a) / b:.1f}"
            where = "" if syn.condition in ("baseline", "") else f" [{syn.condition_text}]"
            rows.append((f"{scenario.capitalize()}{where}", sensor, _f(a), _f(b), share))
    return rows


ServicesTable = tuple[str, tuple[str, ...], list[tuple[str, ...]]]  # (title, headers, rows)


def _shares_table(cells: Sequence[ServiceCell]) -> list[ServicesTable]:
    """The sensor's share of each service's CPU."""
    out: list[ServicesTable] = []
    shares = sensor_shares(cells)
    if shares:
        out.append((
            "The sensor's share of each service's CPU",
            ("service", "sensor", "cpu_pct_synthetic", "cpu_pct_sensor", "sensor_share_percent"),
            shares,
        ))  # fmt: skip
    return out


def _data_table(cells: Sequence[ServiceCell]) -> list[ServicesTable]:
    """The data services: CPU, memory and latency per scenario."""
    out: list[ServicesTable] = []
    data = [c for c in cells if c.scenario in ("position", "orientation", "three")]
    if data:
        rows: list[tuple[str, ...]] = []
        for c in data:
            m = c.metrics
            per = ", ".join(f"{k} {v:.3f}" for k, v in sorted(c.per_service_cpu_pct.items()))
            rows.append(
                (
                    _name(c),
                    str(c.n_valid),
                    _f(m.get("cpu_pct_one_cpu")),
                    _f(m.get("cpu_jiffies_pct_one_cpu")),
                    _f(m.get("rss_bytes"), 2**20, 2),
                    _f(m.get("pss_bytes"), 2**20, 2),
                    _f(m.get("build_p50_ns"), 1e3, 2),
                    _f(m.get("send_p50_ns"), 1e3, 2),
                    _f(m.get("tx_p50_ns"), 1e3, 2),
                    _f(m.get("oneway_p50_ns"), 1e3, 1),
                    _f(m.get("oneway_p99_ns"), 1e3, 1),
                    _f(m.get("reader_cpu_ns_per_s"), 1e6, 3),
                    _f(m.get("lost"), digits=0),
                    _f(m.get("udp_rcvbuf_errors"), digits=0),
                    per,
                )
            )
        out.append(
            (
                "Data services (VICTORY-like messages over UDP multicast)",
                (
                    "scenario",
                    "runs",
                    "cpu_pct_one_cpu",
                    "cpu_jiffies_pct",
                    "rss_MiB",
                    "pss_MiB",
                    "build_p50_us",
                    "send_p50_us",
                    "tx_p50_us",
                    "oneway_p50_us",
                    "oneway_p99_us",
                    "reader_cpu_ms_per_s",
                    "lost",
                    "udp_rcvbuf_errors",
                    "CPU per service [% of one CPU]",
                ),
                rows,
            )
        )
    return out


def _soap_table(cells: Sequence[ServiceCell]) -> list[ServicesTable]:
    """The SOAP endpoint's latency at each closed or open-loop rate."""
    out: list[ServicesTable] = []
    soap = [c for c in cells if c.scenario == "soap"]
    if soap:
        rows: list[tuple[str, ...]] = [
            (
                _name(c),
                str(c.n_valid),
                _f(c.metrics.get("achieved_rate_hz"), digits=1),
                _f(c.metrics.get("corrected_p50_ns"), 1e6),
                _f(c.metrics.get("corrected_p99_ns"), 1e6),
                _f(c.metrics.get("service_p50_ns"), 1e6),
                _f(c.metrics.get("service_p99_ns"), 1e6),
                _f(c.metrics.get("errors"), digits=0),
                _f(c.per_service_cpu_pct.get("mgmt")),
                _f(c.per_service_jiffies_pct.get("mgmt")),
                _f(c.metrics.get("tcp_retrans_segs"), digits=0),
            )
            for c in sorted(soap, key=lambda c: (c.params.get("mode", ""), float(c.params.get("rate_hz", 0))))
        ]
        out.append(
            (
                "SOAP management endpoint: latency per rate",
                (
                    "load",
                    "runs",
                    "achieved_hz",
                    "corrected_p50_ms",
                    "corrected_p99_ms",
                    "service_p50_ms",
                    "service_p99_ms",
                    "errors",
                    "server_cpu_pct_one_cpu",
                    "server_cpu_jiffies_pct",
                    "tcp_retrans_segs",
                ),
                rows,
            )
        )
    return out


def _saturation_tables(cells: Sequence[ServiceCell]) -> list[ServicesTable]:
    """The SOAP saturation knee, and the open loop's latency at each rate it swept."""
    out: list[ServicesTable] = []
    sat = [c for c in cells if c.scenario == "soap-saturation"]
    if sat:
        rows: list[tuple[str, ...]] = [
            (_name(c), str(c.n_valid), _f(c.knee_rate_hz, digits=0), _f(c.per_service_cpu_pct.get("mgmt")))
            for c in sat
        ]
        out.append(
            (
                "SOAP saturation knee (open loop)",
                ("load", "runs", "knee_rate_hz", "server_cpu_pct_one_cpu"),
                rows,
            )
        )
        rows = [
            (
                _name(c),
                f"{rate:g}",
                _f(e.get("achieved_rate_hz"), digits=1),
                _f(e.get("corrected_p50_ns"), 1e6),
                _f(e.get("corrected_p99_ns"), 1e6),
                _f(e.get("service_p50_ns"), 1e6),
                _f(e.get("service_p99_ns"), 1e6),
                f"{e.get('saturated', 0):.0f}",
            )
            for c in sat
            for rate, e in c.sweep.items()
        ]
        if rows:
            out.append(
                (
                    "SOAP open loop: latency per rate (medians over the runs that reached the rate)",
                    (
                        "load",
                        "target_hz",
                        "achieved_hz",
                        "corrected_p50_ms",
                        "corrected_p99_ms",
                        "service_p50_ms",
                        "service_p99_ms",
                        "runs_saturated",
                    ),
                    rows,
                )
            )
    return out


POWER_TITLE = "Power at rest vs operating"


def _power_table(cells: Sequence[ServiceCell]) -> list[ServicesTable]:
    """Power at rest against operating, and the energy per message above rest."""
    out: list[ServicesTable] = []
    power = [c for c in cells if c.scenario in ("rest", "operating") and c.n_valid]
    if power:
        out.append(
            (
                POWER_TITLE,
                (
                    "scenario",
                    "runs",
                    "power_rest_w",
                    "power_operating_w",
                    "power_delta_w (median of per-run differences)",
                    "energy_per_message_mJ",
                    "sensor",
                ),
                [
                    (
                        _name(c),
                        str(c.n_valid),
                        _f(c.metrics.get("power_rest_w")),
                        _f(c.metrics.get("power_operating_w")),
                        _f(c.metrics.get("power_delta_w")),
                        _f(c.metrics.get("energy_per_message_j"), 1e-3),
                        c.power_source or "",
                    )
                    for c in power
                ],
            )
        )
    return out


def tables(cells: Sequence[ServiceCell]) -> list[ServicesTable]:
    """(title, headers, rows) per table of the section."""
    return [
        table
        for part in (_shares_table, _data_table, _soap_table, _saturation_tables, _power_table)
        for table in part(cells)
    ]


def energy_note(reason: str | None) -> str:
    what = reason or "not stored with this campaign (the board's power sources are unknown to this report)"
    return f"Energy per message and power at rest vs operating: {what}."


PROSE = (
    "VICTORY-like services (the real schemas are not public: messages use boardlab's own namespace) run as "
    "boardlab-kern roles, each process accounted every second: cpu_pct_one_cpu from /proc/PID/schedstat "
    "nanoseconds, cpu_jiffies_pct from /proc/PID/stat ticks as the vehicle-services study measured (whole "
    "10 ms ticks, so a process near 1 % reads 0 or 1 % per second). SOAP latency is timed from each "
    "request's intended start (corrected: a stalled server cannot hide) and from its actual send (service "
    "time); a closed-loop client, as in the study, only ever sees the latter. Medians over valid runs."
)


def sections(analysis, study: ServicesStudy | Sequence[ServiceCell]) -> list[doc.Section]:
    cells = study.cells if isinstance(study, ServicesStudy) else tuple(study)
    if not cells:
        return []
    parts = tables(cells)
    intro: list[doc.Block] = [doc.Prose(PROSE, small=True, formats=doc.RICH)]
    if not any(
        title == POWER_TITLE for title, _, _ in parts
    ):  # why there is none, said once, under no heading
        reason = study.energy_reason if isinstance(study, ServicesStudy) else None
        intro.append(doc.Prose(energy_note(reason), small=True))
    out = [doc.section(TITLE, *intro, anchor="services")]
    for title, headers, rows in parts:
        out.append(doc.section(title, doc.Table(tuple(doc.Column(h) for h in headers), tuple(rows)), level=3))
    return out
