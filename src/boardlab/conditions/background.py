"""Background loads: the processes a condition runs beside the workload, for one run.

Every kind that loads the board while the workload runs (stress-ng stressors, a user command, the dd + gzip
loop, bursty loopback traffic) starts, measures and stops its process here, the same way:

- placed on CPUs by `placement`: `same` (the worker's CPU), `other` (every online CPU but the worker's) or
  `all` (every online CPU); the whole process tree inherits the affinity;
- started as the leader of its own process group in boardlab's session (so the worker and the load's
  processes share a CPU per task, see platform/spawn.py), dying with boardlab (PR_SET_PDEATHSIG), and
  journaled by PID and start time before the workload starts, so a killed campaign leaves nothing running
  (the next start, or `boardlab restore`, stops what is left);
- running `warmup_s` (default: the campaign's, 1 s) before the workload starts: stress-ng's stressors are at
  their plateau within the first 0.3 s (bench/bench_stressors.py); a load that ends during its warm-up is
  an error (the run would be a baseline run under another name). The programs of programs.py say when
  their loop begins (their status file appears) and the warm-up counts from then: a Python interpreter's
  start, a second on a slow board, is no part of it;
- measured: its CPU time over the workload's window (from the end of the warm-up to the start of the stop),
  from /proc jiffies of every member of its process group plus what they reaped, as % of one core. Time the
  kernel spends in interrupts and softirqs on the load's behalf (timer, udp, loopback traffic) is charged to
  no process and is not in it;
- stopped with SIGINT (to the leader, or to the whole group for loads whose members all handle it), then
  SIGKILL of the group after `STOP_GRACE_S`; any member left once the leader has exited is killed too.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from boardlab.conditions.base import ApplyContext, param
from boardlab.errors import MeasurementError
from boardlab.platform import sampling
from boardlab.platform.sysroot import format_cpulist

PLACEMENTS = ("same", "other", "all")
DEFAULT_PLACEMENT = "all"
DEFAULT_WARMUP_S = 1.0
MAX_WARMUP_S = 600.0
STOP_GRACE_S = 5.0  # SIGINT, then this long before SIGKILL of the group
# how long a load may take to say its loop began (programs.py's: an interpreter's start on a slow board with a
# cold cache) before the warm-up counts
LOAD_START_S = 30.0
LOAD_MAX_S = 3600  # every load ends by itself after this long (stress-ng --timeout, the programs' bound)
LOG_TAIL_CHARS = 600

_names = itertools.count(1)


# ---- parameters shared by every background kind ----


@dataclass(frozen=True)
class BackgroundParams:
    """`placement` and `warmup_s`, the parameters every background kind takes: a kind's parameters class
    inherits them, and `declared_params` lists them after the kind's own."""

    placement: str = param(
        "enum",
        DEFAULT_PLACEMENT,
        choices=PLACEMENTS,
        help="where the load runs: same (the worker's CPU), other (every CPU but the worker's), "
        "all (every online CPU)",
    )
    warmup_s: float | None = param(
        "float",
        None,
        min=0,
        max=MAX_WARMUP_S,
        unit="s",
        help="how long the load runs before the workload starts (default: the campaign's warm-up)",
    )


def placement_reason(placement: str, ctx: ApplyContext) -> str | None:
    """Why `placement` cannot be honoured on this board with this worker CPU; None when it can."""
    if placement == "same" and ctx.worker_cpu is None:
        return (
            "placement = 'same' puts the load on the worker's CPU, but the worker is not pinned "
            "(runs.cpu = 'none'); set runs.cpu to a CPU number or 'auto', or use placement 'other' or 'all'"
        )
    if placement == "other":
        if ctx.worker_cpu is None:
            return (
                "placement = 'other' means every CPU but the worker's, but the worker is not pinned "
                "(runs.cpu = 'none'); set runs.cpu to a CPU number or 'auto', or use placement 'all'"
            )
        if not ctx.other_cpus:
            online = format_cpulist(ctx.online_cpus) or "none"
            return (
                "unsupported: placement = 'other' needs a CPU besides the worker's "
                f"(CPU {ctx.worker_cpu}), but the only online CPU is {online}; valid here: same, all"
            )
    return None


def placement_cpus(placement: str, ctx: ApplyContext) -> tuple[int, ...]:
    if placement == "same":
        assert ctx.worker_cpu is not None, "check() refuses 'same' with an unpinned worker"
        return (ctx.worker_cpu,)
    if placement == "other":
        return ctx.other_cpus
    return ctx.online_cpus


def scratch_path(ctx: ApplyContext, stem: str, suffix: str) -> Path:
    """A fresh file name in the condition's private directory (one per run, never reused)."""
    return ctx.temp_dir / f"{stem}-{os.getpid()}-{next(_names)}{suffix}"


# ---- one started load ----


@dataclass(frozen=True)
class LoadUsage:
    """What a load did over one run, recorded with the run's condition state."""

    cpu_pct_of_core: float | None  # its process group's CPU time over the window, % of one core
    window_s: float  # from the end of the warm-up to the start of the stop
    processes: int  # live members of its process group at the end of the window
    stop_s: float  # from the first signal until the leader was reaped
    exit_code: int | None  # the leader's
    exited_early: bool  # ended by itself before boardlab stopped it
    killed: bool  # SIGINT was not enough: the group got SIGKILL
    log_tail: str | None  # the end of its output, when it ended by itself

    def to_state(self) -> dict[str, Any]:
        return {
            "load_cpu_pct": None if self.cpu_pct_of_core is None else round(self.cpu_pct_of_core, 2),
            "load_window_s": round(self.window_s, 4),
            "load_processes": self.processes,
            "stop_s": round(self.stop_s, 4),
            "load_exit_code": self.exit_code,
            "load_exited_early": self.exited_early,
            "load_killed": self.killed,
            **({"load_log_tail": self.log_tail} if self.log_tail else {}),
        }


class Load:
    """A started load: its leader's Popen, its journal entry, and what the window measured."""

    def __init__(self, proc: subprocess.Popen, token: str, ctx: ApplyContext, what: str, log_path: Path):
        self.proc = proc
        self.pid = proc.pid  # also its process group id: spawn() makes it a group leader
        self.token = token
        self.ctx = ctx
        self.what = what
        self.log_path = log_path
        self.usage: LoadUsage | None = None

    def exited(self) -> bool:
        """Whether the leader has ended, without reaping it (its group id stays reserved until we do)."""
        if self.proc.returncode is not None:
            return True
        try:
            return os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:
            return True

    def cpu_jiffies(self) -> tuple[int, int]:
        return sampling.read_group_cpu(self.ctx.root, self.pid)

    def log_tail(self) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(max(0, os.fstat(f.fileno()).st_size - LOG_TAIL_CHARS))
                return f.read().decode(errors="replace").strip()
        except OSError:
            return ""

    def _wait_exit(self, timeout_s: float) -> bool:
        return self._wait_for(self.exited, timeout_s)

    def _wait_for(self, done: Callable[[], bool], timeout_s: float) -> bool:
        """Whether `done()` came true within `timeout_s`, asked every 1 ms at first, then every 10 ms."""
        deadline = time.monotonic() + timeout_s
        pause = 0.001
        while not done():
            if time.monotonic() >= deadline:
                return False
            time.sleep(pause)
            pause = min(pause * 2, 0.01)
        return True

    def stop(self, first_to: Literal["leader", "group"]) -> tuple[float, bool]:
        """SIGINT, then SIGKILL of the group after the grace period; reaps the leader. (seconds, killed)."""
        t0 = time.monotonic()
        killed = False
        if not self.exited():
            try:
                if first_to == "leader":
                    os.kill(self.pid, signal.SIGINT)
                else:
                    os.killpg(self.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
            if not self._wait_exit(STOP_GRACE_S):
                killed = True
                _killpg(self.pid)
                self._wait_exit(STOP_GRACE_S)
        _killpg(self.pid)  # the leader is gone but not reaped: the group id is still ours; no member stays
        self.proc.wait()
        return time.monotonic() - t0, killed


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def describe_exit(code: int) -> str:
    """A process's end as Popen.returncode gives it: `exit 3`, or `killed by signal 9 (SIGKILL)`."""
    if code >= 0:
        return f"exit {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        return f"killed by signal {-code}"
    return f"killed by signal {-code} ({name})"


def _spawn(argv: Sequence[str], cpus: tuple[int, ...], log, cwd: Path | None) -> subprocess.Popen:
    from boardlab.platform.spawn import spawn

    return spawn(argv, cpus=set(cpus), stdout=log, stderr=subprocess.STDOUT, cwd=str(cwd) if cwd else None)


@contextmanager
def running_load(
    argv: Sequence[str],
    *,
    ctx: ApplyContext,
    cpus: tuple[int, ...],
    what: str,
    warmup_s: float,
    stop_first_to: Literal["leader", "group"],
    cwd: Path | None = None,
    how_ended: Callable[[int], str] = describe_exit,
    started: Callable[[], bool] | None = None,
    start_timeout_s: float = LOAD_START_S,
) -> Iterator[Load]:
    """Starts `argv` as a journaled background load on `cpus`, lets it warm up, yields it while the workload
    runs, then stops it; `load.usage` holds what it did once the block has ended. `how_ended(leader's
    code)` says how a load that ended during its warm-up ended (a supervisor: how what it ran ended).
    `started()`, when given, says that the load's loop has begun: the warm-up counts from then (waited for
    up to `start_timeout_s`), not from the process's start."""
    log_path = scratch_path(ctx, "load", ".log")
    with open(log_path, "wb") as log:
        proc = _spawn(argv, cpus, log, cwd)
    try:
        token = ctx.journal.started(proc.pid, list(argv), what=what)
    except BaseException:
        _killpg(proc.pid)
        proc.wait()
        raise
    load = Load(proc, token, ctx, what, log_path)
    stopped = False
    try:
        if started is not None and not _wait_start(load, started, start_timeout_s):
            if not load.exited():
                raise MeasurementError(f"{what} did not start within {start_timeout_s:g} s")
            error, stopped = _ended_early(load, "before its loop began", how_ended), True
            raise error
        if load._wait_exit(warmup_s):
            error, stopped = _ended_early(load, f"during its {warmup_s:g} s warm-up", how_ended), True
            raise error
        j0, _ = load.cpu_jiffies()
        t0 = time.monotonic()
        yield load
        j1, members = load.cpu_jiffies()
        window = time.monotonic() - t0
        early = load.exited()
        stop_s, killed = load.stop(stop_first_to)
        stopped = True
        ticks = sampling.clock_ticks()
        load.usage = LoadUsage(
            cpu_pct_of_core=100.0 * (j1 - j0) / ticks / window if window > 0 else None,
            window_s=window,
            processes=members,
            stop_s=stop_s,
            exit_code=load.proc.returncode,
            exited_early=early,
            killed=killed,
            log_tail=load.log_tail() if early else None,
        )
    finally:
        if not stopped:
            load.stop(stop_first_to)
        ctx.journal.forget(token)
        try:
            log_path.unlink()
        except OSError:
            pass


def _wait_start(load: Load, started: Callable[[], bool], timeout_s: float) -> bool:
    """Whether the load said its loop began within `timeout_s`; False as soon as it has ended without (a
    load that began and ended at once began: `started` is asked again once the wait is over)."""
    return load._wait_for(lambda: started() or load.exited(), timeout_s) and started()


def _ended_early(load: Load, when: str, how_ended: Callable[[int], str]) -> MeasurementError:
    """Reaps a load that ended before the workload's window (its group killed) and says how it ended."""
    _killpg(load.pid)
    code = load.proc.wait()
    return MeasurementError(
        f"{load.what} ended {when} ({how_ended(code)}) instead of running beside the workload: "
        f"{load.log_tail() or 'no output'}"
    )


# ---- loads that run one of programs.py's programs ----


@contextmanager
def program_load(
    program: str,
    config: dict[str, Any],
    p: BackgroundParams,
    *,
    ctx: ApplyContext,
    what: str,
    state: dict[str, Any],
    health: Callable[[dict[str, Any]], str | None],
) -> Iterator[dict[str, Any]]:
    """Runs `python -m boardlab.conditions.programs PROGRAM CONFIG` as a background load, placed and warmed
    up as the kind's parameters `p` say; yields `state` with the placement added, then adds the load's
    usage, the counters the program wrote when stopped, and whether the load ran (`health` of those
    counters: why it did not, or None; see `record_health`)."""
    placement, warmup_s = p.placement, warmup_of(p, ctx)
    cpus = placement_cpus(placement, ctx)
    status = scratch_path(ctx, program, ".json")
    config = {**config, "status": str(status), "max_s": LOAD_MAX_S}
    argv = [sys.executable, "-m", "boardlab.conditions.programs", program, json.dumps(config)]
    state.update(placement=placement, cpus=format_cpulist(cpus), warmup_s=warmup_s)
    # every member handles SIGINT (and the program waits for its children): the group gets it at once
    with running_load(
        argv,
        ctx=ctx,
        cpus=cpus,
        what=what,
        warmup_s=warmup_s,
        stop_first_to="group",
        how_ended=lambda code: _program_ended(status, code),
        started=status.exists,
    ) as load:
        yield state
    if load.usage is not None:
        state.update(load.usage.to_state())
    state.update(_final_counters(status, program))
    record_health(state, health(state))


def _final_counters(status: Path, program: str) -> dict[str, Any]:
    """The counters `program` wrote when it stopped (the status file, then deleted), or a `status_error`:
    the file holds only what it wrote when its loop began, or nothing readable."""
    doc = _status_doc(status)
    try:
        status.unlink()
    except OSError:
        pass
    if doc is None or doc.get("running"):
        return {"status_error": f"{program} wrote no counters (it was killed, or it failed)"}
    return doc


def _program_ended(status: Path, code: int) -> str:
    """How a program that ended during its warm-up ended: what it ran (its status's `last_exit`, as
    Popen.returncode; or the `error` that kept it from starting), else its own exit."""
    doc = _status_doc(status)
    if doc is not None and isinstance(doc.get("error"), str):
        return doc["error"]
    last = doc.get("last_exit") if doc is not None else None
    if isinstance(last, int) and not isinstance(last, bool):
        return describe_exit(last)
    return describe_exit(code)


def _status_doc(status: Path) -> dict[str, Any] | None:
    """What a program's status file holds (programs.py), or None where it holds no JSON object."""
    try:
        doc = json.loads(status.read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def record_health(state: dict[str, Any], failure: str | None) -> None:
    """Whether the load ran, in the run's state: `load_ran` false and `load_failure` (the reason) make the
    run invalid (campaign/runner.py load_problems): a run beside a load that never ran is not a measurement
    under that load. Counters the load could not write (it was killed) say nothing either way."""
    state["load_ran"] = failure is None
    if failure:
        state["load_failure"] = failure


def warmup_of(p: BackgroundParams, ctx: ApplyContext) -> float:
    """The plan's `warmup_s`, else the campaign's default for loads (ApplyContext.warmup_s, 1 s): the
    declaration's default is None, "the campaign's", known only once the campaign runs."""
    return float(ctx.warmup_s if p.warmup_s is None else p.warmup_s)
