"""Monitor samples stored compactly: one row per run and source holding two packed arrays (store schema 7).

Before schema 7 every sample was a row of `series` (run id, source text, time, value: about 80 bytes on disk
with its index, 2.4 KB for a run of 30 samples). A row of `run_series` holds a source's samples of one run:
`t_ns` the times as little-endian 64-bit integers (ns since the run started, ascending), `value` the values
as little-endian IEEE 754 doubles, `samples` their count, and `packing` the layout's version (1: this one).
Values read back bit for bit; a reader of an older store reads its `series` rows instead (Store.run_series).
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterable

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


def convert_series(conn) -> None:
    """Migration 7's data step: every run's `series` rows packed into `run_series`, then `series` dropped.
    Reads a bounded batch of runs at a time (a store of a million runs holds 30 million rows)."""
    last = -1
    while True:
        ids = [
            int(r[0])
            for r in conn.execute(
                "SELECT DISTINCT run_id FROM series WHERE run_id > ? ORDER BY run_id LIMIT ?",
                (last, _BATCH_RUNS),
            ).fetchall()
        ]
        if not ids:
            break
        by_run: dict[int, list[tuple[str, int, float]]] = {}
        for run_id, source, t_ns, value in conn.execute(
            "SELECT run_id, source, t_ns, value FROM series WHERE run_id BETWEEN ? AND ?"
            " ORDER BY run_id, source, t_ns",
            (ids[0], ids[-1]),
        ).fetchall():
            by_run.setdefault(int(run_id), []).append((source, t_ns, value))
        rows = [(run_id, *row) for run_id, samples in by_run.items() for row in pack(samples)]
        conn.executemany(
            "INSERT INTO run_series(run_id, source, packing, samples, t_ns, value) VALUES (?,?,?,?,?,?)", rows
        )
        last = ids[-1]
    conn.execute("DROP TABLE series")
