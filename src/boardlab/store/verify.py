"""Is a SQLite results database one this boardlab can read without surprises? Every column holds its
declared type (SQLite stores any value in any column: text in `runs.value` is accepted), every JSON column
holds valid JSON of the shape its readers expect, timestamps lie in a plausible range. `ingest` verifies a
board's file before it copies anything; every reader verifies the store when it opens it, so a damaged
database is one clear error naming the table, the column and the row (exit 2), never a reader's crash.

PostgreSQL stores are typed by their columns, and what reaches them came through `ingest`: only SQLite
files are verified here."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable

from boardlab.errors import InputError

# (table, column) -> the JSON type its readers expect (SQLite's json_type); NULL is allowed where the
# column is nullable
JSON_SHAPES = {
    ("boards", "inventory_json"): "object",
    ("campaigns", "inventory_json"): "object",
    ("campaigns", "environment_json"): "object",
    ("campaigns", "monitor_json"): "object",
    ("campaigns", "notes_json"): "object",
    ("cells", "params_json"): "object",
    ("cells", "condition_json"): "object",
    ("runs", "rusage_json"): "object",
    ("runs", "condition_state_json"): "object",
    ("runs", "monitor_json"): "object",
    ("runs", "worker_json"): "object",  # a store before schema 16's
    ("run_results", "worker_json"): "object",
    ("run_histograms", "counts_json"): "array",
    ("energy_sources", "spec_json"): "object",
    ("run_energy", "warnings_json"): "array",
}
# What the readers take from inside a JSON column beyond its own type: (path, the json_type()s a value there
# may have, whether it must be there). "a[*]" is each element of the array `a`, "a[*].b" the member `b` of
# each element that is an object; a number here is at most MEASURED_MAX in size (JSON's 1e400 reads as
# infinity). Each entry is there for a reader that would fail on anything else (named in its comment). The
# caches (campaign_summaries, step_summaries) are not verified: their reader recomputes what it cannot use.
NUMBER, NUMBER_OR_NULL = ("integer", "real"), ("integer", "real", "null")
OBJECT_OR_NULL, ARRAY_OR_NULL, TEXT_OR_NULL = ("object", "null"), ("array", "null"), ("text", "null")
_INVENTORY = (
    ("kernel", OBJECT_OR_NULL, False),  # history, serve's boards page: .get("release")
    ("cpufreq_policies", ARRAY_OR_NULL, False),  # history, the stream study: iterated
    ("cpufreq_policies[*]", ("object",), False),  # .get("governor"), .get("max_khz")
    ("cpufreq_policies[*].max_khz", NUMBER_OR_NULL, False),  # the stream study: max() of them, times 1e3
    ("compatible", ARRAY_OR_NULL, False),
    ("compatible[*]", ("text",), False),  # history: ", ".join()
    ("online_cpus", ARRAY_OR_NULL, False),  # the report's header: len()
    ("clusters", ARRAY_OR_NULL, False),  # the report's header: iterated
    ("caches", ARRAY_OR_NULL, False),  # the headline figures: iterated
    ("caches[*].level", ("integer",), True),  # int()
    ("caches[*].size_kib", NUMBER_OR_NULL, False),  # float()
)
JSON_MEMBERS: dict[tuple[str, str], tuple[tuple[str, tuple[str, ...], bool], ...]] = {
    ("boards", "inventory_json"): _INVENTORY,
    ("campaigns", "inventory_json"): _INVENTORY,
    ("campaigns", "environment_json"): (
        ("checks", ARRAY_OR_NULL, False),
        ("checks[*]", ("object",), False),  # the report's warnings: .get("status")
        ("simulated", OBJECT_OR_NULL, False),  # the report's banner, the governor study: .get()
        ("capabilities", OBJECT_OR_NULL, False),  # the report's environment: .items()
        ("skipped_workloads", OBJECT_OR_NULL, False),  # the report, the stream study: .items()
        ("skipped_conditions", OBJECT_OR_NULL, False),
        ("skipped_cells", OBJECT_OR_NULL, False),
        ("energy", OBJECT_OR_NULL, False),  # the energy results: .get("reason")
    ),
    ("campaigns", "monitor_json"): (("interval_s", NUMBER_OR_NULL, False),),  # the report's header: 1 / it
    ("campaigns", "notes_json"): (
        ("reruns", NUMBER_OR_NULL, False),  # the run counts: int()
        ("skipped_workloads", OBJECT_OR_NULL, False),  # fleet verification: .keys()
        ("skipped_conditions", OBJECT_OR_NULL, False),
    ),
    ("run_energy", "warnings_json"): (("[*]", ("text",), True),),  # the energy results: counted by text
    # the energy study's table of sources: text joined or shown in cells, numbers formatted as numbers
    ("energy_sources", "spec_json"): (
        *(
            (key, TEXT_OR_NULL, False)
            for key in ("kind", "scope", "unit", "resolution_unit", "label", "note")
        ),
        ("resolution", NUMBER_OR_NULL, False),
        ("update_interval_s", NUMBER_OR_NULL, False),
    ),
}
# SQLite's typeof() that each declared kind accepts (an integer is a fine REAL: SQLite may store 2.0 as 2)
TYPES = {"integer": ("integer",), "real": ("real", "integer"), "text": ("text",), "blob": ("blob",)}
# measured values: a worker's result is read as numbers of at most MEASURED_MAX in size (the worker reader's
# bound), and analysis needs them so: sums and squares of any campaign's values stay finite floats (two runs
# of 1e308 overflowed math.fsum); so are a run's summary columns (migration 9, model.run.run_columns) and the
# energy figures the energy tables sum
MEASURED = {("runs", "value"), ("run_values", "value"), ("run_metrics", "median"), ("run_metrics", "min"),
            ("run_metrics", "p90"), ("run_metrics", "p99"), ("runs", "mean_freq_khz"),
            ("runs", "max_temp_mc"), ("runs", "worker_cpu_pct"), ("run_energy", "energy_j"),
            ("run_energy", "power_avg_w"), ("run_energy", "power_peak_w"), ("run_energy", "quantization_j"),
            ("energy_idle", "energy_j"), ("energy_idle", "power_w"), ("energy_idle", "quantization_j"),
            ("energy_idle", "duration_s"), ("run_histograms", "bucket_width")}  # fmt: skip
MEASURED_MAX = 1e100
# finite, of any size: a monitor row's sum of its samples (a sample is a reading of /proc or /sys, not a
# measured value; packed.summarize keeps a sum that does not fit a double as NULL, and the plot's reader sums
# these)
FINITE_ONLY = {("run_series", "value_sum")}
# integer columns that hold a bool: 0 or 1 (or NULL where nullable)
FLAGS = {("runs", "throttled")}
# seconds since 1970 that a report can print as a date: from 1970 to year 9999
UNIX_S_MAX = 253402300799.0
_NOT_FINITE, _NOT_A_DATE = (
    f"not a finite number (at most {MEASURED_MAX:g} in size)",
    "not a date between 1970 and 9999",
)
_BAD_LENGTH = "packed samples of another length than `samples` says"


class DamagedStore(InputError):
    """A results database whose content is not what boardlab wrote: names the table, column and row."""


def damaged(path: str, table: str, column: str, row_id, what: str) -> DamagedStore:
    return DamagedStore(
        f"{path}: damaged results database ({table}.{column}, row id {row_id}): {what}; restore the "
        "file from a copy (or fetch it from the board again), or give another --db"
    )


def _column_checks(table: str, column: str, kind: str, notnull: bool) -> list[tuple[str, str, str]]:
    """(column, SQL condition that holds for a good value, what a bad one is) of one column."""
    col = f'"{column}"'
    allowed = ", ".join(f"'{t}'" for t in TYPES.get(kind, ()) + (() if notnull else ("null",)))
    checks = (
        [(column, f"typeof({col}) IN ({allowed})", f"not of the column's type ({kind})")] if allowed else []
    )
    shape = JSON_SHAPES.get((table, column))
    if shape:
        # CASE, not AND: SQLite may evaluate json_type() of malformed JSON, which is an error
        good = f"({col} IS NULL OR CASE WHEN json_valid({col}) THEN json_type({col}) = '{shape}' ELSE 0 END)"
        checks.append((column, good, f"not a JSON {shape}"))
        if column == "counts_json":
            checks.append(
                (
                    column,
                    f"(CASE WHEN json_valid({col}) AND json_type({col}) = 'array' THEN NOT EXISTS (SELECT 1"
                    f" FROM json_each({col}) WHERE type <> 'integer' OR value < 0) ELSE 1 END)",
                    "a histogram count that is not a non-negative integer",
                )
            )
    if table == "run_series" and column in ("t_ns", "value"):  # boardlab.store.packed: 8 bytes a sample
        good = f"(typeof({col}) <> 'blob' OR typeof(samples) <> 'integer' OR length({col}) = 8 * samples)"
        checks.append((column, good, _BAD_LENGTH))
    if table == "run_series" and column == "packing":
        checks.append((column, f"({col} IS NOT 1) IS 0", "a packing this boardlab does not know"))
    if (table, column) in MEASURED:  # SQLite keeps an infinity (a NaN becomes NULL)
        good = (
            f"(typeof({col}) NOT IN ('real', 'integer') OR {col} BETWEEN {-MEASURED_MAX!r} AND "
            f"{MEASURED_MAX!r})"
        )
        checks.append((column, good, _NOT_FINITE))
    if table == "run_energy" and column == "end_ns":  # the energy results divide by the run's duration
        good = "(typeof(start_ns) <> 'integer' OR typeof(end_ns) <> 'integer' OR end_ns > start_ns)"
        checks.append((column, good, "a worker's end not after its start"))
    if (table, column) in FINITE_ONLY:
        good = f"(typeof({col}) <> 'real' OR abs({col}) <= 1.7976931348623157e308)"
        checks.append((column, good, "not a finite number"))
    for path, kinds, required in JSON_MEMBERS.get((table, column), ()):
        good = _member_check(col, path, kinds, required, JSON_SHAPES[(table, column)])
        checks.append((column, good, f"{'an element' if path == '[*]' else path} not {' or '.join(kinds)}"))
    if (
        table == "run_series" and column == "t_last_ns"
    ):  # written with t_first_ns, or neither (packed.summarize)
        good = (
            "((t_first_ns IS NULL) = (t_last_ns IS NULL) AND (t_first_ns IS NULL OR t_first_ns <= t_last_ns))"
        )
        checks.append((column, good, "a last sample time without a first one, or before it"))
    if (table, column) in FLAGS:
        checks.append((column, f"({col} IS NULL OR {col} IN (0, 1))", "not 0 or 1"))
    if column.endswith("_unix_s"):
        good = f"({col} IS NULL OR typeof({col}) = 'text' OR {col} BETWEEN 0 AND {UNIX_S_MAX})"
        checks.append((column, good, _NOT_A_DATE))
    return checks


def _member_check(col: str, path: str, kinds: tuple[str, ...], required: bool, shape: str) -> str:
    """SQL that holds when the value at `path` (JSON_MEMBERS' notation; "[*]" alone: each element of the
    column's own array) inside the JSON column `col` is of one of `kinds` (and there, when `required`), or
    when the column is NULL or not JSON of its `shape` (the column's own check names that). A number must be
    at most MEASURED_MAX in size."""
    array, each, member = path.partition("[*]")
    member = member.removeprefix(".")
    where = f"'$.{array}'" if array else "'$'"
    if not each:  # a member of the object itself
        inner = _of_kind(f"json_type({col}, '$.{path}')", f"json_extract({col}, '$.{path}')", kinds, required)
    elif not member:  # each element of an array
        inner = (
            f"json_type({col}, {where}) IS NOT 'array' OR NOT EXISTS (SELECT 1 FROM json_each({col}, "
            f"{where}) e WHERE NOT ({_of_kind('e.type', 'e.value', kinds, True)}))"
        )
    else:  # a member of each element that is an object
        t, v = f"json_type(e.value, '$.{member}')", f"json_extract(e.value, '$.{member}')"
        inner = (
            f"json_type({col}, {where}) IS NOT 'array' OR NOT EXISTS (SELECT 1 FROM json_each({col}, "
            f"{where}) e WHERE e.type = 'object' AND NOT ({_of_kind(t, v, kinds, required)}))"
        )
    # CASE: json_type() of malformed JSON is an error, and SQLite may evaluate it before the column's check
    return f"(CASE WHEN json_valid({col}) AND json_type({col}) = '{shape}' THEN ({inner}) ELSE 1 END)"


def _of_kind(type_sql: str, value_sql: str, kinds: tuple[str, ...], required: bool) -> str:
    """SQL that is 1 (never NULL) when the JSON value of type `type_sql` is of `kinds` (or absent, its type
    NULL, unless `required`), a number within MEASURED_MAX."""
    allowed = ", ".join(f"'{k}'" for k in kinds)
    ok = f"coalesce({type_sql} IN ({allowed}), {0 if required else 1}) = 1"
    if "real" in kinds or "integer" in kinds:
        ok += (
            f" AND (coalesce({type_sql} NOT IN ('integer', 'real'), 1) = 1"
            f" OR {value_sql} BETWEEN {-MEASURED_MAX!r} AND {MEASURED_MAX!r})"
        )
    return f"({ok})"


# SQLite orders values NULL < numbers < text < blobs, so comparisons with '' and x'' (the least text, the
# least blob) tell a value's type apart without a typeof() call per value. kind -> that condition
_FAST_TYPE = {
    "integer": "{c} < ''",
    "real": "{c} < ''",
    "text": "{c} >= '' AND {c} < x''",
    "blob": "{c} >= x''",
}
FINITE = f"BETWEEN {-MEASURED_MAX!r} AND {MEASURED_MAX!r}"  # measured: the range of _NOT_FINITE


def _fast_column(table: str, column: str, kind: str, notnull: bool) -> tuple[list[str], str | None]:
    """(SQL conditions that all hold exactly when every check of `_column_checks` holds for the column, the
    column's term of the integer sum). An integer's type is one typeof() of a sum per row for all of them
    (an integer times 0 is an integer, a real one a real); with the types known, a real's range check
    (finite, a date) is its type check too, and the packed samples' lengths need no typeof()."""
    c = f'"{column}"'
    # the checks beyond the type, by what they say
    extra: dict[str, str] = {what: sql for _col, sql, what in _column_checks(table, column, kind, True)[1:]}
    first = _FAST_TYPE[kind].format(c=c)
    if kind == "real" and _NOT_FINITE in extra:
        first = f"{c} {FINITE}"
        del extra[_NOT_FINITE]
    elif kind == "real" and _NOT_A_DATE in extra:
        first = f"{c} BETWEEN 0 AND {UNIX_S_MAX}"
        del extra[_NOT_A_DATE]
    elif kind == "text" and (shape := JSON_SHAPES.get((table, column))):
        # valid JSON that starts with '{' (or '[') is an object (an array): json_type() parses it again
        lo, hi = {"object": ("{", "|"), "array": ("[", "\\")}[shape]
        extra[f"not a JSON {shape}"] = (
            f"{c} IS NULL OR CASE WHEN json_valid({c}) THEN ({c} >= '{lo}' AND {c} < '{hi}')"
            f" OR json_type({c}) = '{shape}' ELSE 0 END"
        )
    elif kind == "blob" and _BAD_LENGTH in extra:
        extra[_BAD_LENGTH] = f"{c} IS NULL OR samples IS NULL OR length({c}) = 8 * samples"
    conds = [first if notnull else f"({c} IS NULL OR {first})", *(f"({sql})" for sql in extra.values())]
    term = None if kind != "integer" else f"{c}*0" if notnull else f"ifnull({c}, 0)*0"
    return conds, term


def _fast_references(conn: sqlite3.Connection, table: str, schema: dict) -> list[str] | None:
    """Conditions that hold exactly when each of the table's foreign keys finds its parent row, as SQLite's
    foreign key check decides it, in the scan of the table's values instead of a second one; None when a
    key is of a form they do not cover (several columns, a parent key that is not its table's integer
    primary key): SQLite's check then looks."""
    keys: dict[int, list] = {}
    for fk in conn.execute(f'PRAGMA foreign_key_list("{table}")'):
        keys.setdefault(fk[0], []).append(fk)
    conds = []
    for row, *more in keys.values():
        parent, column, to = row[2], row[3], row[4]
        pk = [(c, kind) for c, kind, _nn, is_pk in schema.get(parent, []) if is_pk]
        if more or pk != [(to, "integer")]:
            return None
        conds.append(f'("{column}" IS NULL OR ("{column}" IN (SELECT "{to}" FROM "{parent}")) IS 1)')
    return conds


def _fast_scan(conn: sqlite3.Connection, table: str, columns, refs: list[str]) -> bool:
    """Whether one cheap scan finds every row of `table` good, `refs` holding too (False: look again with
    `_column_checks`, to name the row and the check). A column of a kind without a declared type is
    checked with `_column_checks`' own SQL."""
    if table == "run_series" and not {"samples"} <= {col for col, *_ in columns}:
        return False
    conds, terms = list(refs), []
    for col, kind, notnull, _pk in columns:
        if kind in _FAST_TYPE:
            c, term = _fast_column(table, col, kind, notnull)
            conds += c
            terms += [term] if term else []
            if notnull and kind != "integer":
                conds.append(f'"{col}" IS NOT NULL')
        else:
            conds += [f"(({sql}) IS 1)" for _c, sql, _w in _column_checks(table, col, kind, notnull)]
    # NOT (a AND b ...) skips a row where a condition is NULL and none false: the only NULL conditions are
    # those of a NULL in a NOT NULL column, made a false one by `IS NOT NULL` above (an integer's: the sum)
    if terms:
        conds.append(f"typeof({' + '.join(terms)}) = 'integer'")
    if not conds:
        return True
    try:  # NOT (...) rather than (...) IS NOT 1: SQLite jumps at the first false condition (40% fewer steps)
        bad = conn.execute(f'SELECT 1 FROM "{table}" WHERE NOT ({" AND ".join(conds)}) LIMIT 1').fetchone()
    except sqlite3.OperationalError:  # an odd schema (a collation SQLite lacks ...): the full checks say
        return False
    return bad is None


def verify_store(
    conn: sqlite3.Connection,
    path: str,
    schema: dict,
    side: Callable[[], sqlite3.Connection] | None = None,
) -> None:
    """Raises DamagedStore for the first bad value (tables in `schema`'s order); one scan per table (a second
    one, naming the value, only when the first found one). `schema` is describe_schema(). With `side` (a
    second connection to the same file, usable from another thread), the largest table is scanned there at
    the same time as the others: SQLite lets go of the GIL while it scans, so on two cores the open takes the
    time of the larger half."""
    tables = [t for t in schema if t != "meta"]
    refs = {t: _fast_references(conn, t, schema) for t in tables}
    ahead: Beside | None = None
    found: dict[str, bool] = {}
    if side is not None and SIDE_TABLE in refs:
        args = (SIDE_TABLE, schema[SIDE_TABLE], refs[SIDE_TABLE] or [])
        ahead = Beside(side(), lambda c: found.update({SIDE_TABLE: _fast_scan(c, *args)}))
    try:
        good = {
            t: _fast_scan(conn, t, schema[t], refs[t] or [])
            for t in tables
            if ahead is None or t != SIDE_TABLE
        }
        if ahead is not None:
            if (error := ahead.result()) is not None:
                raise error
            good[SIDE_TABLE] = found[SIDE_TABLE]
    finally:
        if ahead is not None:
            ahead.stop()  # an early exit (Ctrl-C, an error) interrupts the scan
    references_checked = True  # by the fast scans: no foreign key check needed after them
    for table in tables:
        if good[table]:
            references_checked &= refs[table] is not None
            continue
        references_checked = False
        _name_the_bad_value(conn, path, table, schema[table])
    if not references_checked:
        verify_references(conn, path)


SIDE_TABLE = "run_series"  # the largest table by far (a row per run and monitor source): the side scan's


class Beside:
    """`scan(conn)` (a table's fast scan, or a whole verify_store) in a thread of its own, on a connection of
    its own, while the caller goes on (scanning the other tables, or reading the store for a report): SQLite
    lets go of the GIL while it scans, so on two cores the scan costs the caller little of its time."""

    def __init__(self, conn: sqlite3.Connection, scan: Callable[[sqlite3.Connection], None]):
        self.conn = conn
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._scan, args=(scan,), name="boardlab-verify", daemon=True)
        self.thread.start()

    def _scan(self, scan: Callable[[sqlite3.Connection], None]) -> None:
        try:
            scan(self.conn)
        except BaseException as exc:  # handed to the caller's thread by result()
            self.error = exc

    def result(self) -> BaseException | None:
        """Waits for the scan; what it raised (None: nothing found)."""
        self.thread.join()
        self.conn.close()
        return self.error

    def stop(self) -> None:
        """Interrupts the scan when nobody waits for it any more (Ctrl-C, an error): SQLite's interrupt is
        meant to be called from another thread."""
        if self.thread.is_alive():
            self.conn.interrupt()
            self.thread.join()
        self.conn.close()


def _name_the_bad_value(conn: sqlite3.Connection, path: str, table: str, columns) -> None:
    """Raises DamagedStore naming the first bad value of `table` (whose fast scan found one) by the column
    checks, row by row."""
    checks = [c for col, kind, notnull, _pk in columns for c in _column_checks(table, col, kind, notnull)]
    if not checks:
        return
    key = _row_key(conn, table, columns)
    conds = [f"({sql}) IS 1" for _, sql, _ in checks]
    try:
        bad = conn.execute(
            f'SELECT {", ".join(key)}, {", ".join(conds)} FROM "{table}"'
            f" WHERE NOT ({' AND '.join(conds)}) LIMIT 1"
        ).fetchone()
    except sqlite3.OperationalError as exc:  # malformed JSON deep inside json_each, and the like
        raise damaged(path, table, "?", "?", str(exc)) from None
    if bad is None:
        return
    values = tuple(bad)
    column, _, what = checks[next(i for i, ok in enumerate(values[len(key) :]) if not ok)]
    row = (
        values[0] if key == ["rowid"] else ", ".join(f"{k} {v!r}" for k, v in zip(key, values, strict=False))
    )
    raise damaged(path, table, column, row, what)


def verify_references(conn: sqlite3.Connection, path: str) -> None:
    """Raises DamagedStore for the first row that refers to a row that is not there (a run's cell, a
    campaign's board): SQLite's own foreign key check, which boardlab's writes always satisfy."""
    bad = conn.execute("PRAGMA foreign_key_check").fetchone()
    if bad is None:
        return
    table, rowid, parent, fk = bad[0], bad[1], bad[2], bad[3]
    column = next((r[3] for r in conn.execute(f'PRAGMA foreign_key_list("{table}")') if r[0] == fk), "?")
    raise damaged(path, table, column, rowid, f"refers to a {parent} row that does not exist")


def _row_key(conn: sqlite3.Connection, table: str, columns) -> list[str]:
    """How a row is named: its rowid (the id column where there is one), else its primary key (a table
    WITHOUT ROWID)."""
    try:
        conn.execute(f'SELECT rowid FROM "{table}" LIMIT 0')
        return ["rowid"]
    except sqlite3.OperationalError:
        return [f'"{col}"' for col, _kind, _nn, pk in columns if pk]
