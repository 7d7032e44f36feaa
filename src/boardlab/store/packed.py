"""Monitor samples stored compactly: one row per run and source holding two packed arrays (store schema 7).

Before schema 7 every sample was a row of `series` (run id, source text, time, value: about 80 bytes on disk
with its index, 2.4 KB for a run of 30 samples). A row of `run_series` holds a source's samples of one run:
`t_ns` the times as little-endian 64-bit integers (ns since the run started, ascending), `value` the values
as little-endian IEEE 754 doubles, `samples` their count, and `packing` the layout's version (1: this one).
Values read back bit for bit; a reader of an older store reads its `series` rows instead (Store.run_series).

Store schema 10 adds each row's summary (`summarize`): its first and last time, the sum of its times and of
its values. A row whose samples all fall in one bucket of the report's monitor plots needs no more than that,
so the database sums those rows per bucket itself instead of handing every sample to Python; a row without a
summary (NULL: written before schema 10 by an ingest of an older file, a NaN among its values, a sum out of
range) is read sample by sample, as before.
"""

from __future__ import annotations

import math
import sys
from array import array
from collections.abc import Iterable, Iterator

from boardlab.store.verify import DamagedStore

PACKING = 1  # t_ns: int64 LE, value: float64 LE
_BATCH_RUNS = 2000  # runs converted per step of migration 7: memory bounded, whatever the store's size


def arrays(samples: Iterable[tuple[str, int, float]]) -> list[tuple[str, array, array]]:
    """(source, times, values) per source of one run's (source, t_ns, value), sources by name and each
    source's samples by time (equal times keep their recorded order); native byte order."""
    by_source: dict[str, list[tuple[int, float]]] = {}
    for source, t_ns, value in samples:
        by_source.setdefault(source, []).append((int(t_ns), float(value)))
    out = []
    for source in sorted(by_source):
        points = sorted(by_source[source], key=lambda p: p[0])
        out.append((source, array("q", [p[0] for p in points]), array("d", [p[1] for p in points])))
    return out


def pack(samples: Iterable[tuple[str, int, float]]) -> list[tuple[str, int, int, bytes, bytes]]:
    """(source, packing, samples, t_ns bytes, value bytes) per source of one run's (source, t_ns, value)."""
    out = []
    for source, t, v in arrays(samples):
        if sys.byteorder == "big":  # the stored layout is little-endian on every machine
            t.byteswap()
            v.byteswap()
        out.append((source, PACKING, len(t), t.tobytes(), v.tobytes()))
    return out


SUMMARY_COLUMNS = ("t_first_ns", "t_last_ns", "t_sum_ns", "value_sum")
_INT64 = range(-(2**63), 2**63)


def summarize(times: array, values: array) -> tuple[int | None, int | None, int | None, float | None]:
    """(first t_ns, last t_ns, sum of t_ns, sum of values) of one row's samples (times ascending), as schema
    10 stores them beside the packed arrays. The value sum is math.fsum's (correctly rounded); a sum that does
    not fit (int64, a finite double: an infinity is kept) or is NaN is None, and readers then read that row's
    samples. A row without samples has neither time."""
    if not times:
        return None, None, 0, 0.0
    t_sum: int | None = sum(times)
    try:
        v_sum: float | None = math.fsum(values)
    except (OverflowError, ValueError):  # finite values summing past the largest double; inf + -inf
        v_sum = None
    if v_sum is not None and math.isnan(v_sum):
        v_sum = None  # SQLite would store NULL anyway
    return times[0], times[-1], t_sum if t_sum in _INT64 else None, v_sum


def pack_summarized(samples: Iterable[tuple[str, int, float]]) -> list[tuple]:
    """`pack`'s rows, each followed by its `summarize` columns (SUMMARY_COLUMNS): what store schema 10
    inserts."""
    out = []
    for source, t, v in arrays(samples):
        summary = summarize(t, v)
        if sys.byteorder == "big":
            t.byteswap()
            v.byteswap()
        out.append((source, PACKING, len(t), t.tobytes(), v.tobytes(), *summary))
    return out


def summarize_series(conn, *, after_id: int = -1) -> None:
    """Migration 10's data step (and an ingest's of a file from before it): the summary of every `run_series`
    row of a run with an id past `after_id`, a bounded batch of runs at a time."""
    for first, last in _run_batches(conn, "run_series", after_id):
        updates = []
        for run_id, source, packing, samples, t_ns, value in conn.execute(
            "SELECT run_id, source, packing, samples, t_ns, value FROM run_series WHERE run_id "
            "BETWEEN ? AND ?",
            (first, last),
        ).fetchall():
            got = unpack(packing, samples, t_ns, value)
            if got is not None:  # a damaged row keeps no summary: reading its samples names the damage
                updates.append((*summarize(*got), run_id, source))
        conn.executemany(
            "UPDATE run_series SET t_first_ns=?, t_last_ns=?, t_sum_ns=?, value_sum=? WHERE run_id=? "
            "AND source=?",
            updates,
        )


def unpack(packing: int, samples: int, t_ns: bytes, value: bytes) -> tuple[array, array] | None:
    """(times, values) of one packed row; None when the row is not what `pack` wrote (the caller names it)."""
    if packing != PACKING or samples < 0 or len(t_ns) != 8 * samples or len(value) != 8 * samples:
        return None
    t = array("q")
    t.frombytes(bytes(t_ns))  # a PostgreSQL store may give a memoryview
    v = array("d")
    v.frombytes(bytes(value))
    if sys.byteorder == "big":
        t.byteswap()
        v.byteswap()
    return t, v


def unpack_row(
    path: str, run_id: int, source: str, packing: int, samples: int, t_ns: bytes, value: bytes
) -> tuple[array, array]:
    """(times, values) of one stored row, for a reader: DamagedStore naming the row when it is not what
    `pack` wrote."""
    arrays = unpack(packing, samples, t_ns, value)
    if arrays is None:
        raise DamagedStore(
            f"{path}: damaged results database (run_series of run {run_id}, source {source!r}): its packed "
            "samples are not what boardlab wrote; restore the file from a copy"
        )
    return arrays


def convert_series(conn) -> None:
    """Migration 7's data step: every run's `series` rows packed into `run_series`, then `series` dropped.
    Reads a bounded batch of runs at a time (a store of a million runs holds 30 million rows)."""
    for first, last in _run_batches(conn, "series"):
        by_run: dict[int, list[tuple[str, int, float]]] = {}
        for run_id, source, t_ns, value in conn.execute(
            "SELECT run_id, source, t_ns, value FROM series WHERE run_id BETWEEN ? AND ?"
            " ORDER BY run_id, source, t_ns",
            (first, last),
        ).fetchall():
            by_run.setdefault(int(run_id), []).append((source, t_ns, value))
        rows = [(run_id, *row) for run_id, samples in by_run.items() for row in pack(samples)]
        conn.executemany(
            "INSERT INTO run_series(run_id, source, packing, samples, t_ns, value) VALUES (?,?,?,?,?,?)", rows
        )
    conn.execute("DROP TABLE series")


def _run_batches(conn, table: str, after_id: int = -1) -> Iterator[tuple[int, int]]:
    """(first, last) run id of each batch of _BATCH_RUNS runs with ids past `after_id` with rows in `table` (a
    migration's step reads a bounded batch at a time: a store of a million runs holds tens of millions of
    samples)."""
    sql = f"SELECT DISTINCT run_id FROM {table} WHERE run_id > ? ORDER BY run_id LIMIT ?"
    for ids in keyset_batches(conn, sql, after_id, _BATCH_RUNS):
        yield int(ids[0][0]), int(ids[-1][0])


def keyset_batches(conn, sql: str, after: int, size: int) -> Iterator[list]:
    """The rows of `sql` a batch of at most `size` at a time, from the first key past `after` on: `sql`
    selects the key first, takes `key > ?` and `LIMIT ?` and orders by the key, so each batch starts past the
    last one's (the rows of a batch may be changed before the next is read)."""
    last = after
    while True:
        rows = conn.execute(sql, (last, size)).fetchall()
        if not rows:
            return
        yield rows
        last = int(rows[-1][0])
