"""What of a plan this board can run, listed for `boardlab run --dry-run`: each workload and each condition
(with the parts of a combined one) and the reason it cannot run here, if any.

The reasons are those of the one board-support answer (campaign/support.py, through the plan's summary) that
the runner also acts on: this module only lays them out, so the dry-run and the run cannot disagree.
"""

from __future__ import annotations

from boardlab.model.campaign import Plan
from boardlab.model.workload import WorkloadSpec


def plan_listing(plan: Plan, catalog: dict[str, WorkloadSpec], summary: dict) -> dict:
    """{"workloads": [{name, family, summary, reason}], "conditions": [{name, kind, parts, reason}]} from the
    plan's summary (`PlanSummary.to_dict()`); reason None = runs here. A condition's reason starting
    "unsupported:" is skipped under runs.unsupported = "skip"; the run stops on any under "fail"."""
    skipped = summary["skipped_conditions"]
    workloads = {
        w.name: {
            "name": w.name,
            "family": catalog[w.name].family,
            "summary": catalog[w.name].summary,
            "reason": catalog[w.name].unsupported_reason,
        }
        for w in plan.workloads
    }
    conditions = [
        {"name": c.name, "kind": c.kind, "parts": [k for k, _ in c.all_parts], "reason": skipped.get(c.name)}
        for c in plan.conditions
    ]
    return {"workloads": list(workloads.values()), "conditions": conditions}
