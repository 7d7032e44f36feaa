"""Plan files (TOML) and bundled presets: parsing and validation.

Every error names the file, the line, the key path, what was expected and what was found, and nothing
is started or written before the whole plan is valid.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from boardlab.errors import InputError, MeasurementError
from boardlab.model.campaign import (
    ConditionSpec,
    EnergyPolicy,
    Gates,
    Plan,
    RunPolicy,
    SweepRequest,
    WorkloadEntry,
)
from boardlab.model.workload import WorkloadSpec
from boardlab.workloads.params import _type_name, check_param_value

PLAN_SCHEMA = 1
PRESET_PACKAGE = "boardlab.campaign.presets"
ORDERS = ("interleave", "abba", "sequential")
ALLOCATIONS = ("sqrt", "equal")  # [runs] baseline_allocation (campaign.schedule.reference_runs)
SWEEP_KINDS = ("opp-grid",)


class PlanUnsupported(MeasurementError):
    """The plan needs something this board lacks (a [sweep] without cpufreq): exit 1, with the reason."""


def preset_names() -> list[str]:
    return sorted(p.name[:-5] for p in resources.files(PRESET_PACKAGE).iterdir() if p.name.endswith(".toml"))


def preset_text(name: str) -> str:
    path = resources.files(PRESET_PACKAGE) / f"{name}.toml"
    if not path.is_file():
        raise InputError(f"no preset named {name!r}; presets: {', '.join(preset_names())}")
    return path.read_text()


def preset_description(name: str) -> str:
    return tomllib.loads(preset_text(name)).get("description", "")


class _Where:
    """Finds the line of a key path in the plan text, so errors can point at it (tomllib gives no lines)."""

    def __init__(self, text: str, source: str):
        self.lines = text.splitlines()
        self.source = source

    def line_of(self, path: tuple) -> int | None:
        start, end = 0, len(self.lines)
        keys = list(path)
        if keys and isinstance(keys[0], str) and len(keys) > 1 and isinstance(keys[1], int):
            # [[workloads]] number keys[1]: from its header to the next header
            header = re.compile(r"^\s*\[\[\s*" + re.escape(keys[0]) + r"\s*\]\]")
            seen = -1
            for i, line in enumerate(self.lines):
                if header.match(line):
                    seen += 1
                    if seen == keys[1]:
                        start = i
                        break
            else:
                return None
            end = next(
                (j for j in range(start + 1, len(self.lines)) if self.lines[j].lstrip().startswith("[")),
                len(self.lines),
            )
            keys = keys[2:]
            if not keys:
                return start + 1
        elif keys and len(keys) > 1:
            header = re.compile(r"^\s*\[\s*" + re.escape(keys[0]) + r"\s*\]")
            for i, line in enumerate(self.lines):
                if header.match(line):
                    start = i
                    end = next(
                        (j for j in range(i + 1, len(self.lines)) if self.lines[j].lstrip().startswith("[")),
                        len(self.lines),
                    )
                    keys = keys[1:]
                    break
        if len(path) == 1 and isinstance(path[0], str):  # a table itself ([sweep]): its header's line
            header = re.compile(r"^\s*\[\s*" + re.escape(path[0]) + r"\s*\]")
            hit = next((i for i, line in enumerate(self.lines) if header.match(line)), None)
            if hit is not None:
                return hit + 1
        for key in keys:
            if not isinstance(key, str):
                continue
            pat = re.compile(r"(^|[\s{,])" + re.escape(key) + r"\s*=")
            for i in range(start, end):
                if pat.search(self.lines[i].split("#", 1)[0]):
                    start = i
                    break
            else:
                return None
        return start + 1

    def error(self, path: tuple, message: str) -> PlanError:
        line = self.line_of(path)
        where = f"{self.source}:{line}" if line else self.source
        return PlanError(f"{where}: {dotted(path)}: {message}", path, message)


def dotted(path: tuple) -> str:
    """A key path as a plan's errors write it: `conditions[2].params.workers`."""
    return ".".join(f"[{k}]" if isinstance(k, int) else str(k) for k in path).replace(".[", "[")


class PlanError(InputError):
    """A plan's value refused: the message names the plan, its line and the key path. `path` and `detail`
    (the message without its place) are kept apart for a caller that generated the plan itself and names
    the place in the words of its own input (bench's --under, an imported hyperfine export)."""

    def __init__(self, message: str, path: tuple = (), detail: str = ""):
        super().__init__(message)
        self.path, self.detail = path, detail


def _take(
    table: dict, key: str, kind, default, where: _Where, path: tuple, *, choices=None, lo=None, hi=None
):
    if key not in table:
        return default
    value = table.pop(key)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
        names = " or ".join(_type_name(k()) if k is not type(None) else "none" for k in kinds)
        raise where.error(path + (key,), f"expected {names}, found {_type_name(value)} {value!r}")
    if choices is not None and value not in choices:
        raise where.error(path + (key,), f"expected one of {', '.join(map(str, choices))}, found {value!r}")
    if lo is not None and value < lo or hi is not None and value > hi:
        raise where.error(path + (key,), f"expected a value in [{lo}, {hi}], found {value!r}")
    return value


def _no_leftovers(table: dict, where: _Where, path: tuple, known: str) -> None:
    if table:
        key = next(iter(table))
        raise where.error(path + (key,), f"unknown key; valid keys here: {known}")


def _workload(
    entry: Any, i: int, catalog: dict[str, WorkloadSpec], where: _Where, *, skip_unsupported: bool = False
) -> WorkloadEntry:
    path = ("workloads", i)
    if not isinstance(entry, dict):
        raise where.error(path, f"expected a table, found {_type_name(entry)}")
    entry = dict(entry)
    if "kind" in entry:  # a workload declared in the plan (kind = "program"): it joins the plan's catalog
        declared = _declared_workload(entry, catalog, where, path)
        catalog[declared.name] = declared
    name = _take(entry, "name", str, None, where, path)
    if name is None:
        raise where.error(path, "missing key 'name' (the workload, see `boardlab list`)")
    spec = catalog.get(name)
    if name in _workload_kinds():  # it runs what a plan declares, never by its name alone
        raise where.error(path + ("name",), f'declare it with kind = "{name}" (docs/extending.md)')
    if spec is None:
        close = [n for n in catalog if n.split(".")[0] == name.split(".")[0]] or sorted(catalog)
        raise where.error(path + ("name",), f"unknown workload {name!r}; valid: {', '.join(close)}")
    params = _take(entry, "params", dict, {}, where, path)
    metric = _take(entry, "metric", str, None, where, path)
    compare_param = _take(entry, "compare", str, None, where, path)
    threshold = _take(entry, "threshold", (float, int), None, where, path, lo=0, hi=10)
    tail_threshold = _take(entry, "tail_threshold", (float, int), None, where, path, lo=0, hi=10)
    w_precision = _take(entry, "precision", (float, int), None, where, path, lo=0.001, hi=0.5)
    w_repetitions = _take(entry, "repetitions", int, None, where, path, lo=1, hi=100000)
    _no_leftovers(
        entry,
        where,
        path,
        "name, params, metric, compare, threshold, tail_threshold, precision, repetitions "
        '(kind = "program" adds argv or command, inputs, prepare, prepare_each, timeout_s, iterations)',
    )
    if compare_param is not None and not (
        isinstance(params.get(compare_param), list) and len(params[compare_param]) >= 2
    ):
        raise where.error(
            path + ("compare",),
            f"compare = {compare_param!r} needs params.{compare_param} to be a list of at least two values "
            "(the first is the baseline of the others)",
        )
    for key, value in params.items():
        pspec = spec.param(key)
        if pspec is None:
            valid = ", ".join(p.name for p in spec.params) or "(none)"
            raise where.error(path + ("params", key), f"{name} has no parameter {key!r}; valid: {valid}")
        for v in value if isinstance(value, list) else [value]:
            reason = check_param_value(pspec, v)
            if reason:
                raise where.error(path + ("params", key), reason)
        if isinstance(value, list) and not value:
            raise where.error(path + ("params", key), "an empty list expands into no cell")
    if metric is not None and metric not in {m.name for m in spec.metrics}:
        valid = ", ".join(m.name for m in spec.metrics)
        raise where.error(path + ("metric",), f"{name} has no metric {metric!r}; valid: {valid}")
    if not spec.supported and not skip_unsupported:  # with runs.unsupported = "skip" the runner skips it
        raise where.error(path + ("name",), f"{name} is unsupported here: {spec.unsupported_reason}")
    return WorkloadEntry(
        name=name,
        params=params,
        metric=metric,
        compare=compare_param,
        threshold=None if threshold is None else float(threshold),
        tail_threshold=None if tail_threshold is None else float(tail_threshold),
        precision=None if w_precision is None else float(w_precision),
        repetitions=w_repetitions,
    )


def _workload_kinds() -> dict:
    """[[workloads]] kinds a plan declares itself: the Python-run workloads whose module has `from_plan`."""
    from boardlab.workloads import python_workload_modules

    return {n: m for n, m in python_workload_modules().items() if hasattr(m, "from_plan")}


def _declared_workload(
    entry: dict, catalog: dict[str, WorkloadSpec], where: _Where, path: tuple
) -> WorkloadSpec:
    """A workload the plan itself declares; a relative input path is the plan file's."""
    kinds = _workload_kinds()
    kind = entry["kind"]
    if kind not in kinds:
        raise where.error(path + ("kind",), f"unknown workload kind {kind!r}; valid: {', '.join(kinds)}")
    module = kinds[kind]
    base = Path.cwd() if where.source.startswith("preset:") else Path(where.source).parent
    return module.from_plan(entry, lambda keys, message: where.error(path + keys, message), base, catalog)


def _condition_part(kind: Any, params: Any, kinds: dict, where: _Where, path: tuple) -> tuple[str, dict]:
    if kind is None:
        raise where.error(path, f"missing key 'kind'; valid kinds: {', '.join(kinds)}")
    if not isinstance(kind, str) or kind not in kinds:
        raise where.error(
            path + ("kind",), f"unknown condition kind {kind!r}; valid kinds: {', '.join(kinds)}"
        )
    if not isinstance(params, dict):
        raise where.error(path + ("params",), f"expected a table, found {_type_name(params)}")
    reason = kinds[kind].validate(params)
    if reason:
        key, message = reason
        raise where.error(path + ("params", key) if key else path + ("params",), message)
    return kind, params


def _condition(entry: Any, i: int, where: _Where) -> ConditionSpec:
    from boardlab.conditions import condition_kinds

    path = ("conditions", i)
    if not isinstance(entry, dict):
        raise where.error(path, f"expected a table, found {_type_name(entry)}")
    entry = dict(entry)
    kinds = condition_kinds()
    name = _take(entry, "name", str, None, where, path)
    baseline = _take(entry, "baseline", str, None, where, path)
    raw_parts = _take(entry, "parts", list, None, where, path)
    only = _take(entry, "workloads", list, [], where, path)
    if not all(isinstance(w, str) for w in only):
        raise where.error(path + ("workloads",), "expected a list of workload names of this plan")
    cond = _condition_body(entry, raw_parts, name, baseline, kinds, where, path)
    return dataclasses.replace(cond, workloads=tuple(only))


def _condition_body(entry, raw_parts, name, baseline, kinds, where: _Where, path: tuple) -> ConditionSpec:
    if raw_parts is not None:
        if "kind" in entry or "params" in entry:
            raise where.error(path + ("parts",), "give either kind and params, or parts, not both")
        _no_leftovers(entry, where, path, "name, parts, baseline, workloads")
        if not raw_parts:
            raise where.error(path + ("parts",), "an empty list: give at least one {kind, params} table")
        parts = []
        for j, part in enumerate(raw_parts):
            if not isinstance(part, dict):
                raise where.error(path + ("parts",), f"part {j}: expected a table, found {_type_name(part)}")
            part = dict(part)
            kind, params = part.pop("kind", None), part.pop("params", {})
            if part:
                raise where.error(
                    path + ("parts",), f"part {j}: unknown key {next(iter(part))!r}; valid: kind, params"
                )
            if kind == "baseline":
                raise where.error(path + ("parts",), "a baseline cannot be part of a combined condition")
            parts.append(_condition_part(kind, params, kinds, where, path + ("parts",)))
        kinds_used = [k for k, _ in parts]
        if len(set(kinds_used)) != len(kinds_used):
            raise where.error(path + ("parts",), f"a kind appears twice: {', '.join(kinds_used)}")
        label = "+".join(kinds_used)
        if len(parts) == 1:
            return ConditionSpec(name=name or label, kind=parts[0][0], params=parts[0][1], baseline=baseline)
        return ConditionSpec(name=name or label, kind=label, params={}, baseline=baseline, parts=tuple(parts))
    kind = _take(entry, "kind", str, None, where, path)
    params = _take(entry, "params", dict, {}, where, path)
    _no_leftovers(entry, where, path, "name, kind, params, parts, baseline, workloads")
    kind, params = _condition_part(kind, params, kinds, where, path)
    return ConditionSpec(name=name or kind, kind=kind, params=params, baseline=baseline)


def _energy(t: dict, where: _Where) -> EnergyPolicy:
    """[energy]: meters beside the board's own sensors, the primary source, the idle windows."""
    e = ("energy",)
    scopes = ("wall", "board", "package", "rail")
    argv = _take(t, "meter_command", list, [], where, e)
    if not all(isinstance(a, str) for a in argv):
        raise where.error(
            e + ("meter_command",), 'expected an argv list of strings, e.g. ["my-meter", "--watts"]'
        )
    policy = EnergyPolicy(
        enabled=_take(t, "enabled", bool, True, where, e),
        primary=_take(t, "primary", str, None, where, e),
        idle_window_s=float(_take(t, "idle_window_s", (float, int), 3.0, where, e, lo=0.1, hi=3600)),
        block_runs=_take(t, "block_runs", int, 0, where, e, lo=0, hi=100000),
        min_interval_s=float(_take(t, "min_interval_s", (float, int), 0.01, where, e, lo=0.001, hi=60)),
        meter_command=tuple(argv),
        meter_command_scope=_take(t, "meter_command_scope", str, "wall", where, e, choices=scopes),
        meter_command_interval_s=float(
            _take(t, "meter_command_interval_s", (float, int), 1.0, where, e, lo=0.001, hi=60)
        ),
        meter_serial=_take(t, "meter_serial", str, None, where, e),
        meter_serial_scope=_take(t, "meter_serial_scope", str, "board", where, e, choices=scopes),
        meter_serial_interval_s=float(
            _take(t, "meter_serial_interval_s", (float, int), 0.5, where, e, lo=0.05, hi=60)
        ),
    )
    _no_leftovers(
        t,
        where,
        e,
        "enabled, primary, idle_window_s, block_runs, min_interval_s, meter_command, meter_command_scope, "
        "meter_command_interval_s, meter_serial, meter_serial_scope, meter_serial_interval_s",
    )
    return policy


def _counters(names: list, where: _Where, path: tuple) -> tuple[str, ...]:
    from boardlab.platform.perf import COUNTER_NAMES

    for name in names:
        if name not in COUNTER_NAMES:
            raise where.error(
                path + ("counters",), f"unknown counter {name!r}; valid: {', '.join(COUNTER_NAMES)}"
            )
    if len(set(names)) != len(names):
        raise where.error(path + ("counters",), "a counter is listed twice")
    return tuple(names)


def _opt_float(value: float | int | None) -> float | None:
    return None if value is None else float(value)


@dataclasses.dataclass(frozen=True)
class _Expansion:
    conditions: list[dict]  # [[conditions]] tables
    cpu: int
    notes: tuple[str, ...]
    record: str  # appended to the stored plan text: the grid this board gave


def _sweep_request(t: dict, where: _Where, cpu_given: int | str | None) -> SweepRequest:
    """[sweep] { kind = "opp-grid", cluster = "auto" | POLICY, bus_hz = "record" | "max" | "min" | HZ }: the
    governor study's snoop sweep, checked as written; its conditions come from the board (`expand_sweep`)."""
    s = ("sweep",)
    kind = _take(t, "kind", str, None, where, s, choices=SWEEP_KINDS)
    if kind is None:
        raise where.error(s, f"missing key 'kind'; valid kinds: {', '.join(SWEEP_KINDS)}")
    cluster = _take(t, "cluster", str, "auto", where, s)
    bus_hz = _take(t, "bus_hz", (str, int), "record", where, s)
    _no_leftovers(t, where, s, "kind, cluster, bus_hz")
    return SweepRequest(kind, cluster, bus_hz, cpu_given)


def _expand(req: SweepRequest, where: _Where, root: str | Path) -> _Expansion:
    """The sweep's conditions expanded from this board's cpufreq policies by the same code as `boardlab
    governor sweep --plan-out`, the CPU it pins the task to, what to tell the user, and the record of the
    grid for the stored plan text."""
    from boardlab.governor import sweep
    from boardlab.platform.inventory import inventory
    from boardlab.platform.sysroot import SysRoot

    s = ("sweep",)
    cluster, bus_hz, cpu_given = req.cluster, req.bus_hz, req.cpu_given
    try:
        grids = sweep.expand(inventory(SysRoot(root)), None if cluster == "auto" else cluster)
    except sweep.Unsupported as exc:
        raise PlanUnsupported(
            f"{where.source}: [sweep]: {exc}; the snoop sweep sets each cluster's frequency through cpufreq "
            "(`boardlab governor sweep --sim exynos5422` runs it on the simulator)"
        ) from None
    except ValueError as exc:
        raise where.error(s + ("cluster",), f"{exc}, or auto") from None
    grid = sweep.auto_grid(grids) if cluster == "auto" else grids[0]
    reason = sweep.check_bus(grid, bus_hz)
    if reason:
        raise where.error(s + ("bus_hz",), reason)
    cpu = sweep.worker_cpu(grid)
    if cpu_given is not None and cpu_given != "auto":
        if cpu_given not in grid.this_cpus:
            raise where.error(
                ("runs", "cpu"),
                f"the sweep pins the task to {grid.this_policy} (CPUs "
                f"{', '.join(map(str, grid.this_cpus))}); give one of them, or leave cpu out for CPU {cpu}",
            )
        cpu = cpu_given
    n = len(grid.pairs())
    if grid.other_policy:
        notes = [f"[sweep] the task on {grid.this_policy} (CPU {cpu}) at its {len(grid.this_khz)} OPPs x "
                 f"{grid.other_policy} at its {len(grid.other_khz)} OPPs = {n} conditions"]  # fmt: skip
    else:
        notes = [f"[sweep] {grid.this_policy} is this board's only cluster: the sweep is over its "
                 f"{len(grid.this_khz)} OPPs alone (no other cluster to snoop), {n} conditions"]  # fmt: skip
    if grid.bus_device:
        notes.append(f"[sweep] memory bus {grid.bus_device}: "
                     + ("recorded per run" if bus_hz == "record" else f"fixed at {bus_hz}"))  # fmt: skip
    else:
        notes.append("[sweep] no memory-controller devfreq on this board: the bus frequency is not recorded")
    record = (
        f"# [sweep] expanded on this board: task on {grid.this_policy} CPU {cpu} at "
        f"{', '.join(map(str, grid.this_khz))} kHz"
        + (
            f" x {grid.other_policy} at {', '.join(map(str, grid.other_khz))} kHz"
            if grid.other_policy
            else ""
        )
        + (f"; memory bus {grid.bus_device} {bus_hz}" if grid.bus_device else "; no memory-bus devfreq")
    )
    return _Expansion(sweep.condition_tables(grid, bus_hz), cpu, tuple(notes), record)


def _runs(doc: dict, where: _Where) -> tuple[RunPolicy, int | str | None]:
    """[runs]: the run policy, and the `cpu` as the plan gave it (a [sweep] reads it)."""
    runs_t = dict(_take(doc, "runs", dict, {}, where, ()))
    p = ("runs",)
    cpu_given = runs_t.get("cpu")
    repetitions = _take(runs_t, "repetitions", int, None, where, p, lo=1, hi=10000)
    precision = _take(runs_t, "precision", (float, int, str), None, where, p)
    precision_auto = precision == "auto"
    if isinstance(precision, str) and not precision_auto:
        raise where.error(
            p + ("precision",), f'expected a half-width in [0.001, 0.5] or "auto", found {precision!r}'
        )
    if not precision_auto and precision is not None and not 0.001 <= precision <= 0.5:
        raise where.error(p + ("precision",), f"expected a value in [0.001, 0.5], found {precision!r}")
    if repetitions is not None and precision is not None:
        raise where.error(
            p + ("precision",), "give either repetitions (a fixed count) or precision, not both"
        )
    pilot = _take(runs_t, "pilot", int, 10, where, p, lo=2, hi=1000)
    cap = _take(runs_t, "cap", int, 50, where, p, lo=2, hi=10000)
    if cap < pilot:
        raise where.error(p + ("cap",), f"the cap ({cap}) must be at least the pilot count ({pilot})")
    cpu = _take(runs_t, "cpu", (int, str, list), "auto", where, p)
    cpu_set = _cpu_set(cpu, where, p)
    if cpu_set is not None:
        cpu = cpu_set[-1]  # the set's last is the measured CPU: a "same" load goes there, the monitor's own
    if isinstance(cpu, str) and cpu not in ("auto", "none"):
        raise where.error(
            p + ("cpu",), f"expected a CPU number, a list of them, 'auto' or 'none', found {cpu!r}"
        )
    runs = RunPolicy(
        repetitions=repetitions if repetitions is not None or precision is not None else 5,
        precision=None if precision is None else (0.0 if precision_auto else float(precision)),
        precision_auto=precision_auto,
        pilot=pilot,
        cap=cap,
        iterations=_take(runs_t, "iterations", int, 10, where, p, lo=1, hi=100000),
        warmup_max_iterations=_take(runs_t, "warmup_max_iterations", int, 300, where, p, lo=0, hi=100000),
        warmup_max_ms=float(_take(runs_t, "warmup_max_ms", (float, int), 2000.0, where, p, lo=0, hi=3.6e6)),
        warmup_cv=float(_take(runs_t, "warmup_cv", (float, int), 0.02, where, p, lo=0, hi=10)),
        order=_take(runs_t, "order", str, "interleave", where, p, choices=ORDERS),
        cpu=cpu if isinstance(cpu, int) else (-1 if cpu == "auto" else None),
        cpu_set=cpu_set,
        measure_clock=_take(runs_t, "measure_clock", bool, False, where, p),
        drop_caches=_take(runs_t, "drop_caches", bool, False, where, p),
        max_reruns=_take(runs_t, "max_reruns", int, 3, where, p, lo=0, hi=100),
        unsupported=_take(runs_t, "unsupported", str, "fail", where, p, choices=("fail", "skip")),
        counters=_counters(_take(runs_t, "counters", list, [], where, p), where, p),
        max_temp_c=_opt_float(_take(runs_t, "max_temp_c", (float, int), None, where, p, lo=20, hi=150)),
        timeout_s=_opt_float(_take(runs_t, "timeout_s", (float, int), None, where, p, lo=0.1, hi=7 * 86400)),
        baseline_allocation=_take(runs_t, "baseline_allocation", str, "sqrt", where, p, choices=ALLOCATIONS),
    )
    _no_leftovers(
        runs_t,
        where,
        p,
        "repetitions, precision, pilot, cap, iterations, warmup_max_iterations, warmup_max_ms, warmup_cv, "
        "order, cpu, drop_caches, max_reruns, unsupported, counters, max_temp_c, timeout_s, "
        "baseline_allocation, measure_clock",
    )

    return runs, cpu_given


def _cpu_set(cpu, where: _Where, p: tuple) -> tuple[int, ...] | None:
    """`cpu = [2, 3]`: the worker pinned to a set of CPUs (a program running that many threads)."""
    if not isinstance(cpu, list):
        return None
    if not cpu or len(cpu) > 4096 or not all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c < 4096
                                            for c in cpu) or len(set(cpu)) != len(cpu):  # fmt: skip
        raise where.error(
            p + ("cpu",), f"expected a list of distinct CPU numbers such as [2, 3], found {cpu!r}"
        )
    return tuple(sorted(cpu))


def _gates(doc: dict, where: _Where) -> Gates:
    """[gates]: what a run waits for before it starts (an idle system, a cool one)."""
    gates_t = dict(_take(doc, "gates", dict, {}, where, ()))
    g = ("gates",)
    gates = Gates(
        idle=_take(gates_t, "idle", bool, True, where, g),
        idle_threshold_pct=float(
            _take(gates_t, "idle_threshold_pct", (float, int), 5.0, where, g, lo=0, hi=100)
        ),
        idle_window_s=float(_take(gates_t, "idle_window_s", (float, int), 2.0, where, g, lo=0.1, hi=600)),
        temperature=_take(gates_t, "temperature", bool, True, where, g),
        temperature_delta_c=float(
            _take(gates_t, "temperature_delta_c", (float, int), 2.0, where, g, lo=0, hi=50)
        ),
        timeout_s=float(_take(gates_t, "timeout_s", (float, int), 30.0, where, g, lo=0, hi=86400)),
        cooldown_s=float(_take(gates_t, "cooldown_s", (float, int), 0.0, where, g, lo=0, hi=86400)),
    )
    _no_leftovers(
        gates_t,
        where,
        g,
        "idle, idle_threshold_pct, idle_window_s, temperature, temperature_delta_c, timeout_s, cooldown_s",
    )
    return gates


def _conditions(
    doc: dict, where: _Where, cpu_given: int | str | None
) -> tuple[tuple[ConditionSpec, ...], SweepRequest | None]:
    """[[conditions]], or a [sweep] to expand them from the board later (no conditions until then)."""
    raw_conditions = _take(doc, "conditions", list, [], where, ())
    sweep_t = _take(doc, "sweep", dict, None, where, ())
    if sweep_t is None:
        return _condition_specs(raw_conditions, where), None
    if raw_conditions:
        raise where.error(
            ("conditions", 0),
            "a plan with [sweep] takes its conditions from the board: remove one of them",
        )
    return (), _sweep_request(dict(sweep_t), where, cpu_given)


def _condition_specs(tables: list, where: _Where) -> tuple[ConditionSpec, ...]:
    """The [[conditions]] tables (a plan's, or a sweep's), with the implied baseline first when they name
    none."""
    conditions = tuple(dataclasses.replace(_condition(c, i, where), index=i) for i, c in enumerate(tables))
    if not any(c.is_baseline for c in conditions):
        conditions = (ConditionSpec(name="baseline", kind="baseline"),) + conditions
    return conditions


def _checked_conditions(
    conditions: tuple[ConditionSpec, ...], workloads: tuple[WorkloadEntry, ...], where: _Where
) -> tuple[ConditionSpec, ...]:
    resolved = _resolve_baselines(conditions, where)
    _check_condition_workloads(resolved, workloads, where)
    return tuple(resolved)


def _resolve_baselines(conditions: tuple[ConditionSpec, ...], where: _Where) -> list[ConditionSpec]:
    """Unique names, and each condition's baseline resolved to a condition's name (or None)."""
    names = [c.name for c in conditions]
    for c in conditions:
        if names.count(c.name) > 1 and c.index is not None:
            taken = " (the implied baseline's name)" if c.name == "baseline" else ""
            raise where.error(
                ("conditions", c.index, "name"), f"condition name {c.name!r} is used twice{taken}"
            )
    # Each condition is compared with its `baseline`: by default the first baseline-kind condition; any
    # other condition may be named (the real-time study compares each load with the same isolation mode
    # under no load); "" means "compared with nothing" (a reference condition).
    baselines = [c.name for c in conditions if c.is_baseline]
    resolved = []
    for c in conditions:
        if c.baseline is None:
            base = None if c.is_baseline else baselines[0]
        elif c.baseline == "":
            base = None
        else:
            base = c.baseline
            if base not in names:
                raise where.error(
                    ("conditions", c.index, "baseline"),
                    f"no condition named {base!r}; conditions: {', '.join(names)}",
                )
            if base == c.name:
                raise where.error(
                    ("conditions", c.index, "baseline"), "a condition cannot be its own baseline"
                )
        resolved.append(dataclasses.replace(c, baseline=base))
    return resolved


def parse_plan(text: str, source: str, catalog: dict[str, WorkloadSpec]) -> Plan:
    """Parses and validates a plan; raises InputError naming the place and the fix. Reads no board: a [sweep]
    table is kept as `Plan.sweep` for `expand_sweep`. A workload the plan declares itself (kind = "program")
    is the plan's (`Plan.declared`, `plan_catalog`), not added to `catalog`."""
    known = dict(catalog)  # the catalog and what the plan has declared so far
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{source}: not valid TOML: {exc}") from None
    where = _Where(text, source)
    schema = _take(doc, "schema", int, PLAN_SCHEMA, where, ())
    if schema != PLAN_SCHEMA:
        raise where.error(("schema",), f"this boardlab reads plan schema {PLAN_SCHEMA}, found {schema}")
    name = _take(doc, "name", str, None, where, ())
    if name is None:
        raise InputError(f"{source}: missing key 'name' (the campaign's name)")
    if not name:  # present, so "missing" sent the user looking for a key that is there
        raise where.error(("name",), "empty: give the campaign a name")
    description = _take(doc, "description", str, "", where, ())
    seed = _take(doc, "seed", int, 1, where, ())

    runs, cpu_given = _runs(doc, where)
    gates = _gates(doc, where)
    raw_workloads = _take(doc, "workloads", list, [], where, ())
    if not raw_workloads:
        raise InputError(
            f"{source}: no [[workloads]]: a plan needs at least one workload (see `boardlab list`)"
        )
    skip = runs.unsupported == "skip"
    workloads = tuple(
        _workload(w, i, known, where, skip_unsupported=skip) for i, w in enumerate(raw_workloads)
    )
    conditions, sweep = _conditions(doc, where, cpu_given)
    if sweep is None:
        conditions = _checked_conditions(conditions, workloads, where)
    for w in workloads:
        if w.repetitions is not None and runs.precision is not None:
            i = workloads.index(w)
            raise where.error(
                ("workloads", i, "repetitions"),
                "a workload's repetitions is a fixed count: give it without [runs] precision, or "
                "use precision",
            )
    energy = _energy(dict(_take(doc, "energy", dict, {}, where, ())), where)
    _no_leftovers(
        doc, where, (), "schema, name, description, seed, runs, gates, workloads, conditions, sweep, energy"
    )
    return Plan(
        energy=energy,
        name=name,
        description=description,
        seed=seed,
        runs=runs,
        gates=gates,
        workloads=workloads,
        conditions=conditions,
        source=text,
        source_name=source,
        declared=tuple(spec for name, spec in known.items() if name not in catalog),
        sweep=sweep,
    )


def expand_sweep(plan: Plan, root: str | Path | None) -> Plan:
    """The plan with its [sweep]'s conditions expanded from the board's tree under `root`, the CPU the sweep
    pins the task to, the notes the CLI says, and the grid recorded in the stored text (so the resume key
    says which grid this board gave); InputError naming the plan's line, or PlanUnsupported where the board
    cannot run it. A plan without [sweep] comes back as it is."""
    if plan.sweep is None:
        return plan
    where = _Where(plan.source, plan.source_name)
    if root is None:
        raise where.error(
            ("sweep",), "a [sweep] is expanded from a board: load the plan with the board's root"
        )
    x = _expand(plan.sweep, where, root)
    return dataclasses.replace(
        plan,
        conditions=_checked_conditions(_condition_specs(x.conditions, where), plan.workloads, where),
        runs=dataclasses.replace(plan.runs, cpu=x.cpu),
        source=plan.source.rstrip("\n") + "\n" + x.record + "\n",
        notes=x.notes,
        sweep=None,
    )


def plan_catalog(plan: Plan, catalog: Mapping[str, WorkloadSpec]) -> dict[str, WorkloadSpec]:
    """The catalog a plan runs with: `catalog` and the workloads the plan declares itself."""
    return {**catalog, **{spec.name: spec for spec in plan.declared}}


def _check_condition_workloads(conditions: list[ConditionSpec], workloads, where: _Where) -> None:
    """A condition's `workloads` names workloads of this plan, and its baseline runs them too (else its
    comparisons would have nothing to compare with)."""
    in_plan = [w.name for w in workloads]
    by_name = {c.name: c for c in conditions}
    for c in conditions:
        for w in c.workloads:
            if w not in in_plan:
                raise where.error(
                    ("conditions", c.index, "workloads"),
                    f"{w!r} is not a workload of this plan; its workloads: "
                    f"{', '.join(dict.fromkeys(in_plan))}",
                )
        base = by_name.get(c.baseline) if c.baseline else None
        if base is not None and base.workloads:
            missing = [w for w in (c.workloads or in_plan) if w not in base.workloads]
            if missing:
                raise where.error(
                    ("conditions", c.index, "workloads"),
                    f"its baseline {base.name!r} does not run {', '.join(dict.fromkeys(missing))}: "
                    "add them to the baseline's workloads",
                )


PLAN_MAX_BYTES = 1 << 20  # a plan is a page of TOML; this bounds what a wrong path (/dev/zero) can cost


def read_plan_file(path: str) -> str:
    """A plan's text: only a regular file of at most PLAN_MAX_BYTES, opened without blocking (a FIFO)."""
    from boardlab.userfile import read_user_file

    missing = f" (or use --preset NAME; presets: {', '.join(preset_names())})"
    data = read_user_file(path, what="plan", give="a TOML file", max_bytes=PLAN_MAX_BYTES, missing=missing)
    try:
        return data.decode()
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start}); a plan is a TOML file") from None


def load_plan(path: str | None, preset: str | None, catalog: dict[str, WorkloadSpec]) -> Plan:
    """The plan of a file or a preset, parsed (a [sweep] not yet expanded: `expand_sweep`)."""
    if preset:
        return parse_plan(preset_text(preset), f"preset:{preset}", catalog)
    assert path is not None
    return parse_plan(read_plan_file(path), str(path), catalog)


def apply_overrides(
    plan: Plan,
    catalog: dict[str, WorkloadSpec],
    *,
    repetitions: int | None = None,
    duration_s: float | None = None,
    scale: float | None = None,
    only_workloads: list[str] | None = None,
    peer: str | None = None,
) -> Plan:
    """Command-line overrides that shrink or stretch a plan (a preset written for hours on a board, run in a
    minute here). They are appended to the stored plan text, so the campaign records them and a resume
    matches only the same overrides."""
    catalog = plan_catalog(plan, catalog)
    notes = []
    runs, workloads = plan.runs, list(plan.workloads)
    if only_workloads:  # one row of a matrix: the same conditions, fewer workloads
        workloads = _only(plan, workloads, only_workloads)
        notes.append(f"workloads = {', '.join(dict.fromkeys(w.name for w in workloads))}")
    if scale is not None:
        runs, workloads = _scaled(runs, workloads, catalog, scale)
        notes.append(f"scale = {scale:g}")
    if repetitions is not None:
        if not 1 <= repetitions <= 10000:
            raise InputError(f"--repetitions {repetitions}: expected a count in [1, 10000]")
        runs = dataclasses.replace(runs, repetitions=repetitions, precision=None)
        notes.append(f"repetitions = {repetitions}")
    if duration_s is not None:
        workloads = _with_duration(plan, workloads, catalog, duration_s)
        notes.append(f"duration_s = {duration_s:g}")
    if peer is not None:
        workloads = _with_peer(workloads, catalog, peer)
        notes.append(f"peer = {peer}")
    if not notes:
        return plan
    source = plan.source.rstrip("\n") + "\n# command-line overrides: " + ", ".join(notes) + "\n"
    return dataclasses.replace(plan, runs=runs, workloads=tuple(workloads), source=source)


def _only(plan: Plan, workloads: list, names: list[str]) -> list:
    """The plan's entries of the named workloads (`--workload`); a name the plan lacks is refused."""
    unknown = sorted(set(names) - {w.name for w in workloads})
    if unknown:
        raise InputError(
            f"--workload {', '.join(unknown)}: not in plan {plan.name!r}; its workloads: "
            f"{', '.join(dict.fromkeys(w.name for w in workloads))}"
        )
    return [w for w in workloads if w.name in names]


def _scaled(runs, workloads: list, catalog: dict[str, WorkloadSpec], scale: float) -> tuple:
    """`--scale`: repetitions (or the precision rule's pilot and cap), iterations, AI frames and timed runs'
    lengths multiplied by `scale`, each kept at its floor."""
    if not 0 < scale <= 10:
        raise InputError(f"--scale {scale}: expected a factor in (0, 10]")
    if runs.precision is None:
        assert runs.repetitions is not None  # a plan without precision has repetitions (or 5)
        runs = dataclasses.replace(runs, repetitions=max(5, round(runs.repetitions * scale)))
    else:
        runs = dataclasses.replace(
            runs, pilot=max(5, round(runs.pilot * scale)), cap=max(5, round(runs.cap * scale))
        )
    runs = dataclasses.replace(runs, iterations=max(2, round(runs.iterations * scale)))
    out = []
    for w in workloads:  # per-run work (AI frames) shrinks with the scale too
        params = dict(w.params)
        if "frames" in params and isinstance(params["frames"], int):
            params["frames"] = max(10, round(params["frames"] * scale))
        # ... and so does a timed run's length (a service scenario of 60 s runs 6 s at 0.1), >= 1 s
        d = params.get("duration_s")
        if isinstance(d, float) and catalog[w.name].param("duration_s") is not None:
            params["duration_s"] = max(1.0, d * scale)
        out.append(dataclasses.replace(w, params=params) if params != w.params else w)
    return runs, out


def _with_duration(plan: Plan, workloads: list, catalog: dict[str, WorkloadSpec], duration_s: float) -> list:
    """`--duration`: every workload with a duration_s parameter runs that long; none having one is refused."""
    out, touched = [], False
    for w in workloads:
        spec = catalog[w.name].param("duration_s")
        if spec is None:
            out.append(w)
            continue
        value = duration_s if spec.type == "float" else int(duration_s)
        reason = check_param_value(spec, value)
        if reason:
            raise InputError(f"--duration {duration_s:g}: {w.name}: {reason}")
        out.append(dataclasses.replace(w, params={**w.params, "duration_s": value}))
        touched = True
    if not touched:
        raise InputError(f"--duration: no workload of {plan.name!r} has a duration_s parameter")
    return out


def with_gate_timeout(plan: Plan, seconds: float | None) -> Plan:
    """`run --gate-timeout SECONDS`: the plan's [gates] timeout_s for this invocation. Not added to the stored
    plan text, unlike apply_overrides: how long a run may wait for an idle, cool board changes no measured
    value's meaning (each run records its own wait and whether the gate gave up), so a campaign stopped
    because its gate waited too long resumes under a shorter one."""
    if seconds is None:
        return plan
    if not 0 <= seconds <= 86400:
        raise InputError(
            f"--gate-timeout {seconds:g}: expected 0 to 86400 seconds (what [gates] timeout_s takes)"
        )
    return dataclasses.replace(plan, gates=dataclasses.replace(plan.gates, timeout_s=float(seconds)))


NET_SINK_PORT = 7300  # where `boardlab-kern net-sink` listens on a peer unless --peer names a port


def peer_address(peer: str) -> str:
    """--peer HOST or HOST:PORT (an IPv4 address: the kernel takes numeric hosts) -> HOST:PORT."""
    import ipaddress

    host, _, port = peer.rpartition(":") if peer.count(":") == 1 else (peer, "", "")
    try:
        ipaddress.IPv4Address(host)
    except ValueError:
        raise InputError(
            f"--peer {peer}: expected an IPv4 address, optionally :PORT (e.g. 192.168.1.20)"
        ) from None
    if port and not (port.isdigit() and 0 < int(port) < 65536):
        raise InputError(f"--peer {peer}: the port must be a number in 1..65535")
    return f"{host}:{port or NET_SINK_PORT}"


def _with_peer(workloads: list, catalog: dict[str, WorkloadSpec], peer: str) -> list:
    """Every workload that takes a `peer` (io.net) sends to `boardlab-kern net-sink` on that host instead of a
    sink forked on loopback; InputError when the plan has none."""
    address = peer_address(peer)
    out = [
        dataclasses.replace(w, params={**w.params, "peer": address}) if catalog[w.name].param("peer") else w
        for w in workloads
    ]
    if out == workloads:
        raise InputError("--peer: no workload of this plan sends to a network peer (io.net takes one)")
    return out


def unsupported_workloads(plan: Plan, catalog: dict[str, WorkloadSpec]) -> dict[str, str]:
    """Workloads of a plan this board cannot run (kept only under runs.unsupported = "skip"): name -> why."""
    catalog = plan_catalog(plan, catalog)
    return {
        w.name: catalog[w.name].unsupported_reason or "unsupported here"
        for w in plan.workloads
        if not catalog[w.name].supported
    }
