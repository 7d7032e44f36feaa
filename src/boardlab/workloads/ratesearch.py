"""Binary search of an offered rate (RFC 2544 section 26.1's throughput: the highest rate at which no frame is
lost), shared by io.net_zeroloss and stream.knee. Each trial is one fresh boardlab-kern run."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass

from boardlab.model.worker_result import WorkerResult, WorkerResultError, read_worker_result, spec_metrics
from boardlab.model.workload import ParamSpec, WorkloadSpec

# The search's own parameters (read by `search_result`), declared once for every workload that searches.
SEARCH_PARAMS = (
    ParamSpec("resolution", "float", "0.05", 0.001, 0.5, help="relative width at which the search stops"),
    ParamSpec(
        "loss_tolerance_percent",
        "float",
        "0",
        0,
        100,
        unit="%",
        help="loss a trial may show and still pass (RFC 2544: 0)",
    ),
)


@dataclass(frozen=True)
class Trial:
    rate_bit_s: float
    lost_percent: float
    achieved_bit_s: float
    info: dict
    # False when the trial lost nothing but did not carry the offered rate either (a lossless transport's
    # sender held back by its receiver): such a rate is not sustained, so it fails like a loss.
    sustained: bool = True

    def passed(self, tolerance_percent: float) -> bool:
        return self.lost_percent <= tolerance_percent and self.sustained


def kern_trial(kernel: str, params: dict, iterations: int = 5, min_iteration_ms: float = 50) -> WorkerResult:
    """One boardlab-kern run of `kernel` with `params`, read by the worker reader (RuntimeError on
    failure)."""
    from boardlab.workloads.kern import kern_argv

    args = kern_argv(kernel, params, "--json", "--iterations", str(iterations),
                     "--warmup-max-iterations", "2",
                     "--min-iteration-ms", f"{min_iteration_ms:g}")  # fmt: skip
    proc = subprocess.run(args, capture_output=True, text=True, timeout=600)
    try:
        res = read_worker_result(proc.stdout)
    except WorkerResultError as exc:
        raise RuntimeError(f"{kernel} failed: {proc.stderr.strip() or exc}") from None
    if not res.supported:
        raise RuntimeError(f"unsupported: {res.reason}")
    if not res.ok:
        raise RuntimeError(f"{kernel} failed: {list(res.errors) or proc.stderr.strip()}")
    return res


def trial_metric(res: WorkerResult, name: str) -> float:
    """A metric a trial needs: its median (or its one value); RuntimeError naming it when the run has none."""
    m = res.metric(name)
    if m is None or m.median is None:
        raise RuntimeError(f"{res.workload} reported no {name}")
    return m.median


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
    if t.passed(tolerance_percent):
        return hi_bit_s, trials
    t = trial(lo_bit_s)
    trials.append(t)
    if not t.passed(tolerance_percent):
        return None, trials
    good, bad = lo_bit_s, hi_bit_s
    while len(trials) < max_trials and (bad - good) / bad > resolution:
        mid = (good * bad) ** 0.5  # geometric: rates span decades
        t = trial(mid)
        trials.append(t)
        if t.passed(tolerance_percent):
            good = mid
        else:
            bad = mid
    return good, trials


def search_steps(
    trial: Callable[[float], Trial], rates: list[float], *, tolerance_percent: float = 0.0
) -> tuple[float | None, list[Trial]]:
    """As search(), over a fixed ladder of rates (a serial line's standard bauds): the highest that passed,
    with every rate above it that was tried failing; None when the lowest fails. Tries the top, then the
    bottom, then bisects the ladder between the highest pass and the lowest failure."""
    rates = sorted(rates)
    if not rates:
        raise ValueError("no rate to try")
    trials: list[Trial] = []

    def passes(i: int) -> bool:
        trials.append(trial(rates[i]))
        return trials[-1].passed(tolerance_percent)

    if passes(len(rates) - 1):
        return rates[-1], trials
    if len(rates) == 1 or not passes(0):
        return None, trials
    good, bad = 0, len(rates) - 1
    while bad - good > 1:
        mid = (good + bad) // 2
        if passes(mid):
            good = mid
        else:
            bad = mid
    return rates[good], trials


def result(spec: WorkloadSpec, value: float | None, trials: list[Trial], info: dict) -> dict:
    """The searched rate as `spec`'s primary metric, beside the "trials" it took, in the units and directions
    `spec` declares for them."""
    if value is None:
        return {
            "ok": False,
            "errors": [
                f"even the lowest rate tried ({trials[-1].rate_bit_s:.4g} bit/s) lost data or fell short of "
                "it; lower lo_bit_s"
            ],
            "metrics": {},
            "info": {**info, "trials": [t.__dict__ for t in trials]},
        }
    return {
        "ok": True,
        "errors": [],
        "metrics": spec_metrics(spec, {spec.primary_metric.name: value, "trials": len(trials)}),
        "info": {
            **info,
            "trials": [t.__dict__ for t in trials],
            # The top of the range passed: the true figure is at least this; raise hi_bit_s to find it.
            "at_least": value >= trials[0].rate_bit_s,
        },
    }


def search_result(
    trial: Callable[[float], Trial],
    params: dict,
    spec: WorkloadSpec,
    info: dict,
    rates: list[float] | None = None,
) -> dict:
    """The workload result of a search over the params' lo_bit_s, hi_bit_s, resolution and
    loss_tolerance_percent (or over the ladder `rates`); a trial's failure (or the kernel's "unsupported")
    ends it with that reason."""
    try:
        if rates is not None:
            best, trials = search_steps(trial, rates, tolerance_percent=params["loss_tolerance_percent"])
        else:
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
    return result(spec, best, trials, info)
