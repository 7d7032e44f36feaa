"""An export of more runs than a Parquet row group holds, read back against the store itself: every run
once, in run order, with its values and types (CSV rows; Parquet row groups of at most ROW_GROUP_RUNS)."""

from __future__ import annotations

import csv
import io
import json
import math
import sqlite3

import pytest

from boardlab import export as ex
from boardlab.store import Store

from helpers import make_campaign_db, make_campaign_db_bulk, run_cli

pytestmark = pytest.mark.spawns  # starts processes: not in make test-unit


@pytest.fixture(scope="module")
def bulk(tmp_path_factory):
    """A campaign of a row group and a part of a second (a failed and an invalid run among them), and its
    runs as the store gives them (rusage parsed here, not by the export's reader)."""
    db = make_campaign_db_bulk(tmp_path_factory.mktemp("bulk export") / "bulk.db", ex.ROW_GROUP_RUNS + 700)
    with Store.open(db, create=False) as store:
        runs = [dict(r) for r in store.runs(store.campaigns()[0]["id"])]
    assert ex.ROW_GROUP_RUNS < len(runs) < 2 * ex.ROW_GROUP_RUNS
    return db, runs


def _spots(runs: list[dict]) -> list[int]:
    """Runs to check one by one: the first and last of each row group, the failed run and the invalid one."""
    g = ex.ROW_GROUP_RUNS
    failed = next(i for i, r in enumerate(runs) if not r["ok"])
    invalid = next(i for i, r in enumerate(runs) if r["ok"] and not r["valid"])
    return sorted({0, g - 1, g, len(runs) - 1, failed, invalid})


def test_the_csv_of_many_runs_reads_back_run_for_run(bulk, tmp_path):
    db, runs = bulk
    out = tmp_path / "e.csv"
    proc = run_cli("export", "--db", str(db), "--format", "csv", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    first, rest = out.read_text().split("\n", 1)
    assert first == f"# boardlab export schema {ex.EXPORT_SCHEMA}"
    rows = list(csv.DictReader(io.StringIO(rest)))
    assert len(rows) == len(runs) and list(rows[0]) == list(ex.FIELDS)
    assert [int(r["seq"]) for r in rows] == [r["seq"] for r in runs]
    for i in _spots(runs):
        row, run = rows[i], runs[i]
        assert row["cell"] == run["cell_key"] and row["workload"] == run["workload"]
        assert json.loads(row["params"]) == json.loads(run["params_json"])
        assert row["value"] == ("" if run["value"] is None else repr(run["value"]))
        assert row["valid"] == str(bool(run["valid"])) and row["ok"] == str(bool(run["ok"]))
        assert row["error"] == (run["error"] or "") and row["invalid_reason"] == (run["invalid_reason"] or "")
        assert int(row["user_time_us"]) == json.loads(run["rusage_json"])["utime_us"]
        assert row["system_time_us"] == ""  # not in the stored rusage: empty, as from an older store
        assert row["board"] == "board-a" and row["energy_j"] == "" and row["energy_reason"]


def test_the_parquet_of_many_runs_is_row_groups_of_typed_columns(bulk, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow not installed (the analysis extra)")
    db, runs = bulk
    out = tmp_path / "e.parquet"
    proc = run_cli("export", "--db", str(db), "--format", "parquet", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    f = pq.ParquetFile(out)
    meta = f.metadata
    assert meta.num_rows == len(runs)
    assert meta.num_row_groups == math.ceil(len(runs) / ex.ROW_GROUP_RUNS) == 2
    assert [meta.row_group(g).num_rows for g in range(2)] == [
        ex.ROW_GROUP_RUNS,
        len(runs) - ex.ROW_GROUP_RUNS,
    ]
    types = {name: str(f.schema_arrow.field(name).type) for name in ex.FIELDS}
    assert types["value"] == types["started_unix_s"] == types["energy_j"] == "double"
    assert types["seq"] == types["wall_ns"] == types["user_time_us"] == "int64"
    assert types["valid"] == types["ok"] == types["warmup_capped"] == "bool"
    assert types["params"] == types["cell"] == types["error"] == "string"
    assert f.schema_arrow.metadata[b"boardlab_export_schema"] == str(ex.EXPORT_SCHEMA).encode()
    table = f.read()
    assert table.column("seq").to_pylist() == [r["seq"] for r in runs]
    for i in _spots(runs):
        row, run = table.slice(i, 1).to_pylist()[0], runs[i]
        assert (
            row["value"] == run["value"]
            and row["valid"] is bool(run["valid"])
            and row["ok"] is bool(run["ok"])
        )
        assert (
            row["cell"] == run["cell_key"]
            and row["error"] == run["error"]
            and row["wall_ns"] == run["wall_ns"]
        )
        assert row["user_time_us"] == 1 and row["system_time_us"] is None and row["energy_j"] is None
        assert row["warmup_capped"] is False and row["campaign_id"] == run["campaign_id"]


def test_every_string_a_spreadsheet_would_run_is_neutralized_unless_formulas_are_kept(tmp_path):
    """The CSV's strings are neutralized as they are read (per campaign, cell and run): each one that starts
    like a formula gets its apostrophe, with --csv-formulas none does, and JSON keeps every one as stored."""
    db = make_campaign_db(tmp_path / "c.db", n=2)
    evil = {"error": "=HYPERLINK(1)", "invalid_reason": "+1", "aa_arm": "@A1"}
    con = sqlite3.connect(db)
    with con:
        run_id = con.execute("SELECT min(id) FROM runs").fetchone()[0]
        con.execute(
            "UPDATE runs SET error=?, invalid_reason=?, aa_arm=? WHERE id=?", (*evil.values(), run_id)
        )
        con.execute("UPDATE campaigns SET name='-name'")
        con.execute("UPDATE boards SET label='=board'")
        con.execute(
            "UPDATE cells SET workload='@w' WHERE id=(SELECT cell_id FROM runs WHERE id=?)", (run_id,)
        )
    con.close()
    kept = {**evil, "campaign": "-name", "board": "=board", "workload": "@w"}
    for flags, want in (((), {k: "'" + v for k, v in kept.items()}), (("--csv-formulas",), kept)):
        out = tmp_path / "e.csv"
        proc = run_cli("export", "--db", str(db), "--format", "csv", "-o", str(out), *flags)
        assert proc.returncode == 0, proc.stderr
        rows = list(csv.DictReader(io.StringIO(out.read_text().split("\n", 1)[1])))
        row = next(r for r in rows if r["error"].endswith(kept["error"]))
        assert {k: row[k] for k in kept} == want
    proc = run_cli("export", "--db", str(db), "--format", "json", "-o", str(tmp_path / "e.json"))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "e.json").read_text())
    record = next(r for r in doc["runs"] if r["error"] == kept["error"])
    assert {k: record[k] for k in kept} == kept
