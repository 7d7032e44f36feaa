"""A campaign's summary: what `boardlab serve`'s pages and `boardlab history` need of a campaign, computed
once from its runs and kept in the store (table campaign_summaries), so that a page of a store of millions of
runs reads one row instead of analysing a campaign.

What a summary holds (cells_json and document_json, both written by the record codec of `model.records`):
- what compare and the history read of the campaign's analysis (`analysis.records.KeptAnalysis`, a
  `CampaignView` as the live `CampaignAnalysis` is): its identity, its cells as the analysis made them (every
  run, column by column, and each cell's summary and thresholds), its A/A controls, and its verdict tally for
  the lists of campaigns; so a history's steps and a comparison are judged by the verdict machinery
  (`compare.pair_rows`) exactly as from the analysis, reading the same records;
- the campaign report's document, which `boardlab serve` renders through the same escaping renderer as
  `boardlab report` (`document.from_plain`); no rendered HTML is kept or served.

When: `boardlab run` stores it when the campaign ends, `boardlab ingest` for each campaign it copies (its
`KeepBehind` computes them in a worker process while the ingest copies the next file). A summary
is fresh while the campaign has the runs and the status it was computed at, and it was computed by this code
(`code_fingerprint`: the layout, the verdict rules and boardlab's version); otherwise (a resumed campaign, a
store written before summaries existed, a summary of another build, a damaged row) a reader computes it again
from the runs, as `analyze` does, and does not write it (readers never write). So `boardlab serve` and
`boardlab report` give the same verdicts after an upgrade that changed a rule.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing.process import BaseProcess

    from boardlab.analysis.cellruns import GrowingTables
    from boardlab.analysis.records import ComparisonRow, KeptAnalysis

# 2: each cell carries its thresholds (the plan entry's, or derived by name and said so), which a step
# between two campaigns is judged by; a schema-1 summary is computed again from the runs
# 3: the document is stored as JSON only, rendered when read
# 4: cells_json is the analysis' own records (`KeptAnalysis`, model.records): a schema-3 document
# (StoredCell's fields) is computed again from the runs, never read as one; its "verdicts" tally, read by the
# lists of campaigns whatever the schema, is where and what it was
# 5: a step's rows_json is its `ComparisonRow` records (model.records), not dicts: a schema-4 step is computed
# again from the runs, never read as records
# 6: the document's figures are typed plot specifications (`Figure.spec`, analysis.document.PlotSpec), no
# longer a kind and a dict of arguments: a schema-5 document is computed again from the runs, never misread
# 7: a cell keeps at most COMPARED_RUNS measured runs (`CellAnalysis.compared_runs`: what a comparison reads),
# the others counted; a step's sides say how many runs the test read: a schema-6 summary is computed again
SUMMARY_SCHEMA = 7
FIRST_SUMMARY_STORE = 8  # the store migration that added campaign_summaries
# what decides a summary's contents: the layout here, the statistics, the analysis and its records
CODE_PACKAGES = ("stats", "analysis", "model")


@functools.cache
def code_fingerprint() -> int:
    """A 62-bit fingerprint of the code that computes a summary (kept in the summary tables' `schema` column,
    a 64-bit integer in both stores): SUMMARY_SCHEMA, boardlab's version, and the source of this module and of
    CODE_PACKAGES. A summary computed by another build is stale, whatever its version says: a developer's
    tree and a release with one version number can judge a cell differently."""
    import hashlib
    from pathlib import Path

    from boardlab import __version__

    here = Path(__file__).resolve().parent
    h = hashlib.sha256(f"{SUMMARY_SCHEMA}:{__version__}".encode())
    sources = [Path(__file__).resolve()]
    for package in CODE_PACKAGES:
        sources += sorted((here / package).rglob("*.py")) or sorted((here / package).rglob("*.pyc"))
    for path in sources:
        h.update(path.relative_to(here).as_posix().encode() + b"\0" + path.read_bytes())
    return int.from_bytes(h.digest()[:8], "big") >> 2


def stored_tally(store, campaign_id: int) -> dict | None:
    """The verdict tally of the campaign's stored summary (`analysis.verdicts.verdict_tally`), or None: no
    summary stored, one from before tallies were kept, or one that does not read. Never computed here: a list
    of campaigns reads one row per campaign, it analyses none."""
    if store.schema_version() < FIRST_SUMMARY_STORE:
        return None
    row = store.campaign_summary(campaign_id)
    try:
        got = json.loads(row["cells_json"]).get("verdicts") if row is not None else None
    except (ValueError, TypeError, AttributeError):
        return None
    return got if isinstance(got, dict) else None


# what a list's verdicts cell says of a summary it cannot show as current, and the note under the list that
# says why once (however many rows it applies to)
LIST_NOTES = {
    "not summarized": "not summarized: the campaign is still running, or was stored before summaries were "
    "kept; its page has its verdicts.",
    "summarized before verdict counts": "summarized before verdict counts: its summary was kept by a "
    "boardlab from before verdict counts were kept; its page has its verdicts.",
    "stale": "summary of N runs; M now: the verdicts of a summary computed before the campaign's last runs "
    "were stored; its page analyses every run.",
}


def listed_tally(store, campaign_id: int) -> tuple[dict | None, dict | None, str, str | None]:
    """What a list of campaigns shows of one campaign's verdicts, from its stored summary alone (a list
    analyses nothing): (the tally or None, the summary's run counts {"runs", "runs_now"} or None, the words of
    its cell, the key of its note in LIST_NOTES or None). A summary of fewer runs than the campaign now stores
    is said to be stale, with both counts; one from before tallies were kept says so. The campaign's own page
    analyses it whenever its summary is not fresh, so that is where each note sends the reader."""
    from boardlab.analysis.verdicts import tally_words

    row = store.campaign_summary(campaign_id) if store.schema_version() >= FIRST_SUMMARY_STORE else None
    if row is None:
        return None, None, "not summarized", "not summarized"
    runs = {"runs": row["runs_stored"], "runs_now": store.count_runs(campaign_id)}
    tally = stored_tally(store, campaign_id)
    if tally is None:
        return None, runs, "summarized before verdict counts", "summarized before verdict counts"
    if runs["runs"] != runs["runs_now"]:
        return (
            tally,
            runs,
            f"{tally_words(tally)} (summary of {runs['runs']} runs; {runs['runs_now']} now)",
            "stale",
        )
    return tally, runs, tally_words(tally), None


@dataclass(frozen=True)
class Summary:
    """A campaign's summary, stored or just computed."""

    campaign_id: int
    runs_stored: int
    status: str
    cells_json: str
    document_json: str | None  # None when read without the document
    stored: bool  # read from the store (False: computed now from the runs)

    def view(self) -> KeptAnalysis:
        """What compare and history read of the campaign: its analysis as the summary keeps it."""
        from boardlab.analysis.records import KeptAnalysis
        from boardlab.model.records import from_plain

        return from_plain(KeptAnalysis, json.loads(self.cells_json))


def compute(store, campaign_id: int, *, growing: GrowingTables | None = None) -> Summary:
    """The summary from the campaign's runs (the analysis and the report's document); `growing`: the tables
    of the campaign's last analysis, read on from there (`analysis.cellruns.GrowingTables`)."""
    from boardlab.analysis.cellruns import REPORT_RUNS_BUDGET, remember_with
    from boardlab.analysis.core import analyze
    from boardlab.analysis.sections import build_document
    from boardlab.analysis.verdicts import verdict_tally
    from boardlab.model.records import to_plain

    runs = store.count_runs(campaign_id)
    # a campaign's tables read a cell at a time, as `boardlab report` reads them (memory by its largest cells:
    # a campaign of 10^7 runs held whole is 750 MB of tables), unless the caller keeps them all (`growing`)
    budget = None if growing is not None else REPORT_RUNS_BUDGET
    analysis = analyze(store, campaign_id, growing=growing, runs_budget=budget)
    document = build_document(analysis, None)
    kept = analysis.kept(runs, verdict_tally(analysis), remember=remember_with(growing))
    return Summary(
        campaign_id, runs, analysis.status, json.dumps(to_plain(kept), allow_nan=False),
        json.dumps(to_plain(document), allow_nan=False), stored=False,
    )  # fmt: skip


def document_of(s: Summary):
    """The report document of a summary read with its document, as `analysis.sections.build_document` made
    it (`document.from_plain`)."""
    from boardlab.analysis.document import from_plain

    assert s.document_json is not None, "read the summary with_document=True"
    return from_plain(json.loads(s.document_json))


def _current(store, s: Summary) -> bool:
    """Whether a summary was computed at the campaign's status and run count as stored now."""
    row = store.campaign(s.campaign_id)
    return s.status == row["status"] and s.runs_stored == store.count_runs(s.campaign_id)


def stored(store, campaign_id: int, *, with_document: bool = False) -> Summary | None:
    """The campaign's stored summary if it is fresh (same runs, same status, computed by this code) and reads
    back, else None: a damaged row is a cache to compute again, not an error of the campaign."""
    got = _fresh(store, campaign_id, with_document)
    return None if got is None else got[0]


def stored_view(store, campaign_id: int) -> KeptAnalysis | None:
    """The view (`Summary.view`) of the campaign's fresh stored summary, or None: decoded once, where
    `stored(...).view()` decodes it twice (the check that it reads back, then the view), a tenth of a second
    each at 10^4 runs."""
    got = _fresh(store, campaign_id, False)
    return None if got is None else got[1]


def _fresh(store, campaign_id: int, with_document: bool) -> tuple[Summary, KeptAnalysis] | None:
    """`stored`'s summary and its view, as decoded to check that it reads back."""
    if store.schema_version() < FIRST_SUMMARY_STORE:
        return None
    row = store.campaign_summary(campaign_id, with_document=with_document)
    if row is None or row["schema"] != code_fingerprint():
        return None
    s = Summary(
        campaign_id, row["runs_stored"], row["status"], row["cells_json"],
        row["document_json"] if with_document else None, stored=True,
    )  # fmt: skip
    view = _read_back(s) if _current(store, s) else None
    return None if view is None else (s, view)


def _read_back(s: Summary) -> KeptAnalysis | None:
    """The view of a stored summary if its JSON decodes into what its readers build (a row damaged on disk, or
    by a hand, does not), else None."""
    try:
        view = s.view()
        if s.document_json is not None:
            document_of(s)
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    return view


def summary_of(
    store, campaign_id: int, *, with_document: bool = False, growing: GrowingTables | None = None
) -> Summary:
    """The fresh stored summary, or one computed now (not written: the caller may be a reader)."""
    got = stored(store, campaign_id, with_document=with_document)
    return got if got is not None else compute(store, campaign_id, growing=growing)


def analysis_view(store, campaign_id: int, *, growing: GrowingTables | None = None) -> KeptAnalysis:
    """What history and compare read of a campaign, from its summary (stored or computed now): a stored one
    decoded once (`stored_view`), not checked by decoding and then decoded again."""
    got = stored_view(store, campaign_id)
    return got if got is not None else compute(store, campaign_id, growing=growing).view()


# ---- a history's steps -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StepRow:
    """A history step as the store keeps it (`put_step_summary`): campaign `to_id` against `from_id`."""

    from_id: int
    to_id: int
    runs_from: int  # the campaigns' runs when it was computed: a step of other counts is computed again
    runs_to: int
    rows_json: str
    comparisons_json: str


def _rows(rows_json: str) -> list[ComparisonRow]:
    """A step's rows as stored (`_computed_step`)."""
    from boardlab.analysis.records import ComparisonRow
    from boardlab.model.records import from_plain

    return from_plain(list[ComparisonRow], json.loads(rows_json))


def _step_from_row(row) -> tuple[list[ComparisonRow], list, list]:
    from boardlab.model.records import from_plain
    from boardlab.stats.compare import Comparison

    comps = json.loads(row["comparisons_json"])
    return _rows(row["rows_json"]), from_plain(list[Comparison], comps["comparisons"]), comps["slots"]


def _stored_step(store, a: KeptAnalysis, b: KeptAnalysis, runs: tuple[int, int]) -> tuple | None:
    """The step stored for these campaigns at these run counts by this code, or None."""
    if store.schema_version() < FIRST_SUMMARY_STORE:
        return None
    row = store.step_summary(a.campaign_id, b.campaign_id)
    if row is None or row["schema"] != code_fingerprint() or (row["runs_from"], row["runs_to"]) != runs:
        return None
    with contextlib.suppress(ValueError, TypeError, KeyError):  # a damaged row: computed again
        return _step_from_row(row)
    return None


def _computed_step(a: KeptAnalysis, b: KeptAnalysis, runs: tuple[int, int]) -> tuple[StepRow, list, list]:
    """The step computed now: its row to store, and its comparisons and slots as computed."""
    from boardlab.analysis.history import step_pair
    from boardlab.model.records import to_plain

    rows, comps, slots = step_pair(a, b)
    comps_json = json.dumps({"comparisons": to_plain(comps), "slots": slots}, allow_nan=False)
    rows_json = json.dumps(to_plain(rows), allow_nan=False)
    return StepRow(a.campaign_id, b.campaign_id, *runs, rows_json, comps_json), comps, slots


def step(store, a: KeptAnalysis, b: KeptAnalysis) -> tuple[list[ComparisonRow], list, list]:
    """Campaign b against the campaign a before it: `compare.pair_rows`' (rows, comparisons, slots), not yet
    corrected. Read from the store when stored for these run counts, else computed (a reader does not write
    it: `keep` does)."""
    runs = (a.runs_stored, b.runs_stored)  # current: read fresh, or computed, in this snapshot
    got = _stored_step(store, a, b, runs)
    if got is not None:
        return got
    row, comps, slots = _computed_step(a, b, runs)
    return _rows(row.rows_json), comps, slots  # read back as stored: the same rows whichever way it came


def steps(store, views: Sequence[KeptAnalysis]) -> list[tuple[list, list, list]]:
    """The steps between one board's consecutive campaigns (`step`: stored, or computed now), as
    `analysis.history.build_history` takes them."""
    return [step(store, a, b) for a, b in itertools.pairwise(views)]


# ---- keeping them ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Kept:
    """What keeping one campaign's summary writes: the summaries computed now (its own, and that of the
    campaign before it when none was fresh) and the step between the two when none was stored. Plain data:
    computed on any connection (a worker process's reader too) and written by the writer (`write`)."""

    summary: Summary  # the campaign's, stored or computed now
    summaries: tuple[Summary, ...]  # to write
    steps: tuple[StepRow, ...]  # to write

    def write(self, store) -> None:
        schema = code_fingerprint()
        for s in self.summaries:
            store.put_campaign_summary(
                s.campaign_id, schema=schema, runs_stored=s.runs_stored, status=s.status,
                cells_json=s.cells_json, document_json=s.document_json or "",
            )  # fmt: skip
        for r in self.steps:
            store.put_step_summary(r.from_id, r.to_id, schema=schema, runs_from=r.runs_from,
                                   runs_to=r.runs_to, rows_json=r.rows_json,
                                   comparisons_json=r.comparisons_json)  # fmt: skip


def to_keep(store, campaign_id: int, held: Mapping[int, Summary] | None = None) -> Kept:
    """What `keep` writes for the campaign: its summary and its history step from the campaign of its plan and
    board before it, each unless stored fresh. `held`: summaries this keeper computed before and the writer
    has not written yet, read as stored ones (a campaign after its predecessor in one ingest)."""
    new: list[Summary] = []

    def summary(cid: int) -> tuple[Summary, KeptAnalysis | None]:
        """The summary, and its view where reading it back decoded one (a stored summary's: decoding it again
        for the step took as long, a tenth of a second for a large predecessor)."""
        got = (held or {}).get(cid)
        if got is not None and _current(store, got):
            return got, None
        fresh = _fresh(store, cid, False)
        if fresh is not None:
            return fresh
        got = compute(store, cid)
        new.append(got)
        return got, None

    s, s_view = summary(campaign_id)
    before = store.previous_campaign(campaign_id)
    new_steps: tuple[StepRow, ...] = ()
    if before is not None:
        p, p_view = summary(before)
        a = p_view if p_view is not None else p.view()
        b = s_view if s_view is not None else s.view()
        runs = (a.runs_stored, b.runs_stored)  # current: read fresh, or computed, in this snapshot
        if _stored_step(store, a, b, runs) is None:
            new_steps = (_computed_step(a, b, runs)[0],)
    return Kept(s, tuple(new), new_steps)


def keep(store, campaign_id: int) -> Summary:
    """Computes and stores the campaign's summary unless a fresh one is stored, and its history step from the
    campaign of its plan and board before it (a writer's store)."""
    kept = to_keep(store, campaign_id)
    kept.write(store)
    return kept.summary


def keep_missing(store, *, limit: int = 1000) -> list[int]:
    """Stores the summary of every ended campaign lacking a fresh one (up to `limit`); returns their ids."""
    ids = store.campaigns_without_fresh_summary(code_fingerprint(), limit=limit)
    for cid in ids:
        keep(store, cid)
    return ids


__all__ = [
    "SUMMARY_SCHEMA",
    "Summary",
    "analysis_view",
    "keep",
    "keep_missing",
    "summary_of",
]


def _kept(db: str, campaign_id: int, held: dict[int, Summary]) -> Kept:
    """`to_keep` on a reader's connection of its own, in one snapshot: a `KeepBehind`'s task, run in its
    worker process (or its thread)."""
    from boardlab.store import Store

    with Store.open(db, create=False, verify=False) as store, store.snapshot():
        return to_keep(store, campaign_id, held)


# worker processes at most: an ingest's copy and two analyses keep two cores busy (the copy waits on its disk)
SUMMARY_WORKERS = 2


class KeepBehind:
    """`keep_after` for a writer with more to write (an ingest of several files): each campaign's summary is
    computed beside the writer, on a reader's connection to the same store, while the writer copies the next
    file, and written by the writer between its files and at the end (`finish`).

    Where: in worker processes (`concurrent.futures`, SUMMARY_WORKERS or as many as the cores this process may
    run on, if fewer) when there is more than one core, else in a thread. The analysis is Python, and a
    thread of it holds Python's one lock against the writer's own Python (the rows it hands to PostgreSQL's
    COPY): into PostgreSQL, ten files of 10^4 runs took 9.5 s with the summaries in a thread
    against 6.8 s without them; in a process they overlap. On one core a process would only add its start.
    Two workers: into a lab's nightly store of 10^7 runs, ten files' summaries and history steps were 4 s of
    one worker's CPU against 2 s of the copy's, so one worker was what the ingest waited for.

    The reader sees what the writer committed (SQLite's WAL, or PostgreSQL); each campaign is read in one
    snapshot. This object's thread hands the campaigns to the workers and keeps what came back until the
    writer wrote it (`held`). A campaign whose predecessor (its plan's campaign on its board before it) is
    still being computed waits for it, so its step finds that summary rather than computing it again; others
    run side by side. Ctrl-C does not wait for an analysis (the thread is a daemon, the workers are killed by
    `close` and die with this process however it ends), and a summary not written is computed by readers."""

    def __init__(self, db: str, warn, *, process: bool | None = None):
        import os
        import queue
        import threading

        cores = len(os.sched_getaffinity(0))
        if process is None:
            process = cores > 1
        self._db, self._warn = db, warn
        self._pools: list[ProcessPoolExecutor] = []
        self._workers: list[BaseProcess] = []  # the worker processes, none in a thread
        self._held: dict[int, Summary] = {}  # computed, not yet written (under _lock)
        self._lock = threading.Lock()
        # what the thread acts on, in order: ("task", cid, predecessor), ("done", future, cid, pool), None
        self._events: queue.Queue = queue.Queue()
        self._done: queue.Queue = queue.Queue()
        self._pending = 0
        # the workers start in this object's thread while the writer goes on to its next file (their start,
        # Python and boardlab's imports, took 0.5 s the writer waited for); `close` waits for it
        self._started = threading.Event()
        workers = min(SUMMARY_WORKERS, cores) if process else 0
        self._thread = threading.Thread(
            target=self._work, args=(workers,), name="boardlab-summaries", daemon=True
        )
        self._thread.start()

    @property
    def workers(self) -> list[BaseProcess]:
        """The worker processes (none where the summaries are computed in a thread), once started."""
        self._started.wait()
        return self._workers

    def _start_pools(self, workers: int) -> None:
        """The workers, a pool of one each, started by this object's thread: a worker's death signal follows
        the thread that started it, and this one lives as long as the pools."""
        import multiprocessing
        import os
        from concurrent.futures import ProcessPoolExecutor

        from boardlab.platform.spawn import pool_worker_setup

        for _ in range(workers):
            # spawn, not fork: the writer has threads, and a forked child would inherit their locks
            pool = ProcessPoolExecutor(
                max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                initializer=pool_worker_setup, initargs=(os.getpid(),),
            )  # fmt: skip
            self._pools.append(pool)
            pool.submit(int).result()  # started now, by this thread
            self._workers.append(next(iter(pool._processes.values())))

    def _work(self, workers: int) -> None:
        try:
            self._start_pools(workers)
        except Exception as exc:  # noqa: BLE001 - no worker to be had (fds, memory, one that did not start)
            from boardlab.platform.spawn import kill_pool

            for pool in self._pools:  # ended here, not left to end with the exit (kill_pool)
                kill_pool(pool)
            self._pools, self._workers = [], []
            self._warn(f"the campaign summaries are computed beside the copy in a thread ({exc})")
        finally:
            self._started.set()
        try:
            if self._pools:
                self._dispatch()
            else:
                while (event := self._events.get()) is not None:
                    cid = event[1]
                    self._done.put(self._outcome(cid, functools.partial(self._kept_here, cid)))
        finally:
            for pool in self._pools:
                pool.shutdown(wait=True, cancel_futures=True)

    def _dispatch(self) -> None:
        """Hands each campaign to a free worker once its predecessor is done; ends after `finish`'s None
        with nothing left waiting or running."""
        waiting: list[tuple[int, int | None]] = []
        running: set[int] = set()  # campaign ids being computed
        free = list(range(len(self._pools)))
        ending = False
        while not ending or waiting or running:
            event = self._events.get()
            if event is None:
                ending = True
            elif event[0] == "task":
                waiting.append(event[1:])
            else:
                _, future, cid, pool = event
                running.discard(cid)
                self._done.put(self._outcome(cid, functools.partial(self._result, future, pool)))
                if self.workers[pool].exitcode is None:  # a worker that died takes no more
                    free.append(pool)
            self._start_ready(waiting, running, free)

    def _start_ready(self, waiting: list, running: set[int], free: list[int]) -> None:
        """Starts the waiting campaigns, in order, whose predecessor is neither waiting before them nor
        running, while a worker is free. With none free and none running (every worker died), each fails as
        the first did; a running one's end comes back as an event."""
        ahead: set[int] = set()
        for item in list(waiting):
            cid, before = item
            # a campaign in two files of one ingest (the same file twice, or a copy and its grown copy) is
            # queued twice: the second waits for the first, whose end else took it off `running` while it
            # ran, so the dispatch ended without its result and `finish` waited for ever
            if before in running or before in ahead or cid in running or cid in ahead:
                ahead.add(cid)
                continue
            if not free and running:
                return
            waiting.remove(item)
            if not free:
                self._done.put(self._outcome(cid, self._ended))
                continue
            pool = min(free)
            free.remove(pool)
            try:
                future = self._pools[pool].submit(_kept, self._db, cid, self._snapshot())
            except Exception:  # noqa: BLE001 - its pool found the worker dead: said, and the pool takes no more
                self._done.put(self._outcome(cid, functools.partial(self._ended, pool)))
                continue
            running.add(cid)
            future.add_done_callback(functools.partial(self._finished, cid, pool))

    def _finished(self, cid: int, pool: int, future) -> None:
        """A worker's future is done (called in the pool's thread): an event for this object's thread."""
        self._events.put(("done", future, cid, pool))

    def _kept_here(self, cid: int) -> Kept:
        return _kept(self._db, cid, self._snapshot())

    def _snapshot(self) -> dict[int, Summary]:
        with self._lock:
            return dict(self._held)

    def _result(self, future, pool: int) -> Kept:
        from concurrent.futures.process import BrokenProcessPool

        try:
            return future.result()
        except BrokenProcessPool:  # killed (out of memory, by hand, by close): its later ones say so too
            return self._ended(pool)

    def _ended(self, pool: int = 0) -> Kept:
        raise RuntimeError(f"the summaries' process ended (exit code {self.workers[pool].exitcode})")

    def _outcome(self, cid: int, keep) -> tuple[int, Kept | None, Exception | None]:
        """(cid, what `keep()` gave, None) or (cid, None, what it raised); held until written if it gave."""
        try:
            kept = keep()
        except Exception as exc:  # noqa: BLE001 - said by the writer's thread, as keep_after does
            return cid, None, exc
        with self._lock:  # without their documents: the held are read for the steps after them
            self._held.update(
                (s.campaign_id, dataclasses.replace(s, document_json=None)) for s in kept.summaries
            )
        return cid, kept, None

    def submit(self, store, campaign_ids) -> None:
        """After a file's commit: writes the summaries ready by now and queues these campaigns'."""
        self._write(store, block=False)
        for cid in campaign_ids:
            self._pending += 1
            self._events.put(("task", cid, store.previous_campaign(cid)))

    def finish(self, store) -> None:
        """Waits for the queued summaries and writes them; ends the thread and the workers, whose readers
        closed before the writer closes: the writer, the store's last connection, then checkpoints SQLite's
        WAL into the file and removes it (a reader closing last cannot, and a copy of the .db alone would
        lack the ingest)."""
        self._events.put(None)
        self._write(store, block=True)
        self._thread.join()

    def close(self) -> None:
        """Ends the summaries' workers and their pools now, done or not (an ingest that failed or was
        interrupted), once started: none is left behind, and no pool left to end with the interpreter's exit
        (kill_pool: that printed a traceback after the ingest's own message, one failed ingest in many)."""
        from boardlab.platform.spawn import kill_pool

        self._started.wait()
        for pool in self._pools:
            kill_pool(pool)

    def _write(self, store, *, block: bool) -> None:
        import queue

        while self._pending:
            try:
                cid, kept, exc = self._done.get(block=block)
            except queue.Empty:
                return
            self._pending -= 1
            try:
                if exc is not None:
                    raise exc
                kept.write(store)
            except Exception as err:  # noqa: BLE001 - the runs are stored; only the shortcut is missing
                _warn_unkept(self._warn, cid, err)
            else:
                with self._lock:  # committed: a reader finds them in the store now
                    for s in kept.summaries:
                        self._held.pop(s.campaign_id, None)


def _warn_unkept(warn, cid: int, exc: Exception) -> None:
    warn(f"campaign {cid}: its summary for `boardlab serve` and `history` was not stored ({exc}); they "
         "will compute it from the runs")  # fmt: skip


def keep_after(store, campaign_ids, warn) -> None:
    """Stores the summaries of campaigns just written (a run's end, an ingest): a failure is said through
    `warn` and leaves the campaign without one (readers then compute it), never undoing what was written."""
    for cid in campaign_ids:
        try:
            keep(store, cid)
        except Exception as exc:  # noqa: BLE001 - the runs are stored; only the shortcut to them is missing
            _warn_unkept(warn, cid, exc)


# ---- serve's backfill (web/backfill.py): each step runs in serve's worker process --------------------------

BACKFILL_LIMIT = 100_000  # campaigns listed at once: a lab's years of nightly campaigns on ten boards


def to_backfill(db: str) -> tuple[list[int], int]:
    """(the ended campaigns of the store at `db` without a summary of this code at their status, newest first;
    how many campaigns have ended): what `boardlab serve` computes and stores in the background. A bounded
    number of queries over the campaigns and the summaries' keys, none over the runs (`Store.open` without
    its full check), so it is as quick on ten million runs as on ten."""
    from boardlab.store import Store

    with Store.open(db, create=False, verify=False) as store, store.snapshot():
        summaries = store.schema_version() >= FIRST_SUMMARY_STORE
        return store.campaigns_to_backfill(code_fingerprint(), limit=BACKFILL_LIMIT, summaries=summaries)


def kept_of(db: str, campaign_id: int) -> Kept:
    """What keeping the campaign's summary writes (`to_keep`: its summary, its predecessor's, the step between
    them, each unless stored fresh), computed on a reader's connection in one snapshot."""
    return _kept(db, campaign_id, {})


class _Held(Exception):
    """Another writer holds the store: `who` (its pid and command line)."""


def write_kept(db: str, kept: Kept, checked: bool) -> str | None:
    """Writes `kept` into the store at `db` as `keep` does, unless another writer holds it (a campaign
    running, an ingest): then nothing is written and who holds it is returned, at once (a campaign is never
    kept waiting for a summary). Only what is still current is written: a campaign resumed since it was
    computed gets its own summary from its runner when it ends, which a late write must not replace.
    `checked`: the store's full check passed, so the writer's open skips SQLite's quick check (every page
    read, with the lock held). Each summary and step is one transaction: a kill leaves the store valid."""
    from boardlab.store import Store

    def refuse(who: str) -> None:
        raise _Held(who)

    try:
        store = Store.open(db, wait=refuse, quick_check=not checked)
    except _Held as held:
        return str(held)
    with store:
        current = Kept(
            kept.summary,
            tuple(s for s in kept.summaries if _current(store, s)),
            tuple(r for r in kept.steps
                  if (r.runs_from, r.runs_to) == (store.count_runs(r.from_id), store.count_runs(r.to_id))),
        )  # fmt: skip
        current.write(store)
    return None
