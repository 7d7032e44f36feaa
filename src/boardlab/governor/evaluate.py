"""`governor simulate` and the simulated path of `governor-eval`: every policy on every trace, on a fresh
simulator tree each, with run time, energy (the OPP tables' Energy Model) and EDP, and verdicts against
ondemand.

Kernel governors (ondemand, performance, powersave, schedutil) run inside the simulator; the userspace
policies run through the real daemon (`daemon.Daemon`) against the tree, ticking every sampling period of
simulated time, so the journaled writes, the load from /proc/stat and the counters are the daemon's own.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from boardlab.conditions.journal import RestoreJournal
from boardlab.governor import daemon, policies, sim
from boardlab.governor.opp import SocSpec
from boardlab.platform.sysroot import SysRoot

KERNEL = ("ondemand", "performance", "powersave", "schedutil")
DAEMON = ("daemon:ondemand", "daemon:conservative", "daemon:schedutil-like", "daemon:anti-snoop")
EVAL_SCHEMA = 1


def run_one(
    soc: SocSpec, trace: sim.Trace, policy: str, workdir: Path, *, slow=None, sampling_s: float = 0.010
) -> dict:
    root = workdir / f"{trace.name}-{policy.replace(':', '-')}"
    if not policy.startswith("daemon:"):
        out = sim.run_trace(soc, trace, root, kernel_governor=policy)
        return {**out, "policy": policy}
    name = policy.split(":", 1)[1]
    board_holder: dict = {}
    journal = RestoreJournal(SysRoot(root), path=workdir / f".journal-{root.name}.json")

    def controller(board: sim.SimBoard) -> None:
        if "d" not in board_holder:
            sr = SysRoot(root)
            d = daemon.Daemon(sr, name, journal, counters=daemon.sim_counters(sr), slow=slow)
            d.check()
            d.start()
            board_holder["d"] = d
        board_holder["d"].tick()

    out = sim.run_trace(
        soc, trace, root, controller=controller, period_s=sampling_s, kernel_governor="ondemand"
    )
    d = board_holder["d"]
    stats = d.stats.to_json(out["time_s"])
    d.stop()
    return {**out, "policy": policy, "daemon": stats}


def compare(
    soc: SocSpec,
    trace_names: Sequence[str] | None = None,
    policy_names: Sequence[str] = KERNEL + DAEMON,
    *,
    slow: Callable[[policies.Sample], bool] | None = None,
    sampling_s: float = 0.010,
    progress: Callable[[str], None] | None = None,
) -> dict:
    all_traces = sim.traces(soc)
    names = list(trace_names or all_traces)
    unknown = [n for n in names if n not in all_traces]
    if unknown:
        raise ValueError(f"unknown trace {unknown[0]!r}; traces for {soc.name}: {', '.join(all_traces)}")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="boardlab-govsim-") as tmp:
        for tn in names:
            for pol in policy_names:
                if pol == "daemon:anti-snoop" and (slow is None or len(soc.clusters) < 2):
                    rows.append(
                        {
                            "trace": tn,
                            "policy": pol,
                            "unsupported": "anti-snoop needs two clusters and a rule",
                        }
                    )
                    continue
                if progress:
                    progress(f"{tn} under {pol}")
                rows.append(run_one(soc, all_traces[tn], pol, Path(tmp), slow=slow, sampling_s=sampling_s))
    for tn in names:
        base = next(
            (r for r in rows if r["trace"] == tn and r["policy"] == "ondemand" and "time_s" in r), None
        )
        for r in rows:
            if r["trace"] != tn or "time_s" not in r or base is None:
                continue
            r["time_ratio_vs_ondemand"] = r["time_s"] / base["time_s"]
            r["energy_ratio_vs_ondemand"] = r["energy_j"] / base["energy_j"]
            r["edp_ratio_vs_ondemand"] = r["edp_j_s"] / base["edp_j_s"]
            r["verdict"] = (
                "baseline" if r is base else verdict(r["time_ratio_vs_ondemand"], r["edp_ratio_vs_ondemand"])
            )
    return {
        "schema": EVAL_SCHEMA,
        "source": f"simulator {soc.name} (model, not a measurement of a board)",
        "soc": soc.name,
        "sampling_ms": sampling_s * 1000,
        "rows": rows,
    }


def verdict(time_ratio: float, edp_ratio: float, delta: float = 0.02) -> str:
    """Against ondemand, with the report's default practical threshold (2%). The simulator is
    deterministic, so there is no sampling interval: the threshold alone decides."""
    faster = time_ratio < 1 - delta
    slower = time_ratio > 1 + delta
    if faster and edp_ratio < 1 - delta:
        return "faster, better EDP"
    if faster:
        return "faster, EDP not better"
    if slower:
        return "slower"
    return "no change in time" + (", better EDP" if edp_ratio < 1 - delta else "")
