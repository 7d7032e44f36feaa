"""The references of runs and of the rows under them on PostgreSQL (store schema 13, store/pg_references.py):
checked once per statement by triggers a database's owner may create, instead of a foreign key's trigger per
row. An orphan row is refused naming it, a parent with rows under it is not deleted (as the foreign keys' NO
ACTION did), an owner's ingest is checked by statement and not by row, and a store from before is migrated
with its rows (a private server, tests/pg.py)."""

from __future__ import annotations

import time
import uuid

import pytest

from boardlab.errors import BoardlabError
from boardlab.store import STORE_SCHEMA, Store
from boardlab.store.ingest import ingest_files
from boardlab.store.pg_references import REFERENCES, RESULTS

from helpers import make_campaign_db

pytestmark = pytest.mark.integration

RUN_TABLES = ("run_metrics", "run_values", "run_series", "run_histograms", "run_energy", "run_results")
# a row of each table under runs, but for its run_id (the first column)
CHILD_ROWS = {
    "run_metrics": "(run_id, metric, unit, higher_is_better) VALUES (%s, 'm', 'u', 1)",
    "run_values": "(run_id, metric, iteration, value) VALUES (%s, 'm', 0, 1.0)",
    "run_series": "(run_id, source, packing, samples, t_ns, value) VALUES (%s, 's', 1, 0, '', '')",
    "run_histograms": "(run_id, name, bucket_width, unit, counts_json, overflow, total)"
    " VALUES (%s, 'h', 1.0, 'us', '[]', 0, 0)",
    "run_energy": "(run_id, source, method, start_ns, end_ns, energy_j, power_avg_w, power_peak_w,"
    " quantization_j, samples, warnings_json) VALUES (%s, 'e', 'counter', 0, 1, 1.0, 1.0, 1.0, 0.0, 1, '[]')",
    "run_results": "(run_id, worker_json) VALUES (%s, '{}')",
}


def _owner_database(pg_server) -> str:
    """A new database owned by a new ordinary role (LOGIN, no superuser, no grant): what a lab gives
    boardlab; its URL logs in as that role. Function call counts are kept for its sessions."""
    import psycopg

    role = f"lab_{uuid.uuid4().hex[:12]}"  # roles are the whole server's: a name of this test's own
    with psycopg.connect(pg_server.url(), autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE")
        admin.execute(f"CREATE DATABASE {role} OWNER {role}")
        admin.execute(f"ALTER DATABASE {role} SET track_functions = 'pl'")  # a superuser's setting
    return pg_server.url(role, role)


def _contents(url: str) -> dict[str, list[tuple]]:
    """Every row of the run tables, by identities (cell key, repetition, attempt) instead of ids."""
    ident = "c.key, r.repetition, r.attempt"
    out = {}
    with Store.open(url, create=False) as store:
        runs = f"SELECT {ident}, r.value, r.wall_ns FROM runs r JOIN cells c ON c.id = r.cell_id"
        out["runs"] = sorted(tuple(r) for r in store.conn.execute(runs))
        tables = store.describe_schema()
        for table in RUN_TABLES:
            if table not in tables:  # a store before the table (run_results: 16): none of its rows
                out[table] = []
                continue
            sql = (
                f"SELECT {ident}, x.* FROM {table} x JOIN runs r ON r.id = x.run_id"
                " JOIN cells c ON c.id = r.cell_id"
            )
            out[table] = sorted(
                (tuple(row[:3]) + tuple(row[4:]) for row in store.conn.execute(sql)), key=repr
            )
    return out


def _fails(store: Store, sql: str, params: tuple = (), *, after: tuple[str, ...] = ()) -> str:
    """The error of `sql` (after the statements `after`) in a transaction of its own, rolled back, as the
    store reports it."""
    store.conn.execute("BEGIN")
    try:
        for statement in after:
            store.conn.execute(statement)
        with pytest.raises(BoardlabError) as err:
            store.conn.execute(sql, params)
    finally:
        store._rollback()
    return str(err.value)


def _psycopg_fails(conn, sql: str, params: tuple = ()) -> str:
    import psycopg

    with pytest.raises(psycopg.Error) as err:
        with conn.transaction():
            conn.execute(sql, params)
    return str(err.value)


@pytest.fixture
def ingested(pg_server, tmp_path) -> str:
    """An owner's store holding one ingested board file."""
    url = _owner_database(pg_server)
    ingest_files([make_campaign_db(tmp_path / "a.db", n=3)], url)
    return url


def test_the_run_tables_have_no_row_level_reference_trigger_but_the_statement_checks(ingested):
    with Store.open(ingested, create=False) as store:
        assert store.schema_version() == STORE_SCHEMA >= 13
        fks = store.conn.execute(
            "SELECT conrelid::regclass::text, confrelid::regclass::text FROM pg_constraint"
            " WHERE contype = 'f'"
        ).fetchall()
        triggers = store.conn.execute(
            "SELECT c.relname, t.tgname, t.tgtype FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
            " WHERE NOT t.tgisinternal"
        ).fetchall()
    assert not {(t, p) for t, _, p in (*REFERENCES, RESULTS)} & {tuple(r) for r in fks}
    assert ("artifacts", "runs") in {tuple(r) for r in fks}  # the other references keep their foreign keys
    statement_inserts = {t for t, name, kind in triggers if name == "boardlab_inserted" and not kind & 1}
    assert statement_inserts == {"runs", *RUN_TABLES}  # tgtype bit 0: FOR EACH ROW


@pytest.mark.parametrize("table", RUN_TABLES)
def test_an_orphan_row_under_runs_is_refused_naming_its_table_and_run(ingested, table):
    with Store.open(ingested) as store:
        run, missing = store.conn.execute("SELECT max(id), max(id) + 1000 FROM runs").fetchone()
        insert = f"INSERT INTO {table} {CHILD_ROWS[table]}"
        text = _fails(store, insert.replace("%s", "?"), (missing,))
        assert f'table "{table}" refers to no row of "runs": run_id = {missing}' in text
        # a row of a run moved to a run that does not exist, too
        text = _fails(store, f"UPDATE {table} SET run_id = ? WHERE run_id = ?", (missing, run),
                      after=(insert % run,))  # fmt: skip
        assert f'table "{table}" refers to no row of "runs": run_id = {missing}' in text


def test_an_orphan_among_many_rows_of_a_copy_is_refused(ingested):
    """One statement of many rows, most of them right (a COPY of a file's runs): the one wrong row refuses it
    all."""
    with Store.open(ingested) as store:
        runs = [r[0] for r in store.conn.execute("SELECT id FROM runs ORDER BY id")]
        before = store.conn.execute("SELECT count(*) FROM run_metrics").fetchone()[0]
        orphan = runs[-1] + 999
        rows = [(run_id, f"extra{i}", "u", 1) for i, run_id in enumerate([*runs, orphan, *runs])]
        store.conn.execute("BEGIN")
        with pytest.raises(
            BoardlabError, match=f'"run_metrics" refers to no row of "runs": run_id = {orphan}'
        ):
            store.conn.copy_rows("run_metrics", ("run_id", "metric", "unit", "higher_is_better"), rows)
        store._rollback()
        assert store.conn.execute("SELECT count(*) FROM run_metrics").fetchone()[0] == before


@pytest.mark.parametrize("column, parent", [("campaign_id", "campaigns"), ("cell_id", "cells")])
def test_a_run_of_no_campaign_or_cell_is_refused(ingested, column, parent):
    with Store.open(ingested) as store:
        cols = [c for c, *_ in store.describe_schema()["runs"] if c != "id"]
        changed = {column: f"(SELECT max(id) + 1000 FROM {parent})", "repetition": "repetition + 100"}
        select = ", ".join(changed.get(c, c) for c in cols)
        text = _fails(store, f"INSERT INTO runs({', '.join(cols)}) SELECT {select} FROM runs LIMIT 1")
    assert f'table "runs" refers to no row of "{parent}": {column} = ' in text


def test_a_run_with_rows_under_it_is_not_deleted_and_without_them_it_is(ingested):
    """No reference cascaded before schema 13 (NO ACTION): deleting a parent that rows still refer to was
    refused, naming the table; deleting its dependants first, then it, worked. Both still hold."""
    with Store.open(ingested) as store:
        run = store.conn.execute("SELECT min(id) FROM runs").fetchone()[0]
        text = _fails(store, "DELETE FROM runs WHERE id = ?", (run,))
        assert 'update or delete on table "runs" leaves rows of "run_' in text and f"id = {run}" in text
        cell, campaign = store.conn.execute(
            "SELECT cell_id, campaign_id FROM runs WHERE id = ?", (run,)
        ).fetchone()
        assert f'"cells" leaves rows of "runs" referring to it: id = {cell}' in _fails(
            store, "DELETE FROM cells WHERE id = ?", (cell,)
        )
        assert "refer" in _fails(store, "UPDATE runs SET id = -id WHERE id = ?", (run,))
        assert "truncate" in _fails(store, "TRUNCATE runs, artifacts")
        n = store.conn.execute("SELECT count(*) FROM runs").fetchone()[0]
        with store.conn:  # one run removed with what is under it, in dependency order
            for table in (*RUN_TABLES, "artifacts"):
                store.conn.execute(f"DELETE FROM {table} WHERE run_id = ?", (run,))
            store.conn.execute("DELETE FROM runs WHERE id = ?", (run,))
        assert store.conn.execute("SELECT count(*) FROM runs").fetchone()[0] == n - 1
        with store.conn:  # and a whole campaign, as a lab would remove one
            for table in RUN_TABLES:
                store.conn.execute(
                    f"DELETE FROM {table} WHERE run_id IN (SELECT id FROM runs WHERE campaign_id = ?)",
                    (campaign,),
                )
            for table in (
                "artifacts",
                "runs",
                "cells",
                "energy_sources",
                "energy_idle",
                "campaign_summaries",
            ):
                store.conn.execute(f"DELETE FROM {table} WHERE campaign_id = ?", (campaign,))
            store.conn.execute("DELETE FROM campaigns WHERE id = ?", (campaign,))
        assert store.conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 0
        assert all(store.conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] == 0 for t in RUN_TABLES)


def test_a_row_referring_to_an_older_run_locks_it_against_a_concurrent_delete(ingested):
    """What a foreign key's FOR KEY SHARE did: the check of a row referring to a run another transaction
    committed locks that run, so a concurrent delete of it waits (and here gives up) instead of leaving the
    row an orphan at commit."""
    import psycopg

    with (
        psycopg.connect(ingested, autocommit=True) as adder,
        psycopg.connect(ingested, autocommit=True) as deleter,
    ):
        run = adder.execute("SELECT min(id) FROM runs").fetchone()[0]
        adder.execute("BEGIN")
        adder.execute(f"INSERT INTO run_metrics {CHILD_ROWS['run_metrics']}", (run,))
        deleter.execute("SET lock_timeout = '300ms'")
        with deleter.transaction():  # what is under the run now, as the deleter sees it, removed first
            for table in (*RUN_TABLES, "artifacts"):
                deleter.execute(f"DELETE FROM {table} WHERE run_id = %s", (run,))
        text = _psycopg_fails(deleter, "DELETE FROM runs WHERE id = %s", (run,))
        assert "lock timeout" in text
        adder.execute("COMMIT")
        assert "run_metrics" in _psycopg_fails(deleter, "DELETE FROM runs WHERE id = %s", (run,))


def _function_calls(url: str, name: str) -> int:
    """Calls of a PL/pgSQL function in the database, once the sessions that called it have exited."""
    import psycopg

    deadline = time.monotonic() + 10
    while True:
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute(
                "SELECT calls FROM pg_stat_user_functions WHERE funcname = %s", (name,)
            ).fetchone()
        if row is not None or time.monotonic() > deadline:
            return int(row[0]) if row else 0
        time.sleep(0.1)


def test_an_owner_ingests_with_the_statement_checks_not_row_checks(pg_server, tmp_path, monkeypatch):
    """A database's owner may not set session_replication_role: its ingest runs every check, once per
    statement (a few calls in all for hundreds of rows), with nothing to say about it, and stores what the
    file holds."""
    from boardlab.store import ingest as ingest_mod

    url = _owner_database(pg_server)
    src = make_campaign_db(tmp_path / "a.db", n=4)
    seen: list[str] = []
    copy_runs = ingest_mod._Copier.copy_runs

    def spy(self, tid, run_map):
        seen.append(self.target.conn.execute("SHOW session_replication_role").fetchone()[0])
        return copy_runs(self, tid, run_map)

    notes: list[str] = []
    with monkeypatch.context() as m:
        m.setattr(ingest_mod._Copier, "copy_runs", spy)
        added = ingest_files([src], url, note=notes.append)[0].runs_added
    assert seen == ["origin"] and notes == []
    with Store.open(url, create=False) as store:
        rows = sum(
            store.conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("runs", *RUN_TABLES)
        )
    calls = _function_calls(url, "boardlab_check_inserted")
    assert added > 100 and rows > 5 * added
    assert 1 <= calls <= 8  # a COPY per table under runs and of runs (and migration 16's move), not per row
    lite = tmp_path / "lab.db"  # the same file into SQLite: the same rows
    ingest_files([src], str(lite))
    assert _contents(url) == _contents(str(lite))


def test_a_postgresql_store_of_schema_12_is_migrated_keeping_its_rows(pg_server, tmp_path, monkeypatch):
    """A store written before schema 13 (foreign keys on the run tables) is migrated by the writer's open:
    the same rows, the foreign keys replaced by the checks, which then refuse an orphan; ingest goes on into
    it (a resumed campaign's new runs)."""
    import boardlab.store.db as db

    url = _owner_database(pg_server)
    src = tmp_path / "a.db"
    with monkeypatch.context() as m:
        m.setattr(db, "MIGRATIONS", db.MIGRATIONS[:12])
        m.setattr(db, "STORE_SCHEMA", 12)
        make_campaign_db(src, n=3)
        ingest_files([src], url)
        with Store.open(url, create=False) as old:
            assert old.schema_version() == 12
            fks = old.conn.execute("SELECT count(*) FROM pg_constraint WHERE contype = 'f'").fetchone()[0]
            assert fks == 16  # the run tables' 7 among them
    before = _contents(url)
    with Store.open(url) as new:
        assert new.schema_version() == STORE_SCHEMA
        # schema 14's data step counted each campaign's runs
        assert [new.count_runs(int(c["id"])) for c in new.campaigns()] == [len(before["runs"])]
        assert new.conn.execute("SELECT count(*) FROM pg_constraint WHERE contype = 'f'").fetchone()[0] == 9
        missing = new.conn.execute("SELECT max(id) + 1 FROM runs").fetchone()[0]
        insert = f"INSERT INTO run_values {CHILD_ROWS['run_values']}".replace("%s", "?")
        assert "refers to no row" in _fails(new, insert, (missing,))
    assert _contents(url) == before
    make_campaign_db(src, n=5, first_rep=4)  # the campaign resumed on the board (the file now at schema 13)
    assert ingest_files([src], url)[0].runs_added > 0
    after = _contents(url)
    assert len(after["runs"]) > len(before["runs"]) and set(before["runs"]) <= set(after["runs"])
