"""A run's summary columns (store migration 9): derived by one function (model.run.run_columns) when a run
is stored, when a store from before migration 9 is migrated or read, and when an older board file is
ingested; verified like every other column."""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest

from boardlab.analysis.core import analyze, latest_campaign_id
from boardlab.model.run import run_columns
from boardlab.store import STORE_SCHEMA, Store
from boardlab.store.ingest import ingest_file
from boardlab.store.migrations import RUN_COLUMNS, column_values
from boardlab.store.verify import DamagedStore

from helpers import RUN_COLUMN_CASES as HOSTILE
from helpers import make_campaign_db, to_schema_8


@pytest.mark.parametrize(("monitor", "rusage", "want"), HOSTILE)
def test_run_columns_are_finite_numbers_and_keep_what_throttled_meant(monitor, rusage, want):
    got = run_columns(monitor, rusage)
    assert got == want
    # exact types: what a REAL / INTEGER column gives back, so a migrated store reads as a new one
    for name in ("mean_freq_khz", "max_temp_mc", "worker_cpu_pct"):
        assert type(getattr(got, name)) in (float, type(None))
    assert type(got.throttled) in (bool, type(None))
    assert all(type(getattr(got, n)) in (int, type(None)) for n in ("user_us", "system_us"))


def _columns(db) -> dict[int, tuple]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(f"SELECT id, {', '.join(RUN_COLUMNS)} FROM runs").fetchall()
    conn.close()
    return {r[0]: tuple(r[1:]) for r in rows}


def _derived(db) -> dict[int, tuple]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT id, monitor_json, rusage_json FROM runs").fetchall()
    conn.close()
    return {i: column_values(run_columns(json.loads(m), json.loads(r or "{}"))) for i, m, r in rows}


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    return make_campaign_db(tmp_path_factory.mktemp("columns") / "board.db", board="cols-1", n=3)


def test_record_run_stores_the_columns_the_function_derives(campaign):
    stored, derived = _columns(campaign), _derived(campaign)
    assert stored == derived
    assert any(v[2] == 1 for v in stored.values()) and any(v[2] == 0 for v in stored.values())
    assert all(v[0] is not None and v[1] is not None and v[4] == 1 for v in stored.values())


def test_a_schema_8_store_is_migrated_with_the_columns_filled_as_the_function_derives(campaign, tmp_path):
    hostile = {i + 1: (mon, ru) for i, (mon, ru, _) in enumerate(HOSTILE)}
    old = to_schema_8(campaign, tmp_path / "old.db", hostile)
    with Store.open(old, create=False) as reader:  # a reader does not migrate: it derives the same
        assert reader.schema_version() == 8
        old_analysis = analyze(reader, latest_campaign_id(reader))
    with Store.open(old) as store:
        assert store.schema_version() == STORE_SCHEMA
    stored = _columns(old)
    assert stored == _derived(old)
    for run_id, (_, _, want) in zip(hostile, HOSTILE, strict=True):
        assert stored[run_id] == column_values(want)
    with Store.open(old, create=False) as reader:
        new_analysis = analyze(reader, latest_campaign_id(reader))
    assert new_analysis == old_analysis


def test_a_damaged_schema_8_store_opened_to_write_names_the_row(campaign, tmp_path):
    old = to_schema_8(campaign, tmp_path / "old.db")
    with sqlite3.connect(old) as conn:
        conn.execute("UPDATE runs SET monitor_json='[1]' WHERE id=5")
    conn.close()
    with pytest.raises(DamagedStore, match=r"\(runs\.monitor_json, row id 5\): not a JSON object"):
        Store.open(old)


def test_ingest_carries_the_columns_and_derives_them_for_an_older_file(campaign, tmp_path):
    old = to_schema_8(campaign, tmp_path / "board-old.db", {2: HOSTILE[2][:2]})
    for name, board_file in (("new", campaign), ("old", old)):
        shared = tmp_path / f"shared-{name}.db"
        ingest_file(board_file, str(shared))
        with sqlite3.connect(shared) as conn:
            assert conn.execute("SELECT count(*) FROM runs").fetchone()[0] == len(_columns(campaign))
        conn.close()
        assert sorted(_columns(shared).values(), key=repr) == sorted(_derived(board_file).values(), key=repr)
    assert column_values(HOSTILE[2][2]) in _columns(tmp_path / "shared-old.db").values()


@pytest.mark.parametrize(
    ("column", "value", "what"),
    [
        ("mean_freq_khz", float("inf"), "not a finite number"),
        ("max_temp_mc", "hot", "not of the column's type"),
        ("worker_cpu_pct", float("-inf"), "not a finite number"),
        ("throttled", 2, "not 0 or 1"),
        ("throttled", 1.5, "not of the column's type"),
        ("user_us", 1.5, "not of the column's type"),
        ("system_us", b"\x01", "not of the column's type"),
    ],
)
def test_a_damaged_summary_column_is_refused_naming_the_place(campaign, tmp_path, column, value, what):
    db = tmp_path / "damaged.db"
    shutil.copy(campaign, db)
    with sqlite3.connect(db) as conn:
        conn.execute(f"UPDATE runs SET {column}=? WHERE id=7", (value,))
    conn.close()
    with pytest.raises(DamagedStore, match=rf"\(runs\.{column}, row id 7\): {what}"):
        Store.open(db, create=False)
