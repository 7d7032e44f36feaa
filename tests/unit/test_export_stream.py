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


def _with(row: tuple, **values) -> tuple:
    return tuple(values.get(f, v) for f, v in zip(ex.FIELDS, row, strict=True))


def test_parquet_row_groups_fill_a_chunk_of_rows_at_a_time_and_read_back_as_written(records, monkeypatch):
    """Groups of ROW_GROUP_RUNS rows built from batches of CHUNK_RUNS (a chunk cut where a group ends, the
    last group and chunk partial), strings buffered as dictionaries: the file reads back with the schema of
    `_arrow_schema()` exactly (strings as strings) and every value, a column empty in the first chunk and
    filled later (an energy figure, an A/A arm, a reason) and one empty in every row included."""
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow not installed (the analysis extra)")
    _, recs = records
    monkeypatch.setattr(ex, "ROW_GROUP_RUNS", 10)
    monkeypatch.setattr(ex, "CHUNK_RUNS", 4)
    rows = [ex._row_of(r) for r in recs[:37]]
    rows[4:] = [
        _with(row, energy_j=i / 8, aa_arm="AB"[i % 2], invalid_reason="outlier" if i % 3 == 0 else None)
        for i, row in enumerate(rows[4:], 4)
    ]
    for written in (rows, []):
        buf = io.BytesIO()
        ex.write_parquet_rows(written, buf)
        f = pq.ParquetFile(io.BytesIO(buf.getvalue()))
        sizes = [f.metadata.row_group(g).num_rows for g in range(f.metadata.num_row_groups)]
        assert sizes == ([10, 10, 10, 7] if written else [])
        assert pq.read_schema(io.BytesIO(buf.getvalue())).equals(ex._arrow_schema(), check_metadata=True)
        table = f.read()
        assert table.schema.equals(ex._arrow_schema(), check_metadata=True)
        assert table.to_pylist() == [dict(zip(ex.FIELDS, row, strict=True)) for row in written]
    assert rows[0][ex.FIELDS.index("energy_j")] is None and rows[0][ex.FIELDS.index("energy_source")] is None


def test_parquet_holds_a_chunk_of_rows_as_tuples_at_most(records, monkeypatch):
    """A row group fills with Arrow batches: no more than a chunk's rows wait as Python tuples (a whole group
    of them did, several times the memory of its columns)."""
    pytest.importorskip("pyarrow.parquet", reason="pyarrow not installed (the analysis extra)")
    _, recs = records
    monkeypatch.setattr(ex, "ROW_GROUP_RUNS", 50)
    monkeypatch.setattr(ex, "CHUNK_RUNS", 4, raising=False)  # an export without chunks holds 49 here
    sink = ex._ParquetSink(io.BytesIO())
    waiting = []
    for r in recs:
        sink.add(ex._row_of(r))
        waiting.append(len(sink.rows))
    sink.close()
    assert max(waiting) == 3 and sink.count == len(recs)


def test_a_row_groups_strings_are_written_with_one_dictionary(records, monkeypatch):
    """Each chunk of a group has a dictionary of its own strings; the group's are unified before it is
    written, or Parquet writes the column chunk as plain strings from the first chunk whose dictionary
    differs: here the group's 12 cell names, 2 strings of 200 characters, are stored once each in the
    dictionary and once more each as the page's minimum and maximum (plain strings: 14 times)."""
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow not installed (the analysis extra)")
    _, recs = records
    monkeypatch.setattr(ex, "ROW_GROUP_RUNS", 12)
    monkeypatch.setattr(ex, "CHUNK_RUNS", 4)
    names = ["a" * 200, "b" * 200]
    rows = [_with(ex._row_of(r), cell=names[i // 4 % 2]) for i, r in enumerate(recs[:12])]
    buf = io.BytesIO()
    ex.write_parquet_rows(rows, buf)
    f = pq.ParquetFile(io.BytesIO(buf.getvalue()))
    assert f.metadata.num_row_groups == 1
    assert f.metadata.row_group(0).column(ex.FIELDS.index("cell")).total_uncompressed_size < 6 * 200
    assert f.read().column("cell").to_pylist() == [r[ex.FIELDS.index("cell")] for r in rows]
