"""A report that reads its cells a few at a time (`analyze(runs_budget=...)`, what `boardlab report` does) is
the report of the held analysis, byte for byte, for every store of the suite, even when every cell is let go
after each use and read again; and a cell is read once when the budget holds the campaign."""

from __future__ import annotations

import pytest

from boardlab.analysis import analyze
from boardlab.analysis.cellruns import CellTables, StoredRuns, read_table
from boardlab.analysis.runs import RunTable
from boardlab.report.html import render_html
from boardlab.report.markdown import render_markdown
from boardlab.report.terminal import render_text
from boardlab.store import Store

from helpers import REPORT_STORES, make_campaign_db

STORES = REPORT_STORES


def _reports(store: Store, budget: int | None) -> tuple[list[str], CellTables | None]:
    with store.snapshot():
        analysis = analyze(store, 1, runs_budget=budget)
        texts = [render_markdown(analysis), render_text(analysis), render_html(analysis)]
    stored = [c.runs for c in analysis.cells if isinstance(c.runs, StoredRuns)]
    assert len(stored) == (0 if budget is None else len(analysis.cells))
    return texts, stored[0]._tables if stored else None


@pytest.mark.parametrize("name", sorted(STORES))
def test_streamed_cells_give_the_held_report_byte_for_byte(name, tmp_path):
    db = STORES[name](tmp_path / f"{name}.db")
    with Store.open(db, create=False, verify=False) as store:
        held, _ = _reports(store, None)
        ample, tables = _reports(store, 10**9)
        assert tables is not None and tables.reads == len(store.cells(1))  # each cell read once
        starved, tables = _reports(store, 0)
        assert tables is not None and tables.reads > len(store.cells(1))  # read again where used again
    assert ample == held
    assert starved == held


def test_a_cell_read_in_batches_is_the_table_read_whole(tmp_path):
    db = make_campaign_db(tmp_path / "c.db", n=12)
    with Store.open(db, create=False, verify=False) as store:
        for cell in store.cells(1):
            whole = read_table(store.cell_run_batches(cell["id"], batch=10**6))
            batched = read_table(store.cell_run_batches(cell["id"], batch=5))
            assert batched == whole and len(whole) > 5
            assert [p.run_id for p in batched] == [r["id"] for r in store.cell_runs(cell["id"])]


def test_joined_strings_and_integers_take_the_widest_parts():
    small = RunTable.of_points(list(_points(3, big=False)))
    wide = RunTable.of_points(list(_points(2, big=True)))
    joined = RunTable.joined([small, wide])
    assert joined == RunTable.of_points([*small, *wide])
    assert joined.wall_ns.typecode == "q" and small.wall_ns.typecode != "q"
    assert [p.invalid_reason for p in joined] == [None, "slow", None, None, "late"]
    assert joined.invalid_reason.table == (None, "slow", "late")


def _points(n: int, *, big: bool):
    from boardlab.analysis.runs import RunPoint
    from boardlab.stats import RunEnvironment

    for i in range(n):
        yield RunPoint(
            run_id=i + (10 if big else 0), seq=i, repetition=1, value=1.0 + i, valid=i % 2 == 0, ok=True,
            invalid_reason=None if i % 2 == 0 else ("late" if big else "slow"), error=None,
            wall_ns=(2**40 if big else 1000) + i, environment=RunEnvironment(None, None, None),
            warmup_capped=None, user_us=None if i == 1 else 5,
        )  # fmt: skip


@pytest.mark.parametrize("name", ["campaign", "satellite"])
def test_an_analysis_holding_two_cells_reads_each_cell_once(name, tmp_path):
    """The summaries, the comparisons and the A/A controls are computed a baseline and then its conditions
    at a time (`cells_in_pairs`): two cells' runs suffice to read every cell once, but for a cell compared
    with two baselines (a condition's and a `compare` parameter's), read again for its second."""
    db = STORES[name](tmp_path / f"{name}.db")
    with Store.open(db, create=False, verify=False) as store, store.snapshot():
        largest = max(len(store.cell_runs(c["id"])) for c in store.cells(1))
        a = analyze(store, 1, runs_budget=2 * largest)
        tables = a.cells[0].runs._tables  # type: ignore[union-attr]
    bases: dict[str, set[str]] = {}
    for ca in a.comparisons:
        bases.setdefault(ca.cell_key, set()).add(ca.baseline_key)
    again = sum(len(b) - 1 for b in bases.values())
    assert a.comparisons and a.aa_controls
    assert tables.reads == len(a.cells) + again
