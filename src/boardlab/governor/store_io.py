"""The governor lab and the results database: a snoop-sweep campaign's runs as `SweepCell`s, and the
labels and tree stored with the campaign (table `artifacts`) so that its report can show them."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from boardlab.governor.sweep import SweepCell
from boardlab.model.facts import ConditionPart, WorkloadFacts, condition_parts

LABELS = "governor-labels"
TREE = "governor-tree"


def sweep_frequencies(parts: Iterable[ConditionPart]) -> tuple[str, int, str | None, int | None] | None:
    """(this policy, its kHz, the other policy or None, its kHz or None) of a sweep cell's condition: a
    `governor` part fixing the userspace frequency of one or two listed policies, this one first, in kHz
    (as `sweep.condition_tables` writes it). None for any other condition (a governor policy, a frequency
    given as a word such as "max")."""
    for part in parts:
        p = part.params
        policies, khz = p.get("policies"), p.get("frequencies_khz")
        if part.kind != "governor" or p.get("governor") != "userspace":
            continue
        if not isinstance(policies, list) or not 1 <= len(policies) <= 2 or not isinstance(khz, dict):
            return None  # policies = "all", or frequencies by role ("active", "idle"): not a sweep cell
        if not all(isinstance(q, str) for q in policies):
            return None
        if set(khz) != set(policies) or not all(type(khz[q]) is int for q in policies):
            return None
        other = policies[1] if len(policies) == 2 else None
        return policies[0], khz[policies[0]], other, None if other is None else khz[other]
    return None


def sweep_from_store(store, campaign_id: int, workloads: WorkloadFacts) -> list[SweepCell]:
    """Valid mem.latency runs under the sweep's conditions (`sweep_frequencies` of the condition the store
    keeps with each cell), one summary ns/access per run, with the counters the plan asked for ([runs]
    counters) where this board counted them. A cell whose plan left `size_bytes` to the kernel's default is
    not a sweep cell, as in the report's heatmaps (`analysis.studies.governor.collect`); its `pattern` is
    the plan's or the kernel's default as the campaign stored it (`workloads`: its workload facts), and a
    cell whose pattern neither says is not one either."""
    sweeps = {
        c["condition"]: sweep_frequencies(condition_parts(json.loads(c["condition_json"])))
        for c in store.cells(campaign_id)
    }
    groups: dict[tuple, dict[str, Any]] = {}  # ns, cci, mem: per-run lists; bus: the bus frequencies seen
    for r in store.runs(campaign_id):
        parsed = sweeps.get(r["condition"])
        if parsed is None or not r["valid"] or r["value"] is None:
            continue
        params = json.loads(r["params_json"])
        pattern = workloads.cell_param(r["workload"], params, "pattern")
        if r["metric"] != "ns_per_access" or "size_bytes" not in params or pattern is None:
            continue
        key = (pattern, int(params["size_bytes"]), *parsed)
        g: dict[str, Any] = groups.setdefault(key, {"ns": [], "cci": [], "mem": [], "bus": set()})
        state = json.loads(r["condition_state_json"] or "{}")
        for part in state.get("parts") or [state]:
            if part.get("kind") == "devfreq" and part.get("cur_hz") is not None:
                g["bus"].add(int(part.get("fixed_hz") or part["cur_hz"]))
        g["ns"].append(float(r["value"]))
        metrics = {m["metric"]: m["median"] for m in store.run_metrics(r["id"])}
        if metrics.get("cci_congestion") is not None:
            g["cci"].append(float(metrics["cci_congestion"]))
        if metrics.get("memory_access") is not None:
            g["mem"].append(float(metrics["memory_access"]))
    cells = []
    for (pattern, size, this, this_khz, other, other_khz), g in sorted(
        groups.items(), key=lambda kv: repr(kv[0])
    ):
        # Counters count for the cell only when every run has them (a partly counted cell would mislead).
        complete = len(g["cci"]) == len(g["ns"]) and len(g["mem"]) == len(g["ns"])
        cells.append(
            SweepCell(pattern, size, this, this_khz, other, other_khz, tuple(g["ns"]),
                      tuple(g["cci"]) if complete else (), tuple(g["mem"]) if complete else (), (),
                      next(iter(g["bus"])) if len(g["bus"]) == 1 else None)
        )  # fmt: skip
    return cells


def save_artifact(store, campaign_id: int, name: str, doc: dict) -> None:
    """Replaces the campaign's artifact `name` (JSON)."""
    store.save_campaign_artifact(campaign_id, name, json.dumps(doc).encode())


def load_artifact(store, campaign_id: int, name: str) -> dict | None:
    data = store.campaign_artifact(campaign_id, name)
    return None if data is None else json.loads(data)
