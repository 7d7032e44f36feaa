"""SQLite store. WAL lets a report read while a campaign writes; each run is one transaction, so a
killed campaign keeps every run it finished and none half-written."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from boardlab.errors import InputError
from boardlab.model.campaign import Cell, ConditionSpec
from boardlab.model.run import RunResult
from boardlab.store.migrations import MIGRATIONS

STORE_SCHEMA = MIGRATIONS[-1][0]


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _statements(sql: str) -> list[str]:
    """Splits a migration into statements the way SQLite parses them (a ';' inside a comment is text)."""
    out, buf = [], ""
    for line in sql.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            out.append(buf)
            buf = ""
    if buf.strip():
        out.append(buf)
    return [s for s in out if s.strip()]


class Store:
    def __init__(self, conn: sqlite3.Connection, path: str):
        self.conn = conn
        self.path = path

    # ---- opening and migrating ----

    @classmethod
    def open(cls, path: str | Path, *, create: bool = True) -> Store:
        path = Path(path)
        if not create and not path.is_file():
            raise InputError(f"{path}: no such results database")
        if create and not path.parent.is_dir():
            raise InputError(f"{path}: the directory {path.parent} does not exist")
        try:
            conn = sqlite3.connect(str(path), timeout=30, isolation_level=None)
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            store = cls(conn, str(path))
            store._migrate()
        except sqlite3.DatabaseError as exc:
            raise InputError(f"{path}: not a boardlab results database ({exc})") from None
        return store

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def schema_version(self) -> int:
        has_meta = self.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'"
        ).fetchone()
        if not has_meta:
            tables = self.conn.execute("SELECT count(*) FROM sqlite_master WHERE type='table'").fetchone()[0]
            if tables:
                raise InputError(f"{self.path}: a SQLite database, but not one boardlab wrote")
            return 0
        row = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        return int(row[0]) if row else 0

    def _migrate(self) -> None:
        current = self.schema_version()
        if current > STORE_SCHEMA:
            raise InputError(
                f"{self.path}: written by a newer boardlab (store schema {current}, "
                f"this one reads up to {STORE_SCHEMA}); upgrade boardlab"
            )
        for number, sql in MIGRATIONS:
            if number <= current:
                continue
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                for statement in _statements(sql):
                    self.conn.execute(statement)
                self.conn.execute(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?)", (str(number),)
                )
                self.conn.execute("COMMIT")
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise

    # ---- boards and campaigns ----

    def upsert_board(self, fingerprint: str, label: str, inventory: dict) -> int:
        row = self.conn.execute("SELECT id FROM boards WHERE fingerprint=?", (fingerprint,)).fetchone()
        if row:
            self.conn.execute("UPDATE boards SET inventory_json=? WHERE id=?", (_json(inventory), row[0]))
            return int(row[0])
        cur = self.conn.execute(
            "INSERT INTO boards(fingerprint, label, inventory_json, first_seen_unix_s) VALUES (?,?,?,?)",
            (fingerprint, label, _json(inventory), time.time()),
        )
        return int(cur.lastrowid)

    def find_campaign(self, plan_hash: str, board_id: int) -> sqlite3.Row | None:
        return self.conn.execute(
            "SELECT * FROM campaigns WHERE plan_hash=? AND board_id=? ORDER BY id DESC LIMIT 1",
            (plan_hash, board_id),
        ).fetchone()

    def create_campaign(
        self,
        *,
        name: str,
        plan_hash: str,
        plan_source: str,
        plan_text: str,
        board_id: int,
        boardlab_version: str,
        kern_version: str | None,
        root: str,
        environment: dict,
    ) -> int:
        cur = self.conn.execute(
            "INSERT INTO campaigns(name, plan_hash, plan_source, plan_text, board_id, boardlab_version,"
            " kern_version, root, status, started_unix_s, environment_json) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (
                name,
                plan_hash,
                plan_source,
                plan_text,
                board_id,
                boardlab_version,
                kern_version,
                root,
                "running",
                time.time(),
                _json(environment),
            ),
        )
        return int(cur.lastrowid)

    def set_campaign_status(
        self, campaign_id: int, status: str, *, monitor: dict | None = None, notes: dict | None = None
    ) -> None:
        finished = time.time() if status in ("complete", "interrupted", "failed") else None
        self.conn.execute(
            "UPDATE campaigns SET status=?, finished_unix_s=?, monitor_json=coalesce(?, monitor_json),"
            " notes_json=coalesce(?, notes_json) WHERE id=?",
            (
                status,
                finished,
                _json(monitor) if monitor is not None else None,
                _json(notes) if notes is not None else None,
                campaign_id,
            ),
        )

    def campaigns(self) -> list[sqlite3.Row]:
        return self.conn.execute("SELECT * FROM campaigns ORDER BY id").fetchall()

    def campaign(self, campaign_id: int) -> sqlite3.Row:
        row = self.conn.execute("SELECT * FROM campaigns WHERE id=?", (campaign_id,)).fetchone()
        if row is None:
            raise InputError(f"{self.path}: no campaign with id {campaign_id}")
        return row

    def board(self, board_id: int) -> sqlite3.Row:
        return self.conn.execute("SELECT * FROM boards WHERE id=?", (board_id,)).fetchone()

    # ---- cells and runs ----

    def ensure_cells(
        self,
        campaign_id: int,
        cells: Iterable[Cell],
        conditions: dict[str, ConditionSpec],
        units: dict[str, tuple[str, bool]],
    ) -> dict[str, int]:
        """Inserts missing cells; returns cell key -> id. `units` maps a cell key to (unit, higher_is_better)."""
        ids: dict[str, int] = {}
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            for cell in cells:
                cond = conditions[cell.condition]
                unit, hib = units[cell.key]
                self.conn.execute(
                    "INSERT OR IGNORE INTO cells(campaign_id, key, workload, params_json, condition,"
                    " condition_json, baseline, metric, unit, higher_is_better) VALUES (?,?,?,?,?,?,?,?,?,?)",
                    (
                        campaign_id,
                        cell.key,
                        cell.workload,
                        cell.params_json,
                        cell.condition,
                        _json(cond.to_dict()),
                        cond.baseline,
                        cell.metric,
                        unit,
                        int(hib),
                    ),
                )
                ids[cell.key] = int(
                    self.conn.execute(
                        "SELECT id FROM cells WHERE campaign_id=? AND key=?", (campaign_id, cell.key)
                    ).fetchone()[0]
                )
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        return ids

    def attempts(self, campaign_id: int) -> dict[tuple[str, int], list[bool]]:
        """(cell key, repetition) -> validity of each attempt already stored, in attempt order."""
        out: dict[tuple[str, int], list[bool]] = {}
        for row in self.conn.execute(
            "SELECT c.key, r.repetition, r.valid FROM runs r JOIN cells c ON c.id = r.cell_id"
            " WHERE r.campaign_id=? ORDER BY r.attempt",
            (campaign_id,),
        ):
            out.setdefault((row[0], row[1]), []).append(bool(row[2]))
        return out

    def record_run(self, campaign_id: int, cell_id: int, run: RunResult) -> int:
        """One transaction per run: the run, its metrics, every iteration, its histograms, the monitor's series."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            cur = self.conn.execute(
                "INSERT INTO runs(campaign_id, cell_id, repetition, attempt, seq, started_unix_s, wall_ns, cpu,"
                " exit_code, ok, valid, invalid_reason, value, warmup_iterations, warmup_capped, rusage_json,"
                " gate_waited_s, gate_timed_out, gate_detail, condition_state_json, monitor_json, error,"
                " worker_json, aa_arm) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    campaign_id,
                    cell_id,
                    run.repetition,
                    run.attempt,
                    run.seq,
                    run.started_unix_s,
                    run.wall_ns,
                    run.cpu,
                    run.exit_code,
                    int(run.ok),
                    int(run.valid),
                    run.invalid_reason,
                    run.value,
                    run.warmup_iterations,
                    None if run.warmup_capped is None else int(run.warmup_capped),
                    _json(run.rusage),
                    run.gate.waited_s,
                    int(run.gate.timed_out),
                    run.gate.detail,
                    _json(run.condition_state),
                    _json(run.monitor),
                    run.error,
                    run.worker_json,
                    run.aa_arm,
                ),
            )
            run_id = int(cur.lastrowid)
            self.conn.executemany(
                "INSERT INTO run_metrics(run_id, metric, unit, higher_is_better, median, min, p90, p99)"
                " VALUES (?,?,?,?,?,?,?,?)",
                [
                    (run_id, m.name, m.unit, int(m.higher_is_better), m.median, m.min, m.p90, m.p99)
                    for m in run.metrics
                ],
            )
            values = [(run_id, "iteration_ns", i, float(v)) for i, v in enumerate(run.iterations_ns)]
            for m in run.metrics:
                values.extend((run_id, m.name, i, float(v)) for i, v in enumerate(m.values) if v is not None)
            self.conn.executemany(
                "INSERT INTO run_values(run_id, metric, iteration, value) VALUES (?,?,?,?)", values
            )
            self.conn.executemany(
                "INSERT INTO series(run_id, source, t_ns, value) VALUES (?,?,?,?)",
                [(run_id, s, t, v) for s, t, v in run.series],
            )
            self.conn.executemany(
                "INSERT INTO run_histograms(run_id, name, bucket_width, unit, counts_json, overflow, total)"
                " VALUES (?,?,?,?,?,?,?)",
                [
                    (run_id, h.name, h.bucket_width, h.unit, json.dumps(list(h.counts)), h.overflow, h.total)
                    for h in run.histograms
                ],
            )
            self.conn.executemany(
                "INSERT INTO run_energy(run_id, source, method, start_ns, end_ns, energy_j, power_avg_w,"
                " power_peak_w, quantization_j, samples, update_interval_s, warnings_json)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                [
                    (run_id, e.source, e.method, e.start_ns, e.end_ns, e.energy_j, e.power_avg_w,
                     e.power_peak_w, e.quantization_j, e.samples, e.update_interval_s, _json(list(e.warnings)))
                    for e in run.energy
                ],
            )  # fmt: skip
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        return run_id

    # ---- energy (boardlab.energy) ----

    def record_energy_sources(
        self, campaign_id: int, rows: list[tuple[str, dict, bool, str | None, bool]]
    ) -> None:
        """(name, spec, supported, reason, is_primary) of every source considered; replaces a resumed run's."""
        with self.conn:
            self.conn.execute("DELETE FROM energy_sources WHERE campaign_id=?", (campaign_id,))
            self.conn.executemany(
                "INSERT INTO energy_sources(campaign_id, name, spec_json, supported, reason, is_primary)"
                " VALUES (?,?,?,?,?,?)",
                [
                    (campaign_id, n, _json(spec), int(ok), why, int(primary))
                    for n, spec, ok, why, primary in rows
                ],
            )

    def record_idle(self, campaign_id: int, source: str, block: int, row: dict) -> None:
        with self.conn:
            self.conn.execute(
                "INSERT OR REPLACE INTO energy_idle(campaign_id, source, block, started_unix_s, duration_s,"
                " energy_j, power_w, quantization_j, samples, gate_detail) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    campaign_id,
                    source,
                    block,
                    row["started_unix_s"],
                    row["duration_s"],
                    row["energy_j"],
                    row["power_w"],
                    row["quantization_j"],
                    row["samples"],
                    row.get("gate_detail"),
                ),
            )

    def energy_sources(self, campaign_id: int) -> list[sqlite3.Row]:
        return self.conn.execute(
            "SELECT * FROM energy_sources WHERE campaign_id=? ORDER BY is_primary DESC, name", (campaign_id,)
        ).fetchall()

    def idle_windows(self, campaign_id: int) -> list[sqlite3.Row]:
        return self.conn.execute(
            "SELECT * FROM energy_idle WHERE campaign_id=? ORDER BY source, block", (campaign_id,)
        ).fetchall()

    def run_energy(self, campaign_id: int) -> list[sqlite3.Row]:
        return self.conn.execute(
            "SELECT e.* FROM run_energy e JOIN runs r ON r.id = e.run_id WHERE r.campaign_id=?"
            " ORDER BY e.run_id, e.source",
            (campaign_id,),
        ).fetchall()

    # ---- reading for stats, reports and exports ----

    def cells(self, campaign_id: int) -> list[sqlite3.Row]:
        return self.conn.execute(
            "SELECT * FROM cells WHERE campaign_id=? ORDER BY id", (campaign_id,)
        ).fetchall()

    def runs(self, campaign_id: int) -> list[sqlite3.Row]:
        return self.conn.execute(
            "SELECT r.*, c.key AS cell_key, c.workload, c.params_json, c.condition, c.metric, c.unit,"
            " c.higher_is_better FROM runs r JOIN cells c ON c.id = r.cell_id WHERE r.campaign_id=?"
            " ORDER BY r.seq, r.attempt",
            (campaign_id,),
        ).fetchall()

    def run_values(self, run_id: int, metric: str) -> list[float]:
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT value FROM run_values WHERE run_id=? AND metric=? ORDER BY iteration",
                (run_id, metric),
            )
        ]

    def run_metrics(self, run_id: int) -> list[sqlite3.Row]:
        return self.conn.execute("SELECT * FROM run_metrics WHERE run_id=?", (run_id,)).fetchall()

    def histograms(self, run_id: int) -> list[sqlite3.Row]:
        return self.conn.execute(
            "SELECT * FROM run_histograms WHERE run_id=? ORDER BY name", (run_id,)
        ).fetchall()

    def series(self, run_id: int) -> list[sqlite3.Row]:
        return self.conn.execute(
            "SELECT source, t_ns, value FROM series WHERE run_id=? ORDER BY source, t_ns", (run_id,)
        ).fetchall()
