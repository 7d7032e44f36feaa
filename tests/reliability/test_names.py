"""Case 8: names from a plan (or a database someone else wrote) reach terminals, text, Markdown and CSV
as data: control characters escaped, no Markdown link, no spreadsheet formula."""

from __future__ import annotations

import csv
import io
import os

import pytest
from reliability.util import write_plan

from helpers import run_cli

NEWLINE = "evil\nrow"
LINK = "[click](javascript:alert(1))"
FORMULA = '=HYPERLINK("http://example.invalid","x")'


def _toml(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


@pytest.fixture(scope="module")
def evil_db(tmp_path_factory):
    """One campaign for the module: its tests only read it (the run's output, reports, exports)."""
    base = tmp_path_factory.mktemp("names")
    lab = base / "my lab"  # a path with a space, as the function-scoped `lab` gives
    lab.mkdir()
    conditions = "".join(
        f'[[conditions]]\nname = {_toml(n)}\nkind = "baseline"\n' for n in (NEWLINE, LINK, FORMULA)
    )
    plan = write_plan(lab / "evil.toml", name='"x\\u001b[2J"', reps=1, conditions=conditions)
    db = lab / "evil.db"
    env = {**os.environ, "BOARDLAB_STATE_DIR": str(base / "state"), "XDG_CACHE_HOME": str(base / "cache")}
    proc = run_cli("run", str(plan), "--db", str(db), env=env)
    assert proc.returncode == 0, proc.stderr
    return db, proc


def test_run_prints_no_raw_escape_sequence(evil_db):
    _, proc = evil_db
    assert "\x1b" not in proc.stdout + proc.stderr  # before: ESC [2J cleared the screen
    assert "x\\x1b[2J" in proc.stderr  # shown, escaped


def test_text_report_keeps_one_line_per_row(evil_db):
    db, _ = evil_db
    text = run_cli("report", "--db", str(db), "--format", "text").stdout
    assert "evil\\nrow" in text
    assert not any(line.startswith("row") for line in text.splitlines())
    assert "\x1b" not in text


def test_markdown_report_has_no_link_from_a_name(evil_db):
    db, _ = evil_db
    md = run_cli("report", "--db", str(db), "--format", "md").stdout
    assert "](javascript:" not in md
    assert "javascript:" in md  # the name is shown, as text


def test_csv_export_neutralizes_formulas_unless_asked(evil_db):
    db, _ = evil_db

    def conditions(*extra):
        out = run_cli("export", "--db", str(db), "--format", "csv", *extra).stdout
        rows = list(csv.DictReader(io.StringIO(out.split("\n", 1)[1])))
        return {r["condition"] for r in rows}, rows

    safe, rows = conditions()
    assert "'" + FORMULA in safe and FORMULA not in safe
    for r in rows:
        for value in r.values():
            assert not value.startswith(("=", "+", "@")), value
    raw, _ = conditions("--csv-formulas")
    assert FORMULA in raw
