"""boardlab at lab scale: time, CPU, peak memory and store size of reports, exports and ingest at 10^4..10^6
runs.

For each size N (`--sizes`, default 1e4,1e5,1e6) it builds, in a scratch directory:
- one board's results file holding one campaign of N runs (34 cells: scimark, crc32 and 14 memory-latency
  cells under three conditions, as the tests' synthetic campaign; 30 monitor samples and a worker result of
  a kernel's shape, 1.2 KB, per run), written with
  the store's own `record_run`, many runs per transaction (the bench's build, so that 10^6 runs take minutes,
  not hours; what is stored is exactly what a campaign stores);
- ten board files of N/10 runs each: the same plan on ten boards (copies of one file given ten board
  fingerprints, labels and campaign uids).
And once, a full lab store of `--full-runs` runs (default: the largest size), ingested by `boardlab ingest`
(summaries and history steps included), so it holds earlier campaigns of the same plan on the same ten boards:
by default one campaign of `--full-runs`/10 runs per board; with `--full-campaign-runs M`, night after night
of ten campaigns of M runs (one ingest per night), as a lab's store of nightly campaigns does (10^7 runs of
10^4-run campaigns: 100 nights). A new campaign's history step reads its board's latest campaign, so the
two shapes differ in what a step costs (against 10^4 or 10^6 runs), not only in the store's size.
Then each command below runs as its own process (`python -m boardlab ...`), its wall time, its CPU time and
its peak RSS measured from wait4 of that process. wait4's usage counts the process and every descendant it
waited for: the summaries' worker process of an ingest (boardlab.summary `KeepBehind`, waited for at its end)
is in the CPU time; into PostgreSQL the server's processes' CPU (/proc: the postmaster's own and its exited
and live children's) is added, and shown apart:
- report md and report html of the N-run campaign; export csv, json and parquet of it;
- ingest of the ten files into a new SQLite store (runs/s), and into a copy of the full store (runs/s: what a
  lab's ingest costs; each new campaign's history step against its board's previous campaign is computed
  there; the writer's open checks the store's header and every table but the runs' when it is over 1 GiB);
  re-ingest of the same files into the first (nothing new: seconds per file, a near-constant per file
  whatever its runs); the cross-board report (md) of that store: ten boards of N/10 runs;
- into one PostgreSQL store (a private server started as the tests start theirs, tests/pg.py) at the largest
  size <= `--pg-max` (default 1e5): the ingest as the cluster's superuser and as an ordinary role that owns
  its database (what a lab gives boardlab: no superuser, no SET ON PARAMETER grant), and as an owner granted
  SET ON PARAMETER session_replication_role (which lets the ingest turn the store's reference checks off), in
  turn, each into a new database; then as the owner into a copy of its store already holding `--pg-full-runs`
  runs (default 1e6: a campaign of a tenth of them per board, same plan, same boards; filled once by
  `boardlab ingest`, a new copy per round); the re-ingest and the cross-board report; or "skipped: reason".
Sizes are measured alternately, command by command (n1, n2, n2, n1, ...: `--repeat` rounds, default 3), so the
two figures of each pair come from the same minutes of the machine's load; printed per size: the median
seconds, CPU seconds, largest peak MB and the store's bytes per run. Between consecutive sizes, each command's
growth exponent log(r)/log(n2/n1), r the median of the paired ratios t2/t1 (1.0: linear), of the wall and of
the CPU time, with each pair and the 1-minute load average as each was taken. The machine's load is printed
with every figure: on a loaded machine wall times grow with it and CPU times much less; none of these are
quiet-machine figures unless the load says so. Each result is checked against its target (issue "From a
board's 100k-run campaign to a lab's ten million runs"):
- report md of 10^5 runs <= 3 s, report html of 10^5 runs <= 5 s;
- peak RSS of the reports and exports <= 150 MB at 10^6 runs;
- ingest >= 20,000 runs/s into SQLite (a new store and the full one), >= 10,000 runs/s into PostgreSQL (as
  the superuser, as the database's owner and as the granted owner into a new store, and as the owner into
  the full one);
- re-ingest of unchanged files <= 1 s per 10^5 runs (of the ten files' runs);
- growth exponents (wall) <= 1.05 from 10^5 to 10^6.
A target whose size was not measured is listed as not checked. Exit 1 when a measured target is missed (each
is named), 0 otherwise. `--json` prints one object. `--keep DIR` builds there and keeps the stores; a full
store it kept of the same `--full-runs` and `--full-campaign-runs` is used again.
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
ITERATIONS = 10  # in each run's worker result: boardlab-kern's default measured iterations


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


def _result(cell: Cell, unit: str, hib: bool, values: list[float], seq: int) -> str:
    """The run's worker result as boardlab-kern prints it (a memory-latency kernel's shape, 1.2 KB): a
    campaign stores one per run, and what reads or copies a run's row reads it too (the store once held
    none, and the series study's search of every result for a "series" went unmeasured)."""
    metric = {
        "unit": unit, "higher_is_better": hib, "values": values, "median": statistics.median(values),
        "min": min(values), "max": max(values), "p90": max(values), "p99": max(values),
    }  # fmt: skip
    doc = {
        "schema": 2, "tool": "boardlab-kern", "version": "0.1.0", "workload": cell.workload,
        "family": "bench", "params": dict(cell.params), "ok": True, "supported": True, "reason": None,
        "verified": True, "errors": [],
        "timer": {"clock": "CLOCK_MONOTONIC_RAW", "resolution_ns": 1, "measured_resolution_ns": 20,
                  "overhead_ns": 31.92017},
        "iteration_target_ns": 1000000, "reps_per_iteration": 100, "calibration_ns": 2652538,
        "warmup": {"iterations": 3, "capped": False, "cv": 0.0172, "cv_target": 0.02,
                   "duration_ns": 68462026},
        "iterations_ns": [1_000_000 + 1000 * k for k in range(len(values))], "phases_ns": {},
        "metrics": {cell.metric: metric}, "checksum": f"{seq:016x}",
        "info": {"llc_bytes": 268435456, "llc_source": "sysconf L3", "slots": 1024},
        "rusage": {"utime_us": 88931, "stime_us": 4043, "maxrss_kib": 30932, "vm_hwm_kib": 6216,
                   "minflt": 359, "majflt": 0, "nvcsw": 0, "nivcsw": 5},
        "wall_ns": 86950589,
    }  # fmt: skip
    return json.dumps(doc, separators=(",", ":"))


def _run(cell: Cell, unit: str, hib: bool, value: float, rep: int, seq: int, rng: random.Random) -> RunResult:
    iterations = [value * (1 + 0.01 * (rng.random() - 0.5)) for _ in range(ITERATIONS)]
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
        worker_json=_result(cell, unit, hib, iterations, seq),
    )  # fmt: skip


def build_campaign(path: Path, runs: int, *, board: str = "board-0", seed: int = 1) -> int:
    """One campaign of at least `runs` runs (whole repetitions of every cell) in a new file; returns the
    runs."""
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
    cpu_s: float  # user + system time of the process and the children it waited for, + the server's
    peak_mb: float
    load: float  # the 1-minute load average as it ended
    server_cpu_s: float = 0.0  # of cpu_s, a PostgreSQL server's


def server_cpu_s(pid: int | None) -> float:
    """CPU seconds of a PostgreSQL server so far: its postmaster's, with its children that exited (their
    backends, waited for by it), and its live children's; 0 without a server."""
    if pid is None:
        return 0.0

    def times(p: int | str) -> list[int]:
        """[parent's pid, utime, stime, cutime, cstime] in ticks (read after the name: it may hold spaces)"""
        with open(f"/proc/{p}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return [int(fields[1])] + [int(x) for x in fields[11:15]]

    ticks = sum(times(pid)[1:])
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                t = times(entry)
            except (OSError, IndexError, ValueError):  # gone meanwhile
                continue
            if t[0] == pid:
                ticks += t[1] + t[2]
    return ticks / os.sysconf("SC_CLK_TCK")


def measure(args: list[str], *, before=None, server_pid: int | None = None) -> Measure:
    """One run of `python -m boardlab ARGS` as its own process; `before` runs (unmeasured) first, to reset
    what the command changes. wait4 gives the usage of the process and of the descendants it waited for (the
    summaries' process of an ingest); `server_pid`: a PostgreSQL server whose CPU meanwhile is added."""
    if before is not None:
        before()
    server0 = server_cpu_s(server_pid)
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "boardlab", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    err = proc.stderr.read() if proc.stderr else b""
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"boardlab {' '.join(args)} failed ({proc.returncode}): {err.decode()[-2000:]}")
    server = 0.0
    if server_pid is not None:
        time.sleep(0.2)  # the last backend's exit, for its CPU to reach the postmaster's account
        server = server_cpu_s(server_pid) - server0
    cpu = usage.ru_utime + usage.ru_stime + server
    return Measure(seconds, cpu, usage.ru_maxrss / 1024, os.getloadavg()[0], server)  # ru_maxrss: KiB


def _size(path: Path) -> int:
    return sum(os.path.getsize(p) for p in (str(path), f"{path}-wal") if os.path.exists(p))


def _remove(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def _copy_store(template: Path, dst: Path) -> None:
    """A copy of a store, on disk before the measured command starts (its first commit would otherwise
    wait for the copy's dirty pages)."""
    _remove(dst)
    shutil.copyfile(template, dst)
    os.sync()


@dataclass(frozen=True)
class Built:
    """What one size's commands run on."""

    n: int
    work: Path
    campaign: Path  # one campaign of `runs` runs
    files: list[str]  # BOARDS board files of board_runs / BOARDS runs each
    runs: int
    board_runs: int
    build_s: float
    bytes_per_run: float


def build_size(n: int, work: Path) -> Built:
    work.mkdir(parents=True, exist_ok=True)
    one, small = work / "campaign.db", work / "board.db"
    for old in (one, small):  # a kept directory's (`--keep`): build_campaign adds to a store it finds
        _remove(old)
    t0 = time.perf_counter()
    # built in a child process: a child's ru_maxrss counts the memory of the process it was forked from
    # until its exec, so this process stays small for the measured commands' peak RSS to be theirs
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        runs = pool.apply(build_campaign, (one, n))
        pool.apply(build_campaign, (small, n // BOARDS), {"seed": 2})
    files = [str(f) for f in board_files(small, work)]
    board_runs = BOARDS * _runs_of(small)
    return Built(n, work, one, files, runs, board_runs, time.perf_counter() - t0, _size(one) / runs)


def build_full(full_runs: int, root: Path, campaign_runs: int | None = None) -> tuple[Path, int]:
    """The full store: full_runs runs of the same plan on the same ten boards as the measured files, in
    campaigns of `campaign_runs` runs (default full_runs/10: one campaign per board), ingested by `boardlab
    ingest` one night (a campaign per board) at a time, summaries and history steps included; returns its
    path and its runs. Its campaigns are other campaigns (uids), with other values (their own seed), than
    those of the measured files: a measured file's history step then compares two sessions' noise, as a
    lab's does. (It reused a measured size's board file: every step then compared a campaign with a copy of
    itself, Yuen's t was 0 and no cell drew a permutation p, which flattered the ingest into the full
    store.)"""
    work = root / "full-files"
    per_board = campaign_runs or full_runs // BOARDS
    full, built = root / "full.db", root / "full.json"  # what was built, for `--keep DIR` to use it again
    shape = {"full_runs": full_runs, "campaign_runs": per_board}
    kept = json.loads(built.read_text()) if full.exists() and built.exists() else {}
    if kept.get("shape") == shape:
        print(f"   the full store built before in {root}, used again", file=sys.stderr, flush=True)
        return full, kept["runs"]
    work.mkdir(parents=True, exist_ok=True)
    nights = max(1, full_runs // (per_board * BOARDS))
    board = work / "board.db"
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        pool.apply(build_campaign, (board, per_board), {"seed": 3})
    _remove(full)
    built.unlink(missing_ok=True)
    _fill(str(full), board, nights, work)
    shutil.rmtree(work)
    with Store.open(full, create=False, verify=False) as s:
        runs = int(s.conn.execute("SELECT count(*) FROM runs").fetchone()[0])
    built.write_text(json.dumps({"shape": shape, "runs": runs}))
    return full, runs


def _fill(db: str, board: Path, nights: int, work: Path) -> None:
    """`nights` ingests into `db` of BOARDS copies of `board`, each night's campaigns new ones (uids)."""
    for night in range(nights):
        if nights > 1:
            print(f"   night {night + 1} of {nights}", file=sys.stderr, flush=True)
        files = [str(f) for f in board_files(board, work)]
        measure(["ingest", *files, "--db", db])


def commands(b: Built, full: Path | None) -> dict[str, tuple[list[str], object, int]]:
    """command -> (boardlab's arguments, what runs before each measurement or None, the runs it handles)."""
    db, lab, lab_full = str(b.campaign), b.work / "lab.db", b.work / "lab-full.db"
    w = b.work
    out: dict[str, tuple[list[str], object, int]] = {
        "report md": (["report", "--db", db, "--format", "md", "-o", str(w / "r.md")], None, b.runs),
        "report html": (["report", "--db", db, "--format", "html", "-o", str(w / "r.html")], None, b.runs),
        "export csv": (["export", "--db", db, "--format", "csv", "-o", str(w / "e.csv")], None, b.runs),
        "export json": (["export", "--db", db, "--format", "json", "-o", str(w / "e.json")], None, b.runs),
        "export parquet": (["export", "--db", db, "--format", "parquet", "-o", str(w / "e.parquet")], None,
                           b.runs),
        "ingest": (["ingest", *b.files, "--db", str(lab)], lambda: _remove(lab), b.board_runs),
    }  # fmt: skip
    if full is not None:
        out["ingest, full store"] = (
            ["ingest", *b.files, "--db", str(lab_full)],
            lambda: _copy_store(full, lab_full),
            b.board_runs,
        )
    # after "ingest": its last round left the store holding the files
    out["re-ingest"] = (["ingest", *b.files, "--db", str(lab)], None, b.board_runs)
    out["cross-board report"] = (
        ["report", "--db", str(lab), "--across-boards", "--board", "board-0", "--format", "md", "-o", "-"],
        None,
        b.board_runs,
    )
    return out


def alternate(sizes: list[int], run, repeat: int) -> dict[int, list[Measure]]:
    """`run(n)` for every size, `repeat` rounds, each round in the other order (n1 n2, n2 n1, ...): a size's
    k-th measurement and the next size's are taken minutes apart at most, under the same load."""
    per: dict[int, list[Measure]] = {n: [] for n in sizes}
    for r in range(repeat):
        for n in sizes if r % 2 == 0 else sizes[::-1]:
            per[n].append(run(n))
    return per


def _record(ms: list[Measure], runs: int) -> dict:
    """Medians of wall, CPU and load, the largest peak, and every round (wall, CPU, load)."""
    return {
        "s": statistics.median(m.seconds for m in ms),
        "cpu_s": statistics.median(m.cpu_s for m in ms),
        "server_cpu_s": statistics.median(m.server_cpu_s for m in ms),
        "peak_mb": max(m.peak_mb for m in ms),
        "load": statistics.median(m.load for m in ms),
        "runs": runs,
        "rounds": [(m.seconds, m.cpu_s, m.load) for m in ms],
    }


def measure_all(built: dict[int, Built], full: Path | None, repeat: int) -> dict[int, dict]:
    sizes = sorted(built)
    results: dict[int, dict] = {
        n: {
            "runs": b.runs,
            "board_runs": b.board_runs,
            "build_s": b.build_s,
            "bytes_per_run": b.bytes_per_run,
        }
        for n, b in built.items()
    }
    cmds = {n: commands(b, full) for n, b in built.items()}
    for name in cmds[sizes[0]]:
        print(f"== {name}", file=sys.stderr, flush=True)

        def run(n: int, name: str = name) -> Measure:
            args, before, _ = cmds[n][name]
            return measure(args, before=before)

        for n, ms in alternate(sizes, run, repeat).items():
            rec = _record(ms, cmds[n][name][2])
            if name.startswith("ingest"):
                rec["runs_per_s"] = rec["runs"] / rec["s"]
            if name == "re-ingest":
                rec["s_per_file"] = rec["s"] / BOARDS
            results[n][name] = rec
        if name == "ingest, full store":
            for n in sizes:
                _remove(built[n].work / "lab-full.db")  # a copy of the full store per size: space
    for n, b in built.items():
        results[n]["lab_bytes_per_run"] = _size(b.work / "lab.db") / b.board_runs
    return results


def _runs_of(path: Path) -> int:
    with Store.open(path, create=False) as s:
        return s.run_progress(s.campaigns()[0]["id"])[0]


OWNER = "boardlab_owner"  # the ordinary role of the PostgreSQL owner's ingest
GRANTED = "boardlab_granted"  # an owner granted SET ON PARAMETER session_replication_role (PostgreSQL 15)
PG_INGESTS = {"pg ingest": None, "pg ingest, owner": OWNER, "pg ingest, granted owner": GRANTED}
PG_FULL = "pg ingest, owner, full store"  # the owner's ingest into a copy of a store already holding runs
LABELS = {"pg ingest": "ingest (superuser)", "pg ingest, owner": "ingest (owner)",
          "pg ingest, granted owner": "ingest (owner, granted)",
          PG_FULL: "ingest (owner, full store)"}  # fmt: skip


def measure_pg(b: Built, repeat: int, full_runs: int = 0, root: Path | None = None) -> dict:
    """Ingest as the superuser and as the database's owner, into an empty store and (`full_runs`) into a copy
    of the owner's store already holding that many runs, re-ingest and the cross-board report with a
    PostgreSQL store, or {"skipped": reason}."""
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
        out = {"runs": b.board_runs, **_pg_ingest(b.files, server, b.board_runs, repeat)}
        if full_runs:
            assert root is not None
            out[PG_FULL] = _pg_full_ingest(b, server, full_runs, root, repeat)
        return out
    finally:
        server.stop()


def _pg_ingest(files: list[str], server, runs: int, repeat: int) -> dict:
    """Each ingest into a new empty database: the superuser's, the owner's, the granted owner's, in turn (the
    order reversed every other round)."""
    import psycopg

    server.new_database(owner=GRANTED)  # the role, made
    with psycopg.connect(server.url(), autocommit=True) as admin:
        admin.execute(f"GRANT SET ON PARAMETER session_replication_role TO {GRANTED}")
    by: dict[str, list[Measure]] = {name: [] for name in PG_INGESTS}
    url = ""
    for r in range(repeat):
        for name in list(PG_INGESTS) if r % 2 == 0 else list(PG_INGESTS)[::-1]:
            db = server.new_database(owner=PG_INGESTS[name])
            by[name].append(measure(["ingest", *files, "--db", db], server_pid=server.pid))
            if name == "pg ingest" and not url:
                url = db  # kept for the re-ingest and the report
            else:
                _drop(server, db)
    out = {name: {**_record(ms, runs), "runs_per_s": runs / statistics.median(m.seconds for m in ms)}
           for name, ms in by.items()}  # fmt: skip
    again = [measure(["ingest", *files, "--db", url], server_pid=server.pid) for _ in range(repeat)]
    out["pg re-ingest"] = {
        **_record(again, runs),
        "s_per_file": statistics.median(m.seconds for m in again) / BOARDS,
    }
    across = ["report", "--db", url, "--across-boards", "--board", "board-0", "--format", "md", "-o", "-"]
    out["pg cross-board report"] = _record(
        [measure(across, server_pid=server.pid) for _ in range(repeat)], runs
    )
    return out


def _drop(server, url: str) -> None:
    """A measured database dropped: autovacuum would otherwise work through its runs during later rounds,
    whose server CPU counts every server process."""
    import psycopg

    with psycopg.connect(server.url(), autocommit=True) as admin:
        admin.execute(f"DROP DATABASE {url.rsplit('/', 1)[1]}")


def _pg_full_ingest(b: Built, server, full_runs: int, root: Path, repeat: int) -> dict:
    """The owner's ingest of the size's files into a store already holding `full_runs` runs: that store is
    filled once (as build_full fills the SQLite one: a campaign of full_runs/10 runs per board, by `boardlab
    ingest`, as the owner; then vacuumed and analyzed, as a lab's store is between nights) and each round
    ingests into a new copy of it (CREATE DATABASE ... TEMPLATE), so every round meets the same store; a
    round's copy is dropped after it (a copy of 10^6 runs: gigabytes)."""
    import psycopg

    template = server.new_database(owner=OWNER)
    work = root / "pg-full-files"
    work.mkdir(parents=True, exist_ok=True)
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        pool.apply(build_campaign, (work / "board.db", full_runs // BOARDS), {"seed": 3})
    print(f"== filling the PostgreSQL store with {full_runs:.0e} runs", file=sys.stderr, flush=True)
    _fill(template, work / "board.db", 1, work)
    shutil.rmtree(work)
    with psycopg.connect(template, autocommit=True) as conn:
        held = int(conn.execute("SELECT count(*) FROM runs").fetchone()[0])
        # as a lab's store is between nights: autovacuum has long since vacuumed and analyzed what the last
        # ingest wrote (here it would still be at it during the measured rounds, at a core's cost)
        conn.execute("VACUUM (ANALYZE)")
    name = template.rsplit("/", 1)[1]
    ms = []
    with psycopg.connect(server.url(), autocommit=True) as admin:
        admin.execute("CHECKPOINT")  # the fill's and the vacuum's dirty pages written before the rounds
        for r in range(repeat):
            copy = f"{name}_{r}"
            admin.execute(f"CREATE DATABASE {copy} TEMPLATE {name} OWNER {OWNER} STRATEGY FILE_COPY")
            ms.append(measure(["ingest", *b.files, "--db", server.url(copy, OWNER)], server_pid=server.pid))
            admin.execute(f"DROP DATABASE {copy}")
    runs = b.board_runs
    return {**_record(ms, runs), "runs_per_s": runs / statistics.median(m.seconds for m in ms), "held": held}


# ---- targets ----


def growth(results: dict[int, dict]) -> dict[str, dict[str, dict]]:
    """{"n1->n2": {command: {"wall", "cpu": exponent, "pairs": [(t1, t2, load1, load2)]}}} between consecutive
    sizes: log(median of the paired ratios t2/t1) / log(runs2/runs1), of the wall and of the CPU times, the
    pairs being each round's two measurements (taken one after the other, `alternate`)."""
    out = {}
    sizes = sorted(results)
    for a, b in zip(sizes, sizes[1:], strict=False):
        span = {}
        for c in results[a]:
            ra, rb = results[a][c], results[b].get(c)
            if not isinstance(ra, dict) or rb is None:
                continue
            scale = math.log(rb["runs"] / ra["runs"])
            pairs = list(zip(ra["rounds"], rb["rounds"], strict=False))

            def exponent(i: int, pairs=pairs, scale=scale) -> float:
                return (
                    math.log(statistics.median(max(q[i], 1e-3) / max(p[i], 1e-3) for p, q in pairs)) / scale
                )

            span[c] = {"wall": exponent(0), "cpu": exponent(1),
                       "pairs": [(p[0], q[0], p[2], q[2]) for p, q in pairs]}  # fmt: skip
        out[f"{a:.0e}->{b:.0e}"] = span
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
    at(1_000_000, "peak RSS of reports and exports <= 150 MB at 10^6 runs")
    missed += peaks_missed(results)
    _check_ingest(results, pg, missed, unchecked)
    if "1e+05->1e+06" in exps:
        for cmd, e in exps["1e+05->1e+06"].items():
            if e["wall"] > 1.05:
                missed.append(f"growth exponent of {cmd} from 10^5 to 10^6: {e['wall']:.2f} > 1.05")
    else:
        unchecked.append("growth exponents <= 1.05 from 10^5 to 10^6: both sizes not measured")
    return missed, unchecked


PEAK_MB = 150  # the reports' and exports' peak RSS at 10^6 runs and more (10^7: `--store`)
PEAK_COMMANDS = ("report md", "report html", "export csv", "export json", "export parquet")


def peaks_missed(results: dict[int, dict]) -> list[str]:
    """The reports and exports over PEAK_MB at any size of 10^6 runs or more."""
    return [
        f"{cmd} of {n:.0e} runs: peak RSS {r[cmd]['peak_mb']:.0f} MB > {PEAK_MB} MB"
        for n, r in results.items()
        if n >= 1_000_000
        for cmd in PEAK_COMMANDS
        if cmd in r and r[cmd]["peak_mb"] > PEAK_MB
    ]


def measure_store(store: Path, repeat: int) -> tuple[int, dict]:
    """The reports and exports of a store built before (`--store`: e.g. 10^7 runs, an hour to build),
    `repeat` rounds each: (its runs, {command: record})."""
    with Store.open(store, create=False, verify=False) as s:  # its own check would read every page
        n = s.run_progress(s.campaigns()[-1]["id"])[0]
    out = Path(tempfile.mkdtemp(prefix="boardlab-scale-out-"))
    try:
        b = Built(n, out, store, [], n, 0, 0.0, _size(store) / n)
        cmds = {c: v for c, v in commands(b, None).items() if c in PEAK_COMMANDS}
        return n, {c: _record([measure(a) for _ in range(repeat)], n) for c, (a, _, _) in cmds.items()}
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main_store(store: Path, repeat: int, as_json: bool) -> int:
    n, got = measure_store(store, repeat)
    missed = peaks_missed({n: got})
    if as_json:
        print(json.dumps({"store": str(store), "runs": n, "commands": got, "missed": missed}, indent=1))
    else:
        print(f"{store}: {n} runs ({_size(store) / n:.0f} bytes a run)")
        print("| command | wall s (CPU s) | peak MB | load (1 min) |\n|---|---|---|---|")
        for cmd, r in got.items():
            print(f"| {cmd} | {r['s']:.1f} ({r['cpu_s']:.1f}) | {r['peak_mb']:.0f} | {r['load']:.1f} |")
        print("targets: " + ("all met" if not missed else f"{len(missed)} missed"))
        for line in missed:
            print(f"MISSED: {line}")
    return 1 if missed else 0


def _check_ingest(results: dict[int, dict], pg: dict, missed: list[str], unchecked: list[str]) -> None:
    """The ingest and re-ingest targets, SQLite per size and PostgreSQL, from 10^5 runs on."""
    for n, r in sorted(results.items()):
        if r["board_runs"] < 100_000:  # the command's fixed start-up dominates a smaller ingest
            unchecked.append(f"ingest and re-ingest targets at {n:.0e}: checked from 10^5 runs on")
            continue
        for cmd in ("ingest", "ingest, full store"):
            if cmd in r and r[cmd]["runs_per_s"] < 20_000:
                missed.append(f"{cmd} into SQLite at {n:.0e}: {r[cmd]['runs_per_s']:.0f} runs/s < 20000")
        if r["re-ingest"]["s"] > r["board_runs"] / 1e5:
            missed.append(f"re-ingest at {n:.0e}: {r['re-ingest']['s']:.2f} s > 1 s per 10^5 runs")
    if "skipped" in pg:
        unchecked.append(f"ingest into PostgreSQL >= 10000 runs/s: {pg['skipped']}")
    elif pg["runs"] < 100_000:
        unchecked.append("ingest into PostgreSQL: checked from 10^5 runs on (--pg-max)")
    else:
        for cmd in (*PG_INGESTS, PG_FULL):
            if cmd in pg and pg[cmd]["runs_per_s"] < 10_000:
                missed.append(f"{cmd[3:]} into PostgreSQL: {pg[cmd]['runs_per_s']:.0f} runs/s < 10000")
        if pg["pg re-ingest"]["s"] > pg["runs"] / 1e5:
            missed.append(f"re-ingest into PostgreSQL: {pg['pg re-ingest']['s']:.2f} s > 1 s per 10^5 runs")


def _extra(r: dict) -> str:
    return (f" {r['runs_per_s']:,.0f}/s" if "runs_per_s" in r else
            f" {r['s_per_file']:.2f}s/file" if "s_per_file" in r else "")  # fmt: skip


def print_table(results: dict[int, dict], pg: dict, exps: dict, full_runs: int | None) -> None:
    sizes = sorted(results)
    print(f"{'command':<20}" + "".join(f"{f'{n:.0e} runs: wall, CPU, peak RSS @load':>46}" for n in sizes))
    names = [c for c in results[sizes[0]] if isinstance(results[sizes[0]][c], dict)]
    for cmd in names:
        cells = []
        for n in sizes:
            r = results[n][cmd]
            cells.append(f"{r['s']:.2f}s {r['cpu_s']:.2f}s {r['peak_mb']:.0f}MB{_extra(r)} @{r['load']:.1f}")
        print(f"{cmd:<20}" + "".join(f"{c:>46}" for c in cells))
    for key, label in (("bytes_per_run", "bytes per run"), ("lab_bytes_per_run", "lab store bytes/run")):
        print(f"{label:<20}" + "".join(f"{results[n][key]:>46,.0f}" for n in sizes))
    print(f"{'(build s)':<20}" + "".join(f"{results[n]['build_s']:>46.1f}" for n in sizes))
    if full_runs is not None:
        print(
            f"(ingest, full store: into a store already holding {full_runs:,} runs of the same plan on the "
            f"same {BOARDS} boards: each new campaign's history step from its board's latest is computed)"
        )
    for span, by_cmd in exps.items():
        print(f"growth exponent {span}: wall, CPU, from the median of paired ratios; pairs (wall s) @load:")
        for c, e in by_cmd.items():
            pairs = "; ".join(f"{p:.2f}/{q:.2f} @{lp:.1f},{lq:.1f}" for p, q, lp, lq in e["pairs"])
            print(f"  {c:<20} {e['wall']:5.2f} {e['cpu']:5.2f}   {pairs}")
    if "skipped" in pg:
        print(f"PostgreSQL: skipped: {pg['skipped']}")
        return
    print(
        f"PostgreSQL store, {pg['runs']} runs from {BOARDS} board files (CPU: the client's and the server's):"
    )
    for cmd in (*PG_INGESTS, PG_FULL, "pg re-ingest", "pg cross-board report"):
        if cmd not in pg:
            continue
        r = pg[cmd]
        if cmd == PG_FULL:
            print(f"  (into a copy of the owner's store already holding {r['held']:,} runs of the same plan)")
        label = LABELS.get(cmd, cmd[3:])
        rounds = ", ".join(f"{s:.2f}s@{ld:.1f}" for s, _, ld in r["rounds"])
        print(
            f"  {label:<28} {r['s']:.2f} s (CPU {r['cpu_s']:.2f} s, the server's {r['server_cpu_s']:.2f} s), "
            f"peak {r['peak_mb']:.0f} MB{_extra(r)}; rounds {rounds}"
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
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=_sizes, default=[10_000, 100_000, 1_000_000], help="default 1e4,1e5,1e6")
    # three by default: one sample of a command flipped the ingest targets from one run of the bench to the
    # next
    ap.add_argument(
        "--repeat", type=int, default=3, help="rounds of each command, the median kept (default 3)"
    )
    ap.add_argument(
        "--full-runs",
        type=float,
        help="runs of the full store ingested into (default: the largest size; 0: none)",
    )
    ap.add_argument(
        "--full-campaign-runs",
        type=float,
        help="runs of each campaign of the full store (default: a tenth of --full-runs, one campaign per "
        "board; a lab's nightly store: the smallest size's tenth, e.g. 1e4 with --sizes 1e5)",
    )
    ap.add_argument("--pg-max", type=float, default=1e5, help="PostgreSQL at the largest size <= this")
    ap.add_argument(
        "--pg-full-runs",
        type=float,
        default=1e6,
        help="runs of the PostgreSQL store the owner's full-store ingest goes into (default 1e6; 0: none)",
    )
    ap.add_argument(
        "--keep",
        type=Path,
        help="build the stores in this directory and keep them; a full store kept there by a run of the same "
        "--full-runs and --full-campaign-runs is used again (building 10^7 runs takes half an hour)",
    )
    ap.add_argument(
        "--store",
        type=Path,
        help="measure only the reports and exports of this store's latest campaign (one built before, e.g. "
        "with build_campaign at 10^7 runs), against the peak RSS target",
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.store is not None:
        return main_store(args.store, args.repeat, args.json)
    root = args.keep or Path(tempfile.mkdtemp(prefix="boardlab-scale-"))
    full_runs = int(args.full_runs) if args.full_runs is not None else args.sizes[-1]
    load_before = os.getloadavg()
    built: dict[int, Built] = {}
    pg: dict = {"skipped": f"no size <= --pg-max {args.pg_max:.0e}"}
    full_held = None
    try:
        for n in args.sizes:
            print(f"== building {n:.0e} runs", file=sys.stderr, flush=True)
            built[n] = build_size(n, root / f"n{n}")
        full = None
        if full_runs:
            print(f"== building the full store: {full_runs:.0e} runs", file=sys.stderr, flush=True)
            per = int(args.full_campaign_runs) if args.full_campaign_runs else None
            full, full_held = build_full(full_runs, root, per)
        results = measure_all(built, full, args.repeat)
        pg_sizes = [n for n in args.sizes if n <= args.pg_max]
        if pg_sizes:
            print(f"== PostgreSQL at {pg_sizes[-1]:.0e} runs", file=sys.stderr, flush=True)
            pg = measure_pg(built[pg_sizes[-1]], args.repeat, int(args.pg_full_runs), root)
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    load = {"before": load_before, "after": os.getloadavg(), "cpus": os.cpu_count()}
    exps = growth(results)
    missed, unchecked = check(results, pg, exps)
    if args.json:
        print(json.dumps({"load_average": load, "full_store_runs": full_held, "sizes": results,
                          "postgresql": pg, "growth": exps, "missed": missed, "not_checked": unchecked},
                         indent=1))  # fmt: skip
    else:
        print(
            f"load average (1 min) {load['before'][0]:.1f} before, {load['after'][0]:.1f} after, on "
            f"{load['cpus']} CPUs (@ beside each figure: as it was taken); wall times grow with it, CPU "
            "times much less"
        )
        print_table(results, pg, exps, full_held)
        for line in unchecked:
            print(f"not checked: {line}")
        print("targets: " + ("all met" if not missed else f"{len(missed)} missed"))
        for line in missed:
            print(f"MISSED: {line}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
