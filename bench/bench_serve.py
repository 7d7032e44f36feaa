"""How long `boardlab serve`'s pages take as a store grows: a small store (the reference) against a large one.

Both stores are written with the product's store API (`upsert_board`, `create_campaign`, `ensure_cells`,
`record_run`, `set_campaign_context`) into real SQLite files: BOARDS boards, each with campaigns of one plan
(4 cells, 2 conditions, RUNS_PER_CELL runs per cell: 400 runs a campaign, the size of a quick campaign), the
last campaign of each board still running. Only the run values are synthetic (lognormal, 2% CV).

Two `boardlab serve` processes (one per store) answer the same pages, requested alternately (A B, B A, ...):
boards, campaigns, one campaign's report, a comparison, a history of the plan on one board, running campaigns,
each page and its .json twin. Printed per page: the large store's first answer (nothing cached: the campaign
analyses are computed then), its median answer, the small store's median, and the median of the pairwise
ratios large / small. The goal: every page under 1 s on the large store.

`--runs N` sets the large store's size (default 10^6: about 10 minutes to build on a 2-core VM; 10^7 takes
ten times longer and about 8 GB of disk). `--json` prints one object.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

BOARDS = 10
RUNS_PER_CELL = 50
CELLS = (("bench.a", "baseline"), ("bench.b", "baseline"), ("bench.a", "stress"), ("bench.b", "stress"))
PLAN = 'name = "bench-serve"\n[runs]\nrepetitions = 50\n'
SMALL_RUNS = 20_000


def build(path: Path, runs: int, seed: int = 1) -> dict:
    """A store of about `runs` runs; returns what the pages will ask for."""
    from boardlab.model.campaign import Cell, ConditionSpec
    from boardlab.model.run import GateResult, MetricResult, RunResult
    from boardlab.store import Store

    rng = random.Random(seed)
    per_campaign = RUNS_PER_CELL * len(CELLS)
    campaigns_per_board = max(2, math.ceil(runs / per_campaign / BOARDS))
    specs = {"baseline": ConditionSpec("baseline", "baseline", {}, None),
             "stress": ConditionSpec("stress", "stressor", {}, "baseline")}  # fmt: skip
    cells = [Cell(w, (), cond, "seconds") for w, cond in CELLS]
    ids = {}
    with Store.open(path) as store:
        for b in range(BOARDS):
            board_id = store.upsert_board(f"fp-{b}", f"board-{b:02d}", {"model": f"bench board {b}"})
            for k in range(campaigns_per_board):
                cid = store.create_campaign(name="bench-serve", plan_hash="h", plan_source="bench.toml",
                                            plan_text=PLAN, board_id=board_id, boardlab_version="0.1.0",
                                            kern_version="0.1.0", root="/", environment={})  # fmt: skip
                store.set_campaign_context(cid, label=None, inventory={"kernel": {"release": f"6.{k}"}},
                                           runs_planned=per_campaign)  # fmt: skip
                cell_ids = store.ensure_cells(cid, cells, specs, {c.key: ("s", False) for c in cells})
                seq = 0
                for rep in range(1, RUNS_PER_CELL + 1):
                    for c in cells:
                        value = (1.2 if c.condition == "stress" else 1.0) * math.exp(rng.gauss(0, 0.02))
                        run = RunResult(
                            cell_key=c.key, repetition=rep, attempt=1, seq=seq, started_unix_s=1.7e9 + seq,
                            wall_ns=10**9, cpu=1, exit_code=0, ok=True, valid=True, invalid_reason=None,
                            value=value, metrics=(MetricResult("seconds", "s", False, (value,), value),),
                            iterations_ns=(int(value * 1e9),), warmup_iterations=1, warmup_capped=False,
                            rusage={}, gate=GateResult(0.0, False, "idle"), condition_state={}, monitor={},
                            aa_arm=("A1" if rep % 2 else "A2") if c.condition == "baseline" else None,
                        )  # fmt: skip
                        store.record_run(cid, cell_ids[c.key], run)
                        seq += 1
                last = k == campaigns_per_board - 1
                store.set_campaign_status(cid, "running" if last and b == 0 else "complete")
                ids.setdefault("campaigns", []).append(cid)
    total = BOARDS * campaigns_per_board * per_campaign
    return {"runs": total, "campaigns": ids["campaigns"]}


def pages(info: dict) -> list[str]:
    a, b = info["campaigns"][-3], info["campaigns"][-2]
    out = ["/boards", "/campaigns", f"/campaign/{b}", f"/compare?a=c:{a}&b=c:{b}",
           "/history?plan=bench-serve&board=board-01", "/running"]  # fmt: skip
    return out + [p.replace("?", ".json?", 1) if "?" in p else p + ".json" for p in out]


def timed(served, page: str) -> float:
    t0 = time.perf_counter()
    status, _, _ = served.get(page)
    elapsed = time.perf_counter() - t0
    if status != 200:
        raise RuntimeError(f"{page}: HTTP {status}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10**6, help="runs in the large store (default 10^6)")
    parser.add_argument("--rounds", type=int, default=5, help="A B / B A rounds per page (default 5)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from serve_helpers import Served

    with tempfile.TemporaryDirectory(prefix="boardlab-bench-serve-") as d:
        t0 = time.monotonic()
        small = build(Path(d) / "small.db", SMALL_RUNS)
        large = build(Path(d) / "large.db", args.runs, seed=2)
        built_s = time.monotonic() - t0
        size = (Path(d) / "large.db").stat().st_size
        results = {}
        with Served(Path(d) / "small.db") as s_small, Served(Path(d) / "large.db") as s_large:
            for p_small, p_large in zip(pages(small), pages(large), strict=True):
                first = timed(s_large, p_large)
                timed(s_small, p_small)
                t_large, t_small, ratios = [], [], []
                for r in range(args.rounds):
                    pair = (timed(s_large, p_large), timed(s_small, p_small)) if r % 2 == 0 else \
                        tuple(reversed((timed(s_small, p_small), timed(s_large, p_large))))  # fmt: skip
                    t_large.append(pair[0])
                    t_small.append(pair[1])
                    ratios.append(pair[0] / pair[1])
                name = p_large.split("?")[0].rstrip("0123456789")
                results[name] = {"first_large_s": first, "median_large_s": statistics.median(t_large),
                                 "median_small_s": statistics.median(t_small),
                                 "ratio_large_over_small": statistics.median(ratios)}  # fmt: skip
    doc = {"runs_large": large["runs"], "runs_small": small["runs"], "large_db_bytes": size,
           "build_s": built_s, "pages": results,
           "all_under_1s": all(max(r["first_large_s"], r["median_large_s"]) < 1.0 for r in results.values())}  # fmt: skip
    if args.json:
        print(json.dumps(doc, indent=1))
        return 0
    print(f"large store: {large['runs']} runs ({size / 1e6:.0f} MB), small store: {small['runs']} runs; "
          f"built in {built_s:.0f} s")  # fmt: skip
    print(f"{'page':28} {'first large':>12} {'median large':>13} {'median small':>13} {'large/small':>12}")
    for name, r in results.items():
        print(f"{name:28} {r['first_large_s']:11.3f}s {r['median_large_s']:12.3f}s {r['median_small_s']:12.3f}s "
              f"{r['ratio_large_over_small']:12.2f}")  # fmt: skip
    print("every page under 1 s on the large store: " + ("yes" if doc["all_under_1s"] else "NO"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
