"""boardlab's userspace governor daemon running around each run (`boardlab governor run` as a process).

```toml
[[conditions]]
name = "anti-snoop"
kind = "governor-daemon"
params = { policy = "anti-snoop", sampling_ms = 120, tree = "tree.json" }
```

The daemon switches every policy to the userspace governor and drives scaling_setspeed, journaling its own
writes; the condition journals the daemon process itself, so a killed campaign's next start (or `boardlab
restore`) stops it and undoes its writes. The run records the daemon's summary: samples, setspeed writes,
the frequencies it wrote and its own CPU time.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

from boardlab.conditions.base import ApplyContext, DeclaredKind, param
from boardlab.errors import MeasurementError
from boardlab.model.units import plain_number
from boardlab.platform import cpufreq, perf

POLICIES = ("ondemand", "conservative", "schedutil-like", "anti-snoop")
START_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class DaemonParams:
    policy: str = param("enum", None, choices=POLICIES, required=True, help="the daemon's frequency policy")
    sampling_ms: float = param(
        "float", 120, min=1, max=10_000, unit="ms", help="the daemon's sampling period"
    )
    tree: str | None = param("str", None, help="anti-snoop: a tree JSON from `boardlab governor train`")
    t1: float = param("float", 2.0689, help="anti-snoop without tree: cci_congestion threshold")
    t2: float = param("float", 0.02, help="anti-snoop without tree: memory_access threshold")


class GovernorDaemon(DeclaredKind[DaemonParams]):
    name = "governor-daemon"
    summary = "boardlab's userspace governor daemon (ondemand, conservative, schedutil-like, anti-snoop)"

    def support(self, info) -> tuple[str | None, tuple[str, ...]]:
        missing = cpufreq.missing_reason(info)
        if missing:
            return missing, ()
        lacking = [p.name for p in info.cpufreq_policies if "userspace" not in p.governors]
        if lacking:
            return f"{', '.join(lacking)} offer no userspace governor", ()
        limits = []
        if len(info.cpufreq_policies) < 2:
            limits.append(
                "policy anti-snoop needs two clusters (big.LITTLE); this board has one cpufreq policy"
            )
        if info.live and os.geteuid() != 0:
            limits.append("writing scaling_setspeed needs root")
        return None, tuple(limits)

    def refuse(self, p: DaemonParams, params: dict) -> tuple[str | None, str] | None:
        """The plan's keys as `governor run` takes its options (it refuses them otherwise): the anti-snoop
        rule's only with that policy, its thresholds finite and not negative."""
        import math

        if p.policy != "anti-snoop":
            given = next((key for key in ("tree", "t1", "t2") if key in params), None)
            if given:
                return given, f'goes with policy = "anti-snoop", not {p.policy!r}: drop it or change policy'
        for key in ("t1", "t2"):
            if key in params and not (math.isfinite(params[key]) and params[key] >= 0):
                return key, f"expected a finite threshold of 0 or more, found {params[key]!r}"
        return None

    def check(self, params: dict, ctx: ApplyContext) -> str | None:
        info = ctx.info
        missing = cpufreq.missing_reason(info)
        if missing:
            return f"unsupported: {missing}"
        for p in info.cpufreq_policies:
            if "userspace" not in p.governors:
                return f"unsupported: {p.name} offers no userspace governor ({', '.join(p.governors)})"
            if not p.frequencies_khz:
                return f"unsupported: {p.name} publishes no frequency table (scaling_available_frequencies)"
            for attr in ("scaling_governor", "scaling_setspeed"):
                rel = f"{cpufreq.policy_dir(p.name)}/{attr}"
                if not ctx.root.writable(rel):
                    return ctx.not_writable(rel)
        daemon = self.typed(params)
        if daemon.policy == "anti-snoop":
            if len(info.cpufreq_policies) < 2:
                return (
                    "unsupported: anti-snoop needs two clusters (big.LITTLE); this board has one "
                    "cpufreq policy"
                )
            from boardlab.platform.sysroot import is_sim_root

            if not is_sim_root(ctx.root.root) and perf.cci_pmu(ctx.root) is None:
                return (
                    "unsupported: anti-snoop needs the CCI-400 PMU, and "
                    "/sys/bus/event_source/devices has none"
                )
        tree = daemon.tree
        if tree and not os.path.isfile(tree):
            return f"tree {tree!r} does not exist: write one with `boardlab governor train`"
        # what the daemon's own start checks (governor/daemon.py Daemon.check), caught here before any run
        if ctx.root.read_bytes("proc/stat") is None:
            return (
                f"no {ctx.root.show('proc/stat')}: the governor daemon measures the CPUs' load there; "
                "give --root a tree with proc/stat (a board's, or a simulator's)"
            )
        return None

    @contextlib.contextmanager
    def apply(self, params: dict, ctx: ApplyContext):
        p = self.typed(params)
        argv = [sys.executable, "-m", "boardlab", "governor", "run", "--root", str(ctx.root.root),
                "--policy", p.policy, "--sampling-ms", plain_number(p.sampling_ms), "--json",
                "--no-recover"]  # fmt: skip
        # a flag left out is the daemon's own default (the same the declaration shows), so argv records
        # only what the plan gave
        argv += ["--tree", p.tree] if "tree" in params and p.tree is not None else []
        for key, value in (("t1", p.t1), ("t2", p.t2)):
            argv += [f"--{key}", plain_number(value)] if key in params else []
        state: dict = {"policy": p.policy, "argv": argv[3:]}
        env = {**os.environ, "BOARDLAB_PARENT_PID": str(os.getpid())}
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                start_new_session=True)  # fmt: skip
        token = ctx.journal.started(proc.pid, argv, what=f"governor daemon ({p.policy})")
        try:
            if ctx.other_cpus:
                with contextlib.suppress(OSError):
                    os.sched_setaffinity(proc.pid, ctx.other_cpus)  # off the measured CPU
            _wait_started(ctx, proc)
            yield state
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)  # the daemon restores its own writes
            try:
                out, err = proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                out, err = proc.communicate()
            ctx.journal.forget(token)
            try:
                state["daemon"] = json.loads(out.strip().splitlines()[-1]) if out.strip() else None
            except json.JSONDecodeError:
                state["daemon"] = None
            if proc.returncode not in (0, None):
                state["error"] = err.strip()[-500:]
        if proc.returncode not in (0, None):
            raise MeasurementError(
                f"the governor daemon failed (exit {proc.returncode}): {err.strip()[-300:]}"
            )


def _wait_started(ctx: ApplyContext, proc: subprocess.Popen) -> None:
    """Until every policy runs the userspace governor (the daemon has taken over), or it exits."""
    names = [p.name for p in ctx.info.cpufreq_policies]
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise MeasurementError(f"the governor daemon exited at start: {_stderr_end(proc)}")
        if all(ctx.root.read_str(f"{cpufreq.policy_dir(n)}/scaling_governor") == "userspace" for n in names):
            return
        time.sleep(0.02)
    raise MeasurementError(f"the governor daemon did not take over within {START_TIMEOUT_S:g} s")


KIND = GovernorDaemon()


def _stderr_end(proc: subprocess.Popen) -> str:
    """The last 300 characters the daemon wrote to its stderr (a pipe), for the error that names its exit."""
    return proc.stderr.read().strip()[-300:] if proc.stderr is not None else "(no stderr)"
