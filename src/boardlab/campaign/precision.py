"""The precision rule of docs/method.md as the runner applies it between rounds: after the pilot, the runs
each cell would need and the runs per arm for 80% power; after every round, which cells are precise enough
to stop. It reads only the values the runner keeps per cell as runs settle, never the store."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass

from boardlab.campaign.schedule import entry_of
from boardlab.model.campaign import Cell, ConditionSpec, Plan
from boardlab.model.workload import WorkloadSpec

Values = Mapping[str, list[float]]  # cell key -> its valid runs' values


@dataclass(frozen=True)
class PrecisionRule:
    plan: Plan
    catalog: Mapping[str, WorkloadSpec]
    conditions: Mapping[str, ConditionSpec]
    cells: tuple[Cell, ...]  # the cells this board runs

    def half_width(self, cell: Cell) -> float:
        """The cell's target CI half-width: its plan entry's `precision`, else the plan's, else (precision =
        "auto") its class's (docs/method.md: 1% compute, 2-3% memory, I/O, compression, AI)."""
        from boardlab.stats.sample_size import CLASS_HALF_WIDTH, workload_class

        entry = entry_of(self.plan, cell)
        if entry is not None and entry.precision is not None:
            return entry.precision
        if self.plan.runs.precision and not self.plan.runs.precision_auto:
            return self.plan.runs.precision
        return CLASS_HALF_WIDTH[workload_class(cell.workload)]

    def reference(self, cell: Cell) -> Cell | None:
        """The cell this one is compared with (its condition's baseline), if the plan has it."""
        condition = self.conditions.get(cell.condition)
        base = condition.baseline if condition is not None else None
        if not base:
            return None
        same = (
            c for c in self.cells if (c.workload, c.params, c.condition) == (cell.workload, cell.params, base)
        )
        return next(same, None)

    def after_pilot(self, values: Values) -> list[str]:
        """What the pilot says before the campaign goes on: each cell whose predicted runs, n = 2 (1.96 x
        1.2533 x CV / h)^2, exceed the cap, then the runs per arm for 80% power at the CV the pilot measured,
        per compared workload (docs/method.md "How many runs to detect an effect")."""
        from boardlab.campaign.advice import power_advice
        from boardlab.campaign.reach import _compared_keys, count_comparisons
        from boardlab.stats import predict_runs

        notes = []
        for cell in self.cells:
            v = values.get(cell.key, [])
            if len(v) < 2 or statistics.mean(v) <= 0:
                continue
            cv = statistics.stdev(v) / statistics.mean(v)
            pred = predict_runs(cv, self.half_width(cell), cap=self.plan.runs.cap)
            if pred.exceeds_cap:
                notes.append(f"{cell.key}: {pred.warning}")
        cells = list(self.cells)
        compared = _compared_keys(self.plan, cells)
        family = count_comparisons(self.plan, cells, dict(self.catalog))
        advice = power_advice(self.plan, cells, compared, family, dict(values))
        return notes + [f"pilot: {workload}: {a.sentence()}" for workload, a in advice]

    def precise_enough(self, values: Values, cell: Cell) -> bool:
        """Stop a cell when its CI half-width is at most its target, or (a compared cell) when the 90%
        decision interval already decides against its threshold delta, or at the cap; never on a p-value."""
        from boardlab.campaign.facts import cell_facts
        from boardlab.stats import should_stop
        from boardlab.stats.threshold import threshold_of

        runs = self.plan.runs
        target, own = self.half_width(cell), values.get(cell.key, [])
        ref = self.reference(cell)
        if ref is None or len(values.get(ref.key, [])) < 2 or len(own) < 2:
            return bool(should_stop(own, target, cap=runs.cap, min_runs=runs.pilot).stop)
        delta, _ = threshold_of(cell_facts(self.plan, cell))  # its own entry's
        metrics = self.catalog[cell.workload].metrics
        hib = next((m.higher_is_better for m in metrics if m.name == cell.metric), False)
        decision = should_stop(
            own, target, delta=delta, cap=runs.cap, baseline=values[ref.key], higher_is_better=hib,
            min_runs=runs.pilot,
        )  # fmt: skip
        return bool(decision.stop)
