"""Parameters of Python-run workloads: NAME=VALUE text checked and converted against a WorkloadSpec."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from boardlab.errors import InputError
from boardlab.model.units import plain_number
from boardlab.model.workload import ParamSpec, WorkloadSpec


def _type_name(value: Any) -> str:
    return {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "a table",
    }.get(type(value), type(value).__name__)


def _or_words(spec: ParamSpec) -> str:
    return "".join(f" or {w!r}" for w in spec.words)


def _range(spec: ParamSpec) -> str:
    lo = "-inf" if spec.min is None else plain_number(spec.min)
    hi = "inf" if spec.max is None else plain_number(spec.max)
    return f" in [{lo}, {hi}]" + (f" {spec.unit}" if spec.unit else "")


def check_param_value(spec: ParamSpec, value: Any) -> str | None:
    """Why `value` does not fit the parameter `spec`, or None when it does (one checker per type)."""
    if spec.words and isinstance(value, str) and value in spec.words:
        return None
    return _CHECKERS.get(spec.type, _check_str)(spec, value)


def _out_of_range(spec: ParamSpec, value) -> bool:
    return spec.min is not None and value < spec.min or spec.max is not None and value > spec.max


def _check_int(spec: ParamSpec, value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and not spec.words and re.fullmatch(r"\d+[kKMG]?", value):
            return None  # boardlab-kern accepts size suffixes; it checks the range
        return f"expected an integer{_or_words(spec)}, found {_type_name(value)} {value!r}"
    if _out_of_range(spec, value):
        return f"expected an integer{_range(spec)}{_or_words(spec)}, found {value}"
    return None


def _check_float(spec: ParamSpec, value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"expected a number{_or_words(spec)}, found {_type_name(value)} {value!r}"
    if _out_of_range(spec, value):
        return f"expected a number{_range(spec)}{_or_words(spec)}, found {value}"
    return None


def _check_enum(spec: ParamSpec, value: Any) -> str | None:
    return None if value in spec.choices else f"expected one of {', '.join(spec.choices)}, found {value!r}"


def _check_bool(spec: ParamSpec, value: Any) -> str | None:
    return None if isinstance(value, bool) else f"expected true or false, found {_type_name(value)} {value!r}"


def _check_list(spec: ParamSpec, value: Any) -> str | None:
    if not isinstance(value, list):
        either = "".join(f"{w!r} or " for w in spec.words)
        return f"expected {either}a list of strings, found {_type_name(value)} {value!r}"
    bad = next((v for v in value if not isinstance(v, str) or spec.choices and v not in spec.choices), None)
    if bad is not None:
        valid = f" from {', '.join(spec.choices)}" if spec.choices else ""
        return f"expected a list of strings{valid}, found {_type_name(bad)} {bad!r} in it"
    return None


def _check_table(spec: ParamSpec, value: Any) -> str | None:
    if isinstance(value, dict):
        return None
    return f"expected a table{_or_words(spec)}, found {_type_name(value)} {value!r}"


def _check_str(spec: ParamSpec, value: Any) -> str | None:
    return None if isinstance(value, str) else f"expected a string, found {_type_name(value)} {value!r}"


_CHECKERS = {"int": _check_int, "float": _check_float, "enum": _check_enum, "bool": _check_bool,
             "list": _check_list, "table": _check_table}  # fmt: skip


def coerce_params(spec: WorkloadSpec, assignments: list[str]) -> dict:
    """Defaults, overridden by NAME=VALUE assignments; each value checked against its declared type and
    range."""
    values: dict = {}
    given: dict[str, str] = {}
    for a in assignments:
        if "=" not in a:
            raise InputError(f"--param expects NAME=VALUE, got {a!r}")
        k, value = a.split("=", 1)
        given[k] = value
    for k in given:
        if spec.param(k) is None:
            raise InputError(
                f"unknown parameter {k!r}; valid: {', '.join(p.name for p in spec.params) or '(none)'}"
            )
    for p in spec.params:
        text: Any = given.get(p.name, p.default)
        if text is None:
            values[p.name] = None
            continue
        v: Any
        if p.type == "int":
            try:
                v = int(text, 0) if isinstance(text, str) else int(text)
            except ValueError:
                raise InputError(f"parameter {p.name!r} expects an integer, got {text!r}") from None
        elif p.type == "float":
            try:
                v = float(text)
            except ValueError:
                raise InputError(f"parameter {p.name!r} expects a number, got {text!r}") from None
        elif p.type == "bool":
            if str(text).lower() not in ("0", "1", "true", "false"):
                raise InputError(f"parameter {p.name!r} expects true or false, got {text!r}")
            v = str(text).lower() in ("1", "true")
        else:
            v = str(text)
        if p.type == "enum" and v not in p.choices:
            raise InputError(f"parameter {p.name!r} must be one of {', '.join(p.choices)}, got {v!r}")
        if p.type in ("int", "float") and (
            p.min is not None and v < p.min or p.max is not None and v > p.max
        ):
            raise InputError(f"parameter {p.name!r}={v} is out of range [{p.min:g}, {p.max:g}]")
        values[p.name] = v
    return values


def prepare_once(
    spec: WorkloadSpec,
    given: Iterable[tuple[str, Any]],
    prepared: set[tuple[str, str]],
    note: Callable[[str], None],
) -> None:
    """The spec's `prepare` hook (build a missing model, load a delegate in a process of its own) with these
    parameters and the defaults for the rest, once per workload and parameter set in `prepared`: a campaign's
    cells and the loads its conditions run share one set, so a model measured and run as a load, or run
    beside the task in several modes, is prepared once. One that raises is not marked, and is asked again."""
    if spec.prepare is None:
        return
    full = coerce_params(spec, [f"{k}={value}" for k, value in given])
    key = (spec.name, json.dumps(full, sort_keys=True, default=str))
    if key not in prepared:
        spec.prepare(full, note)
        prepared.add(key)
