"""boardlab at lab scale: time, peak memory and store size of reports, exports and ingest at 10^4..10^6 runs.

For each size N (`--sizes`, default 1e4,1e5,1e6) it builds, in a scratch directory:
- one board's results file holding one campaign of N runs (34 cells: scimark, crc32 and 14 memory-latency
  cells under three conditions, as the tests' synthetic campaign; 30 monitor samples per run), written with
  the store's own `record_run`, many runs per transaction (the bench's build, so that 10^6 runs take minutes,
  not hours; what is stored is exactly what a campaign stores);
- ten board files of N/10 runs each: the same plan on ten boards (copies of one file given ten board
  fingerprints, labels and campaign uids).
Then each command below runs as its own process (`python -m boardlab ...`), its wall time and its peak RSS
(ru_maxrss from wait4 of that process) measured, median of `--repeat` runs (default 3):
- report md and report html of the N-run campaign; export csv and export parquet of it;
- ingest of the ten files into a new SQLite store (runs/s), re-ingest of the same files (nothing new: s per
  10^5 runs), and the cross-board report (md) of that store: ten boards of N/10 runs;
- the same ingest, re-ingest and cross-board report into one PostgreSQL store (a private server started as
  the tests start theirs, tests/pg.py) at the largest size <= `--pg-max` (default 1e5), or "skipped: reason".
Printed per size: seconds, peak MB and the store's bytes per run; between consecutive sizes, the growth
exponent log(t2/t1)/log(n2/n1) of each command's time (1.0: linear). Each result is checked against its
target (issue "From a board's 100k-run campaign to a lab's ten million runs"):
- report md of 10^5 runs <= 3 s, report html of 10^5 runs <= 5 s;
- peak RSS of the reports and exports <= 150 MB at 10^6 runs;
- ingest >= 20,000 runs/s into SQLite, >= 10,000 runs/s into PostgreSQL;
- re-ingest of unchanged files <= 1 s per 10^5 runs;
- growth exponents <= 1.05 from 10^5 to 10^6.
A target whose size was not measured is listed as not checked. Exit 1 when a measured target is missed (each
is named), 0 otherwise. `--json` prints one object. `--keep DIR` builds there and keeps the stores.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from boardlab.model.campaign import Cell, ConditionSpec
from boardlab.model.run import GateResult, MetricResult, RunResult
from boardlab.store import Store

BOARDS = 10  # board files ingested per size, N/10 runs each
TXN_RUNS = 5000  # runs per transaction while building
MB = 1024 * 1024

# workload, params, metric, unit, higher_is_better, baseline value; as tests/helpers.py's synthetic campaign
WORKLOADS = [
    ("scimark.fft", {"size": "small"}, "mflops", "MFLOPS", True, 300.0),
    ("crc32", {}, "ns_per_byte", "ns", False, 1.6),
]
LATENCY = {
    "random": [1.5, 1.6, 5.0, 9.0, 30.0, 95.0, 110.0],
    "sequential": [1.4, 1.4, 1.6, 2.0, 2.6, 3.5, 3.8],
}
SIZES_BYTES = [4096, 16384, 65536, 262144, 1048576, 4194304, 16777216]
CONDITIONS = {"baseline": 1.0, "cpu-stress": 1.25, "memcpy": 0.9}  # condition -> cost factor
MONITOR = (
    "cpu0.busy_pct",
    "cpu1.busy_pct",
    "worker.cpu_pct",
    "worker.rss_kib",
    "freq.policy0_khz",
    "temp.zone0_mc",
)
SAMPLES = 5  # per monitor source and run: 30 monitor samples per run


def _cells() -> list[tuple[Cell, str, bool, float]]:
    cells = []
    for cond in CONDITIONS:
        for w, params, metric, unit, hib, base in WORKLOADS:
            cells.append((Cell(w, tuple(sorted(params.items())), cond, metric), unit, hib, base))
        if cond != "memcpy":
            for pattern, values in LATENCY.items():
                for size, ns in zip(SIZES_BYTES, values, strict=True):
                    params = (("pattern", pattern), ("size_bytes", size))
                    cells.append((Cell("mem.latency", params, cond, "ns_per_access"), "ns", False, ns))
    return cells


class _OneTransaction:
    """The store's connection with record_run's own BEGIN/COMMIT passed over, so that the builder commits
    TXN_RUNS runs at a time: a campaign commits each run, which at 10^6 runs costs the bench an hour."""

    def __init__(self, conn):
        self._conn = conn

    def execute(self, sql, params=()):
        if sql in ("BEGIN IMMEDIATE", "COMMIT"):
            return None
        return self._conn.execute(sql, params)

    def executemany(self, sql, rows):
        return self._conn.executemany(sql, rows)

    @property
    def in_transaction(self) -> bool:
        return self._conn.in_transaction


def _run(cell: Cell, unit: str, hib: bool, value: float, rep: int, seq: int, rng: random.Random) -> RunResult:
    series = tuple(
        (src, k * 100_000_000, base + rng.random())
        for k in range(SAMPLES)
        for src, base in zip(MONITOR, (3.0, 99.0, 99.5, 2048.0, 1_200_000.0, 45_000.0), strict=True)
    )
    return RunResult(
        cell_key=cell.key, repetition=rep, attempt=1, seq=seq, started_unix_s=1_700_000_000.0 + seq,
        wall_ns=500_000_000, cpu=1, exit_code=0, ok=True, valid=True, invalid_reason=None, value=value,
        metrics=(MetricResult(cell.metric, unit, hib, (value,), value),), iterations_ns=(1_000_000,),
        warmup_iterations=3, warmup_capped=False, rusage={"utime_us": 1}, gate=GateResult(0.0, False, "idle"),
        condition_state={}, monitor={"freq.policy0_khz_mean": 1_200_000.0, "throttled": False}, series=series,
    )  # fmt: skip


def build_campaign(path: Path, runs: int, *, board: str = "board-0", seed: int = 1) -> int:
    """One campaign of at least `runs` runs (whole repetitions of every cell) in a new file; returns the runs."""
    rng = random.Random(seed)
    cells = _cells()
    reps = max(1, math.ceil(runs / len(cells)))
    specs = {c: ConditionSpec(c, "baseline" if c == "baseline" else "stressor", {}, None if c == "baseline"
                              else "baseline") for c in CONDITIONS}  # fmt: skip
    with Store.open(path) as store:
        board_id = store.upsert_board(f"fp-{board}", board, {"model": "bench board", "machine": "armv7l"})
        cid = store.create_campaign(
            name="scale", plan_hash="h-scale", plan_source="scale.toml", plan_text='name = "scale"\n',
            board_id=board_id, boardlab_version="bench", kern_version=None, root="/",
            environment={"checks": [], "capabilities": {}},
        )  # fmt: skip
        ids = store.ensure_cells(cid, [c for c, *_ in cells], specs, {c.key: (u, h) for c, u, h, _ in cells})
        conn, store.conn = store.conn, _OneTransaction(store.conn)  # type: ignore[assignment]
        conn.execute("PRAGMA cache_size=-262144")  # 256 MiB: the indexes being built stay in memory
        try:
            seq = 0
            conn.execute("BEGIN IMMEDIATE")
            for rep in range(1, reps + 1):
                for cell, unit, hib, base in cells:
                    cost = CONDITIONS[cell.condition]
                    value = base * (1 / cost if hib else cost) * (1 + rng.gauss(0, 0.01))
                    store.record_run(cid, ids[cell.key], _run(cell, unit, hib, value, rep, seq, rng))
                    seq += 1
                    if seq % TXN_RUNS == 0:
                        conn.execute("COMMIT")
                        conn.execute("BEGIN IMMEDIATE")
            conn.execute("COMMIT")
        finally:
            store.conn = conn  # type: ignore[assignment]
        store.set_campaign_status(cid, "complete")
    return reps * len(cells)


def board_files(one: Path, out: Path) -> list[Path]:
    """BOARDS copies of `one`, each another board (fingerprint, label) with its own campaign uid."""
    files = []
    for b in range(BOARDS):
        dst = out / f"board-{b}.db"
        shutil.copyfile(one, dst)
        conn = sqlite3.connect(dst)
        with conn:
            conn.execute("UPDATE boards SET fingerprint=?, label=?", (f"fp-board-{b}", f"board-{b}"))
            conn.execute("UPDATE campaigns SET uid=?", (uuid.uuid4().hex,))
        conn.close()
        files.append(dst)
    return files


# ---- measuring ----


@dataclass(frozen=True)
class Measure:
    seconds: float  # wall time
    cpu_s: float  # the process's own user + system time: what a loaded machine's wall time hides
    peak_mb: float


def measure(args: list[str], repeat: int, *, before=None) -> Measure:
    """Median wall time and largest peak RSS of `python -m boardlab ARGS`, each run its own process; `before`
    runs (unmeasured) before each, to reset what the command changes."""
    times, cpus, peaks = [], [], []
    for _ in range(repeat):
        if before is not None:
            before()
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "boardlab", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        err = proc.stderr.read() if proc.stderr else b""
        _, status, usage = os.wait4(proc.pid, 0)
        times.append(time.perf_counter() - t0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise RuntimeError(
                f"boardlab {' '.join(args)} failed ({proc.returncode}): {err.decode()[-2000:]}"
            )
        cpus.append(usage.ru_utime + usage.ru_stime)
        peaks.append(usage.ru_maxrss / 1024)  # KiB on Linux
    return Measure(statistics.median(times), statistics.median(cpus), max(peaks))


def _size(path: Path) -> int:
    return sum(os.path.getsize(p) for p in (str(path), f"{path}-wal") if os.path.exists(p))


def _remove(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def measure_size(n: int, work: Path, repeat: int) -> dict:
    """Every command at one size: {command: {"s": seconds, "peak_mb": MB, ...}} and the stores' sizes."""
    work.mkdir(parents=True, exist_ok=True)
    one, small = work / "campaign.db", work / "board.db"
    t0 = time.perf_counter()
    # built in a child process: a child's ru_maxrss counts the memory of the process it was forked from
    # until its exec, so this process stays small for the measured commands' peak RSS to be theirs
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        runs = pool.apply(build_campaign, (one, n))
        pool.apply(build_campaign, (small, n // BOARDS), {"seed": 2})
    files = [str(f) for f in board_files(small, work)]
    board_runs = BOARDS * _runs_of(small)
    built_s = time.perf_counter() - t0
    out: dict = {"runs": runs, "board_runs": board_runs, "build_s": built_s,
                 "bytes_per_run": _size(one) / runs}  # fmt: skip
    db = str(one)
    for name, args in (
        ("report md", ["report", "--db", db, "--format", "md", "-o", str(work / "r.md")]),
        ("report html", ["report", "--db", db, "--format", "html", "-o", str(work / "r.html")]),
        ("export csv", ["export", "--db", db, "--format", "csv", "-o", str(work / "e.csv")]),
        ("export parquet", ["export", "--db", db, "--format", "parquet", "-o", str(work / "e.parquet")]),
    ):
        out[name] = _record(measure(args, repeat), runs)
    lab = work / "lab.db"
    out.update(ingest_rounds(files, str(lab), board_runs, repeat, reset=lambda: _remove(lab)))
    out["lab_bytes_per_run"] = _size(lab) / board_runs
    return out


def ingest_rounds(files: list[str], db: str, runs: int, repeat: int, *, reset, prefix: str = "") -> dict:
    """Ingest of the board files into a new store, re-ingest (nothing new), the cross-board report."""
    out = {}
    ingest = measure(["ingest", *files, "--db", db], repeat, before=reset)
    out[prefix + "ingest"] = {**_record(ingest, runs), "runs_per_s": runs / ingest.seconds}
    return {**out, **_reingest_and_across(files, db, runs, repeat, prefix)}


def _reingest_and_across(files: list[str], db: str, runs: int, repeat: int, prefix: str) -> dict:
    """Re-ingest of the same files (nothing new) into the store `db`, then its cross-board report."""
    again = measure(["ingest", *files, "--db", db], repeat)
    across = ["report", "--db", db, "--across-boards", "--board", "board-0", "--format", "md", "-o", "-"]
    return {
        prefix + "re-ingest": {**_record(again, runs), "s_per_1e5_runs": again.seconds * 1e5 / runs},
        prefix + "cross-board report": _record(measure(across, repeat), runs),
    }


def _record(m: Measure, runs: int) -> dict:
    return {"s": m.seconds, "cpu_s": m.cpu_s, "peak_mb": m.peak_mb, "runs": runs}


def _runs_of(path: Path) -> int:
    with Store.open(path, create=False) as s:
        return s.run_progress(s.campaigns()[0]["id"])[0]


def measure_pg(n: int, work: Path, repeat: int) -> dict:
    """Ingest, re-ingest and the cross-board report with a PostgreSQL store, or {"skipped": reason}."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    try:
        import psycopg  # noqa: F401
        import pytest
        from pg import PgServer, pg_bindir
    except ImportError as exc:
        return {"skipped": f"{exc.name} not installed (pip install 'boardlab[fleet]' pytest)"}
    bindir = pg_bindir()
    if bindir is None:
        return {"skipped": "PostgreSQL server binaries not found (apt-get install postgresql)"}
    try:
        server = PgServer(bindir)
    except pytest.skip.Exception as exc:
        return {"skipped": str(exc)}
    try:
        server.start()
    except RuntimeError as exc:
        server.stop()
        return {"skipped": f"the server did not start: {exc}"}
    try:
        files = sorted(str(p) for p in work.glob("board-*.db"))
        runs = BOARDS * _runs_of(Path(files[0]))
        return {"runs": runs, **_pg_ingest(files, server, runs, repeat)}
    finally:
        server.stop()


def _pg_ingest(files: list[str], server, runs: int, repeat: int) -> dict:
    urls, ms = [], []
    for _ in range(repeat):  # each ingest into a new empty database
        urls.append(server.new_database())
        ms.append(measure(["ingest", *files, "--db", urls[-1]], 1))
    ingest = Measure(
        statistics.median(m.seconds for m in ms),
        statistics.median(m.cpu_s for m in ms),
        max(m.peak_mb for m in ms),
    )
    out = {"pg ingest": {**_record(ingest, runs), "runs_per_s": runs / ingest.seconds}}
    out.update(_reingest_and_across(files, urls[-1], runs, repeat, "pg "))
    return out


# ---- targets ----

COMMANDS = ("report md", "report html", "export csv", "export parquet", "ingest", "re-ingest",
            "cross-board report")  # fmt: skip


def growth(results: dict[int, dict], field: str = "s") -> dict[str, dict[str, float]]:
    """{"n1->n2": {command: log(t2/t1)/log(n2/n1)}} between consecutive sizes (runs of each command), of
    the wall time (`field` "s") or the CPU time ("cpu_s")."""
    out = {}
    sizes = sorted(results)
    for a, b in zip(sizes, sizes[1:], strict=False):
        ra, rb = results[a], results[b]
        out[f"{a:.0e}->{b:.0e}"] = {
            c: math.log(max(rb[c][field], 1e-3) / max(ra[c][field], 1e-3))
            / math.log(rb[c]["runs"] / ra[c]["runs"])
            for c in COMMANDS
        }
    return out


def check(results: dict[int, dict], pg: dict, exps: dict) -> tuple[list[str], list[str]]:
    """(missed targets, targets not checked for want of a size)."""
    missed, unchecked = [], []

    def at(n: int, what: str):
        if n not in results:
            unchecked.append(f"{what}: 10^{round(math.log10(n))} runs not measured")
            return None
        return results[n]

    r5 = at(100_000, "report md <= 3 s, html <= 5 s at 10^5 runs")
    if r5:
        for cmd, limit in (("report md", 3.0), ("report html", 5.0)):
            if r5[cmd]["s"] > limit:
                missed.append(f"{cmd} of 10^5 runs: {r5[cmd]['s']:.2f} s > {limit:.0f} s")
    r6 = at(1_000_000, "peak RSS of reports and exports <= 150 MB at 10^6 runs")
    if r6:
        for cmd in COMMANDS[:4]:
            if r6[cmd]["peak_mb"] > 150:
                missed.append(f"{cmd} of 10^6 runs: peak RSS {r6[cmd]['peak_mb']:.0f} MB > 150 MB")
    _check_ingest(results, pg, missed, unchecked)
    if "1e+05->1e+06" in exps:
        for cmd, e in exps["1e+05->1e+06"].items():
            if e > 1.05:
                missed.append(f"growth exponent of {cmd} from 10^5 to 10^6: {e:.2f} > 1.05")
    else:
        unchecked.append("growth exponents <= 1.05 from 10^5 to 10^6: both sizes not measured")
    return missed, unchecked


def _check_ingest(results: dict[int, dict], pg: dict, missed: list[str], unchecked: list[str]) -> None:
    """The ingest and re-ingest targets, SQLite per size and PostgreSQL, from 10^5 runs on."""
    for n, r in sorted(results.items()):
        if r["board_runs"] < 100_000:  # the command's fixed start-up dominates a smaller ingest
            unchecked.append(f"ingest and re-ingest targets at {n:.0e}: checked from 10^5 runs on")
            continue
        if r["ingest"]["runs_per_s"] < 20_000:
            missed.append(f"ingest into SQLite at {n:.0e}: {r['ingest']['runs_per_s']:.0f} runs/s < 20000")
        if r["re-ingest"]["s_per_1e5_runs"] > 1.0:
            missed.append(
                f"re-ingest at {n:.0e}: {r['re-ingest']['s_per_1e5_runs']:.2f} s per 10^5 runs > 1 s"
            )
    if "skipped" in pg:
        unchecked.append(f"ingest into PostgreSQL >= 10000 runs/s: {pg['skipped']}")
    elif pg["runs"] < 100_000:
        unchecked.append("ingest into PostgreSQL: checked from 10^5 runs on (--pg-max)")
    else:
        if pg["pg ingest"]["runs_per_s"] < 10_000:
            missed.append(f"ingest into PostgreSQL: {pg['pg ingest']['runs_per_s']:.0f} runs/s < 10000")
        if pg["pg re-ingest"]["s_per_1e5_runs"] > 1.0:
            missed.append(
                f"re-ingest into PostgreSQL: {pg['pg re-ingest']['s_per_1e5_runs']:.2f} s per 10^5 runs"
            )


def print_table(results: dict[int, dict], pg: dict, exps: dict, cpu_exps: dict) -> None:
    print(
        f"{'command':<22}" + "".join(f"{f'{n:.0e} runs: wall, CPU, peak RSS':>40}" for n in sorted(results))
    )
    for cmd in COMMANDS:
        cells = []
        for n in sorted(results):
            r = results[n][cmd]
            extra = (f" {r['runs_per_s']:,.0f}/s" if "runs_per_s" in r else
                     f" {r['s_per_1e5_runs']:.2f}s/1e5" if "s_per_1e5_runs" in r else "")  # fmt: skip
            cells.append(f"{r['s']:.2f}s {r['cpu_s']:.2f}s {r['peak_mb']:.0f}MB{extra}")
        print(f"{cmd:<22}" + "".join(f"{c:>40}" for c in cells))
    print(
        f"{'bytes per run':<22}" + "".join(f"{results[n]['bytes_per_run']:>40,.0f}" for n in sorted(results))
    )
    print(
        f"{'lab store bytes/run':<22}"
        + "".join(f"{results[n]['lab_bytes_per_run']:>40,.0f}" for n in sorted(results))
    )
    print(f"{'(build s)':<22}" + "".join(f"{results[n]['build_s']:>40.1f}" for n in sorted(results)))
    for span, by_cmd in exps.items():
        print(f"growth exponent {span} (wall, CPU):")
        for c, e in by_cmd.items():
            print(f"  {c:<20} {e:5.2f} {cpu_exps[span][c]:5.2f}")
    if "skipped" in pg:
        print(f"PostgreSQL: skipped: {pg['skipped']}")
    else:
        print(f"PostgreSQL store, {pg['runs']} runs from {BOARDS} board files:")
        for cmd in ("pg ingest", "pg re-ingest", "pg cross-board report"):
            r = pg[cmd]
            extra = (f", {r['runs_per_s']:,.0f} runs/s" if "runs_per_s" in r else
                     f", {r['s_per_1e5_runs']:.2f} s per 10^5 runs" if "s_per_1e5_runs" in r else "")  # fmt: skip
            print(
                f"  {cmd[3:]:<20} {r['s']:.2f} s (CPU {r['cpu_s']:.2f} s), peak {r['peak_mb']:.0f} MB{extra}"
            )


def _sizes(text: str) -> list[int]:
    try:
        sizes = sorted({int(float(s)) for s in text.split(",") if s.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"--sizes {text!r}: give run counts such as 1e4,1e5") from None
    if not sizes or sizes[0] < 10 * len(_cells()):
        raise argparse.ArgumentTypeError(f"--sizes {text!r}: each size at least {10 * len(_cells())} runs")
    return sizes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--sizes", type=_sizes, default=[10_000, 100_000, 1_000_000], help="default 1e4,1e5,1e6")
    # three by default: one sample of a command flipped the ingest targets from one run of the bench to the next
    ap.add_argument("--repeat", type=int, default=3, help="runs of each command, the median kept (default 3)")
    ap.add_argument("--pg-max", type=float, default=1e5, help="PostgreSQL at the largest size <= this")
    ap.add_argument("--keep", type=Path, help="build the stores in this directory and keep them")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="boardlab-scale-"))
    load_before = os.getloadavg()
    results: dict[int, dict] = {}
    pg: dict = {"skipped": f"no size <= --pg-max {args.pg_max:.0e}"}
    try:
        for n in args.sizes:
            print(f"== {n:.0e} runs", file=sys.stderr, flush=True)
            results[n] = measure_size(n, root / f"n{n}", args.repeat)
        pg_sizes = [n for n in args.sizes if n <= args.pg_max]
        if pg_sizes:
            print(f"== PostgreSQL at {pg_sizes[-1]:.0e} runs", file=sys.stderr, flush=True)
            pg = measure_pg(pg_sizes[-1], root / f"n{pg_sizes[-1]}", args.repeat)
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    load = {"before": load_before, "after": os.getloadavg(), "cpus": os.cpu_count()}
    exps, cpu_exps = growth(results), growth(results, "cpu_s")
    missed, unchecked = check(results, pg, exps)
    if args.json:
        print(json.dumps({"load_average": load, "sizes": results, "postgresql": pg, "growth": exps, "growth_cpu": cpu_exps,
                          "missed": missed, "not_checked": unchecked}, indent=1))  # fmt: skip
    else:
        print(
            f"load average (1 min) {load['before'][0]:.1f} before, {load['after'][0]:.1f} after, on "
            f"{load['cpus']} CPUs: wall times grow with it, CPU times much less"
        )
        print_table(results, pg, exps, cpu_exps)
        for line in unchecked:
            print(f"not checked: {line}")
        print("targets: " + ("all met" if not missed else f"{len(missed)} missed"))
        for line in missed:
            print(f"MISSED: {line}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
