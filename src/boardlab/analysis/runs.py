"""A cell's runs, column by column: what the analysis keeps of every run for the whole report.

A campaign of 10^6 runs held as one record per run (`RunPoint`, about 600 bytes with the interpreter's
overhead) needs 600 MB; held as typed columns (`array.array`, standard library: boards have no numpy) it
needs about 75 bytes a run. `RunTable` is that table, one per cell; its accessors give what the consumers
read (the measured runs' values, seqs and environments, the flags' counts) at C speed, and `RunPoint` views
of single runs on demand for the code that reads a run at a time anyway (a study's per-run queries).

Not recorded is NaN in a float column, the typecode's smallest value in an integer column, code 0 (None) in
a column of strings; whether a run has a value is a flag (`HAS_VALUE`), so a stored NaN stays a NaN.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import statistics
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import compress
from typing import Any, TypeVar

from boardlab.stats import RunEnvironment
from boardlab.stats.verdict import ArmEnvironment

T = TypeVar("T", int, float)

# A run's flags, a byte each (`RunTable.flags`); a selection (`rows`) is one of them.
VALID = 1  # the run is valid (its value may still be missing)
MEASURED = 2  # valid and with a value: the runs a cell's statistics use
INVALID_VALUE = 4  # invalid and with a value: the plots show it apart
OK = 8  # the worker ran to its end (else the run failed)
HAS_VALUE = 16
CAPPED = 32  # its warm-up was capped
CAPPED_KNOWN = 64  # whether it was is recorded

_NONE_INT = {"h": -(2**15), "i": -(2**31), "q": -(2**63)}  # an integer column's "not recorded", by typecode


@dataclass(frozen=True, slots=True)
class RunPoint:
    """One run of a cell: a view built on demand from its cell's `RunTable` (never kept per run)."""

    run_id: int
    seq: int
    repetition: int
    value: float | None
    valid: bool
    ok: bool
    invalid_reason: str | None
    error: str | None
    wall_ns: int
    environment: RunEnvironment
    warmup_capped: bool | None
    aa_arm: str | None = None  # "A1" / "A2" on a reference cell's runs (the schedule's A/A labels)
    user_us: int | None = None  # the worker's own CPU time (wait4 rusage), user and system
    system_us: int | None = None


def ints(values: Iterable[int | None]) -> array[int]:
    """An integer column of 2, 4 or 8 bytes a run, the fewest every value fits in; None as the typecode's
    smallest value."""
    items = values if isinstance(values, list | tuple) else list(values)
    has_none = None in items
    for code in ("h", "i", "q"):
        try:  # without a None, array() reads the sequence at C speed
            return array(code, [_NONE_INT[code] if v is None else v for v in items] if has_none else items)
        except OverflowError:
            continue
    raise OverflowError("an integer beyond 64 bits in a run's column")


def floats(values: Iterable[float | None]) -> array[float]:
    items = values if isinstance(values, list | tuple) else list(values)
    return array("d", [math.nan if v is None else v for v in items] if None in items else items)


def _int(column: array[int], x: int) -> int | None:
    return None if x == _NONE_INT[column.typecode] else x


def _float(x: float) -> float | None:
    return None if x != x else x  # NaN: not recorded


def _tri(x: int) -> bool | None:
    return None if x < 0 else bool(x)


@dataclass(frozen=True, slots=True)
class Strings:
    """A column of strings that repeat (an invalid reason, an error, an A/A arm): a code per run (a byte
    while there are at most 256 distinct strings) into the column's distinct strings; code 0 is None."""

    codes: array[int]
    table: tuple[str | None, ...]  # in the order first seen

    @classmethod
    def of(cls, values: Iterable[str | None]) -> Strings:
        items = values if isinstance(values, list | tuple) else list(values)
        if items.count(None) == len(items):  # the usual column of errors or invalid reasons: none at all
            return cls(array("B", bytes(len(items))), (None,))
        index: dict[str | None, int] = {None: 0}
        codes = [index.setdefault(v, len(index)) for v in items]
        n = len(index)
        return cls(array("B" if n <= 1 << 8 else "H" if n <= 1 << 16 else "I", codes), tuple(index))

    def __getitem__(self, i: int) -> str | None:
        return self.table[self.codes[i]]

    @classmethod
    def joined(cls, parts: Sequence[Strings]) -> Strings:
        """One column of `parts` in order: codes into the strings of all of them, in the order first seen."""
        index: dict[str | None, int] = {None: 0}
        for p in parts:
            for s in p.table:
                index.setdefault(s, len(index))
        n = len(index)
        codes = array("B" if n <= 1 << 8 else "H" if n <= 1 << 16 else "I")
        for p in parts:
            remap = [index[s] for s in p.table]
            codes.extend(p.codes if remap == list(range(len(remap))) else map(remap.__getitem__, p.codes))
        return cls(codes, tuple(index))

    def counts(self) -> list[tuple[str, int]]:
        """Each string (not None) with its runs, in the order first seen."""
        n = Counter(self.codes)
        return [(s, n[code]) for code, s in enumerate(self.table) if s is not None]


@dataclass(frozen=True, eq=False)
class RunTable:
    """Every attempt of a cell, in run order, one typed column per field of `RunPoint` (the environment's
    three fields apart). Build it with `RunTable.of`; read it through `select` and the accessors. Equal
    when every column holds the same: float columns compared bit for bit, as NaN (not recorded) is not
    equal to itself."""

    run_id: array[int]
    seq: array[int]
    repetition: array[int]
    value: array[float]
    flags: array[int]
    invalid_reason: Strings
    error: Strings
    wall_ns: array[int]
    mean_freq_khz: array[float]
    max_temp_mc: array[float]
    throttled: array[int]  # 1, 0, -1 not recorded
    aa_arm: Strings
    user_us: array[int]
    system_us: array[int]
    # the runs a `thinned` table does not hold, as (flags, runs) pairs: `count` still answers for the cell
    omitted: tuple[tuple[int, int], ...] = ()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RunTable):
            return NotImplemented
        return all(_same(getattr(self, f.name), getattr(other, f.name)) for f in dataclasses.fields(self))

    __hash__ = None  # type: ignore[assignment]  # mutable arrays inside: not hashable, as before

    @classmethod
    def of(
        cls,
        *,
        run_id: Sequence[int],
        seq: Sequence[int],
        repetition: Sequence[int],
        value: Sequence[float | None],
        valid: Sequence[bool],
        ok: Sequence[bool],
        invalid_reason: Sequence[str | None],
        error: Sequence[str | None],
        wall_ns: Sequence[int],
        mean_freq_khz: Sequence[float | None],
        max_temp_mc: Sequence[float | None],
        throttled: Sequence[bool | None],
        warmup_capped: Sequence[bool | None],
        aa_arm: Sequence[str | None],
        user_us: Sequence[int | None],
        system_us: Sequence[int | None],
    ) -> RunTable:
        """The table of the runs whose fields are given column by column (equal lengths, run order)."""
        flags = array("B", map(_flags, value, valid, ok, warmup_capped))
        return cls(
            ints(run_id), ints(seq), ints(repetition), floats(value), flags, Strings.of(invalid_reason),
            Strings.of(error), ints(wall_ns), floats(mean_freq_khz), floats(max_temp_mc),
            array("b", [-1 if t is None else bool(t) for t in throttled]), Strings.of(aa_arm), ints(user_us),
            ints(system_us),
        )  # fmt: skip

    @classmethod
    def of_points(cls, points: Iterable[RunPoint]) -> RunTable:
        """The table of these runs (e.g. a test's changed copy of a table's views)."""
        ps = list(points)
        fields = {f.name: [getattr(p, f.name) for p in ps] for f in dataclasses.fields(RunPoint)}
        del fields["environment"]
        envs = [p.environment for p in ps]
        return cls.of(
            **fields,
            mean_freq_khz=[e.mean_freq_khz for e in envs],
            max_temp_mc=[e.max_temp_mc for e in envs],
            throttled=[e.throttled for e in envs],
        )

    @classmethod
    def joined(cls, parts: list[RunTable]) -> RunTable:
        """One table of `parts` in order (a cell read in batches, each made by `of`): each integer column in
        the widest typecode of its parts, each column of strings over its parts' strings, first seen first.
        `parts` is emptied, and each column of the parts let go once joined: a cell read in batches then
        peaks at its table and a column, not twice its table (15 MB more for a cell of 300,000 runs)."""
        if len(parts) == 1:
            return parts.pop()
        names = _column_names()
        remaining = [{name: getattr(p, name) for name in names} for p in parts]
        parts.clear()
        columns: dict[str, Any] = {}  # each field its own column type
        for name in names:
            got = [r.pop(name) for r in remaining]
            if isinstance(got[0], Strings):
                columns[name] = Strings.joined(got)
            elif got[0].typecode in _NONE_INT:
                columns[name] = _joined_ints(got)
            else:
                columns[name] = _joined_bytes(got)
        return cls(**columns)

    def __len__(self) -> int:
        return len(self.flags)

    def __getitem__(self, i: int) -> RunPoint:
        f = self.flags[i]
        return RunPoint(
            run_id=self.run_id[i],
            seq=self.seq[i],
            repetition=self.repetition[i],
            value=self.value[i] if f & HAS_VALUE else None,
            valid=bool(f & VALID),
            ok=bool(f & OK),
            invalid_reason=self.invalid_reason[i],
            error=self.error[i],
            wall_ns=self.wall_ns[i],
            environment=RunEnvironment(
                _float(self.mean_freq_khz[i]), _float(self.max_temp_mc[i]), _tri(self.throttled[i])
            ),
            warmup_capped=bool(f & CAPPED) if f & CAPPED_KNOWN else None,
            aa_arm=self.aa_arm[i],
            user_us=_int(self.user_us, self.user_us[i]),
            system_us=_int(self.system_us, self.system_us[i]),
        )

    def __iter__(self) -> Iterator[RunPoint]:
        """Every run as a `RunPoint`, each built when reached (about 2 µs a run: not for every run of a
        large campaign; `select` reads a column at C speed)."""
        return map(self.__getitem__, range(len(self)))

    def select(self, column: array[T], rows: int = MEASURED) -> array[T]:
        """The entries of `column` (one of this table's) of the runs flagged `rows`, in run order, as a column
        of its type: 8 bytes a run where a list of floats takes 33 (300,000 runs: 2.4 MB, not 10)."""
        return array(column.typecode, compress(column, map(rows.__and__, self.flags)))

    def values(self, rows: int = MEASURED) -> array[float]:
        return self.select(self.value, rows)

    def seqs(self, rows: int = MEASURED) -> array[int]:
        return self.select(self.seq, rows)

    def known(self, column: array, rows: int = MEASURED) -> list:
        """`select`, without the runs that did not record the value."""
        got = self.select(column, rows)
        if column.typecode == "d":
            return [x for x in got if x == x]
        return [x for x in got if x != _NONE_INT[column.typecode]]

    def strings(self, column: Strings, rows: int = MEASURED) -> list[str | None]:
        return list(map(column.table.__getitem__, self.select(column.codes, rows)))

    def environments(self, rows: int = MEASURED) -> Environments:
        """The confounders of the runs flagged `rows`, as columns."""
        picked = (self.select(c, rows) for c in (self.mean_freq_khz, self.max_temp_mc, self.throttled))
        return Environments(*picked)

    def time_medians(self) -> tuple[float | None, float | None, float | None]:
        """Medians over the measured runs of the worker's user and system CPU time (us) and of the wall time
        (ns), each None where no run recorded it (a store from before rusage was kept)."""
        return self._time_medians

    @functools.cached_property
    def _time_medians(self) -> tuple[float | None, float | None, float | None]:
        # computed once per table: a report reads them twice a cell (two tables), and serve's worker keeps a
        # running campaign's unchanged tables from one analysis to the next (a table is never changed after
        # it is built; the cache is no field, so equality and the summary's record leave it out)
        return (
            _median(self.known(self.user_us)),
            _median(self.known(self.system_us)),
            _median(self.select(self.wall_ns)),
        )

    def count(self, has: int = 0, lacks: int = 0) -> int:
        """The runs flagged with every bit of `has` and none of `lacks`, held or `omitted`."""
        return sum(n for f, n in self._flag_counts.items() if f & has == has and not f & lacks)

    @functools.cached_property
    def _flag_counts(self) -> dict[int, int]:
        """Runs by their flags, held or `omitted`: counted once per table (`_time_medians` says why)."""
        flags = Counter(self.flags)
        flags.update(dict(self.omitted))
        return dict(flags)

    def thinned(self, limit: int) -> RunTable:
        """This table holding at most `limit` measured runs: where it holds more, `limit` of them spread
        evenly in run order (`spread_rows`) and no other run, each run let go counted in `omitted` by its
        flags. A thinned table thinned again by the same limit is itself, so a comparison that thins both a
        live cell and its stored summary's (already thinned) reads the same runs."""
        rows = list(compress(range(len(self)), map(MEASURED.__and__, self.flags)))  # as `select` picks
        if len(rows) <= limit:
            return self
        keep = [rows[i] for i in spread_rows(len(rows), limit)]
        let_go = Counter(self.flags)
        let_go.subtract(self.flags[i] for i in keep)
        let_go.update(dict(self.omitted))
        columns: dict[str, Any] = {}
        for name in _column_names():
            column = getattr(self, name)
            if isinstance(column, Strings):
                codes = array(column.codes.typecode, map(column.codes.__getitem__, keep))
                columns[name] = Strings(codes, column.table)
            else:
                columns[name] = array(column.typecode, map(column.__getitem__, keep))
        return RunTable(**columns, omitted=tuple(sorted((f, n) for f, n in let_go.items() if n)))


def spread_rows(n: int, limit: int) -> list[int]:
    """`limit` of the rows 0..n-1 (limit < n) spread evenly: the middle row of each of `limit` equal
    stretches, so a sample of a campaign's runs covers its whole session, early and late runs alike, and
    depends on nothing but the counts (no value, no seed)."""
    return [(2 * i + 1) * n // (2 * limit) for i in range(limit)]


def _column_names() -> list[str]:
    """`RunTable`'s columns, one entry per run each (not its `omitted` counts)."""
    return [f.name for f in dataclasses.fields(RunTable) if f.name != "omitted"]


@dataclass(frozen=True, slots=True)
class Environments(Sequence[RunEnvironment]):
    """Runs' confounders as three columns (17 bytes a run): each run's `RunEnvironment` is built when read.
    A record per run held for both arms of a comparison was about 250 bytes a run (a tuple, its floats and
    the record) while a cell of 300,000 runs was compared."""

    mean_freq_khz: array[float]  # NaN: not recorded
    max_temp_mc: array[float]
    throttled: array[int]  # 1, 0, -1 not recorded

    def __len__(self) -> int:
        return len(self.throttled)

    def __getitem__(self, i):  # type: ignore[override]  # an index (slices: a list)
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        freq, temp = _float(self.mean_freq_khz[i]), _float(self.max_temp_mc[i])
        return RunEnvironment(freq, temp, _tri(self.throttled[i]))

    def __iter__(self) -> Iterator[RunEnvironment]:
        columns = (map(_float, self.mean_freq_khz), map(_float, self.max_temp_mc), map(_tri, self.throttled))
        return map(RunEnvironment, *columns)

    def arm_environment(self) -> ArmEnvironment:
        """The confounder guard's view of these runs (`stats.verdict.arm_environment`), from the columns:
        no record per run."""
        runs = len(self.throttled)
        return ArmEnvironment(
            _recorded_median(self.mean_freq_khz),
            _recorded_median(self.max_temp_mc),
            self.throttled.count(1),
            self.throttled.count(-1) < runs,
            runs,
        )


def _recorded_median(column: array[float]) -> float | None:
    """statistics.median of the column's recorded values (NaN: not recorded), None when none is."""
    present = [x for x in column if x == x]
    return statistics.median(present) if present else None


def _joined_bytes(columns: list[array]) -> array:
    """Columns of one typecode end to end, each part let go as it is copied (`columns` is emptied)."""
    out = array(columns[0].typecode)
    columns.reverse()
    while columns:
        out.frombytes(memoryview(columns.pop()).cast("B"))
    return out


def _median(xs: Sequence) -> float | None:
    xs = sorted(xs)
    return None if not xs else (xs[(len(xs) - 1) // 2] + xs[len(xs) // 2]) / 2


def _flags(value: float | None, valid: bool, ok: bool, capped: bool | None) -> int:
    f = (VALID if valid else 0) | (OK if ok else 0)
    if value is not None:
        f |= HAS_VALUE | (MEASURED if valid else INVALID_VALUE)
    if capped is not None:
        f |= CAPPED_KNOWN | (CAPPED if capped else 0)
    return f


def _joined_ints(parts: Sequence[array[int]]) -> array[int]:
    """Integer columns end to end in the widest of their typecodes, each part's "not recorded" as the
    result's."""
    code = max((p.typecode for p in parts), key=list(_NONE_INT).index)
    out = array(code)
    for p in parts:
        if p.typecode == code:
            out.extend(p)
        else:
            none, wide = _NONE_INT[p.typecode], _NONE_INT[code]
            out.extend(wide if x == none else x for x in p)
    return out


def _same(a: object, b: object) -> bool:
    if isinstance(a, array) and isinstance(b, array):
        return a.typecode == b.typecode and a.tobytes() == b.tobytes()
    return a == b
