"""Cells, runs and energy rows as a campaign writes them: runs a few at a time in one transaction."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Sequence

from boardlab.model.campaign import Cell, ConditionSpec
from boardlab.model.run import RunResult, run_columns
from boardlab.model.worker_result import may_hold_series
from boardlab.store.base import RESULTS_APART, Connected, _json
from boardlab.store.migrations import (
    RUN_COLUMNS,
    column_values,
)


class RunRecords(Connected):
    """Cells, runs and energy rows as a campaign writes them (a part of `Store`, store/db.py)."""

    # ---- cells and runs ----

    def ensure_cells(
        self,
        campaign_id: int,
        cells: Iterable[Cell],
        conditions: dict[str, ConditionSpec],
        units: dict[str, tuple[str, bool]],
    ) -> dict[str, int]:
        """Inserts missing cells; returns cell key -> id. `units` maps a cell key to (unit,
        higher_is_better)."""
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
            self._rollback()
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

    def run_identities(self, campaign_id: int) -> list[tuple[str, int, int]]:
        """(cell key, repetition, attempt) of every stored run of a campaign: a run's identity in ingest."""
        return [
            (r[0], int(r[1]), int(r[2]))
            for r in self.conn.execute(
                "SELECT c.key, r.repetition, r.attempt FROM runs r JOIN cells c ON c.id = r.cell_id"
                " WHERE r.campaign_id=?",
                (campaign_id,),
            )
        ]

    def record_run(self, campaign_id: int, cell_id: int, run: RunResult) -> int:
        """One run in a transaction of its own (`record_runs` of one)."""
        return self.record_runs(campaign_id, [(cell_id, run)])[0]

    def record_runs(self, campaign_id: int, runs: Sequence[tuple[int, RunResult]]) -> list[int]:
        """Runs of a campaign, (cell id, run) each, in one transaction, with the campaign's heartbeat; their
        ids. A commit costs 0.4 ms on a VM's disk, the time of a whole short program run: the runner stores
        such runs a few at a time."""
        schema = self._schema()
        with_summary = schema >= 9  # unless a test stands in for an older boardlab's store
        apart = schema >= RESULTS_APART
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            ids = [self._insert_run(campaign_id, cell_id, run, with_summary, apart) for cell_id, run in runs]
            self._insert_parts([(run_id, run) for run_id, (_, run) in zip(ids, runs, strict=True)], apart)
            valid = sum(bool(run.valid) for _, run in runs)
            series = sum(may_hold_series(run.worker_json) for _, run in runs)
            self._count_added_runs(campaign_id, len(ids), valid, series=series, heartbeat_unix_s=time.time())
            self.conn.execute("COMMIT")
        except BaseException:
            self._rollback()
            raise
        return ids

    def _insert_run(
        self, campaign_id: int, cell_id: int, run: RunResult, with_summary: bool, apart: bool
    ) -> int:
        """The run's row (in the caller's transaction); `_insert_parts` adds the rest. `apart`: its result
        goes to run_results (store schema 16), else into this row, as an older boardlab's store keeps it (a
        test stands in for one)."""
        # its summary columns (migration 9)
        summary = column_values(run_columns(run.monitor, run.rusage)) if with_summary else ()
        extra = [*RUN_COLUMNS] if summary else []
        extra += [] if apart else ["worker_json"]
        cur = self.conn.execute(
            "INSERT INTO runs(campaign_id, cell_id, repetition, attempt, seq, started_unix_s, wall_ns, cpu,"
            " exit_code, ok, valid, invalid_reason, value, warmup_iterations, warmup_capped, rusage_json,"
            " gate_waited_s, gate_timed_out, gate_detail, condition_state_json, monitor_json, error,"
            f" aa_arm{''.join(f', {c}' for c in extra)})"
            f" VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?{',?' * len(extra)})",
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
                run.aa_arm,
                *summary,
                *(() if apart else (run.worker_json,)),
            ),
        )
        assert cur.lastrowid is not None  # an INSERT sets it
        return int(cur.lastrowid)

    def _insert_parts(self, stored: list[tuple[int, RunResult]], apart: bool) -> None:
        """Each stored run's (run id, run) worker result, metrics, every iteration, histograms, energy and
        monitor series: one statement per table for the whole batch, since a statement per run and table
        cost a 0.5 ms program a tenth of its harness time. Each table's rows keep the runs' order."""
        if apart:
            self._insert_results_of([(i, r.worker_json) for i, r in stored if r.worker_json is not None])
        self.conn.executemany(
            "INSERT INTO run_metrics(run_id, metric, unit, higher_is_better, median, min, p90, p99)"
            " VALUES (?,?,?,?,?,?,?,?)",
            [(i, m.name, m.unit, int(m.higher_is_better), m.median, m.min, m.p90, m.p99)
             for i, r in stored for m in r.metrics],
        )  # fmt: skip
        self.conn.executemany(
            "INSERT INTO run_values(run_id, metric, iteration, value) VALUES (?,?,?,?)",
            [v for i, r in stored for v in _values(i, r)],
        )
        self._insert_series_of([(i, r.series) for i, r in stored])
        self.conn.executemany(
            "INSERT INTO run_histograms(run_id, name, bucket_width, unit, counts_json, overflow, total)"
            " VALUES (?,?,?,?,?,?,?)",
            [(i, h.name, h.bucket_width, h.unit, json.dumps(list(h.counts)), h.overflow, h.total)
             for i, r in stored for h in r.histograms],
        )  # fmt: skip
        self.conn.executemany(
            "INSERT INTO run_energy(run_id, source, method, start_ns, end_ns, energy_j, power_avg_w,"
            " power_peak_w, quantization_j, samples, update_interval_s, warnings_json)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            [
                (i, e.source, e.method, e.start_ns, e.end_ns, e.energy_j, e.power_avg_w,
                 e.power_peak_w, e.quantization_j, e.samples, e.update_interval_s, _json(list(e.warnings)))
                for i, r in stored for e in r.energy
            ],
        )  # fmt: skip

    # ---- energy (boardlab.energy) ----

    def record_energy_sources(
        self, campaign_id: int, rows: list[tuple[str, dict, bool, str | None, bool]]
    ) -> None:
        """(name, spec, supported, reason, is_primary) of every source considered; replaces a resumed
        run's."""
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


def _values(run_id: int, run: RunResult) -> list[tuple[int, str, int, float]]:
    """A run's run_values rows: every iteration's time, then each metric's values in order."""
    values = [(run_id, "iteration_ns", i, float(v)) for i, v in enumerate(run.iterations_ns)]
    for m in run.metrics:
        values.extend((run_id, m.name, i, float(v)) for i, v in enumerate(m.values) if v is not None)
    return values
