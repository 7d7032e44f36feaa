"""Exports, above the store: one record per run (JSON, CSV, Parquet), each document carrying its schema
version and read through `Store` methods only."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from boardlab.errors import InputError, os_error
from boardlab.store import Store

# 2: the board's label in every record (a shared store holds many boards)
# 3: user_time_us and system_time_us, the worker's own CPU time per run (wait4 rusage); readers of schema 2
#    see the same columns plus these two (an older store's runs without rusage give them empty)
EXPORT_SCHEMA = 3
# which run of which cell a row is about: the same columns in both tables
_RUN_KEY = ("cell_id", "cell", "workload", "params", "condition", "repetition", "attempt", "seq")
FIELDS = (
    "campaign",
    "campaign_id",
    *_RUN_KEY,
    "metric",
    "value",
    "unit",
    "higher_is_better",
    "valid",
    "ok",
    "invalid_reason",
    "error",
    "started_unix_s",
    "wall_ns",
    "user_time_us",
    "system_time_us",
    "cpu",
    "warmup_iterations",
    "warmup_capped",
    # energy of the run from the campaign's primary power source (empty with energy_reason when unsupported)
    "energy_source",
    "energy_j",
    "energy_quantization_j",
    "power_avg_w",
    "power_idle_w",
    "energy_dynamic_j",
    "edp_js",
    "ed2p_js2",
    "efficiency_total",
    "efficiency_dynamic",
    "efficiency_unit",
    "energy_warnings",
    "energy_reason",
    "aa_arm",
    "board",
)


def _same(text: str) -> str:
    return text


def _energy_fields(
    energy, run_id: int, stored: list, started: float, value, unit: str, hib: bool, text
) -> tuple:
    """The ENERGY_FIELDS of a run from its stored row of the primary source (Store.EXPORT_ENERGY_COLUMNS)."""
    from boardlab.energy.efficiency import efficiency_kind
    from boardlab.energy.results import run_energy_row

    e = dict(zip(Store.EXPORT_ENERGY_COLUMNS, stored, strict=True), run_id=run_id, source=energy.primary)
    row = run_energy_row(e, started, value, unit, hib, energy.idle.get(energy.primary, ()))
    f = row.figures
    warnings = "; ".join(row.warnings) or None
    return (
        text(row.source), f.energy_j, row.quantization_j, f.power_avg_w, f.power_idle_w, f.energy_dynamic_j,
        f.edp_js, f.ed2p_js2, f.efficiency_total, f.efficiency_dynamic,
        text(efficiency_kind(unit, hib).unit), warnings and text(warnings), None,
    )  # fmt: skip


def iter_run_rows(store: Store, campaign_ids: list[int] | None = None, *, text=_same) -> Iterator[tuple]:
    """One tuple per run in FIELDS order, params as JSON with sorted keys (as CSV and Parquet write them),
    `text` applied to every string (csv_cell for a CSV): the runs are read from the store a row at a time
    with only the columns written (and their energy row of the primary source, when the campaign measured
    energy), and what is the same for a cell or a campaign is built once for it, so the cost per run is one
    tuple and an export of a million runs holds one run at a time."""
    from boardlab.energy.results import campaign_energy

    for camp in store.campaigns():
        if campaign_ids and camp["id"] not in campaign_ids:
            continue
        name, cid = text(camp["name"]), camp["id"]
        board = text(store.board(camp["board_id"])["label"])
        energy = campaign_energy(store, cid, runs=False)  # each run's energy comes with the run
        reason = energy.reason or "no energy for this run: no sample of the primary source around it"
        no_energy = (None,) * (len(ENERGY_FIELDS) - 1) + (text(reason),)
        cells = {}
        for c in store.cells(cid):
            params = text(json.dumps(json.loads(c["params_json"]), sort_keys=True))
            hib = bool(c["higher_is_better"])
            cells[c["id"]] = (text(c["key"]), text(c["workload"]), params, text(c["condition"]),
                              text(c["metric"]), c["unit"], text(c["unit"]), hib)  # fmt: skip
        for (run_id, cell_id, rep, attempt, seq, value, valid, ok, invalid_reason, error, started, wall_ns,
             utime_us, stime_us, cpu, warmups, capped, aa_arm, *stored) in store.iter_export_runs(
                 cid, energy.primary):  # fmt: skip
            key, workload, params, condition, metric, unit, unit_text, hib = cells[cell_id]
            yield (
                name, cid, cell_id, key, workload, params, condition, rep, attempt, seq, metric, value,
                unit_text, hib, bool(valid), bool(ok), invalid_reason and text(invalid_reason),
                error and text(error), started, wall_ns, utime_us, stime_us, cpu, warmups,
                None if capped is None else bool(capped),
                *(_energy_fields(energy, run_id, stored, started, value, unit, hib, text)
                  if stored and stored[0] is not None else no_energy),
                aa_arm and text(aa_arm), board,
            )  # fmt: skip


# `export --table metrics`: every metric each run stored (a program's maxrss_kib and parser fields, 7-Zip's
# per-dictionary ratings, an AI run's frame figures), one row per run and metric, as a long table
METRIC_FIELDS = (
    "campaign",
    "campaign_id",
    "run_id",
    *_RUN_KEY,
    "valid",
    "metric",
    "value",
    "unit",
    "higher_is_better",
    "board",
)


def iter_metric_rows(store: Store, campaign_ids: list[int] | None = None, *, text=_same) -> Iterator[tuple]:
    """One tuple per run and stored metric in METRIC_FIELDS order (params as JSON with sorted keys), read from
    the store a row at a time; `text` applied to every string, as in iter_run_rows."""
    for camp in store.campaigns():
        if campaign_ids and camp["id"] not in campaign_ids:
            continue
        name, cid = text(camp["name"]), camp["id"]
        board = text(store.board(camp["board_id"])["label"])
        cells = {
            c["id"]: (text(c["key"]), text(c["workload"]),
                      text(json.dumps(json.loads(c["params_json"]), sort_keys=True)), text(c["condition"]))
            for c in store.cells(cid)
        }  # fmt: skip
        for run_id, cell_id, rep, attempt, seq, valid, metric, value, unit, hib in store.iter_export_metrics(
            cid
        ):
            key, workload, params, condition = cells[cell_id]
            yield (name, cid, run_id, cell_id, key, workload, params, condition, rep, attempt, seq,
                   bool(valid), text(metric), value, text(unit), bool(hib), board)  # fmt: skip


def iter_metric_records(store: Store, campaign_ids: list[int] | None = None) -> Iterator[dict]:
    """One record per run and metric (METRIC_FIELDS, params as its object)."""
    i = METRIC_FIELDS.index("params")
    for row in iter_metric_rows(store, campaign_ids):
        yield {**dict(zip(METRIC_FIELDS, row, strict=True)), "params": json.loads(row[i])}


def iter_run_records(store: Store, campaign_ids: list[int] | None = None) -> Iterator[dict]:
    """One record per run (FIELDS, params as its object), read from the store as they are written out."""
    params_of: dict[str, dict] = {}
    i = FIELDS.index("params")
    for row in iter_run_rows(store, campaign_ids):
        record = dict(zip(FIELDS, row, strict=True))
        if row[i] not in params_of:
            params_of[row[i]] = json.loads(row[i])
        record["params"] = dict(params_of[row[i]])  # each record its own object
        yield record


def run_records(store: Store, campaign_ids: list[int] | None = None) -> list[dict]:
    return list(iter_run_records(store, campaign_ids))


ENERGY_FIELDS = FIELDS[FIELDS.index("energy_source") : FIELDS.index("energy_reason") + 1]


def write_json(records: Iterable[dict], out: BinaryIO, table: str = "runs") -> None:
    """{"schema": N, "runs": [...]} (or "metrics": the long table) written a record at a time, laid out as
    json.dumps(indent=1) would."""
    out.write(f'{{\n "schema": {EXPORT_SCHEMA},\n "{table}": ['.encode())
    first = True
    for r in records:
        out.write((("\n  " if first else ",\n  ") + json.dumps(r, indent=1).replace("\n", "\n  ")).encode())
        first = False
    out.write(b"]\n}\n" if first else b"\n ]\n}\n")


def _row_of(record: dict) -> tuple:
    """A record (iter_run_records) as the row iter_run_rows gives for it."""
    return tuple(json.dumps(record[f], sort_keys=True) if f == "params" else record[f] for f in FIELDS)


def write_csv(records: Iterable[dict], out: BinaryIO, *, formulas: bool = False) -> None:
    """`formulas=False` (the default) neutralizes cells a spreadsheet would run as a formula (csv_cell)."""
    from boardlab.report.escape import csv_cell

    rows = (_row_of(r) for r in records)
    write_csv_rows(rows if formulas else (tuple(csv_cell(v) for v in row) for row in rows), out)


def write_csv_rows(rows: Iterable[tuple], out: BinaryIO, fields: tuple[str, ...] = FIELDS) -> None:
    """The CSV of rows in `fields` order (iter_run_rows or iter_metric_rows, with text=csv_cell unless
    formulas are wanted)."""
    text = io.TextIOWrapper(out, encoding="utf-8", newline="", write_through=False)
    try:
        text.write(f"# boardlab export schema {EXPORT_SCHEMA}\n")
        w = csv.writer(text)
        w.writerow(fields)
        w.writerows(rows)
        text.flush()
    finally:
        text.detach()  # the caller owns `out`


def _pyarrow():
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        machine = os.uname().machine
        if machine in ("x86_64", "aarch64", "arm64"):
            fix = "pip install 'boardlab[analysis]' (or pyarrow)"
        else:  # no armv7 wheel on PyPI, no python3-pyarrow in Debian 12
            fix = (
                f"PyPI has no pyarrow wheel for {machine}: export --format csv or json here, or "
                "convert elsewhere"
            )
        raise InputError(f"--format parquet needs pyarrow: {fix}") from None
    return pa, pq


# Each column's Parquet type, fixed up front: the file is written a row group at a time, so a column that
# is empty in the first group must not take another type than in the next
_INTS = {"campaign_id", "run_id", "cell_id", "repetition", "attempt", "seq", "wall_ns", "user_time_us",
         "system_time_us", "cpu", "warmup_iterations"}  # fmt: skip
_BOOLS = {"higher_is_better", "valid", "ok", "warmup_capped"}
_FLOATS = {"value", "started_unix_s", "energy_j", "energy_quantization_j", "power_avg_w", "power_idle_w",
           "energy_dynamic_j", "edp_js", "ed2p_js2", "efficiency_total", "efficiency_dynamic"}  # fmt: skip
# Runs per Parquet row group. pyarrow's writer keeps every group's metadata (40 column chunks with their
# statistics) until the file closes, about 33 KB a group and twice that as the footer is written: groups of
# 10,000 runs took the export of 10^7 runs to 174 MB. A group waits as Arrow columns (strings as
# dictionaries, about 120 bytes a run) and its write takes about as much again: with 50,000 runs a group
# c3.db's export (882,354 runs) peaked at about 100 MB, with 100,000 at 110.
ROW_GROUP_RUNS = 50_000
# Runs held as Python tuples before they become a batch of Arrow columns: a tuple of 40 objects is several
# times the run's Arrow columns
CHUNK_RUNS = 2_000


def _arrow_schema(fields: tuple[str, ...] = FIELDS):
    pa, _ = _pyarrow()

    def kind(f: str):
        return (
            pa.int64()
            if f in _INTS
            else pa.bool_()
            if f in _BOOLS
            else pa.float64()
            if f in _FLOATS
            else pa.string()
        )

    return pa.schema([(f, kind(f)) for f in fields], metadata={"boardlab_export_schema": str(EXPORT_SCHEMA)})


def _buffer_schema(schema):
    """`schema` with each string column a dictionary: a group's names, cells and parameters repeat from run
    to run, so a run costs a 4-byte index, not its own copy of each string."""
    pa, _ = _pyarrow()
    words = pa.dictionary(pa.int32(), pa.string())
    return pa.schema([(f.name, words if f.type == pa.string() else f.type) for f in schema])


def _arrow_batch(rows: list[tuple], schema, nulls: dict):
    """Rows (tuples in the schema's field order) as one batch, turned into columns by one transpose. A column
    empty in every row is a slice of the empty column `nulls` holds for its type (energy's, in a campaign
    without it): no buffer of its own."""
    pa, _ = _pyarrow()
    n = len(rows)
    arrays = []
    for col, f in zip(zip(*rows, strict=True), schema, strict=True):
        if col.count(None) == n:
            if len(nulls.get(f.type, ())) < n:
                nulls[f.type] = pa.nulls(n, f.type)
            arrays.append(nulls[f.type].slice(0, n))
        else:
            arrays.append(pa.array(col, type=f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _declared_schema(schema) -> dict:
    """The file's key-value metadata for `schema`, as pyarrow writes it for a file it writes from that schema
    (its metadata and the schema under ARROW:schema, base64 of its IPC form): the columns are written as
    dictionaries, yet a reader gets them as the strings they are."""
    import base64

    return {"ARROW:schema": base64.b64encode(schema.serialize().to_pybytes()), **schema.metadata}


class _ParquetSink:
    """A Parquet file written a row group at a time: CHUNK_RUNS rows as Python tuples at most, the rest of
    the group as Arrow batches. A group's batches are written as one row group, with the same dictionary for
    each string column (Parquet writes a column chunk whose dictionary changes as plain strings)."""

    def __init__(self, where, fields: tuple[str, ...] = FIELDS, group: int | None = None):
        _, pq = _pyarrow()
        self.schema = _arrow_schema(fields)
        self.buffer_schema = _buffer_schema(self.schema)
        self.group = group or ROW_GROUP_RUNS
        # the stored schema would say dictionary: the string one is added at close
        self.writer = pq.ParquetWriter(where, self.buffer_schema, store_schema=False)
        self.rows: list[tuple] = []
        self.batches: list = []
        self.held = 0  # rows in self.batches
        self.nulls: dict = {}
        self.count = 0

    def add(self, row: tuple) -> None:
        self.rows.append(row)
        self.count += 1
        if len(self.rows) >= CHUNK_RUNS or self.held + len(self.rows) >= self.group:
            self._batch()
            if self.held >= self.group:
                self._write()

    def _batch(self) -> None:
        if self.rows:
            self.batches.append(_arrow_batch(self.rows, self.buffer_schema, self.nulls))
            self.held += len(self.rows)
            self.rows = []

    def _write(self) -> None:
        pa, _ = _pyarrow()
        if self.batches:
            table = pa.Table.from_batches(self.batches, self.buffer_schema).unify_dictionaries()
            self.batches, self.held = [], 0
            self.writer.write_table(table, row_group_size=table.num_rows)

    def close(self) -> None:
        self._batch()
        self._write()
        self.writer.add_key_value_metadata(_declared_schema(self.schema))
        self.writer.close()


def write_parquet(records: Iterable[dict], out: BinaryIO) -> None:
    write_parquet_rows((_row_of(r) for r in records), out)


def write_parquet_rows(rows: Iterable[tuple], out: BinaryIO, fields: tuple[str, ...] = FIELDS) -> None:
    """Rows in `fields` order (iter_run_rows, iter_metric_rows) as one Parquet file of ROW_GROUP_RUNS rows
    per row group."""
    sink = _ParquetSink(out, fields)
    for row in rows:
        sink.add(row)
    sink.close()


def to_json(records: list[dict]) -> bytes:
    buf = io.BytesIO()
    write_json(records, buf)
    return buf.getvalue()


def to_csv(records: list[dict], *, formulas: bool = False) -> bytes:
    buf = io.BytesIO()
    write_csv(records, buf, formulas=formulas)
    return buf.getvalue()


def to_parquet(records: list[dict]) -> bytes:
    buf = io.BytesIO()
    write_parquet(records, buf)
    return buf.getvalue()


PARTITION_MANIFEST = "boardlab-export.json"


def partition_dir_name(label: str) -> str:
    """A board's hive partition directory: board=LABEL, the label percent-encoded (a '/' or '=' in it
    would otherwise make another directory level or another key)."""
    import urllib.parse

    return "board=" + urllib.parse.quote(label, safe="-_.~ ")


def write_parquet_partitioned(rows: Iterable[tuple], out_dir: str | Path) -> dict[str, int]:
    """Hive-partitioned Parquet by board: OUT/board=LABEL/part-0.parquet (the board column lives in the
    path, as readers of hive partitions expect) plus OUT/boardlab-export.json naming the schema. The tree
    is built beside OUT and renamed into place, so a failure leaves no half-written export; an existing
    OUT is replaced only when it is empty or an earlier export of this kind (it has the manifest)."""
    import shutil

    _pyarrow()
    target = Path(out_dir)
    if target.exists() or target.is_symlink():
        if not target.is_dir() or target.is_symlink():
            raise InputError(f"{target}: not a directory; --partition writes a directory of Parquet files")
        if any(target.iterdir()) and not (target / PARTITION_MANIFEST).is_file():
            raise InputError(
                f"{target}: a directory that is not an earlier boardlab export; give a new or empty directory"
            )
        _only_an_export(target)
    elif not target.parent.is_dir():
        raise InputError(f"{target}: the directory {target.parent} does not exist")
    fields = tuple(f for f in FIELDS if f != "board")
    try:
        tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"))
    except OSError as exc:
        raise os_error(exc, target.parent, "output directory") from None
    old = None
    sinks: dict[str, _ParquetSink] = {}
    try:
        tmp.chmod(0o777 & ~_umask())
        for row in rows:  # streamed (iter_run_rows): a row group per board in memory at most
            board = row[-1]  # FIELDS ends with the board, which the partition's path holds
            if board not in sinks:
                part = tmp / partition_dir_name(board)
                part.mkdir()
                sinks[board] = _ParquetSink(str(part / "part-0.parquet"), fields, ROW_GROUP_RUNS // 4)
            sinks[board].add(row[:-1])
        for sink in sinks.values():
            sink.close()
        boards = {label: sinks[label].count for label in sorted(sinks)}
        manifest = {"schema": EXPORT_SCHEMA, "partition": "board", "boards": boards}
        (tmp / PARTITION_MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
        if target.exists():
            old = target.parent / f".{target.name}.old-{os.getpid()}"
            os.rename(target, old)
        os.rename(tmp, target)
    except OSError as exc:
        if old is not None and not target.exists():
            os.rename(old, target)
            old = None
        shutil.rmtree(tmp, ignore_errors=True)
        raise os_error(exc, target, "output directory") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return boards


def _only_an_export(target: Path) -> None:
    """Refuses to replace a directory that holds anything an earlier partitioned export did not write (the
    results database copied there, a user's notes): the replaced directory is deleted whole."""
    for entry in target.iterdir():
        if entry.name == PARTITION_MANIFEST and entry.is_file() and not entry.is_symlink():
            continue
        if entry.name.startswith("board=") and entry.is_dir() and not entry.is_symlink():
            stray = next((f for f in entry.iterdir() if not _is_part_file(f)), None)
            if stray is None:
                continue
            entry = stray
        raise InputError(
            f"{target}: holds {entry.relative_to(target)}, which no export wrote, and replacing the export "
            "would delete it; move it out, or give a new or empty directory"
        )


def _is_part_file(path: Path) -> bool:
    named = path.name.startswith("part-") and path.suffix == ".parquet"
    return named and path.is_file() and not path.is_symlink()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


FORMATS = {"json": to_json, "csv": to_csv, "parquet": to_parquet}
WRITERS = {"json": write_json, "csv": write_csv, "parquet": write_parquet}  # streaming, from records


def check_output(path: str, protect: Iterable[str | Path] = (), option: str = "-o") -> None:
    """Refuses an output target that is not a new path or an existing regular file, or that is one of
    the command's inputs (the database with its -wal/-shm, a plan): writing there would destroy them.
    `option`: the command's name for it, in the messages."""
    if path == "-":
        return
    target = Path(path)
    try:
        st = os.stat(target)  # follows a symlink: what it points at is what must not be an input
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise os_error(exc, path, "output") from None
    if st is None:
        if not target.parent.is_dir():
            raise InputError(f"{path}: the directory {target.parent} does not exist")
        return
    stdout = f"{option} - for stdout"
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"{path}: is a directory; give a file path for the output (or {stdout})")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(
            f"{path}: not a regular file (a device, FIFO or socket); {option} writes a new file or replaces "
            f"a regular one; use {stdout}"
        )
    for source in protect:
        for suffix in ("", "-wal", "-shm", "-journal"):
            try:
                same = os.path.samefile(target, f"{source}{suffix}")
            except OSError:
                continue
            if same:
                raise InputError(
                    f"{path}: is {source}{suffix}, an input of this command; writing there would destroy "
                    "it: choose another output file"
                )


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether two paths name one file: the same once resolved (a symlink, `..`, a relative path), or one
    existing file under both (a hard link, a bind mount)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them not there yet
        return False


def refuse_shared_outputs(outputs: Iterable[tuple[str, str]]) -> None:
    """Refuses two of a command's outputs, (option, path) each, that name one file: the second written
    would replace the first, and the command say it wrote both."""
    import itertools

    for (o1, p1), (o2, p2) in itertools.combinations(list(outputs), 2):
        if same_file(p1, p2):
            raise InputError(f"{o1} {p1} and {o2} {p2} are the same file: give each its own path")


def check_output_dir(path: str | Path, what: str = "--out") -> None:
    """Makes sure `path` is (or can be made) a directory this user can write, before long work starts:
    a file there, a read-only filesystem or a missing permission is refused now with the path and the fix."""
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise InputError(f"{what} {path}: not a directory; give a directory for the output files")
    try:
        target.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=target, prefix=".boardlab-probe.", suffix=".tmp")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise os_error(exc, path, f"{what} directory") from None


@contextlib.contextmanager
def open_output(path: str, protect: Iterable[str | Path] = (), option: str = "-o") -> Iterator[BinaryIO]:
    """A binary file to stream an output into ("-": standard output), after check_output. A file is
    written beside the target and renamed over it when the block ends without an error, so a failure never
    leaves a half-written file; the rename replaces a symlink itself rather than writing through it."""
    if path == "-":
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    check_output(path, protect, option)
    target = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        raise os_error(exc, target.parent, "output directory") from None
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; a report is for sharing, as any new file
        with os.fdopen(fd, "wb") as f:
            yield f
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise os_error(exc, path, "output") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_output(path: str, data: bytes, protect: Iterable[str | Path] = (), option: str = "-o") -> None:
    """Writes `data` to `path` ("-": standard output) through open_output."""
    with open_output(path, protect, option) as f:
        f.write(data)
