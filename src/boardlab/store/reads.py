"""What the analysis, the reports and the exports read: a cell in one query, monitor series and exported runs
in bounded batches."""

from __future__ import annotations

import contextlib
import sqlite3
from array import array
from collections.abc import Iterator, Sequence
from typing import cast

from boardlab.model.worker_result import SERIES_MARK
from boardlab.store import packed
from boardlab.store.base import RESULTS_APART, SERIES_COUNTED, Connected, SeriesSample, _int64_le
from boardlab.store.migrations import (
    RUN_COLUMNS,
    DamagedValue,
    columns_of_json,
)
from boardlab.store.verify import damaged


class AnalysisReads(Connected):
    """What the analysis, the reports and the exports read (a part of `Store`, store/db.py)."""

    # ---- reading for stats, reports and exports ----

    def cells(self, campaign_id: int) -> list[sqlite3.Row]:
        return self.conn.execute(
            "SELECT * FROM cells WHERE campaign_id=? ORDER BY id", (campaign_id,)
        ).fetchall()

    def runs(self, campaign_id: int) -> list[sqlite3.Row]:
        """Every run of the campaign whole, its worker result (`worker_json`) and its cell's identity with it,
        in run order: for the few readers of a worker's own output (the analysis reads `cell_runs`)."""
        result, join = "", ""
        if self._schema() >= RESULTS_APART:
            result, join = ", w.worker_json", " LEFT JOIN run_results w ON w.run_id = r.id"
        return self.conn.execute(
            f"SELECT r.*{result}, c.key AS cell_key, c.workload, c.params_json, c.condition, c.metric,"
            f" c.unit, c.higher_is_better FROM runs r JOIN cells c ON c.id = r.cell_id{join}"
            " WHERE r.campaign_id=? ORDER BY r.seq, r.attempt",
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

    def series(self, run_id: int) -> list[SeriesSample]:
        """Every monitor sample of a run, by source and time: rows of (source, t_ns, value)."""
        return [
            SeriesSample((source, t, v))
            for _, source, times, values in self.run_series((run_id,))
            for t, v in zip(times, values, strict=True)
        ]

    # ---- reading for analysis (portable SQL: also spoken by the PostgreSQL store) ----

    @contextlib.contextmanager
    def snapshot(self):
        """One read transaction: a consistent view while a running campaign commits runs (WAL)."""
        self.conn.execute("BEGIN")
        try:
            yield self
        finally:
            self.conn.execute("COMMIT")

    def has_runs(self) -> bool:
        return self.conn.execute("SELECT 1 FROM runs LIMIT 1").fetchone() is not None  # not a count of them

    def campaign_artifact(self, campaign_id: int, name: str) -> bytes | None:
        """The newest artifact `name` stored for the campaign (e.g. the governor lab's labels), or None."""
        row = self.conn.execute(
            "SELECT data FROM artifacts WHERE campaign_id=? AND name=? ORDER BY id DESC LIMIT 1",
            (campaign_id, name),
        ).fetchone()
        return None if row is None else bytes(row["data"])

    def campaigns_without_artifact(self, name: str) -> list[int]:
        """The ids of the campaigns that store no artifact `name` (e.g. the workload facts of a campaign
        stored before boardlab stored them), in id order."""
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT id FROM campaigns WHERE id NOT IN"
                " (SELECT campaign_id FROM artifacts WHERE name=? AND campaign_id IS NOT NULL) ORDER BY id",
                (name,),
            )
        ]

    # ---- streaming reads (issue 27: the analysis reads a cell in one query, the monitor series and the
    # exported runs in bounded batches; memory follows the largest cell, never the campaign) ----

    _BATCH = 1000  # runs per batch of monitor series

    _CELL_RUN_COLUMNS = (
        "id, seq, repetition, attempt, started_unix_s, value, valid, ok, invalid_reason, error, wall_ns,"
        " gate_waited_s, warmup_capped"
    )

    def cell_runs(self, cell_id: int) -> list:
        """Every run of one cell in run order, with what the analysis reads (not the worker's whole result):
        the run's summary columns (RUN_COLUMNS) among them, derived from its JSON on a store before
        migration 9 (a reader does not migrate) by the function that filled them."""
        return [row for batch in self.cell_run_batches(cell_id) for row in batch]

    def cell_run_batches(self, cell_id: int, batch: int = 10_000, *, after_id: int = 0) -> Iterator[list]:
        """`cell_runs` in batches of at most `batch` rows: a cell of 10^6 runs is read without ever holding
        10^6 row objects (about 600 bytes each), which would be most of a report's memory. `after_id`: only
        the runs stored after that one (ids grow as runs are stored), in run order."""
        cols = self._CELL_RUN_COLUMNS + (", aa_arm" if self._schema() >= 3 else "")
        old = self._schema() < 9
        extra = "monitor_json, rusage_json" if old else ", ".join(RUN_COLUMNS)
        cursor = self.conn.execute(
            f"SELECT {cols}, {extra} FROM runs WHERE cell_id=? AND id>? ORDER BY seq, attempt",
            (cell_id, after_id),
        )
        while rows := cursor.fetchmany(batch):
            yield [self._with_run_columns(r) for r in rows] if old else rows

    def cell_runs_through(self, cell_id: int, last_id: int) -> int:
        """The cell's runs stored up to run `last_id`, counted over its index (not the table)."""
        got = self.conn.execute("SELECT count(*) FROM runs WHERE cell_id=? AND id<=?", (cell_id, last_id))
        return int(got.fetchone()[0])

    def _with_run_columns(self, row) -> dict:
        out = {k: row[k] for k in row.keys() if k not in ("monitor_json", "rusage_json")}
        try:
            values = columns_of_json(row["monitor_json"], row["rusage_json"])
        except DamagedValue as exc:  # a store opened without verify (serve verified it at its start)
            raise damaged(self.path, "runs", exc.args[0], row["id"], exc.args[1]) from None
        return out | dict(zip(RUN_COLUMNS, values, strict=True))

    def cell_metrics(self, cell_id: int) -> dict[int, dict[str, dict]]:
        """run id -> metric -> its stored row (median, min, p90, p99, unit ...), for the valid runs of a
        cell."""
        out: dict[int, dict[str, dict]] = {}
        for row in self.conn.execute(
            "SELECT m.* FROM run_metrics m JOIN runs r ON r.id = m.run_id WHERE r.cell_id=? AND r.valid=1",
            (cell_id,),
        ):
            out.setdefault(int(row["run_id"]), {})[row["metric"]] = dict(row)
        return out

    def cell_values(self, cell_id: int, metric: str) -> dict[int, list[float]]:
        """run id -> every stored sample of `metric` in iteration order, for the valid runs of a cell."""
        out: dict[int, list[float]] = {}
        for run_id, value in self.conn.execute(
            "SELECT v.run_id, v.value FROM run_values v JOIN runs r ON r.id = v.run_id"
            " WHERE r.cell_id=? AND r.valid=1 AND v.metric=? ORDER BY v.run_id, v.iteration",
            (cell_id, metric),
        ):
            out.setdefault(int(run_id), []).append(value)
        return out

    def cell_histograms(self, cell_id: int) -> dict[int, list[sqlite3.Row]]:
        """run id -> its stored histograms by name, for the valid runs of a cell."""
        out: dict[int, list[sqlite3.Row]] = {}
        for row in self.conn.execute(
            "SELECT h.* FROM run_histograms h JOIN runs r ON r.id = h.run_id WHERE r.cell_id=? AND r.valid=1"
            " ORDER BY h.run_id, h.name",
            (cell_id,),
        ):
            out.setdefault(int(row["run_id"]), []).append(row)
        return out

    def run_series(self, run_ids: Sequence[int]) -> Iterator[tuple[int, str, array, array]]:
        """(run id, source, times in ns since the run started, values) of the given runs (a bounded batch),
        in the order of `run_ids`, each run's sources by name; from an older store's per-sample rows too."""
        if not run_ids:
            return
        marks = ",".join("?" * len(run_ids))
        by_run: dict[int, list[tuple[str, array, array]]] = {}
        if self._schema() >= 7:
            for run_id, source, packing, samples, t_ns, value in self.conn.execute(
                "SELECT run_id, source, packing, samples, t_ns, value FROM run_series"
                f" WHERE run_id IN ({marks}) ORDER BY run_id, source",
                tuple(run_ids),
            ):
                arrays = packed.unpack_row(self.path, run_id, source, packing, samples, t_ns, value)
                by_run.setdefault(int(run_id), []).append((source, *arrays))
        else:
            rows: dict[int, list] = {}
            for run_id, source, t_ns, value in self.conn.execute(
                f"SELECT run_id, source, t_ns, value FROM series WHERE run_id IN ({marks})"
                " ORDER BY run_id, source, t_ns",
                tuple(run_ids),
            ):
                rows.setdefault(int(run_id), []).append((source, t_ns, value))
            for run_id, samples in rows.items():
                by_run[run_id] = packed.arrays(samples)
        for run_id in run_ids:
            for source, times, values in by_run.get(run_id, ()):
                yield run_id, source, times, values

    def _run_order(self, campaign_id: int) -> tuple[array, array]:
        """The ids and start times (unix s) of a campaign's started runs in run order (seq, attempt): 16 bytes
        a run, the order to read its series in batches, not the runs."""
        ids, starts = array("q"), array("d")
        for r in self.iter_rows(
            "SELECT id, started_unix_s FROM runs WHERE campaign_id=? AND started_unix_s IS NOT NULL"
            " ORDER BY seq, attempt, id",
            (campaign_id,),
        ):
            ids.append(int(r[0]))
            starts.append(float(r[1]))
        return ids, starts

    def campaign_series(self, campaign_id: int) -> Iterator[tuple[int, float, str, array, array]]:
        """(run id, run start unix s, source, times, values) of every run of a campaign, in run order
        (seq, attempt), read a batch of runs at a time."""
        ids, starts = self._run_order(campaign_id)
        for i in range(0, len(ids), self._BATCH):
            start_of = dict(zip(ids[i : i + self._BATCH], starts[i : i + self._BATCH], strict=True))
            for run_id, source, times, values in self.run_series(ids[i : i + self._BATCH]):
                yield run_id, start_of[run_id], source, times, values

    def run_start_range(self, campaign_id: int) -> tuple[float, float] | None:
        """(first, last) start time of the campaign's runs, or None when it has none."""
        row = self.conn.execute(
            "SELECT min(started_unix_s), max(started_unix_s) FROM runs WHERE campaign_id=?", (campaign_id,)
        ).fetchone()
        return None if row is None or row[0] is None else (float(row[0]), float(row[1]))

    # ---- report speed (issue 27: each report section reads only the rows and columns it shows) ----

    def iter_worker_series(self, campaign_id: int) -> Iterator:
        """(cell id, worker result JSON) of the campaign's valid runs whose result may hold time series (it
        names "series"), in run order, one row at a time: the series study reads no other run's result. None
        read where the campaign counted no such run (store schema 15): finding them reads every result."""
        if self._schema() >= SERIES_COUNTED:
            row = self.conn.execute("SELECT runs_series FROM campaigns WHERE id=?", (campaign_id,)).fetchone()
            if row is not None and row[0] == 0:
                return iter(())
        runs, result = "runs r", "r.worker_json"  # a store before schema 16 kept them in the runs' rows
        if self._schema() >= RESULTS_APART:
            runs, result = "runs r JOIN run_results w ON w.run_id = r.id", "w.worker_json"
        return self.iter_rows(
            f"SELECT r.cell_id, {result} FROM {runs} WHERE r.campaign_id=? AND r.valid=1 AND {result} LIKE ?"
            " ORDER BY r.seq, r.attempt",
            (campaign_id, f"%{SERIES_MARK}%"),
        )

    def campaign_series_extents(self, campaign_id: int) -> Iterator[tuple[int, float, str, int, int, int]]:
        """(run id, run start unix s, source, samples, first t_ns, last t_ns) of every run and source of a
        campaign with samples, in the order of `campaign_series`: where each source's samples lie in time,
        without reading (or unpacking) the samples themselves (the database cuts the first and the last;
        PostgreSQL's substr of bytea takes an integer offset, and `samples` is a bigint there)."""
        if self._schema() < 7:  # an older store's per-sample rows: from the samples
            for run_id, start, source, times, _values in self.campaign_series(campaign_id):
                if times:
                    yield run_id, start, source, len(times), times[0], times[-1]
            return
        ids, starts = self._run_order(campaign_id)
        for i in range(0, len(ids), self._BATCH):
            batch = ids[i : i + self._BATCH]
            by_run: dict[int, list[tuple[str, int, int, int]]] = {}
            for run_id, source, samples, first, last in self.conn.execute(
                "SELECT run_id, source, samples, substr(t_ns, 1, 8),"
                " substr(t_ns, CAST(8 * samples - 7 AS INTEGER), 8)"
                f" FROM run_series WHERE run_id IN ({','.join('?' * len(batch))}) AND samples > 0"
                " ORDER BY run_id, source",
                tuple(batch),
            ):
                if len(first) != 8 or len(last) != 8:  # the full read (run_series) names the damage
                    continue
                by_run.setdefault(int(run_id), []).append(
                    (source, int(samples), _int64_le(first), _int64_le(last))
                )
            for run_id, start in zip(batch, starts[i : i + self._BATCH], strict=True):
                for source, samples, t0, t1 in by_run.get(run_id, ()):
                    yield run_id, start, source, samples, t0, t1

    # ---- export (issue 27: the columns an export writes, a run at a time, in run order) ----

    EXPORT_RUN_COLUMNS = ("id", "cell_id", "repetition", "attempt", "seq", "value", "valid", "ok",
                          "invalid_reason", "error", "started_unix_s", "wall_ns", "utime_us", "stime_us",
                          "cpu", "warmup_iterations", "warmup_capped", "aa_arm")  # fmt: skip

    EXPORT_ENERGY_COLUMNS = ("method", "start_ns", "end_ns", "energy_j", "power_avg_w", "power_peak_w",
                             "quantization_j", "samples", "update_interval_s", "warnings_json")  # fmt: skip

    def iter_export_runs(self, campaign_id: int, energy_source: str | None = None) -> Iterator[tuple]:
        """The runs of a campaign as tuples of EXPORT_RUN_COLUMNS, in run order (seq, attempt), one at a time:
        the worker's CPU time taken out of its rusage by the database, and without the worker's result,
        monitor summary and condition state, most of a stored run's bytes, which an export does not write
        (an older store without aa_arm gives None there). With `energy_source`, each tuple goes on with the
        run's EXPORT_ENERGY_COLUMNS of that source (None when it has none)."""
        if self.dialect == "postgresql":
            cpu = [
                f"CAST(CAST(r.rusage_json AS jsonb) ->> '{k}' AS bigint)" for k in ("utime_us", "stime_us")
            ]
        else:
            cpu = [f"json_extract(r.rusage_json, '$.{k}')" for k in ("utime_us", "stime_us")]
        expr = {
            "utime_us": cpu[0],
            "stime_us": cpu[1],
            "aa_arm": "r.aa_arm" if self._schema() >= 3 else "NULL",
        }
        cols = [expr.get(c, f"r.{c}") for c in self.EXPORT_RUN_COLUMNS]
        join, params = "", cast(tuple, (campaign_id,))
        if energy_source is not None:
            cols += [f"e.{c}" for c in self.EXPORT_ENERGY_COLUMNS]
            join = " LEFT JOIN run_energy e ON e.run_id = r.id AND e.source = ?"
            params = (energy_source, campaign_id)
        sql = (
            f"SELECT {', '.join(cols)} FROM runs r{join} WHERE r.campaign_id=? ORDER BY r.seq, "
            "r.attempt, r.id"
        )
        if self.dialect == "postgresql":
            return self.iter_rows(sql, params)
        cur = self.conn.cursor()
        cur.row_factory = None  # plain tuples, indexed by position: cheaper than a sqlite3.Row per run
        return cur.execute(sql, params)
