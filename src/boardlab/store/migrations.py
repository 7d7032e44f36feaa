"""Numbered schema migrations. Never edit a released migration: add the next one.

A migration is SQL; one that must also move data SQL cannot compute (packing values into bytes) names a
Python step in DATA_STEPS, run after its SQL in the same transaction, through the store's connection (so it
speaks both dialects)."""

import json
import sqlite3
from functools import lru_cache

from boardlab.errors import InputError
from boardlab.model.run import RunColumns, run_columns
from boardlab.store import pg_references
from boardlab.store.packed import convert_series, keyset_batches, summarize_series

MIGRATIONS: list[tuple[int, str]] = [
    (
        1,
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE boards (
            id INTEGER PRIMARY KEY,
            fingerprint TEXT NOT NULL UNIQUE,
            label TEXT NOT NULL,
            inventory_json TEXT NOT NULL,
            first_seen_unix_s REAL NOT NULL
        );
        CREATE TABLE campaigns (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            plan_hash TEXT NOT NULL,
            plan_source TEXT NOT NULL,
            plan_text TEXT NOT NULL,
            board_id INTEGER NOT NULL REFERENCES boards(id),
            boardlab_version TEXT NOT NULL,
            kern_version TEXT,
            root TEXT NOT NULL,
            status TEXT NOT NULL,               -- running | interrupted | complete | failed
            started_unix_s REAL NOT NULL,
            finished_unix_s REAL,
            environment_json TEXT NOT NULL,     -- checks and capabilities at the start
            monitor_json TEXT,                  -- the monitor's own cost and settings
            notes_json TEXT
        );
        CREATE INDEX campaigns_by_plan ON campaigns(plan_hash, board_id);
        CREATE TABLE cells (
            id INTEGER PRIMARY KEY,
            campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
            key TEXT NOT NULL,
            workload TEXT NOT NULL,
            params_json TEXT NOT NULL,
            condition TEXT NOT NULL,
            condition_json TEXT NOT NULL,
            baseline TEXT,                      -- the condition this cell is compared with
            metric TEXT NOT NULL,
            unit TEXT NOT NULL,
            higher_is_better INTEGER NOT NULL,
            UNIQUE (campaign_id, key)
        );
        CREATE TABLE runs (
            id INTEGER PRIMARY KEY,
            campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
            cell_id INTEGER NOT NULL REFERENCES cells(id),
            repetition INTEGER NOT NULL,
            attempt INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            started_unix_s REAL NOT NULL,
            wall_ns INTEGER NOT NULL,
            cpu INTEGER,
            exit_code INTEGER NOT NULL,
            ok INTEGER NOT NULL,
            valid INTEGER NOT NULL,
            invalid_reason TEXT,
            value REAL,
            warmup_iterations INTEGER,
            warmup_capped INTEGER,
            rusage_json TEXT NOT NULL,
            gate_waited_s REAL NOT NULL,
            gate_timed_out INTEGER NOT NULL,
            gate_detail TEXT NOT NULL,
            condition_state_json TEXT NOT NULL,
            monitor_json TEXT NOT NULL,
            error TEXT,
            worker_json TEXT,
            UNIQUE (campaign_id, cell_id, repetition, attempt)
        );
        CREATE INDEX runs_by_cell ON runs(cell_id, valid);
        CREATE TABLE run_metrics (
            run_id INTEGER NOT NULL REFERENCES runs(id),
            metric TEXT NOT NULL,
            unit TEXT NOT NULL,
            higher_is_better INTEGER NOT NULL,
            median REAL, min REAL, p90 REAL, p99 REAL,
            PRIMARY KEY (run_id, metric)
        );
        CREATE TABLE run_values (               -- every measured iteration, never pooled across runs
            run_id INTEGER NOT NULL REFERENCES runs(id),
            metric TEXT NOT NULL,               -- a metric name, or 'iteration_ns'
            iteration INTEGER NOT NULL,
            value REAL NOT NULL,
            PRIMARY KEY (run_id, metric, iteration)
        ) WITHOUT ROWID;
        CREATE TABLE series (                   -- monitor samples during a run
            run_id INTEGER NOT NULL REFERENCES runs(id),
            source TEXT NOT NULL,
            t_ns INTEGER NOT NULL,
            value REAL NOT NULL
        );
        CREATE INDEX series_by_run ON series(run_id, source);
        CREATE TABLE artifacts (
            id INTEGER PRIMARY KEY,
            campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
            run_id INTEGER REFERENCES runs(id),
            name TEXT NOT NULL,
            media_type TEXT NOT NULL,
            data BLOB NOT NULL
        );
        """,
    ),
    (
        2,
        """
        CREATE TABLE run_histograms (           -- latency histograms a worker kept (cyclictest): every bucket
            run_id INTEGER NOT NULL REFERENCES runs(id),
            name TEXT NOT NULL,                 -- e.g. 'latency_us' or 'latency_us.cpu1'
            bucket_width REAL NOT NULL,         -- in `unit`; bucket i counts values in [i*w, (i+1)*w)
            unit TEXT NOT NULL,
            counts_json TEXT NOT NULL,          -- [count of bucket 0, count of bucket 1, ...]
            overflow INTEGER NOT NULL,          -- samples beyond the last bucket
            total INTEGER NOT NULL,             -- all samples, overflow included
            PRIMARY KEY (run_id, name)
        );
        """,
    ),
    (
        3,
        """
        -- the A/A control: the schedule labels a reference cell's runs A1 / A2 alternately before the
        -- first run; NULL on other runs (and on runs stored before the labels existed)
        ALTER TABLE runs ADD COLUMN aa_arm TEXT;
        """,
    ),
    (
        4,
        """
        CREATE TABLE energy_sources (           -- what could measure energy in a campaign, or why nothing could
            campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
            name TEXT NOT NULL,
            spec_json TEXT NOT NULL,            -- kind, scope, unit, update interval, resolution, measured
            supported INTEGER NOT NULL,
            reason TEXT,                        -- "unsupported: ..." when not supported
            is_primary INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (campaign_id, name)
        );
        CREATE TABLE run_energy (               -- one run's energy per source, clipped to the worker's life
            run_id INTEGER NOT NULL REFERENCES runs(id),
            source TEXT NOT NULL,
            method TEXT NOT NULL,               -- counter | trapezoid
            start_ns INTEGER NOT NULL,          -- the worker's CLOCK_MONOTONIC start and end
            end_ns INTEGER NOT NULL,
            energy_j REAL NOT NULL,
            power_avg_w REAL NOT NULL,
            power_peak_w REAL NOT NULL,
            quantization_j REAL NOT NULL,       -- +- bound: 1/2 update interval x peak power at each edge
            samples INTEGER NOT NULL,
            update_interval_s REAL,
            warnings_json TEXT NOT NULL,
            PRIMARY KEY (run_id, source)
        );
        CREATE TABLE energy_idle (              -- gated idle windows before and after each block of runs
            campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
            source TEXT NOT NULL,
            block INTEGER NOT NULL,             -- the window before block `block` (after block - 1)
            started_unix_s REAL NOT NULL,
            duration_s REAL NOT NULL,
            energy_j REAL NOT NULL,
            power_w REAL NOT NULL,
            quantization_j REAL NOT NULL,
            samples INTEGER NOT NULL,
            gate_detail TEXT,
            PRIMARY KEY (campaign_id, source, block)
        );
        """,
    ),
    (
        5,
        """
        -- a campaign's identity across stores (boardlab ingest): a random uuid given when the campaign is
        -- created; NULL on campaigns stored before it existed, whose identity ingest derives from the board
        -- fingerprint, the plan hash and the start time (boardlab.store.ingest.campaign_uid)
        ALTER TABLE campaigns ADD COLUMN uid TEXT;
        CREATE UNIQUE INDEX campaigns_by_uid ON campaigns(uid);
        """,
    ),
    (
        6,
        """
        -- boardlab history and serve: what a user named this campaign's change (`run --label`), the board's
        -- inventory when it started (boards.inventory_json holds only the latest: a kernel upgrade between two
        -- campaigns would be lost), the runs its schedule plans and the runner's last sign of life
        ALTER TABLE campaigns ADD COLUMN label TEXT;
        ALTER TABLE campaigns ADD COLUMN inventory_json TEXT;
        ALTER TABLE campaigns ADD COLUMN runs_planned INTEGER;
        ALTER TABLE campaigns ADD COLUMN heartbeat_unix_s REAL;
        CREATE INDEX campaigns_by_name ON campaigns(name, board_id, started_unix_s);
        CREATE INDEX campaigns_by_board ON campaigns(board_id, started_unix_s);
        CREATE INDEX campaigns_by_start ON campaigns(started_unix_s);
        CREATE INDEX campaigns_by_status ON campaigns(status, started_unix_s);
        """,
    ),
    (
        7,
        """
        -- monitor samples packed: one row per run and source instead of one per sample (boardlab.store.packed);
        -- the data step converts the `series` rows and drops that table
        CREATE TABLE run_series (
            run_id INTEGER NOT NULL REFERENCES runs(id),
            source TEXT NOT NULL,
            packing INTEGER NOT NULL,           -- the layout's version: 1
            samples INTEGER NOT NULL,
            t_ns BLOB NOT NULL,                 -- `samples` int64 little-endian: ns since the run started, ascending
            value BLOB NOT NULL,                -- `samples` float64 little-endian, the i-th at the i-th time
            PRIMARY KEY (run_id, source)
        ) WITHOUT ROWID;
        """,
    ),
    (
        8,
        """
        -- boardlab serve and history on a large store: what their pages need of a campaign, computed once from
        -- its runs (when the campaign ends or is ingested) instead of on every first view. `runs_stored` and
        -- `status` are the campaign's when it was computed: a campaign with more runs or another status since
        -- has a stale summary, which readers recompute. `schema` is the summary's layout
        -- (boardlab.summary.SUMMARY_SCHEMA): another one is recomputed too.
        CREATE TABLE campaign_summaries (
            campaign_id INTEGER PRIMARY KEY REFERENCES campaigns(id),
            schema INTEGER NOT NULL,
            runs_stored INTEGER NOT NULL,
            status TEXT NOT NULL,
            computed_unix_s REAL NOT NULL,
            cells_json TEXT NOT NULL,           -- per cell: n, median and CI, valid values, confounders
            document_json TEXT NOT NULL,        -- the campaign report's document, as plain JSON
            document_html TEXT NOT NULL         -- the same document rendered by the report's HTML renderer
        );
        -- a history's step: campaign `to` against the campaign `from` before it (same plan, same board), cell by
        -- cell, not yet corrected (the correction family is the history's); stale when either campaign's run
        -- count differs from the one recorded here
        CREATE TABLE step_summaries (
            from_campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
            to_campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
            schema INTEGER NOT NULL,
            runs_from INTEGER NOT NULL,
            runs_to INTEGER NOT NULL,
            rows_json TEXT NOT NULL,            -- compare.pair_rows' rows
            comparisons_json TEXT NOT NULL,     -- its comparisons, from which a correction re-decides the verdicts
            PRIMARY KEY (from_campaign_id, to_campaign_id)
        );
        """,
    ),
    (
        9,
        """
        -- the numbers the analysis reads of every run, derived from monitor_json and rusage_json when the run is
        -- stored (boardlab.model.run.run_columns), so that a report reads six numbers instead of parsing two
        -- JSON objects per run; NULL = not recorded. The data step fills the runs stored before.
        ALTER TABLE runs ADD COLUMN mean_freq_khz REAL;     -- mean of the CPUs' mean frequencies
        ALTER TABLE runs ADD COLUMN max_temp_mc REAL;       -- highest temperature, millidegrees Celsius
        ALTER TABLE runs ADD COLUMN throttled INTEGER;      -- 0 or 1: a throttle event was seen
        ALTER TABLE runs ADD COLUMN worker_cpu_pct REAL;    -- the workload's mean CPU use, % of one CPU
        ALTER TABLE runs ADD COLUMN user_us INTEGER;        -- the worker's own CPU time (wait4), user
        ALTER TABLE runs ADD COLUMN system_us INTEGER;      -- and system
        """,
    ),
    (
        10,
        """
        -- the report's monitor plots at scale (boardlab.store.packed.summarize): each row's first and last time,
        -- and the sums of its times and values, so that the database sums whole rows per plotted time bucket;
        -- NULL where not known (then readers read the row's samples)
        ALTER TABLE run_series ADD COLUMN t_first_ns INTEGER;
        ALTER TABLE run_series ADD COLUMN t_last_ns INTEGER;
        ALTER TABLE run_series ADD COLUMN t_sum_ns INTEGER;
        ALTER TABLE run_series ADD COLUMN value_sum REAL;
        -- a campaign's run ids and starts without reading its runs' rows (wide: their JSON): what joining the
        -- monitor rows to their runs' start times reads
        CREATE INDEX runs_by_campaign_start ON runs(campaign_id, started_unix_s);
        """,
    ),
    (
        11,
        """
        -- what a campaign measured, for CI (`run --commit auto|SHA --branch NAME`): the source's commit hash,
        -- its `git describe --always --dirty` name and the branch; NULL where not given
        ALTER TABLE campaigns ADD COLUMN commit_sha TEXT;
        ALTER TABLE campaigns ADD COLUMN commit_describe TEXT;
        ALTER TABLE campaigns ADD COLUMN branch TEXT;
        """,
    ),
    (
        12,
        """
        -- a campaign's artifacts found without reading the table whole: its workload facts by name (every report
        -- and ingest, campaign_artifact), the replacement of its own at each ingest (DELETE ... WHERE campaign_id
        -- AND run_id IS NULL) and the campaigns without a given artifact (campaigns_without_artifact) scanned it
        CREATE INDEX artifacts_by_campaign ON artifacts(campaign_id, name);
        """,
    ),
    # Nothing in SQLite: on PostgreSQL the references of runs and of the tables under runs are checked once per
    # statement instead of once per row (PG_STEPS: store/pg_references.py). SQLite checks them only where
    # a campaign writes run by run, and an ingest turns its checks off (store/ingest.py).
    (13, ""),
    (
        14,
        """
        -- a campaign's stored runs and how many of them are valid, kept by whatever stores them
        -- (store/runs.py, store/summaries.py, an ingest) in the transaction that stores them: a stored
        -- summary's freshness check and a running campaign's progress read one row instead of reading the
        -- campaign's runs (0.04 s at 10^6 runs to count them, linear in them). The data step counts them once.
        ALTER TABLE campaigns ADD COLUMN runs_stored INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE campaigns ADD COLUMN runs_valid INTEGER NOT NULL DEFAULT 0;
        """,
    ),
    (
        15,
        """
        -- a campaign's runs whose worker result names "series" (per-second samples), kept by every writer of
        -- runs as runs_stored is: the report's series study reads those results only, and without this it
        -- read every valid run's result to find none (6 s at 10^6 runs of 1.3 KB results). NULL: not
        -- counted (a campaign stored before it; counting would read every result), read as before.
        ALTER TABLE campaigns ADD COLUMN runs_series INTEGER;
        """,
    ),
    (
        16,
        """
        -- a run's worker result (its raw JSON: 1-1.4 KB a kernel's run) in a table of its own: in the run's row
        -- it was most of the row's bytes, and every scan of `runs` (a report's cells, an export, a page, an
        -- ingest's copy) read it to take a few numbers; only the studies that read a worker's own output and a
        -- re-analysis look at it. The data step moves the results here and drops runs.worker_json (after
        -- PostgreSQL's reference is a statement's check, not a check per moved row).
        CREATE TABLE run_results (
            run_id INTEGER NOT NULL PRIMARY KEY REFERENCES runs(id),
            worker_json TEXT NOT NULL
        );
        """,
    ),
]

# The tables that grow with the runs (a row or more per run; `series` before migration 7 dropped it): a writer's
# bounded open check of a large store (store/filecheck.py) leaves them and their indexes to the full check.
# Every other table grows with boards, campaigns or cells (campaign_summaries with the runs too, a twentieth of
# the store: its cells keep their valid values), and is checked at every writer's open: a new table is checked
# there until it is named here.
RUN_TABLES = frozenset(
    {"runs", "run_metrics", "run_values", "series", "run_series", "run_histograms", "run_energy",
     "run_results"}
)  # fmt: skip
RUN_COLUMNS = ("mean_freq_khz", "max_temp_mc", "throttled", "worker_cpu_pct", "user_us", "system_us")
_FILL_BATCH = 5000  # runs read at a time


class DamagedValue(Exception):
    """(column of `runs`, what is wrong[, run id]): a value that cannot be read; the store names the file."""


def column_values(c: RunColumns) -> tuple:
    """A run's columns as the store writes them, in RUN_COLUMNS order."""
    throttled = None if c.throttled is None else int(c.throttled)
    return (c.mean_freq_khz, c.max_temp_mc, throttled, c.worker_cpu_pct, c.user_us, c.system_us)


@lru_cache(maxsize=4096)  # a store's runs often repeat the same summaries (a synthetic one: all of them)
def columns_of_json(monitor_json: str | None, rusage_json: str | None) -> tuple:
    """RUN_COLUMNS of a stored run, from its two JSON columns (parsed the way the analysis parsed them)."""
    objects = []
    for column, text in (("monitor_json", monitor_json), ("rusage_json", rusage_json)):
        try:
            value = json.loads(text or "{}")
        except (ValueError, TypeError):
            raise DamagedValue(column, "not JSON") from None
        if not isinstance(value, dict):
            raise DamagedValue(column, "not a JSON object")
        objects.append(value)
    return column_values(run_columns(objects[0], objects[1]))


def fill_run_columns(conn, *, campaign_id: int | None = None, after_id: int = 0) -> None:
    """Migration 9's data step (and an ingest's of a file from before it): RUN_COLUMNS of every run with an
    id past `after_id` (of one campaign when given) computed from its JSON, a bounded batch at a time."""
    where = "" if campaign_id is None else f" AND campaign_id={int(campaign_id)}"
    sql = f"SELECT id, monitor_json, rusage_json FROM runs WHERE id > ?{where} ORDER BY id LIMIT ?"
    for rows in keyset_batches(conn, sql, after_id, _FILL_BATCH):
        updates = []
        for run_id, mon, ru in rows:
            try:
                values = columns_of_json(mon, ru)
            except DamagedValue as exc:  # a writer's open does not verify the file: name the row
                raise DamagedValue(*exc.args, run_id) from None
            if values != (None,) * len(RUN_COLUMNS):  # NULL already: the new columns' default
                updates.append((*values, run_id))
        conn.executemany(f"UPDATE runs SET {', '.join(f'{c}=?' for c in RUN_COLUMNS)} WHERE id=?", updates)


def count_campaign_runs(conn) -> None:
    """Migration 14's data step: each campaign's `runs_stored` and `runs_valid`, counted from its runs in one
    read of them (a row value: SQLite 3.15 and PostgreSQL alike)."""
    conn.execute(
        "UPDATE campaigns SET (runs_stored, runs_valid) ="
        " (SELECT count(*), coalesce(sum(r.valid), 0) FROM runs r WHERE r.campaign_id = campaigns.id)"
    )


def move_results(conn) -> None:
    """Migration 16's data step: every run's worker result from its row to run_results, and the column gone
    (SQLite 3.35 and PostgreSQL alike). The runs' rows keep the space the results took: a writer's open
    compacts a board's SQLite store after it (Store._compact_after_results_moved); PostgreSQL's runs table is
    rewritten here, in the migration's transaction (`_rewrite_runs`)."""
    if isinstance(conn, sqlite3.Connection) and sqlite3.sqlite_version_info < (3, 35):
        raise InputError(
            f"this Python's SQLite is {sqlite3.sqlite_version}, and boardlab's store needs 3.35 or later (it "
            "drops a column); use a Python built with a newer SQLite (Debian 12's has 3.40)"
        )
    conn.execute(
        "INSERT INTO run_results(run_id, worker_json) SELECT id, worker_json FROM runs"
        " WHERE worker_json IS NOT NULL"
    )
    conn.execute("ALTER TABLE runs DROP COLUMN worker_json")
    if not isinstance(conn, sqlite3.Connection):
        _rewrite_runs(conn)


def _rewrite_runs(conn) -> None:
    """PostgreSQL keeps a dropped column's values in every row until the row is written again: the runs
    table stays as large as with the results, and every scan of it reads them. CLUSTER on the primary key
    writes the table anew without them (VACUUM FULL would too, but cannot run in a transaction); it needs
    only the table's owner, and the DROP above already holds the table's exclusive lock."""
    pk = conn.execute(
        "SELECT indexrelid::regclass::text FROM pg_index WHERE indrelid = 'runs'::regclass AND indisprimary"
    ).fetchone()[0]
    conn.execute(f"CLUSTER runs USING {pk}")


# migration number -> its data step, run after that migration's SQL and its PostgreSQL statements
DATA_STEPS = {
    7: convert_series,
    9: fill_run_columns,
    10: summarize_series,
    14: count_campaign_runs,
    16: move_results,
}
# migration number -> its statements on PostgreSQL only, run after its SQL (PL/pgSQL, which SQLite has not)
PG_STEPS = {13: pg_references.statements, 16: pg_references.results_statements}
