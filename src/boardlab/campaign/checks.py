"""What of a plan this board can run, said before anything runs (`boardlab run --dry-run`): each workload and
each condition (every part of a combined one checked) with the reason it cannot run here, if any.

The runner makes the same checks at its start (campaign/runner.py); this is their read-only twin: it
changes nothing, starts nothing and writes nothing.
"""

from __future__ import annotations

from pathlib import Path

from boardlab.model.campaign import Plan
from boardlab.model.workload import WorkloadSpec


def plan_listing(plan: Plan, catalog: dict[str, WorkloadSpec], root: str | Path = "/") -> dict:
    """{"workloads": [{name, family, summary, reason}], "conditions": [{name, kind, parts, reason, part}]};
    reason None = runs here. A condition's reason is that of its first part that fails (`part`, its kind): one
    starting "unsupported:" is skipped under runs.unsupported = "skip", any other stops the run."""
    from boardlab.conditions import condition_kinds
    from boardlab.conditions.base import ApplyContext
    from boardlab.conditions.journal import RestoreJournal
    from boardlab.platform.inventory import inventory
    from boardlab.platform.sysroot import SysRoot

    sr = SysRoot(root)
    info = inventory(root)
    ctx = ApplyContext(
        root=sr, journal=RestoreJournal(sr), info=info, worker_cpu=None, online_cpus=tuple(info.online_cpus)
    )
    kinds = condition_kinds()
    workloads = [
        {
            "name": w.name,
            "family": catalog[w.name].family,
            "summary": catalog[w.name].summary,
            "reason": catalog[w.name].unsupported_reason,
        }
        for w in plan.workloads
    ]
    conditions = []
    for c in plan.conditions:
        reason = part = None
        for kind, params in c.all_parts:
            reason = kinds[kind].check(params, ctx)
            if reason:
                part = kind
                break
        parts = [k for k, _ in c.all_parts]
        conditions.append({"name": c.name, "kind": c.kind, "parts": parts, "reason": reason, "part": part})
    return {"workloads": list({w["name"]: w for w in workloads}.values()), "conditions": conditions}
