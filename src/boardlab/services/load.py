"""Rate sweeps of the SOAP endpoint with svc.load, and where the sweep stops: the saturation knee.

The hot loop (schedule, sockets, timing) is C in boardlab-kern; this module chooses rates, runs one
svc.load per rate and decides saturation: achieved rate below 95 % of the target, any error or timeout,
or a corrected p99 over the SLO.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from urllib.parse import urlsplit

from boardlab.errors import InputError

LOAD_SCHEMA = 1
ACHIEVED_FRACTION = 0.95


@dataclass(frozen=True)
class Target:
    host: str
    port: int
    path: str

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}{self.path}"


def parse_target(url: str) -> Target:
    """http://HOST:PORT/PATH with an IPv4 host (the load generator connects by address)."""
    import ipaddress

    host, port, path = None, None, ""
    try:  # a bracket left open ('http://[::1') or a port over 65535 is a ValueError of urlsplit's
        parts = urlsplit(url)
        if parts.scheme == "http":
            host, port, path = parts.hostname, parts.port, parts.path
    except ValueError:
        pass
    if not host or not port:
        raise InputError(f"target '{url}': expected http://HOST:PORT/PATH, e.g. http://127.0.0.1:18080/vdm")
    try:
        ipaddress.IPv4Address(host)
    except ValueError:
        raise InputError(f"target '{url}': the host must be an IPv4 address, e.g. 127.0.0.1") from None
    return Target(host, port, path or "/vdm")


def parse_rates(text: str) -> tuple[float, ...]:
    try:
        rates = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise InputError(
            f"--rates '{text}': expected comma-separated numbers in Hz, e.g. 1,10,100,200"
        ) from None
    if not rates or any(r <= 0 or r > 1e6 for r in rates):
        raise InputError(f"--rates '{text}': every rate must be in (0, 1000000] Hz")
    return rates


def ramp(start_hz: float = 100.0, limit_hz: float = 200_000.0) -> tuple[float, ...]:
    """Rates for --until-saturation without --rates: doubling from start_hz."""
    out, r = [], start_hz
    while r <= limit_hz:
        out.append(r)
        r *= 2
    return tuple(out)


@dataclass(frozen=True)
class LoadStep:
    target_rate_hz: float
    mode: str
    arrival: str | None
    connections: int
    keepalive: bool
    duration_s: float
    scheduled: int
    ok: int
    errors: int
    timeouts: int
    late_starts: int
    achieved_rate_hz: float
    corrected_p50_ns: float | None
    corrected_p99_ns: float | None
    corrected_max_ns: float | None
    service_p50_ns: float | None
    service_p99_ns: float | None
    start_lag_p99_ns: float | None
    first_error: str | None
    saturated_reason: str | None


# The LoadStep fields that svc.load's "service" object holds under the same name.
_SERVICE_FIELDS = (
    "target_rate_hz", "mode", "arrival", "connections", "keepalive", "scheduled", "ok", "errors", "timeouts",
    "late_starts", "achieved_rate_hz", "first_error",
)  # fmt: skip


def step_from_result(res: dict, duration_s: float, slo_p99_ms: float | None) -> LoadStep:
    s = res["service"]
    c, v, lag = s["corrected_ns"], s["service_ns"], s["start_lag_ns"]
    step = LoadStep(
        **{name: s[name] for name in _SERVICE_FIELDS},
        duration_s=duration_s,
        corrected_p50_ns=c["p50"],
        corrected_p99_ns=c["p99"],
        corrected_max_ns=c["max"],
        service_p50_ns=v["p50"],
        service_p99_ns=v["p99"],
        start_lag_p99_ns=lag["p99"],
        saturated_reason=None,
    )
    from dataclasses import replace

    return replace(step, saturated_reason=saturation_reason(step, slo_p99_ms))


def saturation_reason(step: LoadStep, slo_p99_ms: float | None) -> str | None:
    """Why this step is past the knee, or None. A closed loop at rate 0 has no target to miss."""
    if step.errors or step.timeouts:
        return f"{step.errors} errors and {step.timeouts} timeouts"
    if step.target_rate_hz > 0 and step.achieved_rate_hz < ACHIEVED_FRACTION * step.target_rate_hz:
        return f"achieved {step.achieved_rate_hz:.1f} Hz < 95% of {step.target_rate_hz:g} Hz"
    if (
        slo_p99_ms is not None
        and step.corrected_p99_ns is not None
        and step.corrected_p99_ns > slo_p99_ms * 1e6
    ):
        return f"corrected p99 {step.corrected_p99_ns / 1e6:.2f} ms > SLO {slo_p99_ms:g} ms"
    return None


def knee(steps: Sequence[LoadStep]) -> float | None:
    """The highest target rate that held before the first saturated step (None if none held)."""
    best = None
    for st in steps:
        if st.saturated_reason:
            break
        best = st.target_rate_hz
    return best


def run_step(
    target: Target,
    rate_hz: float,
    *,
    mode: str = "open",
    arrival: str = "constant",
    connections: int = 1,
    keepalive: bool = True,
    duration_s: float = 10.0,
    timeout_ms: int = 2000,
    op: str = "getStatus",
    slo_p99_ms: float | None = None,
    prefix: Sequence[str] = (),
    samples_path: str | None = None,
    failed_is_saturated: bool = False,
) -> LoadStep:
    """One svc.load run at `rate_hz`. A run in which no request succeeded fails (MeasurementError), unless
    `failed_is_saturated` (a saturation search): then it is a step saturated by its errors."""
    from boardlab.errors import MeasurementError
    from boardlab.services.launch import run_role

    params = {
        "host": target.host,
        "port": target.port,
        "path": target.path,
        "op": op,
        "mode": mode,
        "arrival": arrival,
        "rate_hz": rate_hz,
        "duration_s": duration_s,
        "connections": connections,
        "keepalive": int(keepalive),
        "timeout_ms": timeout_ms,
    }
    if samples_path:
        params["samples_path"] = samples_path
    res = run_role("svc.load", params, prefix=prefix, timeout_s=duration_s + timeout_ms / 1000 + 30)
    svc = res.get("service") or {}
    # every request failed: the endpoint did not hold this rate, which a saturation search records
    measured = bool(svc) and svc.get("errors", 0) + svc.get("timeouts", 0) > 0
    if not res.get("ok") and not (failed_is_saturated and measured):
        raise MeasurementError(f"svc.load at {rate_hz:g} Hz failed: {'; '.join(res.get('errors') or [])}")
    if svc.get("samples_error"):
        raise MeasurementError(f"svc.load at {rate_hz:g} Hz: per-request samples: {svc['samples_error']}")
    return step_from_result(res, duration_s, slo_p99_ms)


def sweep(
    target: Target,
    rates: Sequence[float],
    *,
    until_saturation: bool = False,
    on_step: Callable[[LoadStep], None] | None = None,
    samples_for: Callable[[float], str | None] | None = None,
    **kw,
) -> list[LoadStep]:
    """Runs the rates in order; with `until_saturation`, stops after the first saturated one (a rate
    where every request failed included). `samples_for(rate)` names a per-request file for that run."""
    steps = []
    for r in rates:
        path = samples_for(r) if samples_for else None
        st = run_step(target, r, failed_is_saturated=until_saturation, samples_path=path, **kw)
        steps.append(st)
        if on_step:
            on_step(st)
        if until_saturation and st.saturated_reason:
            break
    return steps


SAMPLES_SCHEMA = 1
SAMPLES_HEADER = (
    "target_rate_hz,request,intended_start_ns,actual_start_ns,end_ns,corrected_latency_ns,service_time_ns,"
    "outcome,http_status"
)


def merge_samples(parts: Sequence[tuple[float, str]]) -> bytes:
    """One CSV of every request of a sweep from svc.load's per-rate files: their columns after a
    `target_rate_hz` one, under one comment line naming the schema and units (docs/services.md)."""
    out = [
        f"# boardlab load requests, schema {SAMPLES_SCHEMA}: times in ns from the first intended start of "
        "each rate's run (CLOCK_MONOTONIC); request = order of completion within that run",
        SAMPLES_HEADER,
    ]
    for rate, path in parts:
        with open(path, encoding="utf-8") as f:
            lines = [ln.rstrip("\n") for ln in f if not ln.startswith("#")]
        if not lines or lines[0] != SAMPLES_HEADER.split(",", 1)[1]:
            raise ValueError(f"{path}: not an svc.load requests file (header {lines[:1]})")
        out += [f"{rate:g},{ln}" for ln in lines[1:]]
    return ("\n".join(out) + "\n").encode()


def document(
    target: Target, steps: Sequence[LoadStep], *, until_saturation: bool, slo_p99_ms: float | None
) -> dict:
    return {
        "schema": LOAD_SCHEMA,
        "kind": "boardlab.load",
        "target": target.url,
        "until_saturation": until_saturation,
        "slo_p99_ms": slo_p99_ms,
        "knee_rate_hz": knee(steps) if until_saturation else None,
        # the first rate that did not hold (None: none saturated within the rates tried)
        "saturated_at_hz": next((st.target_rate_hz for st in steps if st.saturated_reason), None)
        if until_saturation
        else None,
        "steps": [asdict(s) for s in steps],
    }
