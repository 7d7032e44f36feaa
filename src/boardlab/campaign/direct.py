"""The runs the runner makes itself: a program started with no worker process between the runner and it (a
workload's `direct` hook, the `program` workload's when it needs no launcher), so no interpreter starts per
run. The runner asks `DirectRuns.launch` per cell; `measure` is its `_measure` for those cells.

The programs are started and timed by boardlab-kern's launcher (platform.launcher): one process per campaign,
on the programs' CPU, that spawns, waits and reads the clock in C, and kills a program if boardlab dies. Where
it cannot serve (a boardlab-kern without it, a wrapper that does not pass it through), they are started from
this process instead (platform.spawn.InProcessStarter, with its guard), and `open` says why. Per campaign this
holds what the runs share: the cells' launches, the environment converted once (os.environ, a mapping of
Python code, took 40 us to convert inside each timed spawn) and the starter.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from boardlab.errors import BoardlabError
from boardlab.model.campaign import Cell
from boardlab.model.worker_result import WorkerResult, build_worker_result
from boardlab.model.workload import DirectExecution, DirectLaunch, WorkloadSpec
from boardlab.monitor.sampler import Monitor, MonitorOutput
from boardlab.native import kern_path
from boardlab.platform.launcher import Launcher, LauncherUnavailable
from boardlab.platform.spawn import InProcessStarter, direct_spawn_reason


class Starter(Protocol):
    """What starts, awaits and stops the programs (platform.launcher.Launcher, or
    platform.spawn.InProcessStarter): `spawn` gives the program or why it could not start; `wait` gives its
    end (or why it could not start), its `pid` and `t0_ns` (the monotonic clock just before its spawn) known
    from `on_start(pid, ended)`'s call on (`ended`: the program was reaped already)."""

    def spawn(
        self, argv: Sequence[str], cpus: set[int] | None, timeout_s: float, tell_after_s: float | None = None
    ) -> Any: ...

    def wait(
        self,
        p: Any,
        on_start: Callable[[int, bool], None] | None = None,
        running_after: tuple[float, Callable[[], None]] | None = None,
    ) -> DirectExecution: ...

    def stop(self, p: Any) -> None: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class DirectRun:
    """One run the runner made itself, as its `_Worker` needs it."""

    started_unix_s: float
    t0_ns: int  # monotonic, just before the spawn
    wall_ns: int  # the spawn to the reap
    execution: DirectExecution
    monitor: MonitorOutput
    killed: bool  # at the run's timeout (not the program's own, which is its result's error)
    result: WorkerResult  # what the workload's worker would have printed for it


class DirectRuns:
    def __init__(self) -> None:
        self._launches: dict[str, DirectLaunch | None] = {}
        self._starter: Starter | None = None

    @functools.cached_property
    def reason(self) -> str | None:
        """Why this system cannot make them (then every run has its worker)."""
        return direct_spawn_reason()

    @functools.cached_property
    def _env(self) -> dict[bytes, bytes]:
        return dict(os.environb)

    def launch(self, cell: Cell, spec: WorkloadSpec) -> DirectLaunch | None:
        """The cell's run as the runner makes it itself, or None (its worker runs it); asked once per cell."""
        if cell.key not in self._launches:
            usable = spec.direct is not None and self.reason is None
            self._launches[cell.key] = spec.direct(cell.params_dict) if usable and spec.direct else None
        return self._launches[cell.key]

    def open(self) -> str | None:
        """Before the campaign's first run (off the measured CPU, like the loop): the starter. None, or why
        the programs are started from Python rather than by the launcher (their stored times then include
        Python's wake-ups: bench/README.md has the two compared)."""
        try:
            self._starter = Launcher(kern_path(), self._env)
            return None
        except (LauncherUnavailable, BoardlabError) as exc:
            self._starter = InProcessStarter(self._env)
            return f"programs are started by boardlab itself, not by boardlab-kern's launcher: {exc}"

    def close(self) -> None:
        if self._starter is not None:
            self._starter.close()
            self._starter = None

    @property
    def ready(self) -> bool:
        return self._starter is not None

    def measure(
        self,
        launch: DirectLaunch,
        cpu: int | None,
        worker_cpus: set[int] | None,
        monitor: Monitor,
        timeout_s: float,
    ) -> DirectRun:
        """The program spawned, monitored as the worker, reaped with wait4, and its worker result made from
        that (the workload's `result`). The earlier of the run's timeout and the program's own ends it."""
        starter = self._starter
        assert starter is not None, "measure() before open()"
        started = time.time()
        before = (
            (self._before(launch.before, worker_cpus, launch.timeout_s, starter),) if launch.before else ()
        )
        monitor.prepare(cpu)
        if before and not _succeeded(before[0]):  # the program is not run
            return _run(launch, started, time.monotonic_ns(), 0, before, monitor.stop())
        p = starter.spawn(launch.argv, worker_cpus, min(timeout_s, launch.timeout_s), monitor.interval_s)
        if isinstance(p, str):
            ex = DirectExecution.not_started(p)
            return _run(launch, started, time.monotonic_ns(), 0, (*before, ex), monitor.stop())
        try:  # from the spawn on, a stop (Ctrl-C, SIGTERM, SIGHUP) at any point stops the program
            # Waited for here, off its CPU: staying there until its end, as hyperfine's loop does, cost a
            # 0.5 ms program 0.05-0.1 ms more (this thread's Python between its spawn and the wait ran beside
            # it) than the wake-up from another CPU does. A 1 ms program is named to the monitor after its
            # end, and never followed.
            ex = starter.wait(
                p,
                on_start=lambda pid, ended: monitor.start(pid, cpu, ended=ended),
                running_after=(monitor.interval_s, monitor.follow),
            )
        except BaseException:
            starter.stop(p)
            monitor.stop()
            raise
        if ex.start_error is not None:
            return _run(launch, started, time.monotonic_ns(), 0, (*before, ex), monitor.stop())
        wall_ns = time.monotonic_ns() - p.t0_ns
        killed = ex.timed_out and timeout_s < launch.timeout_s
        return _run(launch, started, p.t0_ns, wall_ns, (*before, ex), monitor.stop(), killed)

    def _before(self, argv, worker_cpus, timeout_s: float, starter: Starter) -> DirectExecution:
        """A launch's `before` (a prepare_each), started and pinned as the program is, before its timing and
        monitoring begin."""
        p = starter.spawn(argv, worker_cpus, timeout_s)
        if isinstance(p, str):
            return DirectExecution.not_started(p)
        try:
            return starter.wait(p)
        except BaseException:
            starter.stop(p)
            raise


def _succeeded(ex: DirectExecution) -> bool:
    return ex.start_error is None and not ex.timed_out and ex.exit_code == 0


def _run(launch, started, t0_ns, wall_ns, done, mon, killed=False) -> DirectRun:
    """The run's record; `done`: the executions made, the program's last (if it started)."""
    doc = build_worker_result("boardlab.runner", launch.workload, launch.params, launch.result(done))
    return DirectRun(started, t0_ns, wall_ns, done[-1], mon, killed, doc)
