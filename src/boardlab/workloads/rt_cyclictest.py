"""rt.cyclictest: the wake-up latency of a periodic real-time thread, with its whole histogram.

Probe `cyclictest` (rt-tests; the default): `cyclictest --json=F --histogram=US --quiet --mlockall
--duration=S --affinity=CPUS --threads=N --priority=P --policy=fifo|rr --interval=US --mainaffinity=CPU`,
its main thread on a housekeeping CPU, the worker itself moved there too, so nothing of boardlab runs on
the measured CPU. Probe `timerlat`: `rtla timerlat hist` with the matching options, where the kernel has the
timerlat tracer (research/stressors-rt.md sections 2 and 3.1).

The result keeps every histogram bucket per measured thread (`latency_us` for one thread, `latency_us.cpuN`
for more; 1-us buckets, the overflow counted apart), and computes from the (summed) histogram the nearest-rank
percentiles p50, p90, p99, p99.9 and p99.99 (`boardlab.stats.histogram`). A percentile whose rank falls into
the overflow is *censored*: its metric has `"value": null, "censored": true, "at_least": <limit>` and
`info.percentiles_us` shows it as ">= <limit>" -- never a number that pretends to be measured. min/avg/max
come from cyclictest itself and cover every sample, overflow included; `max_latency_us` is the primary metric.

Each run records the real-time environment (PREEMPT_RT with its evidence, isolcpus/nohz_full/rcu_nocbs and
whether the measured CPU is among them, /dev/cpu_dma_latency, the tool's version). Without real-time
privileges cyclictest exits without a result, so the workload then says unsupported, with the fix. SIGINT or
SIGTERM to the worker stops the probe's process group and exits without printing a half result.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from boardlab.model.worker_result import spec_metrics
from boardlab.model.workload import MetricSpec, ParamSpec, WorkloadSpec
from boardlab.stats.histogram import PERCENTILE_LEVELS, HistogramPercentile

# research/stressors-rt.md 2.3 and 5: -h 200 censored p99 already on a VM; rteval uses 3500
DEFAULT_HISTOGRAM_US = 10_000


def _pct_metric(q: str, name: str, *, tail: bool = False) -> MetricSpec:
    return MetricSpec(
        name,
        "us",
        False,
        kind="value",
        help=f"{q} wake-up latency by nearest rank from the histogram; null with at_least when censored",
        tail=tail,
    )


SPEC = WorkloadSpec(
    name="rt.cyclictest",
    family="rt",
    summary="Real-time wake-up latency of a periodic SCHED_FIFO thread (cyclictest or rtla timerlat), "
    "with its histogram and nearest-rank percentiles",
    runner="python",
    params=(
        ParamSpec(
            "probe",
            "enum",
            "cyclictest",
            choices=("cyclictest", "timerlat"),
            help="cyclictest (rt-tests) or the kernel's timerlat tracer through `rtla timerlat hist`",
        ),
        ParamSpec(
            "interval_us", "int", "1000", 10, 1_000_000, unit="us", help="period of the measuring thread"
        ),
        ParamSpec("priority", "int", "95", 1, 99, help="real-time priority of the measuring thread(s)"),
        ParamSpec("policy", "enum", "fifo", choices=("fifo", "rr"), help="SCHED_FIFO or SCHED_RR"),
        ParamSpec("duration_s", "int", "10", 1, 604_800, unit="s", help="length of the measurement"),
        ParamSpec(
            "histogram_us",
            "int",
            str(DEFAULT_HISTOGRAM_US),
            1,
            100_000,
            unit="us",
            help="histogram range in 1-us buckets; latencies at or beyond it are counted as overflow",
        ),
        ParamSpec(
            "threads",
            "int",
            "1",
            1,
            256,
            help="measuring threads: with cpu=-1 one per CPU (the housekeeping CPU last, shared), "
            "else all on `cpu`",
        ),
        ParamSpec(
            "cpu",
            "int",
            "-1",
            -1,
            4095,
            help="the CPU to measure on; -1 = the CPU the worker was pinned to (else the last online CPU)",
        ),
        ParamSpec(
            "housekeeping_cpu",
            "int",
            "-1",
            -1,
            4095,
            help="CPU for cyclictest's main thread (--mainaffinity) and the worker; -1 = the first other CPU",
        ),
    ),
    metrics=(
        MetricSpec(
            "max_latency_us",
            "us",
            False,
            kind="value",
            help="largest wake-up latency, every sample",
            tail=True,
        ),
        _pct_metric("median", "p50_latency_us"),
        _pct_metric("90th percentile", "p90_latency_us"),
        _pct_metric("99th percentile", "p99_latency_us", tail=True),
        _pct_metric("99.9th percentile", "p99_9_latency_us", tail=True),
        _pct_metric("99.99th percentile", "p99_99_latency_us", tail=True),
        MetricSpec("avg_latency_us", "us", False, kind="mean", help="mean latency as the probe computed it"),
        MetricSpec("min_latency_us", "us", False, kind="value", help="smallest wake-up latency"),
        MetricSpec("samples", "samples", True, kind="value", help="wake-ups measured (all threads)"),
        MetricSpec(
            "overflow_samples", "samples", False, kind="value", help="samples at or beyond histogram_us"
        ),
        MetricSpec(
            "missed_periods",
            "periods",
            False,
            kind="value",
            help="cyclictest: duration/interval minus cycles, per thread, summed (a late wake-up "
            "skips periods)",
        ),
        MetricSpec(
            "irq_max_latency_us",
            "us",
            False,
            kind="value",
            help="timerlat only: timer IRQ latency",
            tail=True,
        ),
        MetricSpec("irq_avg_latency_us", "us", False, kind="mean", help="timerlat only: timer IRQ latency"),
    ),
    tail_samples=True,  # the p99 wake-up latency: a verdict of its own
    tail_metric="p99_latency_us",  # the run's own p99 over every sample (from its histogram)
    tail_count_metric="samples",
    sample_histogram="latency_us",  # latency_us or latency_us.cpuN[.tK]
)

# cyclictest's words when it may not do what it must (check_privs, mlockall): unsupported, not a failure
_PRIVILEGE_SIGNS = ("Unable to change scheduling policy", "missing capabilities", "mlockall")


# ---- support ---------------------------------------------------------------------------------------------


def supported() -> str | None:
    """Unsupported when neither probe can run: no real-time scheduling for this user, or no cyclictest (and no
    usable timerlat). probe=timerlat is judged again at run time (tracer, rtla, root)."""
    import shutil

    from boardlab.platform import rt

    reasons = []
    if shutil.which("cyclictest") is None:
        timerlat = _timerlat_refusal(shutil.which("rtla"))
        if timerlat:
            reasons.append(
                f"cyclictest is not installed: apt-get install rt-tests (and timerlat: {timerlat})"
            )
    refusal = rt.rt_scheduling_refusal("/", "fifo", 1)
    if refusal:
        reasons.append(refusal)
    return "; ".join(reasons) or None


def _timerlat_refusal(rtla: str | None) -> str | None:
    import os

    from boardlab.platform import rt

    support = rt.tracer_support("/", "timerlat")
    if support.available is False:
        return (
            f"the kernel has no timerlat tracer ({support.evidence}): it needs CONFIG_TIMERLAT_TRACER=y; "
            "use probe=cyclictest"
        )
    if support.available is None:
        return f"cannot tell whether the kernel has the timerlat tracer: {support.evidence}"
    if rtla is None:
        return "rtla is not installed: apt-get install rtla"
    if os.geteuid() != 0:
        return "rtla needs root (it drives tracefs): run as root"
    return None


# ---- run -------------------------------------------------------------------------------------------------


def run(params: dict, iterations: int | None = None) -> dict:
    """One measurement; `iterations` does not apply (the probe's samples are the histogram)."""
    import shutil

    plan = _cpu_plan(params)
    if params["probe"] == "timerlat":
        rtla = shutil.which("rtla")
        reason = _timerlat_refusal(rtla)
        if reason:
            return _unsupported(reason)
        assert rtla is not None  # _timerlat_refusal refuses a missing rtla
        return _run_timerlat(params, plan, rtla)
    cyclictest = shutil.which("cyclictest")
    if cyclictest is None:
        return _unsupported("cyclictest is not installed: apt-get install rt-tests")
    return _run_cyclictest(params, plan, cyclictest)


def _unsupported(reason: str) -> dict:
    return {"ok": False, "supported": False, "reason": reason, "errors": [], "metrics": {}}


def _run_cyclictest(params: dict, plan, cyclictest: str) -> dict:
    import tempfile

    from boardlab.platform.sysroot import format_cpulist

    env = _environment(plan.measured)
    with tempfile.TemporaryDirectory(prefix="boardlab-rt-") as tmp:
        json_path = f"{tmp}/cyclictest.json"
        argv = [
            cyclictest,
            f"--json={json_path}",
            f"--histogram={params['histogram_us']}",
            "--quiet",
            "--mlockall",
            f"--duration={params['duration_s']}",
            *([f"--affinity={format_cpulist(plan.measured)}"] if plan.measured else []),
            f"--threads={params['threads']}",
            f"--priority={params['priority']}",
            f"--policy={params['policy']}",
            f"--interval={params['interval_us']}",
            *([f"--mainaffinity={plan.housekeeping}"] if plan.housekeeping >= 0 else []),
        ]
        code, stderr, timed_out = _run_probe(argv, tmp, timeout_s=params["duration_s"] + 30)
        try:
            with open(json_path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            text = None
    info = {
        "probe": "cyclictest",
        "command": argv,
        **plan.info(),
        **_probe_params(params),
        "environment": env,
    }
    if timed_out:
        return _failed(f"cyclictest did not end within {params['duration_s'] + 30} s and was stopped", info)
    if code != 0 or not text:
        detail = stderr.strip()[-800:] or "(no message)"
        if any(sign in stderr for sign in _PRIVILEGE_SIGNS):
            return _unsupported(f"cyclictest exited {code} without a result: {detail}")
        return _failed(f"cyclictest exited {code} without a result: {detail}", info)
    try:
        doc = parse_cyclictest_json(text)
        threads = cyclictest_threads(doc, params["histogram_us"], params["duration_s"], params["interval_us"])
    except (ValueError, KeyError, TypeError) as exc:
        return _failed(f"cyclictest's JSON could not be read: {exc}", info)
    info["cyclictest_version"] = doc.get("rt_test_version")
    info["cyclictest_cmdline"] = doc.get("cmdline")
    info["cyclictest_return_code"] = doc.get("return_code")
    info["sysinfo_realtime"] = (doc.get("sysinfo") or {}).get("realtime")
    warnings = [line for line in stderr.splitlines() if line.strip()]
    if warnings:
        info["probe_messages"] = warnings[-20:]
    if doc.get("return_code") not in (0, None):
        return _failed(f"cyclictest reported return_code {doc.get('return_code')}", info)
    return _latency_result(threads, params, info)


def _run_timerlat(params: dict, plan, rtla: str) -> dict:
    import tempfile

    from boardlab.errors import InputError
    from boardlab.platform.sysroot import format_cpulist

    if not plan.measured:  # shared: timerlat measures per CPU, so every CPU the worker may use
        plan = CpuPlan(plan.affinity_before, plan.housekeeping, plan.affinity_before, plan.notes)
    if params["threads"] > len(plan.measured):
        raise InputError(
            f"probe=timerlat runs one thread per CPU: threads={params['threads']} needs that many CPUs "
            f"(cpu=-1), found {format_cpulist(plan.measured)}"
        )
    if params["histogram_us"] < 10:
        raise InputError("probe=timerlat needs histogram_us >= 10 (rtla's smallest --entries)")
    env = _environment(plan.measured)
    features = _rtla_help(rtla)
    argv = [
        rtla,
        "timerlat",
        "hist",
        f"--cpus={format_cpulist(plan.measured)}",
        f"--duration={params['duration_s']}",
        f"--period={params['interval_us']}",
        f"--priority={'f' if params['policy'] == 'fifo' else 'r'}:{params['priority']}",
        f"--entries={params['histogram_us']}",
        "--bucket-size=1",
        "--dma-latency=0",  # what cyclictest does by default, so both probes see the same idle states
    ]
    if "--house-keeping" in features:
        argv.append(f"--house-keeping={plan.housekeeping}")
    if "--user-threads" in features:
        argv.append("--user-threads")  # a user-space thread, as cyclictest's (rteval passes -u)
    if "--no-aa" in features:
        argv.append("--no-aa")
    with tempfile.TemporaryDirectory(prefix="boardlab-rt-") as tmp:
        code, stderr, timed_out = _run_probe(argv, tmp, timeout_s=params["duration_s"] + 30, keep_stdout=True)
        try:
            with open(f"{tmp}/stdout", encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            text = ""
    info = {
        "probe": "timerlat",
        "command": argv,
        **plan.info(),
        **_probe_params(params),
        "environment": env,
        "rtla_version": _rtla_version(rtla),
    }
    if timed_out:
        return _failed(f"rtla did not end within {params['duration_s'] + 30} s and was stopped", info)
    columns = parse_timerlat_hist(text, params["histogram_us"]) if code == 0 else []
    if code != 0 or not columns:
        detail = (stderr.strip() or text.strip())[-800:] or "(no message)"
        if "not found" in detail or "Failed to enable" in detail:
            return _unsupported(f"rtla timerlat: {detail}")
        return _failed(f"rtla exited {code} without a histogram: {detail}", info)
    context = "usr" if any(c.kind == "usr" for c in columns) else "thr"
    info["timerlat_context"] = {"usr": "user-space thread", "thr": "kernel thread"}[context]
    threads = [
        c.as_thread(_hist_name("latency_us", columns, c, context)) for c in columns if c.kind == context
    ]
    irq = [c.as_thread(_hist_name("irq_latency_us", columns, c, "irq")) for c in columns if c.kind == "irq"]
    result = _latency_result(threads, params, info)
    if result.get("ok") and irq:
        result["histograms"].update({t.name: t.histogram() for t in irq})
        irq_max = max((t.max_us for t in irq if t.max_us is not None), default=None)
        result["metrics"] |= spec_metrics(
            SPEC, {"irq_max_latency_us": irq_max, "irq_avg_latency_us": _weighted_avg(irq)}
        )
    return result


def _failed(message: str, info: dict) -> dict:
    return {"ok": False, "errors": [message], "metrics": {}, "info": info}


def _probe_params(params: dict) -> dict:
    return {
        "interval_us": params["interval_us"],
        "priority": params["priority"],
        "policy": params["policy"],
        "duration_s": params["duration_s"],
        "threads": params["threads"],
        "histogram_limit_us": params["histogram_us"],
        "bucket_width_us": 1,
    }


# ---- running the probe, and stopping it --------------------------------------------------------------------


class _Stop(Exception):
    """Raised by the signal handler (at most once) to leave the blocking wait for the probe."""


def _run_probe(
    argv: list[str], tmp: str, *, timeout_s: int, keep_stdout: bool = False
) -> tuple[int, str, bool]:
    """Runs the probe in its own process group and waits (blocked, no polling) for it to end; returns
    (exit code, stderr, timed out).

    SIGINT/SIGTERM to the worker stop the probe's group (SIGINT, SIGKILL after a grace period) and raise
    MeasurementError with exit code 128 + signal, so the worker prints no result. SIGALRM enforces the timeout
    the same way. A signal that arrives while the process is being created is held until the Popen object
    exists, so the group is never lost; should the worker die anyway, the probe's death signal ends it.
    """
    import signal
    import subprocess

    from boardlab.errors import MeasurementError
    from boardlab.platform.spawn import spawn, stop_group

    state: dict = {"signum": None, "armed": False}

    def on_signal(signum, _frame):
        if state["signum"] is None:
            state["signum"] = signum
        if state["armed"]:
            state["armed"] = False
            raise _Stop()

    handled = (signal.SIGINT, signal.SIGTERM, signal.SIGALRM)
    previous = {s: signal.signal(s, on_signal) for s in handled}
    proc = None
    code = -1
    out = open(f"{tmp}/stdout", "wb") if keep_stdout else None  # noqa: SIM115 (closed below)
    try:
        with open(f"{tmp}/stderr", "wb") as err:
            try:
                proc = spawn(argv, stdout=out or subprocess.DEVNULL, stderr=err)
                state["armed"] = True
                if state["signum"] is not None:
                    raise _Stop()
                signal.alarm(timeout_s)
                code = proc.wait()
            finally:
                state["armed"] = False
                signal.alarm(0)
                for s in handled:  # a second signal must not interrupt the clean-up
                    signal.signal(s, signal.SIG_IGN)
                if proc is not None and proc.poll() is None:
                    stop_group(proc)
    except _Stop:
        pass
    finally:
        if proc is not None and proc.poll() is None:  # _Stop landed before the clean-up above ran
            stop_group(proc)
        if out is not None:
            out.close()
        for s, h in previous.items():
            signal.signal(s, h)
    signum = state["signum"]
    if signum is not None and signum != signal.SIGALRM:
        exc = MeasurementError(
            f"stopped by {signal.Signals(signum).name} before the measurement ended: "
            f"{argv[0]} (pid {proc.pid if proc else '-'}) was stopped, no result"
        )
        exc.exit_code = 128 + signum
        raise exc
    with open(f"{tmp}/stderr", encoding="utf-8", errors="replace") as fh:
        stderr = fh.read()
    return code, stderr, signum == signal.SIGALRM


def _rtla_help(rtla: str) -> str:
    from boardlab.platform.process import tool_answer

    return tool_answer([rtla, "timerlat", "hist", "--help"], timeout_s=10) or ""


def _rtla_version(rtla: str) -> str | None:
    import re

    from boardlab.platform.process import tool_answer

    m = re.search(r"rtla version (\S+)", tool_answer([rtla, "--version"], timeout_s=10) or "")
    return m.group(1) if m else None


# ---- CPUs --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CpuPlan:
    """Where the measuring threads run and where everything else of the run waits."""

    measured: tuple[int, ...]  # CPUs the measuring threads are pinned to (round-robin)
    housekeeping: int  # the probe's main thread and the worker
    affinity_before: tuple[int, ...]  # the worker's affinity as the runner left it
    notes: tuple[str, ...] = ()

    def info(self) -> dict:
        return {
            "measured_cpus": list(self.measured),
            "housekeeping_cpu": self.housekeeping,
            "worker_affinity_at_start": list(self.affinity_before),
            "cpu_notes": list(self.notes),
        }


def _cpu_plan(params: dict) -> CpuPlan:
    """Which CPUs to measure on and where the non-measuring parts go; moves the worker there."""
    import os

    from boardlab.errors import InputError
    from boardlab.platform.cpu import online_cpus

    online = tuple(online_cpus("/")) or tuple(sorted(os.sched_getaffinity(0)))
    allowed = tuple(sorted(os.sched_getaffinity(0)))
    notes = []
    for key in ("cpu", "housekeeping_cpu"):
        if params[key] >= 0 and params[key] not in online:
            raise InputError(
                f"parameter {key}={params[key]}: no such online CPU; online: {', '.join(map(str, online))}"
            )
    from boardlab.platform.sysroot import format_cpulist

    if params["cpu"] < 0 and len(allowed) > 1:
        # The runner left the worker unpinned (isolation mode "shared"): the measuring threads float too, as
        # an unconfigured system schedules them; no CPU is measured specifically and nothing is moved.
        notes.append(f"shared: measuring threads unpinned, free to run on CPUs {format_cpulist(allowed)}")
        return CpuPlan((), -1, allowed, tuple(notes))
    if params["cpu"] >= 0:
        base = params["cpu"]
    else:
        base = allowed[0]  # the runner pinned the worker: measure there
    hk = params["housekeeping_cpu"]
    if hk < 0:
        hk = next((c for c in online if c != base), base)
    if params["cpu"] >= 0 or params["threads"] == 1:
        measured: tuple[int, ...] = (base,)
    else:
        # distinct CPUs first, the housekeeping CPU last (shared); more threads than CPUs go round-robin
        others = [c for c in reversed(online) if c not in (base, hk)]
        measured = tuple([base, *others, *([hk] if hk != base else [])])[: params["threads"]]
    if hk in measured:
        notes.append(
            f"the housekeeping CPU {hk} is also measured"
            + (" (only one CPU is online)" if len(online) == 1 else "")
            + ": the probe's main thread and the worker share it"
        )
    if params["threads"] > len(measured):
        notes.append(f"{params['threads']} threads share {len(measured)} CPU(s), assigned round-robin")
    try:
        os.sched_setaffinity(0, {hk})  # the worker waits on the housekeeping CPU, off the measured one
    except OSError as exc:
        notes.append(f"the worker could not move to CPU {hk}: {exc.strerror}")
    return CpuPlan(measured, hk, allowed, tuple(notes))


# ---- the environment of the measurement -------------------------------------------------------------------


def _environment(measured: tuple[int, ...]) -> dict:
    """What decides real-time latency on this board, read now (research/stressors-rt.md section 4)."""
    from boardlab.platform import rt
    from boardlab.platform.kernel import kernel_config, read_isolation, read_kernel
    from boardlab.platform.virt import read_virtualization

    kernel = read_kernel("/")
    iso = read_isolation("/")
    dma = rt.read_cpu_dma_latency("/")
    virt = read_virtualization("/")
    if kernel.preempt_rt:
        evidence = kernel.preempt_rt_evidence
    else:
        config = kernel_config("/")
        if not config:
            cfg = "no /proc/config.gz"
        elif "CONFIG_PREEMPT_RT" in config:
            cfg = f"CONFIG_PREEMPT_RT={config['CONFIG_PREEMPT_RT']} in /proc/config.gz"
        else:
            cfg = "CONFIG_PREEMPT_RT not set in /proc/config.gz"
        evidence = f"not PREEMPT_RT: no /sys/kernel/realtime = 1, uname -v {kernel.version!r}, {cfg}"
    isolated = set(iso.isolated_cpus)
    mode, mode_source = rt.preempt_dynamic_mode("/")
    return {
        "kernel_release": kernel.release,
        "preempt_rt": kernel.preempt_rt,
        "preempt_rt_evidence": evidence,
        "preempt_model": kernel.preempt_model,
        "preempt_dynamic_mode": mode,
        "preempt_dynamic_mode_source": mode_source,
        "config_hz": kernel.config_hz,
        "sched_rt_runtime_us": kernel.sched_rt_runtime_us,
        "timer_migration": kernel.timer_migration,
        "isolated_cpus": list(iso.isolated_cpus),
        "isolcpus_flags": list(iso.isolcpus_flags),
        "nohz_full": list(iso.nohz_full),
        "rcu_nocbs": list(iso.rcu_nocbs),
        "irqaffinity": list(iso.irqaffinity),
        # an unpinned (shared) measurement is on no CPU in particular, so none of these holds for it
        "measured_cpus_isolated": bool(measured) and all(c in isolated for c in measured),
        "measured_cpus_nohz_full": bool(measured) and all(c in iso.nohz_full for c in measured),
        "measured_cpus_rcu_nocbs": bool(measured) and all(c in iso.rcu_nocbs for c in measured),
        "cpu_dma_latency_us": dma.value_us,
        "cpu_dma_latency": dma.describe(),
        "cpu_dma_latency_during_run": "held at 0 us by the probe (cyclictest's default, rtla "
        "--dma-latency=0)",
        "virtualized": virt.virtualized,
        "hypervisor": virt.hypervisor,
    }


# ---- parsing -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ThreadLatency:
    """One measuring thread's histogram (1-us buckets) and the probe's own min/avg/max over every sample."""

    name: str  # the histogram's name in the result: latency_us, latency_us.cpuN, ...
    cpu: int
    counts: tuple[int, ...]  # bucket i: latencies of i us
    overflow: int  # latencies at or beyond len(counts) us
    total: int  # every sample, overflow included
    min_us: float | None
    avg_us: float | None
    max_us: float | None
    missed_periods: int | None = None  # cyclictest only

    def histogram(self) -> dict:
        return {
            "bucket_width": 1,
            "unit": "us",
            "counts": list(self.counts),
            "overflow": self.overflow,
            "total": self.total,
        }


def _strip_colons(value):
    if isinstance(value, dict):
        return {k.rstrip(":") if isinstance(k, str) else k: _strip_colons(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_strip_colons(v) for v in value]
    return value


def parse_cyclictest_json(text: str) -> dict:
    """cyclictest's --json file as a dict: keys lose rt-tests' stray trailing colon ("cmdline:",
    "rt_test_version:"), and C's nan/inf (an avg over 0 cycles) become null."""
    import json
    import re

    text = re.sub(r":\s*-?(?:nan|inf)\b", ": null", text, flags=re.IGNORECASE)
    doc = json.loads(text)
    if not isinstance(doc, dict) or not isinstance(doc.get("thread"), dict):
        raise ValueError("no 'thread' object")
    return _strip_colons(doc)


def cyclictest_threads(
    doc: dict, histogram_us: int, duration_s: int, interval_us: int
) -> list[ThreadLatency]:
    """Per thread: the dense histogram, overflow = cycles - in-range total, min/avg/max, missed periods.

    With --histogram all threads share one interval, so each expects duration/interval wake-ups; fewer means
    periods were skipped by late wake-ups (cyclictest advances `next` past `now`), +-1 from start-up.
    """
    raw = sorted(doc["thread"].items(), key=lambda kv: int(kv[0]))
    cpus = [int(t.get("cpu", -1)) for _, t in raw]
    expected = duration_s * 1_000_000 // interval_us
    threads = []
    for (key, t), cpu in zip(raw, cpus, strict=True):
        counts = [0] * histogram_us
        for bucket, n in (t.get("histogram") or {}).items():
            i = int(bucket)
            if not 0 <= i < histogram_us:
                raise ValueError(f"thread {key}: histogram bucket {i} outside 0..{histogram_us - 1}")
            counts[i] += int(n)
        cycles = int(t["cycles"])
        overflow = cycles - sum(counts)
        if overflow < 0:
            raise ValueError(f"thread {key}: histogram holds {sum(counts)} samples but cycles = {cycles}")
        if len(raw) == 1:
            name = "latency_us"
        elif cpus.count(cpu) == 1:
            name = f"latency_us.cpu{cpu}"
        else:
            name = f"latency_us.cpu{cpu}.t{key}"
        threads.append(
            ThreadLatency(
                name,
                cpu,
                tuple(counts),
                overflow,
                cycles,
                t.get("min") if cycles else None,
                t.get("avg") if cycles else None,
                t.get("max") if cycles else None,
                max(0, expected - cycles),
            )
        )
    return threads


@dataclass
class TimerlatColumn:
    """One column of `rtla timerlat hist` (IRQ-NNN, Thr-NNN or Usr-NNN), filled while parsing."""

    kind: str  # irq | thr | usr
    cpu: int
    counts: list[int] = field(default_factory=list)
    overflow: int = 0
    count: int | None = None  # rtla's own count (newer rtla only)
    min_us: int | None = None
    avg_us: int | None = None
    max_us: int | None = None

    def as_thread(self, name: str) -> ThreadLatency:
        total = sum(self.counts) + self.overflow  # the histogram's own total; rtla's count may differ
        return ThreadLatency(
            name, self.cpu, tuple(self.counts), self.overflow, total, self.min_us, self.avg_us, self.max_us
        )


def parse_timerlat_hist(text: str, entries: int) -> list[TimerlatColumn]:
    """Columns of `rtla timerlat hist` (1-us buckets): the "Index IRQ-001 Thr-001 [Usr-001]" header, one row
    per non-empty bucket, "over:", then count/min/avg/max ("-" when a column saw nothing); the "ALL:" block
    that newer rtla prints after it repeats sums and is ignored."""
    import re

    columns: list[TimerlatColumn] = []
    summary = {"over:": "overflow", "count:": "count", "min:": "min_us", "avg:": "avg_us", "max:": "max_us"}
    for line in text.splitlines():
        fields = line.split()
        if not fields:
            continue
        head = fields[0]
        if head == "Index":
            columns = []
            for name in fields[1:]:
                m = re.fullmatch(r"(IRQ|Thr|Usr)-(\d+)", name)
                if not m:
                    raise ValueError(f"unexpected rtla column {name!r}")
                columns.append(TimerlatColumn(m.group(1).lower(), int(m.group(2)), [0] * entries))
            continue
        if head == "ALL:":
            break
        if not columns:
            continue
        values = fields[1:]
        if len(values) != len(columns):
            continue
        if head.isdigit():
            bucket = int(head)
            if bucket >= entries:
                raise ValueError(f"rtla bucket {bucket} beyond --entries={entries}")
            for col, v in zip(columns, values, strict=True):
                col.counts[bucket] += int(v)
        elif head in summary:
            for col, v in zip(columns, values, strict=True):
                setattr(col, summary[head], None if v == "-" else int(v))
    return columns


def _hist_name(prefix: str, columns: list[TimerlatColumn], col: TimerlatColumn, kind: str) -> str:
    same = [c for c in columns if c.kind == kind]
    return prefix if len(same) == 1 else f"{prefix}.cpu{col.cpu}"


# ---- the result --------------------------------------------------------------------------------------------


def _weighted_avg(threads: list[ThreadLatency]) -> float | None:
    pairs = [(t.avg_us, t.total) for t in threads if t.avg_us is not None and t.total]
    n = sum(w for _, w in pairs)
    return round(sum(a * w for a, w in pairs) / n, 2) if n else None


def _samples_needed(q: float) -> int:
    """n >= 100 / (100 - q): the sample count at which the q-th percentile is no longer the maximum."""
    import math
    from fractions import Fraction

    rest = 100 - Fraction(repr(q))
    return math.ceil(100 / rest) if rest > 0 else 1


def _latency_metrics(
    threads: list[ThreadLatency], pcts: tuple[HistogramPercentile, ...], samples: int, overflow: int
) -> dict[str, dict]:
    """The run's metrics, in the units and directions SPEC declares: min/avg/max as the probe measured them
    (every sample), the percentiles from the merged histogram (a censored one says its bound instead)."""
    from boardlab.stats.histogram import level_name

    values: dict[str, float | int | None] = {
        "max_latency_us": max((t.max_us for t in threads if t.max_us is not None), default=None)
    }
    values |= {f"{level_name(p.q)}_latency_us": p.value for p in pcts}
    values |= {
        "avg_latency_us": _weighted_avg(threads),
        "min_latency_us": min((t.min_us for t in threads if t.min_us is not None), default=None),
        "samples": samples,
        "overflow_samples": overflow,
    }
    missed = [t.missed_periods for t in threads if t.missed_periods is not None]
    if missed:
        values["missed_periods"] = sum(missed)
    metrics = spec_metrics(SPEC, values)
    for p in pcts:
        if p.censored:
            metrics[f"{level_name(p.q)}_latency_us"].update(censored=True, at_least=p.at_least)
    return metrics


def _latency_result(threads: list[ThreadLatency], params: dict, info: dict) -> dict:
    """Metrics (`_latency_metrics`), histograms per thread and the percentile table, all from the
    histograms."""
    from boardlab.stats.histogram import (
        NEAREST_RANK_METHOD,
        histogram_limit,
        histogram_percentiles,
        level_name,
        merge_histograms,
    )

    samples = sum(t.total for t in threads)
    if not threads or samples == 0:
        return _failed("the probe recorded no samples", info)
    counts, overflow = merge_histograms((t.counts, t.overflow) for t in threads)
    limit = histogram_limit(counts, 1)
    pcts = histogram_percentiles(counts, 1, overflow, PERCENTILE_LEVELS)
    metrics = _latency_metrics(threads, pcts, samples, overflow)

    warnings = []
    censored = [level_name(p.q) for p in pcts if p.censored]
    if censored:
        warnings.append(
            f"{', '.join(censored)} fall into the overflow: only '>= {int(limit)} us' is known; "
            f"raise histogram_us above the expected tail (max was {metrics['max_latency_us']['value']} us)"
        )
    short = [(p, needed) for p in pcts if samples < (needed := _samples_needed(p.q))]
    if short:
        names = ", ".join(level_name(p.q) for p, _ in short)
        warnings.append(
            f"{names} from {samples} samples: {level_name(short[0][0].q)} needs at least {short[0][1]} "
            "(one sample beyond its rank, as docs/method.md asks 100 for p99); lengthen duration_s"
        )
    info.update(
        percentiles_us={level_name(p.q): p.display() for p in pcts},
        percentile_ranks={level_name(p.q): p.rank for p in pcts},
        percentile_method=NEAREST_RANK_METHOD,
        samples_per_thread=[t.total for t in threads],
        per_thread=[
            {
                "histogram": t.name,
                "cpu": t.cpu,
                "samples": t.total,
                "overflow": t.overflow,
                "min_us": t.min_us,
                "avg_us": t.avg_us,
                "max_us": t.max_us,
                "missed_periods": t.missed_periods,
                "percentiles_us": {
                    level_name(p.q): p.display()
                    for p in histogram_percentiles(t.counts, 1, t.overflow, PERCENTILE_LEVELS)
                },
            }
            for t in threads
        ],
        warnings=warnings + list(info.get("cpu_notes") or []),
    )
    return {
        "ok": True,
        "errors": [],
        "iterations_ns": [],
        "metrics": metrics,
        "histograms": {t.name: t.histogram() for t in threads},
        "info": info,
    }
