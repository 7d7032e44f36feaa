"""Exports written a run at a time: the same bytes as the whole campaign in memory gave (JSON, CSV), and
Parquet in row groups with each column's type fixed up front."""

from __future__ import annotations

import io
import json

import pytest

from boardlab import export as ex
from boardlab.store import Store

from helpers import make_campaign_db, run_cli

pytestmark = pytest.mark.spawns  # starts processes: not in make test-unit


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    db = make_campaign_db(tmp_path_factory.mktemp("export") / "c.db", n=2)
    with Store.open(db, create=False) as store:
        return db, ex.run_records(store)


def test_json_streamed_is_what_json_dumps_of_the_whole_document_gives(records):
    _, recs = records
    for subset in (recs, recs[:1], []):
        want = (json.dumps({"schema": ex.EXPORT_SCHEMA, "runs": subset}, indent=1) + "\n").encode()
        assert ex.to_json(subset) == want


def test_the_cli_streams_the_same_csv_and_json(records, tmp_path):
    db, recs = records
    for fmt, whole in (("csv", ex.to_csv(recs)), ("json", ex.to_json(recs))):
        out = tmp_path / f"out.{fmt}"
        proc = run_cli("export", "--db", str(db), "--format", fmt, "-o", str(out))
        assert proc.returncode == 0, proc.stderr
        assert out.read_bytes() == whole
        assert not list(tmp_path.glob(".out.*"))  # the temporary file was renamed into place


def test_parquet_is_written_in_row_groups_of_typed_columns(records, monkeypatch):
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow not installed (the analysis extra)")
    _, recs = records
    monkeypatch.setattr(ex, "ROW_GROUP_RUNS", 10)
    f = pq.ParquetFile(io.BytesIO(ex.to_parquet(recs)))
    assert f.metadata.num_row_groups == -(-len(recs) // 10) and f.metadata.num_rows == len(recs)
    table = f.read()
    assert table.schema.field("energy_j").type == "double"  # empty in every run here, typed all the same
    assert table.schema.field("value").type == "double" and table.schema.field("valid").type == "bool"
    rows = table.to_pylist()
    assert [r["seq"] for r in rows] == [r["seq"] for r in recs]
    assert rows[5]["params"] == json.dumps(recs[5]["params"], sort_keys=True)
    assert {k: v for k, v in rows[5].items() if k != "params"} == {
        k: v for k, v in recs[5].items() if k != "params"
    }
