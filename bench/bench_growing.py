"""A running campaign analysed again as its runs arrive: serve's worker reading on from its last analysis
(`analysis.cellruns.GrowingTables`) against the analysis that reads every run again.

A campaign of `--runs` runs (bench_scale's cells and values) is set running; each round stores one more
repetition of every cell (or of `--cells-per-round` of them, the next ones in turn: a campaign whose cells
take a while each, or have settled) through the store's own `record_runs` (as the runner does), then computes
the campaign's summary both ways: (A) `web.background._summary`, what serve's worker runs for the page, which
keeps the tables between analyses, and (B) `summary.compute`, every run read again (what the worker did
before). A and B alternate in order round by round (A B, B A, ...), each with its wall and CPU time and the
load beside it; the two summaries must be identical (else exit 1). Printed: the median of the pairwise A/B
ratios of CPU time and of wall time.

    .venv/bin/python bench/bench_growing.py --runs 100000 --rounds 8
    .venv/bin/python bench/bench_growing.py --runs 100000 --rounds 8 --cells-per-round 3
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_scale  # noqa: E402  (the bench's own campaign builder, beside this file)


def add_round(db: Path, cid: int, rep: int, rng: random.Random, which: list[int] | None = None) -> int:
    """One more repetition of every cell (or of the cells at the indices `which`), stored as the runner
    stores runs; the runs added."""
    from boardlab.store import Store

    cells = bench_scale._cells()
    cells = cells if which is None else [cells[i] for i in which]
    with Store.open(db) as store:
        ids = {c["key"]: int(c["id"]) for c in store.cells(cid)}
        seq = int(store.conn.execute("SELECT max(seq) FROM runs WHERE campaign_id=?", (cid,)).fetchone()[0])
        runs = []
        for cell, unit, hib, base in cells:
            seq += 1
            value = base * (1 + rng.gauss(0, 0.01))
            runs.append((ids[cell.key], bench_scale._run(cell, unit, hib, value, rep, seq, rng)))
        store.record_runs(cid, runs)
    return len(runs)


def _cells_of(round_index: int, per_round: int) -> list[int] | None:
    """The cells a round gives a run: all (None), or `per_round` of them after the last round's, in turn."""
    n = len(bench_scale._cells())
    return None if not per_round else [(round_index * per_round + k) % n for k in range(per_round)]


def timed(fn) -> tuple[object, float, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    got = fn()
    return got, time.perf_counter() - wall, time.process_time() - cpu, os.getloadavg()[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=float, default=1e5, help="the campaign's runs before the rounds")
    ap.add_argument("--rounds", type=int, default=8, help="rounds of one repetition each (default 8)")
    ap.add_argument(
        "--cells-per-round", type=int, default=0, help="cells given a run each round, in turn (default: all)"
    )
    args = ap.parse_args()

    from boardlab import summary
    from boardlab.store import Store
    from boardlab.web import background

    with tempfile.TemporaryDirectory(prefix="boardlab-growing-") as tmp:
        db = Path(tmp) / "running.db"
        runs = bench_scale.build_campaign(db, int(args.runs))
        with Store.open(db) as store:
            cid = int(store.campaigns()[0]["id"])
            store.set_campaign_status(cid, "running")
            reps = int(store.conn.execute("SELECT max(repetition) FROM runs").fetchone()[0])

        def whole():
            with Store.open(str(db), create=False, verify=False) as store, store.snapshot():
                return summary.compute(store, cid)

        def growing():
            return background._summary(str(db), cid)

        print(f"campaign of {runs:,} runs, running; load {os.getloadavg()[0]:.2f}", flush=True)
        growing()  # the worker's first analysis of the campaign reads every run, as the whole one does
        rng, ratios_cpu, ratios_wall = random.Random(5), [], []
        for r in range(args.rounds):
            added = add_round(db, cid, reps + 1 + r, rng, _cells_of(r, args.cells_per_round))
            order = (("A", growing), ("B", whole)) if r % 2 == 0 else (("B", whole), ("A", growing))
            got = {name: timed(fn) for name, fn in order}
            (sa, wa, ca, la), (sb, wb, cb, lb) = got["A"], got["B"]
            if sa != sb:
                print(f"round {r + 1}: the two summaries differ", file=sys.stderr)
                return 1
            ratios_cpu.append(ca / cb)
            ratios_wall.append(wa / wb)
            print(
                f"round {r + 1} (+{added} runs, {sa.runs_stored:,} in all): A {wa:.3f} s ({ca:.3f} s CPU, "
                f"load {la:.2f})  B {wb:.3f} s ({cb:.3f} s CPU, load {lb:.2f})",
                flush=True,
            )
        # getattr: the same bench runs against a build from before the worker remembered answers (A/B)
        reused = sum(getattr(g, "answers_reused", 0) for g in background._growing.values())
        print(
            f"answers remembered by A: {reused:,}; "
            f"median A/B over {args.rounds} rounds: CPU {statistics.median(ratios_cpu):.3f}, "
            f"wall {statistics.median(ratios_wall):.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
