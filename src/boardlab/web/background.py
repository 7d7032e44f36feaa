"""The analyses serve's pages need and the store does not hold, computed in a process of their own, so no page
waits for one.

A campaign stored without a summary (a store written before summaries, a campaign still running, a summary of
another build) is analysed from its runs: seconds at 10^5 runs, more at 10^6. A page that needs it asks here:
it gets the result when it is ready, else the page answers at once that it is being computed (202, with a
Refresh header) and the analysis runs in one worker process (`concurrent.futures`, one at a time, so a lab's
pages never take both cores from a campaign running beside them). A running campaign's page shows its last
analysis while the next one, with the runs stored since, is computed. A comparison of two campaigns is
computed there too, even when both are summarized: its permutation p-values take seconds on large campaigns
(`_compare`). The backfill (web/backfill.py) runs its steps in the same worker, one at a time (`run`). The
worker dies with serve (platform.spawn's parent-death signal, set in the worker as it starts), and `close`
ends it at serve's end.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

    from boardlab.analysis.cellruns import GrowingTables

CLOSE_WAIT_S = 5.0  # how long serve's end waits for the worker pool's manager thread (it takes milliseconds)
KEPT = 64  # results kept by the server process (the pages show at most a history's ten campaigns at once)
# Runs of running campaigns whose tables the worker keeps between their analyses (`GrowingTables`, about 75
# bytes a run: 75 MB): a larger campaign is analysed a few cells at a time, its tables not kept. Its kept
# answers add the sample a summary keeps of each cell over 2,048 runs (a table of 2,048 runs, 150 KB; the
# whole analysis held it anyway): a few MB for tens of large cells, at most as much again as the tables.
GROWING_RUNS = 1_000_000

# The worker process's tables of running campaigns, by (store, campaign id, campaign uid), the latest last. In
# the worker alone (the server process never analyses), and only ever an exact copy of what the store holds:
# `GrowingTables` reads on from a cell's last run only where the store still holds exactly those runs.
_growing: OrderedDict[tuple[str, int, str], GrowingTables] = OrderedDict()


class Computing(Exception):
    """What a page needs is being computed in the background: `what` names it, `since_unix_s` when it
    began."""

    def __init__(self, what: str, since_unix_s: float):
        super().__init__(what)
        self.what, self.since_unix_s = what, since_unix_s


@dataclass(frozen=True)
class Stale:
    """A running campaign's last analysis while the one of its runs since is computed."""

    value: object
    runs_then: int


@dataclass(frozen=True)
class _Failed:
    error: BaseException


def _summary(db: str, campaign_id: int):
    import boardlab.summary as summary
    from boardlab.store import Store

    with Store.open(db, create=False, verify=False) as store, store.snapshot():
        # stored by the backfill since the page asked (its analysis waited behind the backfill's): read, not
        # computed again
        growing = _growing_tables(store, campaign_id)
        return summary.summary_of(store, campaign_id, with_document=True, growing=growing)


def _view(db: str, campaign_id: int):
    import boardlab.summary as summary
    from boardlab.store import Store

    with Store.open(db, create=False, verify=False) as store, store.snapshot():
        return summary.analysis_view(store, campaign_id, growing=_growing_tables(store, campaign_id))


def _growing_tables(store, campaign_id: int) -> GrowingTables | None:
    """The tables this worker keeps of the campaign if it is running (new ones at its first analysis here),
    else None, any it kept let go: a running campaign's page is analysed again whenever runs arrive, and then
    reads only the runs stored since (`analysis.cellruns.GrowingTables`)."""
    from boardlab.analysis.cellruns import GrowingTables

    row = store.campaign(campaign_id)
    uid = row["uid"] if "uid" in row.keys() else None
    key = (store.path, campaign_id, uid or "")
    # a store before uids: nothing tells two campaigns apart; a campaign larger than the bound: its analysis
    # reads a few cells at a time (summary.compute's budget) rather than holding every table between two
    if row["status"] != "running" or not uid or store.count_runs(campaign_id) > GROWING_RUNS:
        _growing.pop(key, None)
        return None
    got = _growing.pop(key, None) or GrowingTables()
    _growing[key] = got  # the latest last
    while sum(t.runs for t in _growing.values()) > GROWING_RUNS:  # the latest's runs are within it
        _growing.popitem(last=False)
    return got


def _compare(db: str, ids: tuple[int, int]):
    """The comparison of two campaigns (`compare_campaigns`) from their views (stored, or computed from their
    runs): its permutation p-values (up to 8,000 draws of Yuen's statistic over both arms' runs for each cell
    whose t approximation lands where the correction reads it) take seconds at 10^4 runs a campaign, so
    they run here, not on a page's thread."""
    import boardlab.summary as summary
    from boardlab.analysis import compare_campaigns
    from boardlab.store import Store

    with Store.open(db, create=False, verify=False) as store, store.snapshot():
        a, b = (summary.analysis_view(store, cid) for cid in ids)
        return compare_campaigns(a, b, path_a=store.path, path_b=store.path)


WORKERS = {"summary": _summary, "view": _view, "compare": _compare}


class Background:
    """One server's analyses: `get(kind, campaign_id, version)` -> the value, or raises Computing (having
    started it); a version a page saw before stays until KEPT newer ones pushed it out."""

    def __init__(self, db: str) -> None:
        self._db = db
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = (
            None  # started by `warm` (serve, at its start) or at the first analysis
        )
        self._done: OrderedDict[tuple, object] = OrderedDict()
        self._pending: dict[tuple, tuple[object, float]] = {}  # key -> (future, since)
        self._latest: dict[tuple[str, int], tuple[object, int]] = {}  # (kind, campaign) -> (value, runs)

    def get(self, kind: str, campaign_id, version: tuple, runs: int, *, stale_ok: bool = False,
            given=None, what: str | None = None):  # fmt: skip
        """`given`: what the worker's function takes after the store's path, when not `campaign_id` (a
        comparison's two views); `what`: the words of Computing, when not the campaign's analysis."""
        key = (kind, *version)
        with self._lock:
            if key in self._done:
                self._done.move_to_end(key)
                got = self._done[key]
                if isinstance(got, _Failed):
                    del self._done[key]  # said once; the next view tries again
                    raise got.error
                return got
            since = self._start(key, kind, campaign_id, runs, campaign_id if given is None else given)
            latest = self._latest.get((kind, campaign_id))
        if stale_ok and latest is not None:
            return Stale(latest[0], latest[1])
        raise Computing(what or f"the analysis of campaign {campaign_id} ({runs} runs stored)", since)

    def _start(self, key: tuple, kind: str, campaign_id, runs: int, given) -> float:
        """The future of `key`, submitted if it is not running yet (under the lock); when it began."""
        if key in self._pending:
            return self._pending[key][1]
        future = self._submit(WORKERS[kind], self._db, given)
        since = time.time()
        self._pending[key] = (future, since)
        future.add_done_callback(lambda f: self._finish(key, kind, campaign_id, runs, f))
        return since

    def run(self, fn, *args):
        """The future of `fn(*args)` in the worker process, after the analyses asked before it: the backfill
        (web/backfill.py) submits its steps one at a time, so a page's analysis waits for one at most."""
        with self._lock:
            return self._submit(fn, *args)

    def _submit(self, fn, *args):
        """`fn(*args)` submitted to the worker (under the lock), to a new one if it was killed."""
        from concurrent.futures.process import BrokenProcessPool

        try:
            return self._executor().submit(fn, *args)
        except BrokenProcessPool:  # its worker was killed (out of memory, by hand): a new one
            self._pool = None
            return self._executor().submit(fn, *args)

    def warm(self) -> None:
        """Starts the worker now, from a thread of its own: the first page that needs it (any /compare) would
        otherwise wait for a Python process to start and import boardlab, half a second on a loaded board."""
        threading.Thread(target=self._warm, name="boardlab-warm", daemon=True).start()

    def _warm(self) -> None:
        with self._lock, contextlib.suppress(Exception):  # one that cannot start is said by the page asking
            self._executor()

    def close(self) -> None:
        """Ends the worker now, mid-analysis or not (serve stopping): an exit would otherwise wait for the
        analysis it runs, minutes on a large campaign."""
        from boardlab.platform.spawn import kill_pool

        if self._pool is not None:
            kill_pool(self._pool, CLOSE_WAIT_S)  # not left to end with the exit: a traceback in serve's log

    def _finish(self, key: tuple, kind: str, campaign_id: int, runs: int, future) -> None:
        with self._lock:
            self._pending.pop(key, None)
            error = future.exception()
            if error is not None:  # the page that asks next says it (a damaged store's 503, a bug's 500)
                self._done[key] = _Failed(error)
            else:
                self._done[key] = future.result()
                self._latest[(kind, campaign_id)] = (future.result(), runs)
            while len(self._done) > KEPT:
                self._done.popitem(last=False)

    def _executor(self):
        """The worker pool, started on a thread of its own that lives as long as serve: the worker's
        parent-death signal fires when the thread that forked it ends, and the server's request threads end
        when idle (a worker forked by one died with it, and every later analysis failed)."""
        if self._pool is None:
            started = threading.Event()
            threading.Thread(
                target=self._keep_pool, args=(started,), name="boardlab-analyses", daemon=True
            ).start()
            started.wait()
            if self._pool is None:
                raise RuntimeError("serve's analysis worker could not start")
        return self._pool

    def _keep_pool(self, started: threading.Event) -> None:
        import multiprocessing
        import os
        from concurrent.futures import ProcessPoolExecutor

        from boardlab.platform.spawn import pool_worker_setup

        try:
            # spawn, not fork: the server has threads, and a forked child would inherit their locks
            pool = ProcessPoolExecutor(
                max_workers=1,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=pool_worker_setup,  # it dies with serve
                initargs=(os.getpid(),),
            )
            pool.submit(int).result()  # the worker is forked now, by this thread
            self._pool = pool
        finally:
            started.set()
        threading.Event().wait()  # this thread is the worker's parent for as long as serve runs
