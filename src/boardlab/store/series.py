"""The HTML report's monitor plots: the database sums whole rows per time bucket from their summaries."""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Iterator, Sequence

from boardlab.store import packed
from boardlab.store.base import _int64_le
from boardlab.store.reads import AnalysisReads


class MonitorPlots(AnalysisReads):
    """The HTML report's monitor plots (a part of `Store`, store/db.py)."""

    # ---- the HTML report's monitor plots (issue 27, HTML report): the database sums whole rows per time
    # bucket from their summaries (store schema 10, boardlab.store.packed.summarize); Python reads only the
    # rest ----

    _SERIES_JOIN = (
        "FROM runs r CROSS JOIN run_series s WHERE s.run_id = r.id AND r.campaign_id=? AND s.samples > 0"
        " AND r.started_unix_s IS NOT NULL"
    )
    _SUM_RUNS = 50_000  # runs per grouped query: the database's sort stays in memory, its cost linear in runs

    def series_grid(self, campaign_id: int) -> tuple[float, float, float] | None:
        """(t0, lo, hi): the campaign's first run start (unix s), and a time range in s since t0 that holds
        every monitor sample: from 0 (or the earliest sample, if one precedes its run's start) to the last
        run's start plus the latest sample time of any run. None when the campaign has no samples."""
        starts = self.run_start_range(campaign_id)
        if starts is None:
            return None
        lo_ns, hi_ns = math.inf, -math.inf  # the earliest and latest sample time in ns after its run's start
        unsummarized = self._schema() < 10
        if not unsummarized:
            # min and max ignore NULLs; the count says whether any row lacks its times
            row = self.conn.execute(
                f"SELECT min(s.t_first_ns), max(s.t_last_ns), count(*) - count(s.t_first_ns + s.t_last_ns)"
                f" {self._SERIES_JOIN}",
                (campaign_id,),
            ).fetchone()
            if row[0] is not None and row[1] is not None:  # a row may hold one time and not the other
                lo_ns, hi_ns = int(row[0]), int(row[1])
            unsummarized = bool(row[2])
        if unsummarized:
            for _, _, _, _, t_first, t_last in self._unsummarized_extents(campaign_id):
                lo_ns, hi_ns = min(lo_ns, t_first), max(hi_ns, t_last)
        if lo_ns == math.inf:
            return None
        t0, last_start = starts
        return t0, min(0.0, lo_ns / 1e9), (last_start - t0) + hi_ns / 1e9

    def _unsummarized_extents(self, campaign_id: int) -> Iterator[tuple[int, float, str, int, int, int]]:
        """`campaign_series_extents` of the rows with samples but no summary (all rows before schema 10)."""
        if self._schema() < 10:
            yield from self.campaign_series_extents(campaign_id)
            return
        for run_id, start, source, n, first, last in self.iter_rows(
            "SELECT r.id, r.started_unix_s, s.source, s.samples, substr(s.t_ns, 1, 8),"
            f" substr(s.t_ns, CAST(8 * s.samples - 7 AS INTEGER), 8) {self._SERIES_JOIN}"
            " AND (s.t_first_ns IS NULL OR s.t_last_ns IS NULL)",
            (campaign_id,),
        ):
            if len(first) == 8 and len(last) == 8:  # else damaged: reading the samples names it
                yield int(run_id), float(start), source, int(n), _int64_le(first), _int64_le(last)

    def series_bucket_sums(
        self, campaign_id: int, t0: float, div: float, lo: float, span: float, n: int
    ) -> Iterator[tuple[str, int | None, int, float, float, int | None]]:
        """(source, bucket, samples, sum of their times in s since `t0`, sum of their values, run id) of the
        campaign's rows with samples, one scan. The bucket of a time x (s since t0) is, as in
        analysis.monitor, min(trunc((x / div - lo) / span * n), n - 1) with x = (start - t0) + t_ns / 1e9 (the
        same float operations in the same order). A row whose first and last sample share a bucket and that
        has a summary is summed with the others of its source and bucket (run id None); any other row comes
        alone with its run id and the bucket of its first sample (series_rows gives its samples). Nothing
        before schema 10."""
        if self._schema() < 10:
            return
        pg = self.dialect == "postgresql"
        at = "(((r.started_unix_s - ?) + s.{} / ?) / ? - ?) / ? * ?"
        bucket = ("LEAST(CAST(trunc({}) AS BIGINT), ?)" if pg else "min(CAST({} AS INTEGER), ?)").format(at)
        inner = (
            "SELECT s.run_id AS run_id, s.source AS source, s.samples AS samples, r.started_unix_s - ? AS st,"
            " s.t_sum_ns AS t_sum, s.value_sum AS v_sum,"
            f" {bucket.format('t_first_ns')} AS k, {bucket.format('t_last_ns')} AS kl {self._SERIES_JOIN}"
            " AND r.started_unix_s >= ? AND r.started_unix_s < ?"
        )
        # k = kl is NULL, so not true, when either is; so is the sum of the two sums when either is NULL
        sql = (
            "SELECT source, k, sum(samples), sum(samples * st + t_sum / ?), sum(v_sum),"
            " CASE WHEN k = kl AND t_sum + v_sum IS NOT NULL THEN NULL ELSE run_id END AS rid"
            f" FROM ({inner}) x GROUP BY k, source, rid"
        )
        # a bounded slice of runs by start time per query (the index by campaign and start reads each slice)
        count, first, last = self.conn.execute(
            "SELECT count(*), min(started_unix_s), max(started_unix_s) FROM runs WHERE campaign_id=?",
            (campaign_id,),
        ).fetchone()
        slices = max(1, -(-int(count) // self._SUM_RUNS))
        cuts = [-math.inf, *(first + (last - first) * i / slices for i in range(1, slices)), math.inf]
        grid = (t0, 1e9, div, lo, span, n, n - 1)
        for a, b in zip(cuts, cuts[1:], strict=False):
            for source, k, m, sx, sy, rid in self.iter_rows(sql, (1e9, t0, *grid, *grid, campaign_id, a, b)):
                yield (
                    str(source),
                    None if k is None else int(k),
                    int(m),
                    float(sx or 0.0),
                    float(sy or 0.0),
                    None if rid is None else int(rid),
                )

    def series_rows(
        self, campaign_id: int, run_ids: Sequence[int] | None, sources: Sequence[str] | None = None
    ) -> Iterator[tuple[float, str, array, array, bool]]:
        """(run start unix s, source, times, values, has a summary) of the campaign's rows with samples: of
        the runs in `run_ids` (read a batch at a time), or of every run when None; only `sources` if given."""
        if self._schema() < 10:
            wanted = None if run_ids is None else set(run_ids)
            for run_id, start, source, times, values in self.campaign_series(campaign_id):
                if times and (wanted is None or run_id in wanted) and (sources is None or source in sources):
                    yield start, source, times, values, False
            return
        only = f" AND s.source IN ({','.join('?' * len(sources))})" if sources else ""
        sql = (
            "SELECT s.run_id, r.started_unix_s, s.source, s.packing, s.samples, s.t_ns, s.value,"
            " s.t_first_ns IS NOT NULL AND s.t_last_ns IS NOT NULL AND s.t_sum_ns IS NOT NULL"
            f" AND s.value_sum IS NOT NULL {self._SERIES_JOIN}{only}"
        )
        batches: Iterable = (
            [self.iter_rows(sql, (campaign_id, *(sources or ())))]
            if run_ids is None
            else (
                self.conn.execute(
                    f"{sql} AND r.id IN ({','.join('?' * len(run_ids[i : i + self._BATCH]))})",
                    (campaign_id, *(sources or ()), *run_ids[i : i + self._BATCH]),
                )
                for i in range(0, len(run_ids), self._BATCH)
            )
        )
        for rows in batches:
            for run_id, started, source, packing, samples, t_ns, value, summarized in rows:
                arrays = packed.unpack_row(self.path, run_id, source, packing, samples, t_ns, value)
                yield float(started), source, *arrays, bool(summarized)
