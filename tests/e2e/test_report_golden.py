"""The reports of the test suite's stores, byte for byte: a change of the code's shape (the store's parts, the
analysis's model, where a workload's facts come from) must not change one byte of what a user reads.

Each store is made by the suite's own builders (tests/helpers.py: seeded, every run's time synthetic), its
campaign's start and end then set to fixed instants (the builders stamp the wall clock there, as a campaign
does), and `boardlab report` renders it as Markdown, text and HTML in a fresh process, as a user runs it.
Markdown and text are kept whole under tests/fixtures/reports/ (a change reads as a diff); HTML, ~600 KB for
the six, by its SHA-256 in tests/fixtures/reports/html.sha256.

A change that is meant to change a report:
`BOARDLAB_UPDATE_GOLDEN=1 python -m pytest tests/e2e/test_report_golden.py` rewrites the files; the diff of
tests/fixtures/reports/ then belongs in the commit that changed the report.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path

import pytest

from helpers import REPORT_STORES, run_cli

pytestmark = pytest.mark.spawns

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "reports"
HTML_DIGESTS = GOLDEN / "html.sha256"
UPDATE = os.environ.get("BOARDLAB_UPDATE_GOLDEN") == "1"
STORES = REPORT_STORES
STARTED_UNIX_S = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC
FINISHED_UNIX_S = STARTED_UNIX_S + 754.0


def _fixed_times(db: Path) -> None:
    """The builders stamp the campaign's start and end with the wall clock; a report shows both."""
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE campaigns SET started_unix_s=?, finished_unix_s=?", (STARTED_UNIX_S, FINISHED_UNIX_S)
        )
    conn.close()


def _digests() -> dict[str, str]:
    if not HTML_DIGESTS.exists():
        return {}
    pairs = (line.split() for line in HTML_DIGESTS.read_text().splitlines() if line.strip())
    return {name: digest for digest, name in pairs}


def _render(db: Path, fmt: str, out: Path) -> bytes:
    proc = run_cli("report", "--db", str(db), "--format", fmt, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    return out.read_bytes()


@pytest.mark.parametrize("store", sorted(STORES))
def test_report_is_byte_identical_to_the_kept_one(store, tmp_path):
    db = STORES[store](tmp_path / f"{store}.db")
    _fixed_times(db)
    for fmt in ("md", "text"):
        got = _render(db, fmt, tmp_path / f"{store}.{fmt}")
        kept = GOLDEN / f"{store}.{fmt}"
        if UPDATE:
            GOLDEN.mkdir(parents=True, exist_ok=True)
            kept.write_bytes(got)
        assert kept.exists(), (
            f"{kept} missing: make it with BOARDLAB_UPDATE_GOLDEN=1 (see this file's docstring)"
        )
        assert got.decode() == kept.read_text(), (
            f"{store}.{fmt} changed (tmp copy: {tmp_path / f'{store}.{fmt}'})"
        )
    html = _render(db, "html", tmp_path / f"{store}.html")
    digest, name = hashlib.sha256(html).hexdigest(), f"{store}.html"
    if UPDATE:
        kept = _digests() | {name: digest}
        HTML_DIGESTS.write_text("".join(f"{d}  {n}\n" for n, d in sorted(kept.items())))
    assert _digests().get(name) == digest, f"{name} changed: the new one is {tmp_path / name}"


def test_a_changed_report_fails_the_comparison(tmp_path):
    """The check can fail: one cell's stored runs 1.5x slower gives another report."""
    db = STORES["satellite"](tmp_path / "satellite.db")
    _fixed_times(db)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE runs SET value = value * 1.5 WHERE cell_id = (SELECT min(cell_id) FROM runs)")
    conn.close()
    got = _render(db, "md", tmp_path / "satellite.md")
    assert got.decode() != (GOLDEN / "satellite.md").read_text()
