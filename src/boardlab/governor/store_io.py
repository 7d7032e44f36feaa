"""The governor lab and the results database: a snoop-sweep campaign's runs as `SweepCell`s, and the
labels and tree stored with the campaign (table `artifacts`) so that its report can show them."""

from __future__ import annotations

import json
import re
from typing import Any

from boardlab.governor.sweep import SweepCell

CELL_NAME = re.compile(r"(policy\d+)@(\d+)(?:\+(policy\d+)@(\d+))?")
LABELS = "governor-labels"
TREE = "governor-tree"


def parse_cell_name(condition: str) -> tuple[str, int, str | None, int | None] | None:
    """ "policy0@1400000+policy4@200000" (the names `sweep.plan_toml` gives) -> its frequencies."""
    m = CELL_NAME.fullmatch(condition)
    if m is None:
        return None
    return m[1], int(m[2]), m[3], int(m[4]) if m[4] else None


def sweep_from_store(store, campaign_id: int) -> list[SweepCell]:
    """Valid mem.latency runs under the sweep's conditions, one summary ns/access per run, with the counters
    the plan asked for ([runs] counters) where this board counted them."""
    groups: dict[tuple, dict[str, Any]] = {}  # ns, cci, mem: per-run lists; bus: the bus frequencies seen
    for r in store.runs(campaign_id):
        parsed = parse_cell_name(r["condition"])
        if parsed is None or not r["valid"] or r["value"] is None:
            continue
        if r["metric"] != "ns_per_access":
            continue
        params = json.loads(r["params_json"])
        key = (params.get("pattern", "random"), int(params.get("size_bytes", 65536)), *parsed)
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
