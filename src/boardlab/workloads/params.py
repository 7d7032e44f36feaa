"""Parameters of Python-run workloads: NAME=VALUE text checked and converted against a WorkloadSpec."""

from __future__ import annotations

from boardlab.errors import InputError
from boardlab.model.workload import WorkloadSpec


def coerce_params(spec: WorkloadSpec, assignments: list[str]) -> dict:
    """Defaults, overridden by NAME=VALUE assignments; each value checked against its declared type and range."""
    values: dict = {}
    given = {}
    for a in assignments:
        if "=" not in a:
            raise InputError(f"--param expects NAME=VALUE, got {a!r}")
        k, v = a.split("=", 1)
        given[k] = v
    for k in given:
        if spec.param(k) is None:
            raise InputError(
                f"unknown parameter {k!r}; valid: {', '.join(p.name for p in spec.params) or '(none)'}"
            )
    for p in spec.params:
        text = given.get(p.name, p.default)
        if text is None:
            values[p.name] = None
            continue
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
