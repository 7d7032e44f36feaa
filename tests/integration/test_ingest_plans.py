"""What an ingest asks of a store that already holds runs: every statement it runs on the store reads the
stored runs and their rows (runs, run_metrics, run_values, run_series, run_histograms, run_energy), and a
campaign's artifacts, through an index, never by a scan, so an ingest into a store of 10^6 runs copies as fast
as into a new one (measured by bench/bench_scale.py's "ingest, full store" and bench_ingest.py --into). Each
statement is taken as the store's connection ran it (sqlite3's trace, its values bound) and its plan read back
(EXPLAIN QUERY PLAN) with the board's file attached and the ingest's temporary maps made, as during the
ingest."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from boardlab.model.facts import WORKLOAD_FACTS
from boardlab.store import STORE_SCHEMA, Store
from boardlab.store.ingest import MARK_PREFIX, ingest_files

from helpers import CAMPAIGN_COUNTS, make_campaign_db, results_in_runs

pytestmark = pytest.mark.integration

RUN_TABLES = {"runs", "run_metrics", "run_values", "run_series", "run_histograms", "run_energy"}
_SOURCE = re.compile(
    r"\b(?:FROM|JOIN)\s+(?:(\w+)\.)?(\w+)(?:\s+(?:AS\s+)?(?!(?:ON|WHERE|JOIN|ORDER|GROUP|LIMIT)\b)(\w+))?",
    re.I,
)


def _statements_on_the_store(monkeypatch, files: list[Path], lab: Path) -> list[str]:
    seen: list[str] = []
    open_writer = Store.__dict__["_open_writer"].__func__

    def traced(cls, *args, **kwargs):
        store = open_writer(cls, *args, **kwargs)
        store.conn.set_trace_callback(seen.append)
        return store

    monkeypatch.setattr(Store, "_open_writer", classmethod(traced))
    ingest_files(files, str(lab))
    monkeypatch.undo()
    return seen


def _scans_of_stored_runs(lab: Path, src: Path, statements: list[str]) -> list[tuple[str, str]]:
    """(statement, plan line) of each scan of a main run table in the statements' plans."""
    conn = sqlite3.connect(lab)
    conn.execute("ATTACH DATABASE ? AS src", (str(src),))
    for name in ("ingest_cells", "ingest_runs"):
        conn.execute(f"CREATE TEMP TABLE {name} (old INTEGER PRIMARY KEY, new INTEGER)")
    found = []
    for sql in statements:
        if sql.split()[0].upper() not in ("SELECT", "INSERT", "UPDATE", "DELETE"):
            continue
        main = {alias or table for schema, table, alias in _SOURCE.findall(sql)
                if (schema or "main").lower() == "main" and table in RUN_TABLES}  # fmt: skip
        main |= {f"main.{t}" for t in main}
        for line in (row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql)):
            words = line.split()
            # a SCAN, or a SEARCH of an index with no constraint on it (a WITHOUT ROWID table's primary key
            # read whole); "SEARCH t" alone is min()/max() of its rowid, one seek
            whole = words[0] == "SCAN" or (words[0] == "SEARCH" and "USING" in words and "(" not in line)
            if whole and words[1] in main:
                found.append((sql[:200], line))
    conn.close()
    return found


def test_an_ingest_reads_the_stored_runs_by_their_indexes_only(tmp_path, monkeypatch):
    a = make_campaign_db(tmp_path / "a.db", board="board-a", n=4, with_latency=False)
    b = make_campaign_db(tmp_path / "b.db", board="board-b", n=4, with_latency=False)
    lab = tmp_path / "lab.db"
    ingest_files([a], str(lab))  # the store holds runs: the next ingests add to them
    # a new campaign (every run of the file new)
    statements = _statements_on_the_store(monkeypatch, [b], lab)
    assert any("INSERT INTO main.run_series" in s for s in statements)  # the copy itself was seen
    assert _scans_of_stored_runs(lab, b, statements) == []
    # a campaign the store holds without its watermark: the file's runs compared with the stored ones
    conn = sqlite3.connect(lab)
    with conn:
        conn.execute("DELETE FROM meta WHERE key LIKE ?", (MARK_PREFIX + "%",))
    conn.close()
    statements = _statements_on_the_store(monkeypatch, [a], lab)
    assert any("SELECT" in s and "runs" in s for s in statements)
    assert _scans_of_stored_runs(lab, a, statements) == []


def _plans_of(conn: sqlite3.Connection, statements: list[str], table: str) -> list[tuple[str, str]]:
    """(statement, plan line) of each plan line of the statements that name `table`."""
    out = []
    for sql in statements:
        if table in sql and sql.split()[0].upper() in ("SELECT", "INSERT", "UPDATE", "DELETE"):
            out += [(sql[:200], row[3]) for row in conn.execute("EXPLAIN QUERY PLAN " + sql)]
    return out


def test_an_old_store_gets_the_artifacts_index_and_reads_a_campaigns_artifacts_by_it(tmp_path, monkeypatch):
    """Migration 12: a store of schema 11 gets `artifacts_by_campaign` at its next writer's open, and what the
    store asks of a campaign's artifacts (the ingest's replacement of them, a report's facts by name, the
    campaigns without an artifact) reads the table through it, not whole."""
    a = make_campaign_db(tmp_path / "a.db", board="board-a", n=2, with_latency=False)
    b = make_campaign_db(tmp_path / "b.db", board="board-b", n=2, with_latency=False)
    lab = tmp_path / "lab.db"
    ingest_files([a], str(lab))
    conn = sqlite3.connect(lab)
    with conn:  # the store as schema 11 left it
        conn.execute("DROP INDEX artifacts_by_campaign")
        for column in CAMPAIGN_COUNTS:  # and schema 14's and 15's counts
            conn.execute(f"ALTER TABLE campaigns DROP COLUMN {column}")
        results_in_runs(conn)  # and schema 16's results apart
        conn.execute("UPDATE meta SET value='11' WHERE key='schema_version'")
    conn.close()
    statements = _statements_on_the_store(monkeypatch, [b], lab)  # its writer's open migrates it
    with Store.open(lab, create=False) as store:
        assert store.schema_version() == STORE_SCHEMA
        store.conn.set_trace_callback(statements.append)
        store.campaign_artifact(1, WORKLOAD_FACTS)
        store.campaigns_without_artifact(WORKLOAD_FACTS)
    conn = sqlite3.connect(lab)
    conn.execute("ATTACH DATABASE ? AS src", (str(b),))
    plans = _plans_of(conn, statements, "artifacts")
    conn.close()
    assert any("DELETE FROM artifacts" in sql for sql, _ in plans)  # the ingest's replacement was seen
    assert any("artifacts_by_campaign" in line for _, line in plans)
    whole = [(sql, line) for sql, line in plans if re.fullmatch(r"SCAN (main\.)?artifacts", line)]
    assert whole == []
