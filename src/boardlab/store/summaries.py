"""Each campaign's stored summary and history steps (boardlab.summary), for serve and history."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable

from boardlab.store.base import RUNS_COUNTED, Connected


class SummaryRows(Connected):
    """Each campaign's stored summary and history steps (boardlab.summary), for serve and history. (a part of
    `Store`, store/db.py)."""

    # ---- campaign summaries for serve and history on a large store (issue 26, migration 8) ----

    def count_runs(self, campaign_id: int) -> int:
        """Runs stored of a campaign: the campaign's own count (migration 14), or on an older store read as
        it is, a count over the runs' (campaign_id, ...) unique index."""
        row = self.conn.execute(
            f"SELECT {self._runs_of_c()} FROM campaigns c WHERE c.id=?", (campaign_id,)
        ).fetchone()
        return int(row[0]) if row else 0

    def _runs_of_c(self) -> str:
        """SQL of the runs stored of campaign `c` in a query over the campaigns (see count_runs)."""
        if self._schema() >= RUNS_COUNTED:
            return "c.runs_stored"
        return "(SELECT count(*) FROM runs r WHERE r.campaign_id = c.id)"

    def campaign_summary(self, campaign_id: int, *, with_document: bool = False) -> sqlite3.Row | None:
        """The campaign's stored summary (schema, runs_stored, status, cells_json; the document's JSON only
        when asked: it is the large part), or None (none stored, or a store before migration 8)."""
        cols = "campaign_id, schema, runs_stored, status, computed_unix_s, cells_json" + (
            ", document_json" if with_document else ""
        )
        return self.conn.execute(
            f"SELECT {cols} FROM campaign_summaries WHERE campaign_id=?", (campaign_id,)
        ).fetchone()

    def put_campaign_summary(
        self, campaign_id: int, *, schema: int, runs_stored: int, status: str, cells_json: str,
        document_json: str, document_html: str = "",
    ) -> None:  # fmt: skip
        """Stores (replaces) a campaign's summary, in one transaction. `schema` is the fingerprint of the code
        that computed it (boardlab.summary.code_fingerprint); `document_html` is no longer written (pages
        render the document), the column stays for older readers."""
        with self.conn:
            self.conn.execute("DELETE FROM campaign_summaries WHERE campaign_id=?", (campaign_id,))
            self.conn.execute(
                "INSERT INTO campaign_summaries(campaign_id, schema, runs_stored, status, computed_unix_s,"
                " cells_json, document_json, document_html) VALUES (?,?,?,?,?,?,?,?)",
                (campaign_id, schema, runs_stored, status, time.time(), cells_json, document_json,
                 document_html),
            )  # fmt: skip

    def campaigns_without_fresh_summary(self, schema: int, *, limit: int) -> list[int]:
        """Ids of campaigns that are not running and have no summary of this schema, or one computed at
        another status or run count (a campaign resumed since), oldest first."""
        return [
            int(r[0])
            for r in self.conn.execute(
                "SELECT c.id FROM campaigns c LEFT JOIN campaign_summaries s ON s.campaign_id = c.id"
                " WHERE c.status <> 'running' AND (s.campaign_id IS NULL OR s.schema <> ? OR s.status <>"
                f" c.status OR s.runs_stored <> {self._runs_of_c()}) ORDER BY c.id LIMIT ?",
                (schema, limit),
            )
        ]

    def campaigns_to_backfill(
        self, schema: int, *, limit: int, summaries: bool = True
    ) -> tuple[list[int], int]:
        """(ids of ended campaigns with no summary of this schema, or one computed at another status, newest
        first, at most `limit`; how many campaigns have ended). Two queries over the campaigns and the
        summaries' primary key, whatever the store's size. A summary of another run count than its campaign's
        is stale too where campaigns keep their count (migration 14); on an older store that would count every
        run of every campaign, so a page finds a stale one when it reads it.
        `summaries=False`: a store from before summaries were kept, where every ended campaign lacks one."""
        ended = int(
            self.conn.execute("SELECT count(*) FROM campaigns WHERE status <> 'running'").fetchone()[0]
        )
        if not summaries:
            rows = self.conn.execute(
                "SELECT id FROM campaigns WHERE status <> 'running' ORDER BY id DESC LIMIT ?", (limit,)
            )
        else:
            count = " OR s.runs_stored <> c.runs_stored" if self._schema() >= RUNS_COUNTED else ""
            rows = self.conn.execute(
                "SELECT c.id FROM campaigns c LEFT JOIN campaign_summaries s ON s.campaign_id = c.id"
                " WHERE c.status <> 'running' AND (s.campaign_id IS NULL OR s.schema <> ? OR s.status <>"
                f" c.status{count}) ORDER BY c.id DESC LIMIT ?",
                (schema, limit),
            )
        return [int(r[0]) for r in rows], ended

    def record_value_runs(
        self,
        campaign_id: int,
        metric: tuple[str, str, bool],
        runs: Iterable[tuple],
        *,
        series: Iterable[Iterable[tuple[str, int, float]]] | None = None,
        results: Iterable[str] | None = None,
    ) -> int:
        """Bulk insert of one-value runs (a benchmark's synthetic store, a converted archive): each
        (cell_id, repetition, seq, started_unix_s, wall_ns, value, aa_arm) becomes a valid first attempt
        with its metric row, its value as the run's one iteration and its wall time as that iteration's
        time, in one transaction. `metric` is
        (name, unit, higher_is_better). `series`: each run's monitor samples ((source, t_ns, value), ...), in
        the order of `runs` (taken as long as there are runs), stored packed as `record_run` stores them: a
        synthetic store as large per run as a campaign's. `results`: each run's worker result (JSON text), in
        the same order and taken the same way, where `record_run` keeps it (store schema 16 and later).
        Returns the runs inserted. Far faster than `record_run` per run."""
        name, unit, hib = metric
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            first = self.conn.execute("SELECT coalesce(max(id), 0) FROM runs").fetchone()[0]
            self.conn.executemany(
                "INSERT INTO runs(campaign_id, cell_id, repetition, attempt, seq, started_unix_s, wall_ns,"
                " cpu, exit_code, ok, valid, value, warmup_iterations, warmup_capped, rusage_json,"
                " gate_waited_s, gate_timed_out, gate_detail, condition_state_json, monitor_json, aa_arm)"
                " VALUES (?,?,?,1,?,?,?,NULL,0,1,1,?,0,0,'{}',0,0,'',  '{}','{}',?)",
                ((campaign_id, *r) for r in runs),
            )
            self.conn.execute(
                "INSERT INTO run_metrics(run_id, metric, unit, higher_is_better, median, min, p90, p99)"
                " SELECT id, ?, ?, ?, value, value, value, value FROM runs WHERE id > ? AND campaign_id=?",
                (name, unit, int(hib), first, campaign_id),
            )
            for metric_name in ("iteration_ns", name):
                self.conn.execute(
                    "INSERT INTO run_values(run_id, metric, iteration, value)"
                    " SELECT id, ?, 0, CASE WHEN ? THEN wall_ns ELSE value END FROM runs"
                    " WHERE id > ? AND campaign_id=?",
                    (metric_name, metric_name == "iteration_ns", first, campaign_id),
                )
            if series is not None or results is not None:
                ids = [int(r[0]) for r in self.conn.execute(
                    "SELECT id FROM runs WHERE id > ? AND campaign_id=? ORDER BY id", (first, campaign_id)
                )]  # fmt: skip
                if series is not None:
                    self._insert_series_of(zip(ids, series, strict=False))
                if results is not None:
                    self._insert_results_of(zip(ids, results, strict=False))
            count = self.conn.execute(
                "SELECT count(*) FROM runs WHERE id > ? AND campaign_id=?", (first, campaign_id)
            ).fetchone()[0]
            self._count_added_runs(campaign_id, int(count), int(count))  # each one valid
            self.conn.execute("COMMIT")
        except BaseException:
            self._rollback()
            raise
        return int(count)

    def step_summary(self, from_id: int, to_id: int) -> sqlite3.Row | None:
        """The stored step from campaign `from_id` to `to_id` (schema, runs_from, runs_to, rows_json,
        comparisons_json), or None."""
        return self.conn.execute(
            "SELECT schema, runs_from, runs_to, rows_json, comparisons_json FROM step_summaries"
            " WHERE from_campaign_id=? AND to_campaign_id=?",
            (from_id, to_id),
        ).fetchone()

    def put_step_summary(
        self, from_id: int, to_id: int, *, schema: int, runs_from: int, runs_to: int, rows_json: str,
        comparisons_json: str,
    ) -> None:  # fmt: skip
        with self.conn:
            self.conn.execute(
                "DELETE FROM step_summaries WHERE from_campaign_id=? AND to_campaign_id=?", (from_id, to_id)
            )
            self.conn.execute(
                "INSERT INTO step_summaries(from_campaign_id, to_campaign_id, schema, runs_from, runs_to,"
                " rows_json, comparisons_json) VALUES (?,?,?,?,?,?,?)",
                (from_id, to_id, schema, runs_from, runs_to, rows_json, comparisons_json),
            )

    def previous_campaign(self, campaign_id: int) -> int | None:
        """The campaign of the same plan (name) on the same board that arrived just before this one, or None
        (arrival, not the board's wall clock: `campaigns_of_plan`)."""
        row = self.conn.execute(
            "SELECT p.id FROM campaigns c JOIN campaigns p ON p.name = c.name AND p.board_id = c.board_id"
            " AND p.id < c.id WHERE c.id=? ORDER BY p.id DESC LIMIT 1",
            (campaign_id,),
        ).fetchone()
        return None if row is None else int(row[0])
