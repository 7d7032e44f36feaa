"""Where `boardlab ingest`'s time goes: ten board files of N/10 runs into a store, the CPU time of each part.

bench_scale.py times the whole command (runs/s, re-ingest); this bench runs the same ingest in its own
process, with a clock around each part, to say which part to work on:
- verify: each file's integrity check and content scan (store/verify.py), several files side by side, so its
  CPU is that of the threads doing it;
- open: the writer's open of the store (its flock, its check of the file: `PRAGMA quick_check`, which reads
  every page, of a SQLite store up to 1 GiB, a bounded check of a larger one; and its migration check);
- copy: the bulk copy of the new runs, one transaction per file (store/ingest.py `_ingest`);
- summaries: each campaign's summary (boardlab.summary.KeepBehind: the analysis, the report's document and its
  HTML, the history step), computed beside the next file's copy: in a worker process on more than one core,
  whose CPU is counted there (the bench gives the worker its task with clocks around the same parts, written
  to a file after each task), else in a thread of this process; of it, the analysis (`analyze`), the history
  step against the board's previous campaign of the plan (none in a new store) and the rest; and the
  summaries' process's whole CPU time (its start and imports included);
- the ingest's wall time and runs per second, and the process's CPU time (the summaries' process apart); into
  PostgreSQL also the server's
  (its processes' CPU time from /proc: the postmaster's own and its exited children's, and its live
  children's).
Into a new SQLite store, or with `--into STORE` into a copy of that store (bench_scale's `--keep DIR`'s
full.db: a store already holding runs of the same boards and plan), and into PostgreSQL when a server can be
started (tests/pg.py, as bench_scale does; `--pg-owner`: as an ordinary role owning its database), or
"skipped" with the reason. `--files` takes board files already built (bench_scale's `--keep DIR`'s
board-*.db); otherwise they are built (bench_scale's `build_campaign` and `board_files`). `--repeat` runs each
ingest that many times (alternating SQLite and PostgreSQL), printing the median of each figure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scale import board_files, build_campaign, server_cpu_s  # noqa: E402

PARTS = ("verify", "open", "copy", "summaries", "  analysis", "  history step", "  the rest")

# Each summary's task (boardlab.summary's `_kept`, in KeepBehind's worker process or its thread) with the same
# clocks as `Clocks`: the CPU of the task, of `analyze` and of the history step in it, and its process's CPU
# so far, a JSON line per task appended to the file named by CLOCKS_ENV (inherited by the worker).
CLOCKS_ENV = "BOARDLAB_BENCH_CHILD_CLOCKS"
CHILD_PARTS = ("summaries", "  analysis", "  history step")


def _clocked_kept(db: str, campaign_id: int, held: dict):
    """`summary._kept` with its clocks, found by the worker as this module's (multiprocessing's spawn gives it
    this process's sys.path)."""
    from boardlab import summary
    from boardlab.analysis import core
    from boardlab.store import Store

    clocks = Clocks()
    saved = core.analyze, summary._computed_step
    core.analyze = clocks.wrap("  analysis", core.analyze)
    summary._computed_step = clocks.wrap("  history step", summary._computed_step)

    def kept():
        with Store.open(db, create=False, verify=False) as store, store.snapshot():
            return summary.to_keep(store, campaign_id, held)

    try:
        return clocks.wrap("summaries", kept)()
    finally:
        core.analyze, summary._computed_step = saved
        line = {"pid": os.getpid(), "cpu": clocks.cpu, "wall": clocks.wall, "process": time.process_time()}
        with open(os.environ[CLOCKS_ENV], "a") as f:
            f.write(json.dumps(line) + "\n")


class Clocks:
    """CPU seconds of each part, per thread (a part runs in one thread at a time, or in several for verify),
    and its wall seconds (summed over the threads: verify's exceed its span)."""

    def __init__(self) -> None:
        self.cpu = dict.fromkeys(PARTS, 0.0)
        self.wall = dict.fromkeys(PARTS, 0.0)
        self._lock = threading.Lock()

    def wrap(self, part: str, fn):
        def timed(*args, **kw):
            t0, w0 = time.thread_time(), time.perf_counter()
            try:
                return fn(*args, **kw)
            finally:
                with self._lock:
                    self.cpu[part] += time.thread_time() - t0
                    self.wall[part] += time.perf_counter() - w0

        return timed


def ingest_once(files: list[Path], db: str, server_pid: int | None = None) -> dict:
    """One ingest of `files` into `db` with the CLI's summaries, its parts clocked."""
    from boardlab import summary
    from boardlab.store import ingest
    from boardlab.store.db import Store

    clocks = Clocks()
    child_clocks = Path(tempfile.mkstemp(prefix="boardlab-child-clocks-")[1])
    os.environ[CLOCKS_ENV] = str(child_clocks)  # the worker's environment is this process's
    saved = (ingest.verify_source, ingest._ingest, summary._kept)
    open_writer = Store.__dict__["_open_writer"]
    Store._open_writer = classmethod(clocks.wrap("open", open_writer.__func__))  # type: ignore[method-assign]
    summary._kept = _clocked_kept  # type: ignore[assignment]
    ingest.verify_source = clocks.wrap("verify", ingest.verify_source)
    ingest._ingest = clocks.wrap("copy", ingest._ingest)
    behind: list = []

    def then(store, result) -> None:
        if not behind:
            behind.append(summary.KeepBehind(db, lambda text: print(f"warning: {text}", file=sys.stderr)))
        behind[0].submit(store, result.campaign_ids)

    try:
        server0, cpu0, t0 = server_cpu_s(server_pid), time.process_time(), time.perf_counter()
        results = ingest.ingest_files(
            files, db, then=then, last=lambda store: behind[0].finish(store) if behind else None
        )
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        time.sleep(0.2)  # the last backend's exit, for its CPU to reach its parent's account
        server = server_cpu_s(server_pid) - server0
    finally:
        ingest.verify_source, ingest._ingest, summary._kept = saved
        Store._open_writer = open_writer  # type: ignore[method-assign]
        del os.environ[CLOCKS_ENV]
    # the tasks' clocks, a line each (finish waited for the worker); the worker's process CPU is its last
    # line's
    text = child_clocks.read_text()
    child_clocks.unlink()
    tasks = [json.loads(line) for line in text.splitlines()]
    for task in tasks:
        for part in CHILD_PARTS:
            clocks.cpu[part] += task["cpu"][part]
            clocks.wall[part] += task["wall"][part]
    children = {t["pid"]: t["process"] for t in tasks if t["pid"] != os.getpid()}  # the last line per pid
    runs = sum(r.runs_added for r in results)
    for kind in (clocks.cpu, clocks.wall):
        kind["  the rest"] = kind["summaries"] - kind["  analysis"] - kind["  history step"]
    return {"runs": runs, "wall_s": wall, "cpu_s": cpu, "server_cpu_s": server, "runs_per_s": runs / wall,
            "child_cpu_s": sum(children.values()), "children": len(children), **clocks.cpu,
            **{f"{part} wall": s for part, s in clocks.wall.items()}}  # fmt: skip


def _pg_server():
    """A private PostgreSQL server (tests/pg.py) or the reason there is none."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    try:
        import psycopg  # noqa: F401
        import pytest
        from pg import PgServer, pg_bindir
    except ImportError as exc:
        return None, f"{exc.name} not installed (pip install 'boardlab[fleet]' pytest)"
    bindir = pg_bindir()
    if bindir is None:
        return None, "PostgreSQL server binaries not found (apt-get install postgresql)"
    try:
        server = PgServer(bindir)
    except pytest.skip.Exception as exc:
        return None, str(exc)
    try:
        server.start()
    except RuntimeError as exc:
        server.stop()
        return None, f"the server did not start: {exc}"
    return server, ""


def _print(name: str, rounds: list[dict]) -> None:
    med = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    server = f", the server's {med['server_cpu_s']:.2f} s" if med["server_cpu_s"] else ""
    child = (f", the summaries' {med['children']:.0f} process(es)' {med['child_cpu_s']:.2f} s"
             if med["child_cpu_s"] else "")  # fmt: skip
    print(
        f"{name}: {med['runs']:.0f} runs in {med['wall_s']:.2f} s wall, {med['runs_per_s']:,.0f} runs/s; "
        f"process CPU {med['cpu_s']:.2f} s{child}{server} (median of {len(rounds)}; load average "
        f"{statistics.median(r['load'] for r in rounds):.1f})"
    )
    for part in PARTS:
        print(f"  {part:<14} {med[part]:6.2f} s CPU {med[part + ' wall']:7.2f} s wall")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--runs", type=float, default=1e5, help="runs in all, over ten board files (default 1e5)")
    ap.add_argument("--files", type=Path, nargs="*", help="board files already built (instead of --runs)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--no-pg", action="store_true", help="SQLite only")
    ap.add_argument(
        "--into", type=Path, help="a SQLite store to ingest into a copy of (default: a new store)"
    )
    ap.add_argument("--pg-owner", action="store_true", help="into PostgreSQL as an ordinary database owner")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="boardlab-ingest-"))
    files = args.files
    if not files:
        build_campaign(work / "board.db", int(args.runs) // 10, seed=2)
        files = board_files(work / "board.db", work)
    server, why = (None, "--no-pg") if args.no_pg else _pg_server()
    print(f"load average (1 min) {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", flush=True)
    lite, pg = [], []
    try:
        for _ in range(args.repeat):
            for suffix in ("", "-wal", "-shm"):
                Path(f"{work / 'lab.db'}{suffix}").unlink(missing_ok=True)
            if args.into is not None:  # on disk before the ingest starts: its first commit would wait for it
                shutil.copyfile(args.into, work / "lab.db")
                os.sync()
            lite.append({**ingest_once(files, str(work / "lab.db")), "load": os.getloadavg()[0]})
            if server is not None:
                pg.append(
                    {
                        **ingest_once(
                            files,
                            server.new_database(owner="boardlab_owner" if args.pg_owner else None),
                            server.pid,
                        ),
                        "load": os.getloadavg()[0],
                    }
                )
    finally:
        if server is not None:
            server.stop()
        for p in work.iterdir():
            p.unlink()
        work.rmdir()
    _print("into SQLite" + (f" (a copy of {args.into})" if args.into else ""), lite)
    if pg:
        _print("into PostgreSQL" + (" as the database's owner" if args.pg_owner else ""), pg)
    else:
        print(f"PostgreSQL: skipped: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
