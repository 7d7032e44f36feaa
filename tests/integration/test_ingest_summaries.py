"""The summaries `boardlab ingest` stores (boardlab.summary.KeepBehind): computed beside the copy of the next
file (in a process of their own, or a thread on one core), on a reader's connection, and written by the
ingest. Every campaign copied gets its summary and every step of its history, each computed once; they are
what `keep` computes from the runs, in a process as in a thread; the files committed before a failing one keep
theirs; the process says what failed, and it ends with the ingest however that ends."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from boardlab import summary
from boardlab.analysis.records import ComparisonRow
from boardlab.model.records import from_plain
from boardlab.store import Store
from boardlab.store import ingest as store_ingest

from helpers import alive, make_campaign_db, run_cli
from history_store import make_history_db

pytestmark = pytest.mark.integration


def _ingest_with_summaries(files, db: str, warnings: list[str], *, process: bool = False) -> list:
    behind: list[summary.KeepBehind] = []

    def then(store, result) -> None:
        if not behind:
            behind.append(summary.KeepBehind(db, warnings.append, process=process))
        behind[0].submit(store, result.campaign_ids)

    return store_ingest.ingest_files(
        files, db, then=then, last=lambda store: behind[0].finish(store) if behind else None
    )


def test_every_campaign_and_step_gets_its_summary_computed_once(tmp_path, monkeypatch):
    board = make_history_db(tmp_path / "board.db")  # five campaigns of one plan on one board
    computed: list[int] = []
    compute = summary.compute

    def counting(store, campaign_id):
        computed.append(campaign_id)
        return compute(store, campaign_id)

    monkeypatch.setattr(summary, "compute", counting)  # seen in this process: the thread's way
    warnings: list[str] = []
    lab = tmp_path / "lab.db"
    (result,) = _ingest_with_summaries([board], str(lab), warnings)
    assert warnings == []
    ids = list(result.campaign_ids)
    assert len(ids) == 5 and sorted(computed) == ids  # the summary held for the step after it is reused
    _check_summaries(lab, ids)


def test_a_process_of_their_own_stores_the_same_summaries(tmp_path):
    board = make_history_db(tmp_path / "board.db")
    warnings: list[str] = []
    lab = tmp_path / "lab.db"
    (result,) = _ingest_with_summaries([board], str(lab), warnings, process=True)
    assert warnings == []
    _check_summaries(lab, list(result.campaign_ids))


def test_the_workers_compute_side_by_side_and_a_campaign_waits_for_its_predecessor(tmp_path):
    """Two boards' files: one board's five campaigns each step from the one before, so each waits for it and
    finds its summary held (no summary is computed twice); the other board's campaign runs beside them."""
    board = make_history_db(tmp_path / "board.db")  # five campaigns of one plan on one board
    other = make_campaign_db(tmp_path / "other.db", board="board-z", n=4, with_latency=False)
    lab, warnings, computed = tmp_path / "lab.db", [], []
    behind: list[summary.KeepBehind] = []

    def then(store, result) -> None:
        if not behind:
            keeper = summary.KeepBehind(str(lab), warnings.append, process=True)
            outcome = keeper._outcome

            def recording(cid, keep):  # in the keeper's thread: every summary each outcome carries
                got = outcome(cid, keep)
                computed.extend(s.campaign_id for s in got[1].summaries) if got[1] else computed.append(
                    got[2]
                )
                return got

            keeper._outcome = recording
            behind.append(keeper)
        behind[0].submit(store, result.campaign_ids)

    results = store_ingest.ingest_files(
        [board, other], str(lab), then=then, last=lambda s: behind[0].finish(s)
    )
    assert warnings == []
    assert len(behind[0].workers) == min(summary.SUMMARY_WORKERS, len(os.sched_getaffinity(0)))
    steps, (alone,) = [list(r.campaign_ids) for r in results]
    assert sorted(computed) == sorted([*steps, alone])  # each once: a step never computed its predecessor
    _check_summaries(lab, steps)
    _check_summaries(lab, [alone])


def _check_summaries(lab: Path, ids: list[int]) -> None:
    """Each campaign's stored summary and each step's are what they are computed to be from the runs now."""
    with Store.open(lab, create=False) as store:
        for cid in ids:
            got = summary.stored(store, cid, with_document=True)
            assert got is not None and got.runs_stored == store.count_runs(cid) > 0
            again = summary.compute(store, cid)  # what keep() computes from the runs, now
            assert got.cells_json == again.cells_json and got.document_json == again.document_json
        for a, b in zip(ids, ids[1:], strict=False):
            row = store.step_summary(a, b)
            assert row is not None and (row["runs_from"], row["runs_to"]) == (
                store.count_runs(a),
                store.count_runs(b),
            )
            rows, _comps, _slots = summary.step(
                store, summary.analysis_view(store, a), summary.analysis_view(store, b)
            )
            assert from_plain(list[ComparisonRow], json.loads(row["rows_json"])) == rows


def test_the_files_committed_before_a_failing_one_keep_their_summaries(tmp_path, monkeypatch):
    first = make_campaign_db(tmp_path / "first.db", board="board-a", n=4, with_latency=False)
    second = make_campaign_db(tmp_path / "second.db", board="board-b", n=4, with_latency=False)
    lab = tmp_path / "lab.db"
    shutil.copyfile(make_campaign_db(tmp_path / "seed.db", board="board-c", n=2, with_latency=False), lab)
    ingest_one = store_ingest._ingest

    def second_fails(source, target, src, *rest):
        if src == second:
            raise sqlite3.OperationalError("disk I/O error (injected by the test)")
        return ingest_one(source, target, src, *rest)

    monkeypatch.setattr(store_ingest, "_ingest", second_fails)
    warnings: list[str] = []
    with pytest.raises(Exception, match="injected by the test"):
        _ingest_with_summaries([first, second], str(lab), warnings)
    with Store.open(lab, create=False) as store:
        boards = {store.board(c["board_id"])["label"]: int(c["id"]) for c in store.campaigns()}
        assert set(boards) == {"board-a", "board-c"}  # the second file wrote nothing
        got = summary.stored(store, boards["board-a"])
        assert got is not None and got.runs_stored == store.count_runs(boards["board-a"])
    assert warnings == []


def test_the_cli_stores_the_summaries_of_several_files(tmp_path):
    files = [
        make_campaign_db(tmp_path / f"{b}.db", board=b, n=4, with_latency=False) for b in ("b1", "b2", "b3")
    ]
    lab = tmp_path / "lab.db"
    proc = run_cli("ingest", *map(str, files), "--db", str(lab))
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stderr
    # the summaries' reader closed before the writer: the last connection folded the WAL into the file
    assert not Path(f"{lab}-wal").exists()
    with Store.open(lab, create=False) as store:
        ids = [int(c["id"]) for c in store.campaigns()]
        assert len(ids) == 3
        assert all(summary.stored(store, cid) is not None for cid in ids)


def test_the_process_says_what_failed_and_ends_when_closed(tmp_path):
    lab = make_campaign_db(tmp_path / "lab.db", board="b1", n=4, with_latency=False)
    warnings: list[str] = []
    behind = summary.KeepBehind(str(lab), warnings.append, process=True)
    workers = list(behind.workers)
    assert workers and all(alive(w.pid) for w in workers)
    with Store.open(lab, create=False) as store:
        behind.submit(store, [9999])  # no such campaign: its summary fails in the worker
        behind.finish(store)
    assert len(warnings) == 1 and "campaign 9999" in warnings[0], warnings
    assert [w.exitcode for w in workers] == [0] * len(workers)  # each closed its reader and exited when told
    behind.close()
    assert not any(alive(w.pid) for w in workers)


def test_close_of_busy_workers_leaves_no_pool_thread_for_the_exit_to_race(tmp_path):
    """An ingest that fails (a lost server) closes its summaries mid-task: the killed workers' pools are
    torn down by close, not by their threads at the interpreter's exit, where the teardown raced the exit's
    wake-up of them and printed a traceback one run in many."""
    import threading
    from concurrent.futures.process import _ExecutorManagerThread

    lab = make_campaign_db(tmp_path / "lab.db", board="b1", n=4, with_latency=False)
    behind = summary.KeepBehind(str(lab), print, process=True)
    workers = list(behind.workers)
    assert workers
    for pool in behind._pools:
        pool.submit(time.sleep, 60)
    behind.close()
    assert not any(alive(w.pid) for w in workers)
    assert not [t for t in threading.enumerate() if isinstance(t, _ExecutorManagerThread)]


def test_the_process_dies_with_a_killed_ingest(tmp_path):
    lab = make_campaign_db(tmp_path / "lab.db", board="b1", n=4, with_latency=False)
    # the worker is kept busy (a minute's sleep), so only its death signal (PR_SET_PDEATHSIG) can end it when
    # the ingest is SIGKILLed
    code = (
        "import time\n"
        "from boardlab.summary import KeepBehind\n"
        f"b = KeepBehind({str(lab)!r}, print, process=True)\n"
        "pids = [w.pid for w in b.workers]\n"  # once started
        "for pool in b._pools: pool.submit(time.sleep, 60)\n"
        "print(*pids, flush=True)\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    children: list[int] = []
    try:
        children = [int(pid) for pid in parent.stdout.readline().split()]
        assert children and all(map(alive, children))
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    try:
        deadline = time.monotonic() + 10
        while any(map(alive, children)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(map(alive, children))
    finally:
        for child in filter(alive, children):
            os.kill(child, signal.SIGKILL)


def test_a_summaries_process_that_died_is_said_and_the_ingest_goes_on(tmp_path):
    lab = make_campaign_db(tmp_path / "lab.db", board="b1", n=4, with_latency=False)
    warnings: list[str] = []
    behind = summary.KeepBehind(str(lab), warnings.append, process=True)
    assert behind.workers
    for worker in behind.workers:
        worker.kill()  # as the kernel's OOM killer would
    with Store.open(lab, create=False) as store:
        behind.submit(store, [1])
        behind.finish(store)
    assert len(warnings) == 1 and "campaign 1" in warnings[0] and "process ended" in warnings[0], warnings
    behind.close()


def test_a_worker_that_cannot_start_is_said_and_a_thread_computes_the_summaries(tmp_path, monkeypatch):
    board = make_history_db(tmp_path / "board.db", campaigns=2)

    def no_worker(self, workers: int) -> None:
        raise OSError("too many open files (injected by the test)")

    monkeypatch.setattr(summary.KeepBehind, "_start_pools", no_worker)
    warnings: list[str] = []
    lab = tmp_path / "lab.db"
    (result,) = _ingest_with_summaries([board], str(lab), warnings, process=True)
    assert len(warnings) == 1 and "in a thread (too many open files" in warnings[0], warnings
    _check_summaries(lab, list(result.campaign_ids))
