"""The CPU a report spends in its statistics, and how it grows with the runs of a cell.

For each store given (`--db`, e.g. bench_scale's stores of 10^5 and 10^6 runs, `--keep DIR`), the report of
its latest campaign is rendered once (Markdown, to a scratch file) while every call it makes to the
statistics package's entry points (`summarize`, `compare`, `compare_tail`, `comparison_flags`) is recorded
with its arguments; then those calls are replayed `--repeat` times in this process and the CPU time
(`time.process_time`) of each entry point is printed, the median over the repeats. Between two stores the
growth exponent log(t2/t1)/log(n2/n1) of the total follows (1.0: linear in the runs). The statistics'
memo (`stats._memo`) is emptied before each replay, so that every replay computes what a fresh report does.

Targets (issue 27): <= 0.4 s of statistics CPU for a report of 10^5 runs, growth exponent <= 1.05 from 10^5
to 10^6. There is no other implementation to alternate with here: the figures to compare are the same
command's on two commits. Exit 1 when a measured target is missed. Run it on a copy of a store: the report
only reads, but a store of an older boardlab may be migrated when opened.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

ENTRY_POINTS = {
    "summarize": ("boardlab.stats", "summarize"),
    "compare": ("boardlab.stats", "compare"),
    "compare_tail": ("boardlab.stats", "compare_tail"),
    "comparison_flags": ("boardlab.stats.flags", "comparison_flags"),
}
TARGET_CPU_AT_1E5_S = 0.4
TARGET_GROWTH = 1.05


def record(db: Path) -> tuple[list[tuple[str, tuple, dict]], int]:
    """The statistics calls of one Markdown report of `db`, and the runs its cells summarized."""
    import importlib

    calls: list[tuple[str, tuple, dict]] = []
    originals = {}
    for name, (module, attr) in ENTRY_POINTS.items():
        mod = importlib.import_module(module)
        originals[name] = (mod, attr, getattr(mod, attr))
        setattr(mod, attr, _recorder(calls, name, originals[name][2]))  # bound by the analysis on import
    try:
        for loaded in [m for m in sys.modules if m.startswith("boardlab.analysis")]:
            del sys.modules[loaded]  # re-imported with the wrappers bound
        from boardlab.cli import main

        with tempfile.TemporaryDirectory() as tmp:
            rc = main(["report", "--db", str(db), "--format", "md", "-o", str(Path(tmp) / "r.md")])
        if rc:
            raise SystemExit(f"boardlab report of {db} exited {rc}")
    finally:
        for mod, attr, fn in originals.values():
            setattr(mod, attr, fn)
    runs = sum(len(args[0]) for name, args, _ in calls if name == "summarize")  # the cells' valid runs
    return calls, runs


def _recorder(calls: list, name: str, fn):
    def wrapper(*args, **kwargs):
        calls.append((name, args, kwargs))
        return fn(*args, **kwargs)

    return wrapper


def replay(calls: list[tuple[str, tuple, dict]], repeat: int) -> dict[str, float]:
    """Median CPU seconds per entry point over `repeat` replays of the calls."""
    import importlib

    try:
        from boardlab.stats import _memo
    except ImportError:  # a commit before the memo
        _memo = None
    fns = {name: getattr(importlib.import_module(m), a) for name, (m, a) in ENTRY_POINTS.items()}
    runs: list[dict[str, float]] = []
    for _ in range(repeat):
        if _memo is not None:
            _memo._answers.clear()
        cpu = dict.fromkeys(fns, 0.0)
        for name, args, kwargs in calls:
            start = time.process_time()
            fns[name](*args, **kwargs)
            cpu[name] += time.process_time() - start
        runs.append(cpu)
    return {name: statistics.median(r[name] for r in runs) for name in fns}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, action="append", required=True, help="a store (repeatable)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    measured: list[tuple[int, float]] = []
    for db in args.db:
        calls, runs = record(db)
        cpu = replay(calls, args.repeat)
        total = sum(cpu.values())
        measured.append((runs, total))
        parts = ", ".join(f"{name} {s:.3f} s" for name, s in cpu.items() if s)
        print(f"{db}: {runs} runs summarized, {len(calls)} statistics calls: {total:.3f} s CPU ({parts})")
    missed = []
    for (n1, t1), (n2, t2) in zip(measured, measured[1:], strict=False):
        growth = math.log(t2 / t1) / math.log(n2 / n1) if n1 != n2 and t1 > 0 else math.nan
        print(f"growth exponent {n1} -> {n2} runs: {growth:.2f} (target <= {TARGET_GROWTH})")
        if 9e4 <= n1 <= 1.1e5 and 9e5 <= n2 <= 1.1e6 and growth > TARGET_GROWTH:
            missed.append(f"growth exponent {growth:.2f} > {TARGET_GROWTH}")
    for runs, total in measured:
        if 9e4 <= runs <= 1.1e5 and total > TARGET_CPU_AT_1E5_S:
            missed.append(f"{total:.3f} s of statistics CPU at {runs} runs > {TARGET_CPU_AT_1E5_S} s")
    for m in missed:
        print(f"MISSED: {m}")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
