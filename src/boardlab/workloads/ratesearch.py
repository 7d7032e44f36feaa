"""Binary search of an offered rate (RFC 2544 section 26.1's throughput: the highest rate at which no frame is
lost), shared by io.net_zeroloss and stream.knee. Each trial is one fresh boardlab-kern run."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Trial:
    rate_bit_s: float
    lost_percent: float
    achieved_bit_s: float
    info: dict


def kern_trial(kernel: str, params: dict, iterations: int = 5, min_iteration_ms: float = 50) -> dict:
    """One boardlab-kern run of `kernel` with `params`; its JSON result (raises RuntimeError on failure)."""
    from boardlab.workloads.kern import kern_argv

    args = kern_argv(kernel, params, "--json", "--iterations", str(iterations), "--warmup-max-iterations", "2",
                     "--min-iteration-ms", f"{min_iteration_ms:g}")  # fmt: skip
    proc = subprocess.run(args, capture_output=True, text=True, timeout=600)
    res = json.loads(proc.stdout) if proc.stdout.strip() else {}
    if res.get("supported") is False:
        raise RuntimeError(f"unsupported: {res.get('reason')}")
    if not res.get("ok"):
        raise RuntimeError(f"{kernel} failed: {res.get('errors') or proc.stderr.strip()}")
    return res


def search(
    trial: Callable[[float], Trial],
    lo_bit_s: float,
    hi_bit_s: float,
    *,
    resolution: float = 0.05,
    max_trials: int = 12,
    tolerance_percent: float = 0.0,
) -> tuple[float | None, list[Trial]]:
    """The highest rate in [lo, hi] whose trial lost nothing, to within `resolution` (relative). Starts at hi
    (a lossless hi ends the search); None when even lo loses."""
    trials: list[Trial] = []
    t = trial(hi_bit_s)
    trials.append(t)
    if t.lost_percent <= tolerance_percent:
        return hi_bit_s, trials
    t = trial(lo_bit_s)
    trials.append(t)
    if t.lost_percent > tolerance_percent:
        return None, trials
    good, bad = lo_bit_s, hi_bit_s
    while len(trials) < max_trials and (bad - good) / bad > resolution:
        mid = (good * bad) ** 0.5  # geometric: rates span decades
        t = trial(mid)
        trials.append(t)
        if t.lost_percent <= tolerance_percent:
            good = mid
        else:
            bad = mid
    return good, trials


def result(metric: str, value: float | None, trials: list[Trial], info: dict) -> dict:
    if value is None:
        return {
            "ok": False,
            "errors": [
                f"even the lowest rate tried ({trials[-1].rate_bit_s:.4g} bit/s) lost data; lower lo_bit_s"
            ],
            "metrics": {},
            "info": {**info, "trials": [t.__dict__ for t in trials]},
        }
    return {
        "ok": True,
        "errors": [],
        "metrics": {
            metric: {"unit": "bit/s", "higher_is_better": True, "value": value},
            "trials": {"unit": "runs", "higher_is_better": False, "value": len(trials)},
        },  # fmt: skip
        "info": {
            **info,
            "trials": [t.__dict__ for t in trials],
            # The top of the range passed: the true figure is at least this; raise hi_bit_s to find it.
            "at_least": value >= trials[0].rate_bit_s,
        },
    }


def search_result(trial: Callable[[float], Trial], params: dict, metric: str, info: dict) -> dict:
    """The workload result of a search over the params' lo_bit_s, hi_bit_s, resolution and
    loss_tolerance_percent; a trial's failure (or the kernel's "unsupported") ends it with that reason."""
    try:
        best, trials = search(
            trial,
            params["lo_bit_s"],
            params["hi_bit_s"],
            resolution=params["resolution"],
            tolerance_percent=params["loss_tolerance_percent"],
        )
    except RuntimeError as exc:
        msg = str(exc)
        if msg.startswith("unsupported: "):
            return {"ok": False, "supported": False, "reason": msg[13:], "errors": [], "metrics": {}}
        return {"ok": False, "errors": [msg], "metrics": {}}
    return result(metric, best, trials, info)
