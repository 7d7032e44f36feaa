"""`boardlab ingest` makes a temporary directory only for a hyperfine export it converts: an ingest of
results databases (every fleet run's, every lab's nightly one) makes none, so a SIGKILLed one leaves nothing
in TMPDIR; a converted export's directory is removed when the ingest ends."""

from __future__ import annotations

import contextlib
import json
import tempfile

from boardlab.cli.ingest import _converted

EXPORT = {
    "results": [
        {"command": "true", "mean": 0.001, "stddev": 0.0, "median": 0.001, "user": 0.0, "system": 0.0,
         "min": 0.001, "max": 0.001, "times": [0.001, 0.001], "exit_codes": [0, 0]}
    ]
}  # fmt: skip


def test_results_databases_make_no_temporary_directory(tmp_path, monkeypatch):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    db = tmp_path / "board.db"
    db.write_bytes(b"SQLite format 3\x00")  # what ingest reads as a database (checked later, by the store)
    with contextlib.ExitStack() as stack:
        assert _converted([str(db)], stack) == [db]
        assert list(scratch.iterdir()) == []


def test_a_hyperfine_export_is_converted_in_a_directory_removed_at_the_end(tmp_path, monkeypatch):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    export = tmp_path / "hf.json"
    export.write_text(json.dumps(EXPORT))
    with contextlib.ExitStack() as stack:
        (converted,) = _converted([str(export)], stack)
        assert converted.parent.parent == scratch and converted.name == "0-hyperfine.db"
        assert converted.stat().st_size > 0
    assert list(scratch.iterdir()) == []
