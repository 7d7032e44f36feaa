"""The energy side of a campaign: discovers the sources, runs the sampler for the whole campaign, measures
each run's window and the gated idle windows before and after each block of runs.

The runner calls four things: `environment()` (what is measured, or why nothing is), `start(...)`,
`before_run(...)` / `finish(...)` (idle windows at block boundaries) and `attach(result, start, end)`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from boardlab.energy.integrate import nyquist_warning
from boardlab.energy.sampler import EnergySampler, power_series
from boardlab.energy.sources import Discovery, MeterConfig, discover
from boardlab.model.campaign import EnergyPolicy
from boardlab.model.run import RunEnergy, RunResult


def meter_config(p: EnergyPolicy) -> MeterConfig:
    return MeterConfig(
        command=p.meter_command,
        command_scope=p.meter_command_scope,
        command_interval_s=p.meter_command_interval_s,
        serial=p.meter_serial,
        serial_scope=p.meter_serial_scope,
        serial_interval_s=p.meter_serial_interval_s,
    )


class EnergyMeter:
    def __init__(self, policy: EnergyPolicy, root, compatible: tuple[str, ...] = (), *, clock=None):
        self.policy = policy
        self.discovery = (
            Discovery() if not policy.enabled else discover(root, compatible, meter_config(policy))
        )
        self.primary = self.discovery.primary(policy.primary) if policy.enabled else None
        self.clock = clock
        self.sampler: EnergySampler | None = None
        self.store = None
        self.campaign_id: int | None = None
        self._block: int | None = None
        self._cost: dict = {}

    @property
    def active(self) -> bool:
        return self.primary is not None

    def reason(self) -> str | None:
        if not self.policy.enabled:
            return "unsupported: energy measurement turned off in the plan ([energy] enabled = false)"
        if self.policy.primary and self.primary is None:
            names = ", ".join(s.spec.name for s in self.discovery.sources) or "none"
            return (
                f"unsupported: [energy] primary = {self.policy.primary!r} is not a source here "
                f"(sources: {names})"
            )
        return None if self.primary else self.discovery.reason

    def environment(self) -> dict:
        return {
            "supported": self.active,
            "reason": self.reason(),
            "primary": self.primary.spec.name if self.primary else None,
            "sources": [s.to_dict() for s in self.discovery.specs],
            "unavailable": [u.to_dict() for u in self.discovery.unavailable],
        }

    def start(self, store, campaign_id: int, cpus: set[int] | None) -> None:
        self.store, self.campaign_id = store, campaign_id
        rows: list[tuple[str, dict, bool, str | None, bool]] = [
            (s.spec.name, s.spec.to_dict(), True, None, s is self.primary) for s in self.discovery.sources
        ] + [(u.name, {}, False, u.reason, False) for u in self.discovery.unavailable]
        if not self.active and self.reason():
            rows.append(("energy", {}, False, self.reason(), False))
        store.record_energy_sources(campaign_id, rows)
        if not self.active:
            return
        self.sampler = EnergySampler(
            self.discovery.sources, clock=self.clock, cpus=cpus, min_interval_s=self.policy.min_interval_s
        )
        self.sampler.start()

    def stop(self) -> None:
        if self.sampler is not None:
            self.sampler.stop()
            self._cost = {
                "energy_sampler_cpu_s": self.sampler.cpu_s,
                "energy_sampler_wall_s": self.sampler.wall_s,
            }
            self.sampler = None

    # ---- idle windows ----

    def _block_of(self, seq: int, block: int) -> int:
        return seq // self.policy.block_runs if self.policy.block_runs else block

    def _idle(self, block: int, gate: Callable[[], object]) -> None:
        g = gate()  # the same idle/temperature gate as a run
        t0 = time.monotonic_ns()
        started = time.time()
        time.sleep(self.policy.idle_window_s)
        t1 = time.monotonic_ns()
        assert self.sampler is not None and self.store is not None  # started: `start` set both
        self.sampler.wait_past(t1)
        for s in self.discovery.sources:
            w, _, _why = self.sampler.window(s, t0, t1)
            if w is None:
                continue
            self.store.record_idle(
                self.campaign_id,
                s.spec.name,
                block,
                {
                    "started_unix_s": started,
                    "duration_s": w.duration_s,
                    "energy_j": w.energy_j,
                    "power_w": w.power_avg_w,
                    "quantization_j": w.quantization_j,
                    "samples": w.samples,
                    "gate_detail": getattr(g, "detail", None),
                },
            )
        self.sampler.forget_before(t1)

    def before_run(self, seq: int, block: int, gate: Callable[[], object]) -> None:
        """An idle window before the first run of each block (it is also the window after the last one)."""
        if not self.active:
            return
        b = self._block_of(seq, block)
        if b != self._block:
            self._idle(b, gate)
            self._block = b

    def finish(self, gate: Callable[[], object]) -> None:
        """The idle window after the last block."""
        if self.active and self._block is not None:
            self._idle(self._block + 1, gate)

    # ---- runs ----

    def attach(self, result: RunResult, start_ns: int, end_ns: int) -> RunResult:
        """The run's energy per source (and the power trace) added to its result."""
        if not self.active or self.sampler is None or end_ns <= start_ns:
            return result
        self.sampler.wait_past(end_ns)
        energy, series = [], []
        notes = []
        state = result.condition_state or {}
        # a condition whose load is periodic may say so in its state (`load_period_s`): Nyquist check
        periods = [
            p.get("load_period_s") for p in [state, *(state.get("parts") or [])] if isinstance(p, dict)
        ]
        period = next((p for p in periods if p), None)
        for s in self.discovery.sources:
            w, pts, why = self.sampler.window(s, start_ns, end_ns)
            if w is None:
                notes.append(why)
                continue
            if s.spec.kind == "power-reading":
                alias = nyquist_warning(self.sampler.intervals[s.spec.name], period, s.spec.name)
                if alias and alias not in w.warnings:
                    w = dataclasses.replace(w, warnings=(*w.warnings, alias))
            energy.append(
                RunEnergy(
                    source=s.spec.name,
                    method="counter" if s.spec.kind == "energy-counter" else "trapezoid",
                    start_ns=start_ns,
                    end_ns=end_ns,
                    energy_j=w.energy_j,
                    power_avg_w=w.power_avg_w,
                    power_peak_w=w.power_peak_w,
                    quantization_j=w.quantization_j,
                    samples=w.samples,
                    update_interval_s=s.spec.update_interval_s or self.sampler.intervals[s.spec.name],
                    warnings=w.warnings,
                )
            )
            series += [
                (f"energy.{s.spec.name}.power_w", t, v) for t, v in power_series(s.spec.kind, pts, start_ns)
            ]
        self.sampler.forget_before(end_ns)
        monitor = dict(result.monitor)
        monitor["energy_j"] = {e.source: e.energy_j for e in energy}
        if notes:
            monitor["energy_notes"] = notes
        return dataclasses.replace(
            result, energy=tuple(energy), series=tuple(result.series) + tuple(series), monitor=monitor
        )

    def cost(self) -> dict:
        """The sampler's own CPU time over the campaign (its cost is measured, not assumed)."""
        return dict(self._cost)
