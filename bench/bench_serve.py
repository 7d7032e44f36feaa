"""How long `boardlab serve`'s pages take on a store of ten million runs, against a small store (the
reference).

The shape is a lab's nightly job: BOARDS boards, each running one plan every night; a campaign is
RUNS_PER_CAMPAIGN runs (40 cells: 20 workload points under 2 conditions, 250 runs each, about 3 hours of 1 s
runs: a night). At 10^7 runs that is 1000 campaigns, 100 nights of 10 boards. Board board-01 has a planted 10%
slowdown of one cell in its fourth-latest campaign, so its history page has a step to mark; the latest
campaign of board-00 is still running, half done.

Both stores are real SQLite files written through the product's store API: boards, campaigns and cells as a
campaign writes them, the runs in bulk (`Store.record_value_runs`, one transaction per campaign: at the
runner's pace, 10^7 runs would take hours), each run with its monitor series packed as a campaign stores them
(`record_run`): 30 samples, SERIES_SOURCES sources at 10 Hz, and with its worker result (a kernel's shape,
bench_scale's), so that a run takes the bytes of a real campaign's (without series it was 280, and the store
a fifth of its real size; without results about 1,250). Only the run values, the results and the samples are
synthetic (lognormal values, 2% CV; samples from a few templates). The
summaries the pages read (`boardlab.summary`) are stored for the campaigns the pages show, as `boardlab run`
stores them when a campaign ends (computing all 1000 would take an hour here); the other campaigns have none,
as in a store written before summaries existed, and one such campaign's first view is printed separately.

Two `boardlab serve` processes (one per store) answer the same pages, requested alternately (A B, B A, ...):
boards, campaigns, one campaign's report, a comparison, a history of the plan on one board, running campaigns,
each page and its .json twin; then, on the large store, the page of a campaign without a stored summary and
that of the running campaign (their first answer, the page itself, a later view). Printed per page: the large
store's first answer (the server's cache empty), its median answer, the small store's median, and the median
of the pairwise ratios large / small. The target:
every page under 1 s on the large store, first view included.

`--runs N` sets the large store's size (default 10^7: 25 GB with the runs' series and results, built in
about 28 minutes on a 2-core VM; `boardlab serve` listens at once and checks every value beside the pages,
for minutes: the pages' first views are taken while it runs, and its end is waited for and printed). `--dir`
builds the stores there instead of a temporary directory (removed at the end either way). `--json` prints one
object.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scale import ITERATIONS, MONITOR, _result  # noqa: E402

BOARDS = 10
POINTS = 20  # workload points (bench.w00 .. bench.w19), each under a baseline and a stress condition
REPETITIONS = 250
RUNS_PER_CAMPAIGN = POINTS * 2 * REPETITIONS
PLAN = 'name = "bench-serve"\n[runs]\nrepetitions = 250\n'
SMALL_CAMPAIGNS_PER_BOARD = 2  # the reference: 2 x 10 x 10^4 = 2 x 10^5 runs
HISTORY_BOARD = "board-01"
# a run's monitor series: 30 samples at 10 Hz of the sources bench_scale's build records (a board's monitor
# records the same kinds), as `record_run` packs them
SERIES_SOURCES = MONITOR
SERIES_TEMPLATES = 64  # distinct series, taken in turn
SUMMARIZED = 10  # the history's campaigns (history.DEFAULT_LAST) of HISTORY_BOARD get summaries


def _runs(cell_ids: dict, rng: random.Random, slow: str | None, stop_at: int | None):
    """(cell_id, repetition, seq, started_unix_s, wall_ns, value, aa_arm) of one campaign's runs,
    interleaved."""
    seq = 0
    for rep in range(1, REPETITIONS + 1):
        for key, (cid, base, baseline) in cell_ids.items():
            if stop_at is not None and seq >= stop_at:
                return
            value = base * (1.1 if key == slow else 1.0) * math.exp(rng.gauss(0, 0.02))
            arm = ("A1" if rep % 2 else "A2") if baseline else None
            yield cid, rep, seq, 1.7e9 + seq, int(value * 1e9), value, arm
            seq += 1


def _results(runs: list[tuple], by_cell: dict):
    """Each run's worker result, as a campaign stores one per run (a kernel's shape: bench_scale's
    `_result`, about 1.2 KB): the large store's runs as wide as a lab's."""
    for cell_id, _rep, seq, _t, _wall, value, _arm in runs:
        yield _result(by_cell[cell_id], "s", False, [value] * ITERATIONS, seq)


def _series(rng: random.Random) -> list[tuple]:
    """SERIES_TEMPLATES runs' monitor samples ((source, t_ns, value), ...): 30 per run over the sources."""
    per = 30 // len(SERIES_SOURCES)
    bases = {
        "cpu0.busy_pct": 3.0,
        "cpu1.busy_pct": 99.0,
        "worker.cpu_pct": 99.5,
        "worker.rss_kib": 2048.0,
        "freq.policy0_khz": 1_200_000.0,
        "temp.zone0_mc": 52_000.0,
    }
    return [
        tuple((src, k * 100_000_000, bases[src] * (1 + rng.gauss(0, 0.01))) for src in SERIES_SOURCES
              for k in range(per))
        for _ in range(SERIES_TEMPLATES)
    ]  # fmt: skip


def build(path: Path, campaigns_per_board: int, seed: int = 1) -> dict:
    """The store; returns its campaign ids by board label, in time order."""
    from boardlab.campaign.facts import save as save_facts
    from boardlab.model.campaign import Cell, ConditionSpec
    from boardlab.model.facts import facts_document
    from boardlab.store import Store

    rng = random.Random(seed)
    specs = {"baseline": ConditionSpec("baseline", "baseline", {}, None),
             "stress": ConditionSpec("stress", "stressor", {}, "baseline")}  # fmt: skip
    cells = [Cell(f"bench.w{p:02d}", (), cond, "seconds") for p in range(POINTS) for cond in specs]
    bases = {
        c.key: (1.0 + 0.05 * int(c.workload[-2:])) * (1.2 if c.condition == "stress" else 1.0) for c in cells
    }
    slow_cell = cells[2].key  # bench.w01 at baseline
    series = _series(rng)
    ids: dict[str, list[int]] = {}
    with Store.open(path) as store:
        for k in range(campaigns_per_board):  # night by night, every board: the start times interleave
            for b in range(BOARDS):
                label = f"board-{b:02d}"
                board_id = store.upsert_board(f"fp-{b}", label, {"model": f"bench board {b}"})
                cid = store.create_campaign(name="bench-serve", plan_hash="h", plan_source="bench.toml",
                                            plan_text=PLAN, board_id=board_id, boardlab_version="0.1.0",
                                            kern_version="0.1.0", root="/", environment={})  # fmt: skip
                store.set_campaign_context(cid, label=f"night {k}",
                                           inventory={"kernel": {"release": f"6.1.{k}"}},
                                           runs_planned=RUNS_PER_CAMPAIGN)  # fmt: skip
                # what the runner stores with every campaign: its workloads' facts (these synthetic ones have
                # none), so serve's start has no older campaign to store them for
                save_facts(store, cid, facts_document((), energy_reason=None))
                cell_ids = store.ensure_cells(cid, cells, specs, {c.key: ("s", False) for c in cells})
                by_key = {c.key: (cell_ids[c.key], bases[c.key], c.condition == "baseline") for c in cells}
                by_cell = {cell_ids[c.key]: c for c in cells}
                last = k == campaigns_per_board - 1
                running = last and b == 0
                slow = slow_cell if label == HISTORY_BOARD and k >= campaigns_per_board - 4 else None
                runs = list(_runs(by_key, rng, slow, RUNS_PER_CAMPAIGN // 2 if running else None))
                store.record_value_runs(cid, ("seconds", "s", False), runs, series=itertools.cycle(series),
                                        results=_results(runs, by_cell))  # fmt: skip
                store.set_campaign_status(cid, "running" if running else "complete")
                ids.setdefault(label, []).append(cid)
    return ids


def summarize(path: Path, ids: dict) -> float:
    """Stores the summaries of the campaigns the pages show (as `boardlab run` does when a campaign ends)."""
    from boardlab import summary
    from boardlab.store import Store

    t0 = time.monotonic()
    with Store.open(path) as store:
        for cid in ids[HISTORY_BOARD][-SUMMARIZED:]:
            summary.keep(store, cid)
    return time.monotonic() - t0


def pages(ids: dict) -> list[str]:
    a, b = ids[HISTORY_BOARD][-2], ids[HISTORY_BOARD][-1]
    out = ["/boards", "/campaigns", f"/campaign/{b}", f"/compare?a=c:{a}&b=c:{b}",
           f"/history?plan=bench-serve&board={HISTORY_BOARD}", "/running"]  # fmt: skip
    return out + [p.replace("?", ".json?", 1) if "?" in p else p + ".json" for p in out]


def timed(served, page: str) -> float:
    """Seconds to the page's answer: the page, or (202) that its analysis is being computed in serve's
    worker."""
    t0 = time.perf_counter()
    status, _, _ = served.get(page, wait_computed=False)
    elapsed = time.perf_counter() - t0
    if status not in (200, 202):
        raise RuntimeError(f"{page}: HTTP {status}")
    return elapsed


def ready(served, page: str) -> float:
    """Seconds until the page itself is there (asked again as a browser asks on 202)."""
    t0 = time.perf_counter()
    status, _, _ = served.get(page, timeout=3600)
    if status != 200:
        raise RuntimeError(f"{page}: HTTP {status}")
    return time.perf_counter() - t0


def measure(s_small, s_large, small: dict, large: dict, rounds: int) -> dict:
    results = {}
    for p_small, p_large in zip(pages(small), pages(large), strict=True):
        first = timed(s_large, p_large)
        timed(s_small, p_small)
        t_large, t_small, ratios = [], [], []
        for r in range(rounds):
            if r % 2 == 0:
                pair = timed(s_large, p_large), timed(s_small, p_small)
            else:
                t_s = timed(s_small, p_small)
                pair = timed(s_large, p_large), t_s
            t_large.append(pair[0])
            t_small.append(pair[1])
            ratios.append(pair[0] / pair[1])
        name = p_large.split("?")[0].rstrip("0123456789")
        results[name] = {"first_large_s": first, "median_large_s": statistics.median(t_large),
                         "median_small_s": statistics.median(t_small),
                         "ratio_large_over_small": statistics.median(ratios)}  # fmt: skip
    return results


def three_views(served, page: str) -> dict:
    """A page whose analysis serve's worker computes: its first answer (at once: 202), the time until the
    page itself is there, and a view after that."""
    return {"first_s": timed(served, page), "ready_s": ready(served, page), "again_s": timed(served, page)}


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.parent.glob(path.name + "*"))


def wait_checked(served, timeout_s: float = 3600.0) -> dict:
    """The large server's store check once it has ended (/check.json), or as it stands at the timeout."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = served.json("/check.json")["store_check"]
        if got["state"] != "checking" or time.monotonic() > deadline:
            return got
        time.sleep(1.0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10**7, help="runs in the large store (default 10^7)")
    parser.add_argument("--rounds", type=int, default=5, help="A B / B A rounds per page (default 5)")
    parser.add_argument("--dir", help="build the stores in this directory (default: a temporary one)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from serve_helpers import Served

    if args.dir is not None and not Path(args.dir).is_dir():
        parser.error(f"--dir {args.dir}: not a directory (make it, or leave --dir out for a temporary one)")
    d = Path(tempfile.mkdtemp(prefix="boardlab-bench-serve-", dir=args.dir))
    try:
        per_board = max(2, math.ceil(args.runs / RUNS_PER_CAMPAIGN / BOARDS))
        t0 = time.monotonic()
        small = build(d / "small.db", SMALL_CAMPAIGNS_PER_BOARD)
        large = build(d / "large.db", per_board, seed=2)
        built_s = time.monotonic() - t0
        print(f"stores built in {built_s:.0f} s", file=sys.stderr, flush=True)
        summary_s = summarize(d / "small.db", small) + summarize(d / "large.db", large)
        size = _size(d / "large.db")
        print(f"summaries stored in {summary_s:.0f} s", file=sys.stderr, flush=True)
        no_summary = large["board-02"][-2]  # a campaign without a stored summary: an old store's first view
        with Served(d / "small.db") as s_small, Served(d / "large.db", start_timeout_s=3600) as s_large:
            start_s, start_load = s_large.started_s, os.getloadavg()[0]
            print(
                f"servers started (the large one in {start_s:.2f} s, load {start_load:.2f})",
                file=sys.stderr,
                flush=True,
            )
            during = s_large.json("/check.json")["store_check"]["state"]  # the pages' first views beside it
            results = measure(s_small, s_large, small, large, args.rounds)
            unsummarized = three_views(s_large, f"/campaign/{no_summary}")
            running = three_views(s_large, f"/campaign/{large['board-00'][-1]}")
            check = wait_checked(s_large)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    n_large = sum(len(v) for v in large.values()) * RUNS_PER_CAMPAIGN - RUNS_PER_CAMPAIGN // 2
    n_small = sum(len(v) for v in small.values()) * RUNS_PER_CAMPAIGN - RUNS_PER_CAMPAIGN // 2
    doc = {"runs_large": n_large, "runs_small": n_small,
           "campaigns_large": sum(len(v) for v in large.values()), "large_db_bytes": size,
           "bytes_per_run": size / n_large, "build_s": built_s, "summaries_s": summary_s, "pages": results,
           "campaign_without_summary": unsummarized, "campaign_running": running,
           "serve_start_s": start_s, "serve_start_load": start_load, "check_at_first_views": during,
           "store_check": check,
           "all_under_1s": all(max(r["first_large_s"], r["median_large_s"]) < 1.0 for r in results.values())
                           and max(unsummarized["first_s"], running["first_s"]) < 1.0}  # fmt: skip
    if args.json:
        print(json.dumps(doc, indent=1))
        return 0
    print(f"large store: {n_large} runs in {doc['campaigns_large']} campaigns ({size / 1e9:.2f} GB on disk, "
          f"{size / n_large:,.0f} bytes per run); "
          f"small store (the reference): {n_small} runs; built in {built_s:.0f} s, "
          f"the summaries of the campaigns the pages show stored in {summary_s:.0f} s")  # fmt: skip
    print(f"{'page':28} {'first large':>12} {'median large':>13} {'median small':>13} {'large/small':>12}")
    for name, r in results.items():
        print(
            f"{name:28} {r['first_large_s']:11.3f}s {r['median_large_s']:12.3f}s "
            f"{r['median_small_s']:12.3f}s {r['ratio_large_over_small']:12.2f}"
        )
    for what, v in (
        ("a campaign without a stored summary (a store from before summaries)", unsummarized),
        (f"the running campaign ({RUNS_PER_CAMPAIGN // 2} runs of {RUNS_PER_CAMPAIGN})", running),
    ):
        print(
            f"{what}: first answer {v['first_s']:.2f} s (202: being computed in serve's worker), the page "
            f"itself {v['ready_s']:.2f} s later, then {v['again_s']:.3f} s (kept by the server)"
        )
    print(
        f"boardlab serve started in {start_s:.2f} s on the large store (load {start_load:.2f}); its check of "
        f"every value, beside the pages: {check['state']} after {check['took_s'] or 0:.0f} s (the pages' "
        f"first views were taken while it was {during})"
    )
    print(
        "every page under 1 s on the large store, first view included: "
        + ("yes" if doc["all_under_1s"] else "NO")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
