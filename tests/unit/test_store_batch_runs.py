"""Runs stored a few at a time (`Store.record_runs`, one statement per table for the whole batch) make the
same rows as the same runs stored one by one: each part (result, metrics, values, series, histograms,
energy) under its own run's id."""

from __future__ import annotations

import dataclasses
import sqlite3

from boardlab.model.campaign import Cell, ConditionSpec
from boardlab.model.run import GateResult, Histogram, MetricResult, RunEnergy, RunResult
from boardlab.store import Store

TABLES = ("runs", "run_results", "run_metrics", "run_values", "run_series", "run_histograms", "run_energy")
CELLS = (Cell("mem.latency", (("size_bytes", 4096),), "baseline", "ns_per_access"),
         Cell("mem.latency", (("size_bytes", 65536),), "baseline", "ns_per_access"))  # fmt: skip


def _run(cell: Cell, seq: int) -> RunResult:
    """A run whose every part differs from another seq's, so that a part stored under the wrong run shows."""
    values = tuple(10.0 + seq + i / 10 for i in range(3 + seq % 2))
    return RunResult(
        cell_key=cell.key, repetition=seq // 2 + 1, attempt=1, seq=seq,
        started_unix_s=1_700_000_000.0 + seq, wall_ns=1_000_000 + seq, cpu=1, exit_code=0, ok=True,
        valid=seq != 2, invalid_reason=None if seq != 2 else "throttled", value=values[0],
        metrics=(MetricResult("ns_per_access", "ns", False, values, values[0], min(values)),
                 MetricResult(f"extra_{seq}", "ms", True, (), float(seq))),
        iterations_ns=tuple(range(1000 * seq, 1000 * seq + 3)), warmup_iterations=seq, warmup_capped=False,
        rusage={"utime_us": seq, "stime_us": 2 * seq}, gate=GateResult(0.1 * seq, False, "idle"),
        condition_state={"condition": "baseline", "seq": seq}, monitor={"samples": seq, "throttled": False},
        series=tuple((f"cpu{seq % 2}.busy_pct", t * 1_000_000, 10.0 * seq + t) for t in range(seq + 1)),
        histograms=(Histogram(f"lat_{seq}", 1.0, "us", (seq, 1, 2), 0, seq + 3),) if seq % 2 else (),
        worker_json=None if seq == 3 else f'{{"schema": 2, "seq": {seq}}}',
        energy=(RunEnergy("rapl", "counter", seq, seq + 10, 0.5 * seq, 1.0, 2.0, 0.01, 3, None, ("w",)),)
        if seq != 1 else (),
    )  # fmt: skip


def _store(path, batches: list[list[int]]) -> dict[str, list[tuple]]:
    """The runs of `_run(CELLS[seq % 2], seq)`, stored in the given batches: every table's rows."""
    conditions = {"baseline": ConditionSpec("baseline", "baseline", {}, True)}
    with Store.open(path) as store:
        board = store.upsert_board("fp", "board", {"model": "test board"})
        cid = store.create_campaign(
            name="batch", plan_hash="h", plan_source="p.toml", plan_text='name = "batch"\n', board_id=board,
            boardlab_version="0", kern_version="0", root="/", environment={"checks": []},
        )  # fmt: skip
        ids = store.ensure_cells(cid, CELLS, conditions, {c.key: ("ns", False) for c in CELLS})
        for batch in batches:
            runs = [(ids[CELLS[seq % 2].key], _run(CELLS[seq % 2], seq)) for seq in batch]
            assert store.record_runs(cid, runs) == list(range(batch[0] + 1, batch[-1] + 2))
    with sqlite3.connect(path) as conn:
        # sorted: run_values is a WITHOUT ROWID table (stored in its key's order whatever the inserts' order)
        return {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in TABLES}


def test_a_batch_of_runs_stores_the_rows_that_runs_stored_one_by_one_do(tmp_path):
    one_by_one = _store(tmp_path / "one.db", [[0], [1], [2], [3], [4]])
    batched = _store(tmp_path / "batch.db", [[0, 1, 2, 3], [4]])
    for table in TABLES:
        assert batched[table] == one_by_one[table], table
    # each part is its own run's: the run ids the parts name follow the runs, and every seq's part is there
    assert [r[0] for r in batched["run_results"]] == [1, 2, 3, 5]  # seq 3 has no worker result
    assert sorted({r[0] for r in batched["run_histograms"]}) == [2, 4]
    assert sorted({r[0] for r in batched["run_energy"]}) == [1, 3, 4, 5]
    metrics = {(r[0], r[1]) for r in batched["run_metrics"]}
    assert {(seq + 1, f"extra_{seq}") for seq in range(5)} <= metrics


def test_an_empty_part_in_every_run_of_a_batch_is_no_error(tmp_path):
    """A batch with no histogram, energy or series at all: each table's statement gets no rows."""
    conditions = {"baseline": ConditionSpec("baseline", "baseline", {}, True)}
    bare = dataclasses.replace(_run(CELLS[0], 0), series=(), histograms=(), energy=(), worker_json=None)
    with Store.open(tmp_path / "bare.db") as store:
        board = store.upsert_board("fp", "board", {"model": "test board"})
        cid = store.create_campaign(
            name="bare", plan_hash="h", plan_source="p.toml", plan_text='name = "bare"\n', board_id=board,
            boardlab_version="0", kern_version="0", root="/", environment={"checks": []},
        )  # fmt: skip
        ids = store.ensure_cells(cid, CELLS[:1], conditions, {CELLS[0].key: ("ns", False)})
        runs = [(ids[CELLS[0].key], dataclasses.replace(bare, repetition=r)) for r in (1, 2)]
        assert store.record_runs(cid, runs) == [1, 2]
    with sqlite3.connect(tmp_path / "bare.db") as conn:
        counts = [conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES]
    # per run: 2 metrics; 3 iteration times and 3 values of ns_per_access (extra_0 is a single value)
    assert counts == [2, 0, 4, 12, 0, 0, 0]
