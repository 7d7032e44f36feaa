"""A campaign's energy read back from the store: sources, idle windows and per-run figures.

Idle power and dynamic energy are derived here, when read, not when a run is stored: the idle window after
a block is taken only once the block has run. Shared by the report (analysis) and the exports.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from boardlab.energy.efficiency import IdleWindow, RunFigures, idle_power_at, run_figures


@dataclass(frozen=True)
class SourceRow:
    name: str
    spec: dict
    supported: bool
    reason: str | None
    primary: bool


@dataclass(frozen=True)
class RunEnergyRow:
    run_id: int
    source: str
    method: str
    energy_j: float
    power_avg_w: float
    power_peak_w: float
    quantization_j: float
    samples: int
    update_interval_s: float | None
    warnings: tuple[str, ...]
    figures: RunFigures


@dataclass(frozen=True)
class CampaignEnergy:
    sources: tuple[SourceRow, ...]
    reason: str | None  # why there is no energy at all ("unsupported: ..."), None when there is
    idle: dict[str, tuple[IdleWindow, ...]] = field(default_factory=dict)
    runs: dict[int, dict[str, RunEnergyRow]] = field(default_factory=dict)  # run id -> source -> row

    @property
    def primary(self) -> str | None:
        return next((s.name for s in self.sources if s.primary and s.supported), None)

    @property
    def supported(self) -> list[SourceRow]:
        return [s for s in self.sources if s.supported]

    def run(self, run_id: int, source: str | None = None) -> RunEnergyRow | None:
        return self.runs.get(run_id, {}).get(source or self.primary or "")


def campaign_energy(store, campaign_id: int, *, runs: bool = True) -> CampaignEnergy:
    """The campaign's energy sources, idle windows and (`runs`) every run's energy rows; without `runs`, a
    reader that goes a run at a time (the export) makes each run's row itself (run_energy_row)."""
    camp = store.campaign(campaign_id)
    env = json.loads(camp["environment_json"] or "{}").get("energy") or {}
    sources = tuple(
        SourceRow(
            r["name"], json.loads(r["spec_json"]), bool(r["supported"]), r["reason"], bool(r["is_primary"])
        )
        for r in store.energy_sources(campaign_id)
    )
    reason = None
    if not any(s.supported for s in sources):
        reason = env.get("reason") or "unsupported: energy was not measured in this campaign"
    idle: dict[str, list[IdleWindow]] = {}
    for r in store.idle_windows(campaign_id):
        idle.setdefault(r["source"], []).append(
            IdleWindow(r["started_unix_s"], r["duration_s"], r["power_w"])
        )
    energy_rows = store.run_energy(campaign_id) if runs else []
    runs_meta = _runs_meta(store, campaign_id, {e["run_id"] for e in energy_rows})
    by_run: dict[int, dict[str, RunEnergyRow]] = {}
    for e in energy_rows:
        meta = runs_meta.get(e["run_id"])
        if meta is None:
            continue
        started_unix_s, value, unit, higher_is_better = meta
        by_run.setdefault(e["run_id"], {})[e["source"]] = run_energy_row(
            e, started_unix_s, value, unit, higher_is_better, idle.get(e["source"], [])
        )
    return CampaignEnergy(sources, reason, {k: tuple(v) for k, v in idle.items()}, by_run)


# The RunEnergyRow fields that a run_energy row holds under the same name.
_STORED_FIELDS = (
    "run_id", "source", "method", "energy_j", "power_avg_w", "power_peak_w", "quantization_j", "samples",
    "update_interval_s",
)  # fmt: skip


def run_energy_row(e, started_unix_s: float, value, unit: str, higher_is_better: bool, idle) -> RunEnergyRow:
    """A run's stored energy row `e` (a run_energy row) with its figures: idle power from the source's idle
    windows (`idle`) at the middle of the run."""
    duration_s = (e["end_ns"] - e["start_ns"]) / 1e9
    fig = run_figures(
        energy_j=e["energy_j"],
        duration_s=duration_s,
        power_idle_w=idle_power_at(idle, started_unix_s + duration_s / 2),
        value=value,
        unit=unit,
        higher_is_better=higher_is_better,
    )
    return RunEnergyRow(
        **{name: e[name] for name in _STORED_FIELDS},
        warnings=tuple(json.loads(e["warnings_json"])),
        figures=fig,
    )


def _runs_meta(
    store, campaign_id: int, run_ids: set[int]
) -> dict[int, tuple[float, float | None, str, bool]]:
    """run id -> (start time, value, unit, higher is better) of the runs `run_ids` (those with energy),
    read a cell at a time: none when no run has energy (an export), never the campaign's whole rows."""
    out: dict[int, tuple[float, float | None, str, bool]] = {}
    for cell in store.cells(campaign_id) if run_ids else ():
        for r in store.cell_runs(cell["id"]):
            if r["id"] in run_ids:
                out[r["id"]] = (r["started_unix_s"], r["value"], cell["unit"], bool(cell["higher_is_better"]))
    return out
