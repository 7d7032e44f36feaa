"""A campaign's runs read a cell at a time: a report's memory follows its largest cells, not the campaign.

A `RunTable` costs about 75 bytes a run; a campaign of 10^7 runs held whole needs 700 MB, which no board has.
`analyze(..., runs_budget=N)` gives each cell a `StoredRuns` instead: what every table of the report reads of
the cell (its run count, its flags' counts, its invalid runs' reasons, its median CPU and wall times) is kept,
computed once from the cell's table when it is first read; everything else (values, run order, environments,
the columns a comparison, a plot or a study reads) comes from the table, which `CellTables` holds while the
held tables together have at most N runs (the two most recent always) and reads again from the store when
it was let go. A report of a campaign whose runs fit the budget reads each cell once, as with held tables; a
larger one reads a cell again where a later section needs its runs.

Reading a cell goes through `Store.cell_run_batches`: its rows, 10^4 at a time, become column tables that are
joined (`RunTable.joined`), so a cell of 10^6 runs never exists as 10^6 row objects.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from boardlab.analysis.runs import MEASURED, Environments, RunPoint, RunTable, Strings
from boardlab.platform import heap

if TYPE_CHECKING:
    from array import array

    from boardlab.store import Store

T = TypeVar("T", int, float)
C = TypeVar("C")
A = TypeVar("A")

# Runs `boardlab report` holds at a time beyond its two last cells (about 30 MB of tables): a campaign of up
# to that many runs is read once, as a held one; a larger one reads again what a later section reads.
REPORT_RUNS_BUDGET = 500_000

# The stored columns that `RunTable.of` takes under the same name.
_RUN_COLUMNS = (
    "seq", "repetition", "value", "valid", "ok", "invalid_reason", "error", "wall_ns", "mean_freq_khz",
    "max_temp_mc", "throttled", "warmup_capped", "user_us", "system_us",
)  # fmt: skip


def run_table(rows) -> RunTable:
    """A batch of a cell's stored runs (`Store.cell_run_batches`, in run order) as the analysis keeps them."""
    col = _columns(list(rows))
    n = len(col.get("id", ()))
    return RunTable.of(
        run_id=col.get("id", ()),
        aa_arm=col.get("aa_arm", (None,) * n),
        **{name: col.get(name, ()) for name in _RUN_COLUMNS},
    )


def read_table(batches: Iterable[list]) -> RunTable:
    """The table of a cell read in batches: each batch made a table and let go before the next is read."""
    parts = [run_table(batch) for batch in batches]
    return RunTable.joined(parts) if parts else run_table([])


def _columns(rows: list) -> dict[str, tuple]:
    """The rows as columns by name, transposed at C speed (a row is a sequence in its keys' order: a
    sqlite3.Row, a PostgreSQL row, or the dict of a store before migration 9)."""
    if not rows:
        return {}
    seqs = [tuple(r.values()) for r in rows] if isinstance(rows[0], dict) else rows
    return dict(zip(rows[0].keys(), zip(*seqs, strict=True), strict=True))


@dataclass(frozen=True)
class ReasonCounts:
    """A cell's invalid runs' reasons with their runs, in the order first seen (`Strings.counts`)."""

    items: tuple[tuple[str, int], ...]

    def counts(self) -> list[tuple[str, int]]:
        return list(self.items)


@dataclass(frozen=True)
class RunDigest:
    """What the report's tables read of a cell's runs, kept for the whole report (a few numbers a cell)."""

    runs: int
    flags: tuple[tuple[int, int], ...]  # (flags byte, runs with it)
    invalid_reasons: ReasonCounts
    time_medians: tuple[float | None, float | None, float | None]  # `RunTable.time_medians`

    @classmethod
    def of(cls, table: RunTable) -> RunDigest:
        reasons = ReasonCounts(tuple(table.invalid_reason.counts()))
        return cls(len(table), tuple(Counter(table.flags).items()), reasons, table.time_medians())


class CellTables:
    """The run tables of a campaign's cells, read from `store` by cell id when asked and held while the held
    ones together have at most `budget_runs` runs, and the two asked last always: a comparison reads its two
    cells in turn, and must not read them again for each column it takes."""

    def __init__(self, store: Store, budget_runs: int) -> None:
        self._store, self._budget = store, budget_runs
        self._held: OrderedDict[int, RunTable] = OrderedDict()
        # the runs of the held tables, kept as they come and go: summing them at each read made a report of a
        # campaign of n cells within the budget O(n^2) (the 6,696-cell sweep: 22 million len calls, 4 s)
        self._held_runs = 0
        self._digests: dict[int, RunDigest] = {}  # every cell read: a few numbers each
        self.reads = 0  # cells read from the store (a test and the bench count them)

    def digest(self, cell_id: int) -> RunDigest:
        if cell_id not in self._digests:
            self.table(cell_id)
        return self._digests[cell_id]

    def table(self, cell_id: int) -> RunTable:
        got = self._held.get(cell_id)
        if got is not None:
            self._held.move_to_end(cell_id)
            return got
        # what the read below lets go whatever the new table's size goes first, not held while it is read
        self._let_go(keep=1)
        got = read_table(self._store.cell_run_batches(cell_id))
        self.reads += 1
        self._digests.setdefault(cell_id, RunDigest.of(got))
        self._held[cell_id] = got
        self._held_runs += len(got)
        self._let_go(keep=2)
        return got

    def _let_go(self, keep: int) -> None:
        """The oldest tables let go while more than `keep` are held and they hold more than the budget; their
        memory given back to the kernel (`platform.heap`: else the C heap keeps it for the next cell's,
        scattered among what the analysis keeps)."""
        before = self._held_runs
        while len(self._held) > keep and self._held_runs > self._budget:
            self._held_runs -= len(self._held.popitem(last=False)[1])
        if self._held_runs < before:
            heap.give_back()


class _TableColumn(Generic[C]):
    """A column of a `StoredRuns`' table by the table's name for it, the table read when the column is."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    def __get__(self, runs: StoredRuns, owner: type | None = None) -> C:
        return getattr(runs.table(), self._name)


class StoredRuns:
    """A cell's runs as a `RunTable` reads them, the table itself read through `CellTables` when used: its
    counts from the `RunDigest` the tables keep, every column and run from the table."""

    def __init__(self, cell_id: int, tables: CellTables) -> None:
        self._cell_id, self._tables = cell_id, tables

    @property
    def _digest(self) -> RunDigest:
        return self._tables.digest(self._cell_id)

    def table(self) -> RunTable:
        return self._tables.table(self._cell_id)

    def __len__(self) -> int:
        return self._digest.runs

    def count(self, has: int = 0, lacks: int = 0) -> int:
        return sum(n for f, n in self._digest.flags if f & has == has and not f & lacks)

    def time_medians(self) -> tuple[float | None, float | None, float | None]:
        return self._digest.time_medians

    @property
    def invalid_reason(self) -> ReasonCounts:
        return self._digest.invalid_reasons

    # Everything else is the table's.
    def __getitem__(self, i: int) -> RunPoint:
        return self.table()[i]

    def __iter__(self) -> Iterator[RunPoint]:
        return iter(self.table())

    def select(self, column: array[T], rows: int = MEASURED) -> array[T]:
        return self.table().select(column, rows)

    def values(self, rows: int = MEASURED) -> array[float]:
        return self.table().values(rows)

    def seqs(self, rows: int = MEASURED) -> array[int]:
        return self.table().seqs(rows)

    def known(self, column: array, rows: int = MEASURED) -> list:
        return self.table().known(column, rows)

    def strings(self, column: Strings, rows: int = MEASURED) -> list[str | None]:
        return self.table().strings(column, rows)

    def environments(self, rows: int = MEASURED) -> Environments:
        return self.table().environments(rows)

    run_id: _TableColumn[array[int]] = _TableColumn()
    repetition: _TableColumn[array[int]] = _TableColumn()
    wall_ns: _TableColumn[array[int]] = _TableColumn()
    user_us: _TableColumn[array[int]] = _TableColumn()
    system_us: _TableColumn[array[int]] = _TableColumn()
    aa_arm: _TableColumn[Strings] = _TableColumn()


class Remember(Protocol):
    """`GrowingTables.remembered`, or `computed_now` where nothing is kept from one analysis to the next."""

    def __call__(
        self, key: Hashable, cell_ids: tuple[int, ...], inputs: tuple, compute: Callable[[], A]
    ) -> A: ...


def computed_now(key: Hashable, cell_ids: tuple[int, ...], inputs: tuple, compute: Callable[[], A]) -> A:
    """compute(): what `GrowingTables.remembered` does where no analysis before this one is kept."""
    return compute()


def remember_with(growing: GrowingTables | None) -> Remember:
    """Where an analysis keeps what it computes from its cells' runs: `growing`'s answers (a running
    campaign's, in serve's worker), or nowhere."""
    return computed_now if growing is None else growing.remembered


class GrowingTables:
    """The run tables of a campaign still running, kept from one analysis to the next (`analyze(...,
    growing=...)`): a cell is read again only from the run after the last one read, and its new runs joined
    to its table. A page of a running campaign is analysed again whenever runs arrive (serve, web/background):
    reading every run again was about half of that analysis at 10^5 runs (profiled), and the cells a
    campaign has settled get no new runs at all.

    A store only adds runs (ids growing as they are stored), so a cell's runs up to the last one read are the
    ones its table holds: that is checked by their count, and a cell whose count differs (runs deleted, a
    store replaced at the same path) or whose new runs would not follow its last one in run order (an attempt
    of an earlier place) is read whole instead, as without this. The tables are the ones a whole read gives
    (tested), so the analysis is the same.

    What the analysis computes from one or two cells' runs alone (a cell's summary, its A/A control, a
    comparison, the runs a summary keeps) is kept too (`remembered`) and computed again only where one of
    those cells got a new table since: in a campaign whose runs arrive a few cells at a time, or whose cells
    have settled, an analysis computes what changed, not every cell."""

    def __init__(self) -> None:
        self._cells: dict[int, tuple[RunTable, int]] = {}  # cell id -> (its table, the last run id read)
        # cell id -> tables it has had: a new one whenever its runs change (read whole, or new runs joined)
        self._tables_had: dict[int, int] = {}
        self._answers: dict[tuple, tuple[tuple, object]] = {}  # (key, cell ids) -> (their stamp, answer)
        self.runs_read = 0  # runs read from the store (a test and the bench count them)
        self.answers_reused = 0  # answers given again, not computed (a test and the bench count them)

    def table(self, store: Store, cell_id: int) -> RunTable:
        got = self._cells.get(cell_id)
        kept = None if got is None else self._extended(store, cell_id, *got)
        if kept is None:
            table = read_table(store.cell_run_batches(cell_id))
            self.runs_read += len(table)
            kept = (table, max(table.run_id, default=0))
        if got is None or kept[0] is not got[0]:
            self._tables_had[cell_id] = self._tables_had.get(cell_id, 0) + 1
        self._cells[cell_id] = kept
        return kept[0]

    def remembered(
        self, key: Hashable, cell_ids: tuple[int, ...], inputs: tuple, compute: Callable[[], A]
    ) -> A:
        """compute(), or the answer it gave for `key` at an earlier analysis if none of `cell_ids` has had a
        new table since (the same table object: the same runs) and `inputs` are equal. `compute` must depend
        on those cells' tables and `inputs` alone. A cell this has not read is never remembered."""
        if not all(c in self._tables_had for c in cell_ids):
            return compute()
        stamp = (tuple(self._tables_had[c] for c in cell_ids), inputs)
        got = self._answers.get((key, cell_ids))
        if got is not None and got[0] == stamp:
            self.answers_reused += 1
            return got[1]  # type: ignore[return-value]
        answer = compute()
        self._answers[(key, cell_ids)] = (stamp, answer)
        return answer

    @property
    def runs(self) -> int:
        """The runs held, over every cell (what a keeper of several campaigns' tables bounds)."""
        return sum(len(t) for t, _ in self._cells.values())

    def _extended(
        self, store: Store, cell_id: int, table: RunTable, last_id: int
    ) -> tuple[RunTable, int] | None:
        """The table with the runs stored since `last_id`, and the last run id it now holds (the new runs'
        largest: each is past `last_id`, so the held ones are not scanned again); None where the cell must
        be read whole."""
        if store.cell_runs_through(cell_id, last_id) != len(table):
            return None
        new = read_table(store.cell_run_batches(cell_id, after_id=last_id))
        self.runs_read += len(new)
        if not len(new):
            return table, last_id
        if len(table) and new.seq[0] < table.seq[-1]:  # an earlier place's attempt: not at the end
            return None
        return RunTable.joined([table, new]), max(new.run_id)
