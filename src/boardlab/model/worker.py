"""The result of one worker process: boardlab-kern (C) and `python -m boardlab.worker` print the same
versioned JSON object, read here into one typed record (docs/architecture.md "The worker result").

Schema history (an older document still loads, upgraded on read):
  1  boardlab-kern named its workload in "kernel", the Python worker in "workload".
  2  both name it in "workload" (boardlab-kern's src/boardlab/kern/core.h BK_RESULT_SCHEMA).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from boardlab.model.run import Histogram, MetricResult

WORKER_SCHEMA = 2
READABLE_SCHEMAS = (1, 2)


class WorkerResultError(ValueError):
    """A document that is not a worker result this boardlab can read; the message names the key."""


@dataclass(frozen=True)
class WorkerResult:
    schema: int  # as written by the worker (an older one is upgraded in `document`)
    tool: str  # boardlab-kern | boardlab.worker
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
    # the whole object at WORKER_SCHEMA, for what only a study reads (its `info`, the timer, ...)
    document: Mapping[str, Any] = field(compare=False, repr=False, default_factory=dict)

    def metric(self, name: str) -> MetricResult | None:
        return next((m for m in self.metrics if m.name == name), None)

    def to_json(self) -> str:
        return json.dumps(dict(self.document))


def _need(doc: Mapping, key: str, types: type | tuple[type, ...], where: str = "") -> Any:
    if key not in doc:
        raise WorkerResultError(f"worker result: {where}{key} is missing")
    value = doc[key]
    if not isinstance(value, types) or isinstance(value, bool) and bool not in _tuple(types):
        raise WorkerResultError(f"worker result: {where}{key} is {type(value).__name__} {value!r:.60}")
    return value


def _tuple(types) -> tuple:
    return types if isinstance(types, tuple) else (types,)


def _number(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise WorkerResultError(
            f"worker result: {where} is {type(value).__name__} {value!r:.60}, not a number"
        )
    return value


def _metric(name: str, m: Any) -> MetricResult:
    where = f"metrics.{name}."
    if not isinstance(m, Mapping):
        raise WorkerResultError(f"worker result: metrics.{name} is {type(m).__name__}, not an object")
    values = m.get("values") or ()
    if not isinstance(values, list | tuple):
        raise WorkerResultError(f"worker result: {where}values is {type(values).__name__}, not a list")
    return MetricResult(
        name=name,
        unit=_need(m, "unit", str, where),
        higher_is_better=_need(m, "higher_is_better", bool, where),
        values=tuple(_number(v, f"{where}values[{i}]") for i, v in enumerate(values) if v is not None),
        median=_number(m.get("median", m.get("value")), f"{where}median"),
        min=_number(m.get("min"), f"{where}min"),
        p90=_number(m.get("p90"), f"{where}p90"),
        p99=_number(m.get("p99"), f"{where}p99"),
    )


def _histogram(name: str, h: Any) -> Histogram:
    where = f"histograms.{name}."
    if not isinstance(h, Mapping):
        raise WorkerResultError(f"worker result: histograms.{name} is {type(h).__name__}, not an object")
    counts = _need(h, "counts", list, where)
    return Histogram(
        name=name,
        bucket_width=float(_need(h, "bucket_width", int | float, where)),
        unit=_need(h, "unit", str, where),
        counts=tuple(int(c) for c in counts),
        overflow=int(_need(h, "overflow", int, where)),
        total=int(_need(h, "total", int, where)),
    )


def upgrade(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A document of a readable schema as a WORKER_SCHEMA one."""
    schema = doc.get("schema")
    if isinstance(schema, bool) or schema not in READABLE_SCHEMAS:
        raise WorkerResultError(
            f"worker result schema {schema!r}: this boardlab reads schemas "
            f"{', '.join(map(str, READABLE_SCHEMAS))} (a newer boardlab-kern than this boardlab?)"
        )
    out = dict(doc)
    if schema == 1 and "workload" not in out:  # boardlab-kern's schema 1 said "kernel"
        out["workload"] = out.pop("kernel", None)
    out["schema"] = WORKER_SCHEMA
    return out


def parse_worker_result(doc: Any) -> WorkerResult:
    """The typed result of a worker's JSON object (schema 1 or 2), or WorkerResultError naming the key."""
    if not isinstance(doc, Mapping):
        raise WorkerResultError(f"worker result is {type(doc).__name__}, not a JSON object")
    schema = doc.get("schema")
    full = upgrade(doc)
    metrics = full.get("metrics") or {}
    histograms = full.get("histograms") or {}
    warm = full.get("warmup") or {}
    errors = full.get("errors") or []
    for key, value, kind in (("metrics", metrics, Mapping), ("histograms", histograms, Mapping),
                             ("warmup", warm, Mapping), ("errors", errors, list)):  # fmt: skip
        if not isinstance(value, kind):
            raise WorkerResultError(f"worker result: {key} is {type(value).__name__} {value!r:.60}")
    return WorkerResult(
        schema=schema,
        tool=str(full.get("tool") or "?"),
        workload=str(full.get("workload") or "?"),
        params=dict(full.get("params") or {}),
        ok=_need(full, "ok", bool),
        supported=bool(full.get("supported", True)),
        reason=full.get("reason"),
        errors=tuple(str(e) for e in errors),
        metrics=tuple(_metric(name, m) for name, m in metrics.items()),
        iterations_ns=tuple(int(v) for v in full.get("iterations_ns") or ()),
        warmup_iterations=warm.get("iterations"),
        warmup_capped=warm.get("capped"),
        histograms=tuple(_histogram(name, h) for name, h in histograms.items()),
        counters=dict(full.get("counters") or {}),
        document=full,
    )


def read_worker_result(text: str) -> WorkerResult:
    """`parse_worker_result` of a worker's stdout."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise WorkerResultError(f"worker printed no valid JSON ({exc.msg} at line {exc.lineno})") from None
    return parse_worker_result(doc)


def build_worker_result(tool: str, workload: str, params: Mapping, body: Mapping) -> WorkerResult:
    """A result assembled in Python (the Python worker, a workload's unsupported answer): the body a
    workload's `run` returns, with the envelope every worker result carries."""
    doc = {"schema": WORKER_SCHEMA, "tool": tool, "workload": workload, "params": dict(params),
           "supported": True, "reason": None, "errors": [], "metrics": {}, **body}  # fmt: skip
    return parse_worker_result(doc)
