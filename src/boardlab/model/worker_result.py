"""The result of one worker process: boardlab-kern (C) and `python -m boardlab.pyrun` print the same
versioned JSON object, read here into one typed record (docs/architecture.md "The worker result").

Schema history (an older document still loads, upgraded on read):
  1  boardlab-kern named its workload in "kernel", the Python worker in "workload".
  2  both name it in "workload" (boardlab-kern's src/boardlab/kern/core.h BK_RESULT_SCHEMA); an optional
     "warnings" list of strings was added later, ignored by readers that predate it; so was "launched",
     what the program a launcher started took (LaunchedTimes).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from boardlab.model.run import Histogram, MetricResult

if TYPE_CHECKING:
    from boardlab.model.workload import WorkloadSpec

WORKER_SCHEMA = 2
READABLE_SCHEMAS = (1, 2)
# Every number a result may hold is bounded, so that storing and analysing it cannot fail: a count (times in
# ns, iterations, histogram and hardware counts) fits the store's 64-bit INTEGER columns, and a measured
# value is at most this large, so that any run's sums and squares stay finite floats (10**400 was an
# OverflowError that stopped the campaign; a warm-up of 2**64 iterations failed the store's insert).
INT64_MAX = 2**63 - 1
MAX_MAGNITUDE = 1e100


class WorkerResultError(ValueError):
    """A document that is not a worker result this boardlab can read; the message names the key."""


# A result's JSON that holds this text may have per-second series (its top-level "series"); one that does not
# has none. The store counts such runs as it stores them and finds them by it (LIKE), the series study reads
# only those: most results have no series, and reading each one to find none cost seconds at 10^6 runs.
SERIES_MARK = '"series"'


def may_hold_series(worker_json: str | None) -> bool:
    return worker_json is not None and SERIES_MARK in worker_json


@dataclass(frozen=True)
class SeriesSamples:
    """One metric of one label sampled through a run (docs/extending.md "Per-second series")."""

    metric: str
    label: str
    unit: str
    points: tuple[tuple[float, float | None], ...]  # (seconds since the run started, value or None)


@dataclass(frozen=True)
class LaunchedTimes:
    """What the program(s) a launcher worker started took, summed over its executions, measured by the
    launcher from each spawn to its exit and with wait4 on the program alone (`python -m boardlab.pyrun
    program`): the run's time columns, without the launcher's own interpreter start-up and its reading of
    the output."""

    wall_ns: int
    utime_us: int
    stime_us: int
    maxrss_kib: int  # the largest of the executions'
    executions: int


@dataclass(frozen=True)
class WorkerResult:
    schema: int  # as written by the worker (an older one is upgraded in `document`)
    tool: str  # boardlab-kern | boardlab.pyrun (`boardlab.worker` in results from before its rename)
    workload: str
    params: Mapping[str, Any]
    ok: bool  # finished and verified its result
    supported: bool
    reason: str | None  # why unsupported
    errors: tuple[str, ...]
    metrics: tuple[MetricResult, ...]  # in the worker's order
    iterations_ns: tuple[int, ...]
    warmup_iterations: int | None
    warmup_capped: bool | None
    histograms: tuple[Histogram, ...]
    counters: Mapping[str, Any]  # boardlab-kern's raw counter readings ({} without --counters)
    wall_ns: int | None = None  # boardlab-kern's whole run: set-up, calibration, warm-up, measure, verify
    # what the worker says about its result that does not fail it (a program's output searched in part)
    warnings: tuple[str, ...] = ()
    launched: LaunchedTimes | None = None  # a launcher's program's own times (the `program` workload)
    # the whole object at WORKER_SCHEMA, for what only a study reads (its `info`, the timer, ...)
    document: Mapping[str, Any] = field(compare=False, repr=False, default_factory=dict)

    def metric(self, name: str) -> MetricResult | None:
        return next((m for m in self.metrics if m.name == name), None)

    @property
    def info(self) -> Mapping[str, Any]:
        """The workload's own facts that only its study reads (their keys are the study's), {} if none."""
        info = self.document.get("info")
        return info if isinstance(info, Mapping) else {}

    @property
    def series(self) -> tuple[SeriesSamples, ...]:
        """The per-second samples (the top-level "series"): an entry without points or with a
        malformed name is left out, a sample whose value is not a finite number is a gap (None)."""
        entries = self.document.get("series")
        return tuple(s for e in _list_or_empty(entries) if (s := _series(e)) is not None)

    def to_json(self) -> str:
        return json.dumps(dict(self.document))


MAX_DEPTH = 32  # nesting of objects and lists: a real result is 4 deep; deeper is not a worker's output


def _fail(where: str, value: Any, expected: str) -> WorkerResultError:
    return WorkerResultError(
        f"worker result: {where} is {type(value).__name__} {_short(value)}, not {expected}"
    )


def _short(value: Any) -> str:
    """A bounded repr: a hostile value must not make the message huge (nor recurse: depth is checked
    first)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**50:
        return f"of {value.bit_length()} bits"  # Python refuses to print an integer of over 4300 digits
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _need(doc: Mapping, key: str, types: type | tuple[type, ...], where: str = "") -> Any:
    if key not in doc:
        raise WorkerResultError(f"worker result: {where}{key} is missing")
    value = doc[key]
    if not isinstance(value, types) or isinstance(value, bool) and bool not in _tuple(types):
        raise _fail(f"{where}{key}", value, " or ".join(t.__name__ for t in _tuple(types)))
    return value


def _tuple(types) -> tuple:
    return types if isinstance(types, tuple) else (types,)


def finite_value(value: Any) -> bool:
    """Whether `value` is a number a result may hold as a measured value: finite, at most MAX_MAGNITUDE in
    size (JSON has no NaN or infinity; Python's json reads them all the same). No conversion is made, so
    an integer of any size is compared exactly, never overflowing."""
    kind = type(value)  # the two concrete types first: the check runs for every value of every result
    if kind is float or kind is int:
        return -MAX_MAGNITUDE <= value <= MAX_MAGNITUDE  # False for NaN, as abs(NaN) <= M is
    return not isinstance(value, bool) and isinstance(value, int | float) and abs(value) <= MAX_MAGNITUDE


def _number(value: Any, where: str) -> float | None:
    """A measured value (finite_value) or None."""
    if value is None:
        return None
    if not finite_value(value):
        raise _fail(where, value, f"a finite number of at most {MAX_MAGNITUDE:g} in size")
    return value


def _count(value: Any, where: str) -> int:
    """A non-negative integer that the store's 64-bit columns hold (a float that is one, as some JSON
    writers print it, is accepted)."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= INT64_MAX:
        raise _fail(where, value, "a non-negative integer below 2**63")
    return value


def _counts(values: list | tuple, where: str) -> tuple[int, ...]:
    """`_count` of each element of a list (every iteration's time, every histogram bucket: thousands), the
    element named (`where[i]`) only in an error: a name made for each element was most of the parse."""
    out: list[int] = []
    for i, v in enumerate(values):
        ok = type(v) is int and 0 <= v <= INT64_MAX  # _count's own test for the common case, without a name
        out.append(v if ok else _count(v, f"{where}[{i}]"))
    return tuple(out)


def _numbers(values: list | tuple, where: str) -> tuple:
    """`_number` of each element of a list, the gaps (None) left out, the element named only in an error."""
    out: list[Any] = []
    for i, v in enumerate(values):
        if v is not None:  # a value that is not finite_value: _number raises, naming it
            out.append(v if finite_value(v) else _number(v, f"{where}[{i}]"))
    return tuple(out)


def _optional_count(value: Any, where: str) -> int | None:
    return None if value is None else _count(value, where)


def _optional(value: Any, kind: type, where: str) -> Any:
    if value is not None and (not isinstance(value, kind) or isinstance(value, bool) and kind is not bool):
        raise _fail(where, value, f"{kind.__name__} or null")
    return value


def _object(value: Any, where: str) -> Mapping:
    """An object, or {} for a missing (None) one."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _fail(where, value, "an object")
    for key in value:
        if not isinstance(key, str):
            raise _fail(f"{where} key", key, "a string")
    return value


def _list(value: Any, where: str) -> list | tuple:
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise _fail(where, value, "a list")
    return value


def _list_or_empty(value: Any) -> list | tuple:
    return value if isinstance(value, list | tuple) else ()


def _series(e: Any) -> SeriesSamples | None:
    """One "series" entry, or None when it is not one; only points with a numeric time are kept."""
    if not isinstance(e, Mapping):
        return None
    metric, label, unit = e.get("metric"), e.get("label"), e.get("unit", "")
    if not (isinstance(metric, str) and isinstance(label, str) and isinstance(unit, str)):
        return None
    points = tuple(
        (float(p[0]), float(p[1]) if finite_value(p[1]) else None)
        for p in _list_or_empty(e.get("points"))
        if isinstance(p, list | tuple) and len(p) == 2 and finite_value(p[0])
    )
    return SeriesSamples(metric, label, unit, points) if points else None


_SCALARS = (str, int, float, type(None))  # bool is an int


def _nests(value: Any) -> bool:
    """An object or a list. The scalars (most values: every iteration's time) are told apart first by their
    concrete types, which costs far less per value than the Mapping check (an abstract class's)."""
    return not isinstance(value, _SCALARS) and isinstance(value, Mapping | list | tuple)


def _depth_ok(doc: Any) -> bool:
    """Whether `doc` nests at most MAX_DEPTH objects and lists, checked without recursion."""
    stack = [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        if _nests(value):
            if depth > MAX_DEPTH:
                return False
            items = value.values() if isinstance(value, Mapping) else value
            stack.extend((v, depth + 1) for v in items if _nests(v))
    return True


def metric_value(unit: str, higher_is_better: bool, value: Any) -> dict:
    """One scalar metric of a worker's result document, as a Python worker writes it (`_metric` reads it)."""
    return {"unit": unit, "higher_is_better": higher_is_better, "value": value}


def spec_metrics(spec: WorkloadSpec, values: Mapping[str, Any]) -> dict[str, dict]:
    """`metric_value`s of measured values (by metric name, in their order), each in the unit and direction
    `spec` declares for it: said once, in the workload's SPEC. A name it does not declare is a KeyError."""
    declared = {m.name: m for m in spec.metrics}
    return {k: metric_value(declared[k].unit, declared[k].higher_is_better, v) for k, v in values.items()}


def _metric(name: str, m: Any) -> MetricResult:
    where = f"metrics.{name}."
    m = _object(m, f"metrics.{name}")
    values = _list(m.get("values"), f"{where}values")
    return MetricResult(
        name=name,
        unit=_need(m, "unit", str, where),
        higher_is_better=_need(m, "higher_is_better", bool, where),
        values=_numbers(values, f"{where}values"),
        median=_number(m.get("median", m.get("value")), f"{where}median"),
        min=_number(m.get("min"), f"{where}min"),
        p90=_number(m.get("p90"), f"{where}p90"),
        p99=_number(m.get("p99"), f"{where}p99"),
    )


def _histogram(name: str, h: Any) -> Histogram:
    where = f"histograms.{name}."
    h = _object(h, f"histograms.{name}")
    counts = _need(h, "counts", list, where)
    width = _number(_need(h, "bucket_width", (int, float), where), f"{where}bucket_width")
    if not width or width <= 0:
        raise _fail(f"{where}bucket_width", width, "a positive number")
    return Histogram(
        name=name,
        bucket_width=float(width),
        unit=_need(h, "unit", str, where),
        counts=_counts(counts, f"{where}counts"),
        overflow=_count(_need(h, "overflow", int, where), f"{where}overflow"),
        total=_count(_need(h, "total", int, where), f"{where}total"),
    )


def _counters(value: Any) -> dict[str, Any]:
    """boardlab-kern's counters: per name an object with a "count" or the reason it is "unsupported"."""
    out = dict(_object(value, "counters"))
    for name, c in out.items():
        c = _object(c, f"counters.{name}")
        if c.get("count") is not None:
            _count(c["count"], f"counters.{name}.count")
        _optional(c.get("unsupported"), str, f"counters.{name}.unsupported")
    return out


def upgrade(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A document of a readable schema as a WORKER_SCHEMA one."""
    schema = doc.get("schema")
    if isinstance(schema, bool) or not isinstance(schema, int) or schema not in READABLE_SCHEMAS:
        raise WorkerResultError(
            f"worker result schema {_short(schema)}: this boardlab reads schemas "
            f"{', '.join(map(str, READABLE_SCHEMAS))} (a newer boardlab-kern than this boardlab?)"
        )
    out = dict(doc)
    if schema == 1 and "workload" not in out:  # boardlab-kern's schema 1 said "kernel"
        out["workload"] = out.pop("kernel", None)
    out["schema"] = WORKER_SCHEMA
    return out


def parse_worker_result(doc: Any) -> WorkerResult:
    """The typed result of a worker's JSON object (schema 1 or 2), or WorkerResultError naming the key:
    every field read is type-checked, so no other exception leaves here whatever the document holds."""
    if not isinstance(doc, Mapping):
        raise WorkerResultError(f"worker result is {type(doc).__name__}, not a JSON object")
    if not _depth_ok(doc):
        raise WorkerResultError(f"worker result: nested deeper than {MAX_DEPTH} objects and lists")
    return _parse(doc)


def _parse(doc: Mapping) -> WorkerResult:
    """parse_worker_result of a document whose depth is known to be a worker's."""
    _object(doc, "the document")
    full = upgrade(doc)
    schema: int = doc["schema"]  # upgrade checked it is a readable schema number
    metrics = _object(full.get("metrics"), "metrics")
    histograms = _object(full.get("histograms"), "histograms")
    warm = _object(full.get("warmup"), "warmup")
    errors = _list(full.get("errors"), "errors")
    warmup_iterations = warm.get("iterations")
    if warmup_iterations is not None:
        warmup_iterations = _count(warmup_iterations, "warmup.iterations")
    return WorkerResult(
        schema=schema,
        tool=_optional(full.get("tool"), str, "tool") or "?",
        workload=_optional(full.get("workload"), str, "workload") or "?",
        params=dict(_object(full.get("params"), "params")),
        ok=_need(full, "ok", bool),
        supported=_optional(full.get("supported", True), bool, "supported") is not False,
        reason=_optional(full.get("reason"), str, "reason"),
        errors=tuple(_optional(e, str, f"errors[{i}]") or "" for i, e in enumerate(errors)),
        metrics=tuple(_metric(name, m) for name, m in metrics.items()),
        iterations_ns=_counts(_list(full.get("iterations_ns"), "iterations_ns"), "iterations_ns"),
        warmup_iterations=warmup_iterations,
        warmup_capped=_optional(warm.get("capped"), bool, "warmup.capped"),
        histograms=tuple(_histogram(name, h) for name, h in histograms.items()),
        counters=_counters(full.get("counters")),
        wall_ns=_optional_count(full.get("wall_ns"), "wall_ns"),
        warnings=tuple(
            w[:1000]
            for i, x in enumerate(_list(full.get("warnings"), "warnings"))
            if (w := _optional(x, str, f"warnings[{i}]"))
        ),
        launched=_launched(full.get("launched")),
        document=full,
    )


def _launched(value: Any) -> LaunchedTimes | None:
    if value is None:
        return None
    t = _object(value, "launched")
    return LaunchedTimes(
        **{k: _count(_need(t, k, (int, float), "launched."), f"launched.{k}")
           for k in ("wall_ns", "utime_us", "stime_us", "maxrss_kib", "executions")}
    )  # fmt: skip


def read_worker_result(text: str) -> WorkerResult:
    """`parse_worker_result` of a worker's stdout. Python's json raises RecursionError on deep nesting
    and ValueError on an integer of more than 4300 digits: both are a malformed result here."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise WorkerResultError(f"worker printed no valid JSON ({exc.msg} at line {exc.lineno})") from None
    except (ValueError, RecursionError) as exc:
        raise WorkerResultError(f"worker printed unreadable JSON ({str(exc)[:100]})") from None
    return parse_worker_result(doc)


def stored_worker_result(text: str | None) -> WorkerResult | None:
    """The worker result a run stored (`RunRecord.worker_json`), or None when there is none to read: the
    run stored no result (the worker crashed, or timed out), it is a simulated run's placeholder, or a
    newer boardlab wrote a schema this one cannot read. The runner stores only what `read_worker_result`
    read, so a study treats such a run as one without a result, as it treats a crashed one."""
    if not text:
        return None
    try:
        return read_worker_result(text)
    except WorkerResultError:
        return None


def build_worker_result(tool: str, workload: str, params: Mapping, body: Mapping) -> WorkerResult:
    """A result assembled in Python (the Python worker, a workload's unsupported answer): the body a
    workload's `run` returns, with the envelope every worker result carries."""
    doc = {"schema": WORKER_SCHEMA, "tool": tool, "workload": workload, "params": dict(params),
           "supported": True, "reason": None, "errors": [], "metrics": {}, **body}  # fmt: skip
    # Its depth is the code's that built it, not an input's: the check (a third of the parse of a program's
    # run, 60 us) is left to documents read from a worker's output.
    return _parse(doc)
