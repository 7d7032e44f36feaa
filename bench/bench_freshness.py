"""What every view of a campaign's page asks first: has the campaign changed since its summary (its status and
its count of runs, `web.pages.version`)? Store schema 14 keeps each campaign's count of runs in its row; a
store before it counts the campaign's runs over an index, linear in them.

One campaign of `--runs` one-value runs is written through the store's bulk writer
(`Store.record_value_runs`, as bench_serve builds its stores), then copied and the copy taken back to
schema 13 (the count's column dropped, as a store written before it has none; a reader opens it as it is,
counting). `web.pages.version` is then timed on each, alternated (A = the schema-13 copy, B = this schema;
A B, B A, ...), each in a fresh reader as a page's request opens one, the load beside each round. Printed:
each side's median and the median of the pairwise B/A ratios. Both must give the same count (else exit 1).

    .venv/bin/python bench/bench_freshness.py --runs 1000000 --rounds 9
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

BATCH = 100_000  # runs a transaction while the store is built


def build(path: Path, runs: int) -> int:
    """A store holding one complete campaign of `runs` runs over 40 cells; its id."""
    from boardlab.model.campaign import Cell, ConditionSpec
    from boardlab.store import Store

    rng = random.Random(1)
    specs = {"baseline": ConditionSpec("baseline", "baseline", {}, None)}
    cells = [Cell(f"bench.w{p:02d}", (), "baseline", "seconds") for p in range(40)]
    with Store.open(path) as store:
        board_id = store.upsert_board("fp-0", "board-00", {"model": "bench board"})
        cid = store.create_campaign(name="bench-freshness", plan_hash="h", plan_source="bench.toml",
                                    plan_text='name = "bench-freshness"\n', board_id=board_id,
                                    boardlab_version="0.1.0", kern_version="0.1.0", root="/",
                                    environment={})  # fmt: skip
        ids = list(store.ensure_cells(cid, cells, specs, {c.key: ("s", False) for c in cells}).values())
        for start in range(0, runs, BATCH):
            batch = [
                (ids[k % len(ids)], k // len(ids) + 1, k, 1.7e9 + k, 10**9, rng.lognormvariate(0, 0.02), None)
                for k in range(start, min(runs, start + BATCH))
            ]
            store.record_value_runs(cid, ("seconds", "s", False), batch)
        store.set_campaign_status(cid, "complete")
    return cid


def as_schema_13(src: Path, dest: Path) -> None:
    shutil.copy(src, dest)
    conn = sqlite3.connect(dest)
    with conn:
        conn.execute("ALTER TABLE campaigns DROP COLUMN runs_stored")
        conn.execute("UPDATE meta SET value='13' WHERE key='schema_version'")
    conn.close()


def timed(path: Path, cid: int) -> tuple[float, tuple]:
    """Seconds of `web.pages.version` in a reader opened as a page's request opens one, and what it gave."""
    from boardlab.store import Store
    from boardlab.web.pages import version

    with Store.open(path, create=False, verify=False) as store:
        t0 = time.perf_counter()
        got = version(store, cid)
        return time.perf_counter() - t0, got[2:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10**6, help="runs in the campaign (default 10^6)")
    parser.add_argument("--rounds", type=int, default=9, help="A B / B A rounds (default 9)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-freshness-") as tmp:
        new, old = Path(tmp) / "new.db", Path(tmp) / "old.db"
        t0 = time.monotonic()
        cid = build(new, args.runs)
        as_schema_13(new, old)
        print(f"built {args.runs:,} runs in {time.monotonic() - t0:.1f} s", file=sys.stderr)
        timed(old, cid), timed(new, cid)  # both files' pages read once before the rounds
        a, b, ratios = [], [], []
        for k in range(args.rounds):
            order = ((old, a), (new, b)) if k % 2 == 0 else ((new, b), (old, a))
            got = {}
            for path, into in order:
                seconds, got[path] = timed(path, cid)
                into.append(seconds)
            if got[old] != got[new]:
                print(f"the two stores disagree: {got[old]} against {got[new]}", file=sys.stderr)
                return 1
            ratios.append(b[-1] / a[-1])
            print(f"round {k + 1}: A {a[-1] * 1e3:.3f} ms, B {b[-1] * 1e3:.3f} ms, "
                  f"load {os.getloadavg()[0]:.2f}", file=sys.stderr)  # fmt: skip
    out = {"schema": 1, "runs": args.runs, "a_counted_ms": statistics.median(a) * 1e3,
           "b_kept_ms": statistics.median(b) * 1e3, "median_ratio_b_a": statistics.median(ratios),
           "load_1min": os.getloadavg()[0]}  # fmt: skip
    if args.json:
        print(json.dumps(out))
    else:
        print(f"{args.runs:,} runs in one campaign: a page's freshness check {out['a_counted_ms']:.3f} ms "
              f"counting (schema 13), {out['b_kept_ms']:.3f} ms kept (schema 14); median B/A "
              f"{out['median_ratio_b_a']:.4f} (load {out['load_1min']:.2f})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
