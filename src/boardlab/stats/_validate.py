"""Input checks shared by the stats functions. Bad input is a programming error: it raises, naming the fix."""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Sequence
from typing import overload


@overload
def as_values(values: array, *, what: str = ..., positive: bool = ...) -> array[float]: ...
@overload
def as_values(values: Iterable[float], *, what: str = ..., positive: bool = ...) -> list[float]: ...
def as_values(values, *, what: str = "values", positive: bool = False):
    """A list of finite floats; rejects strings, nested sequences (iterations of runs) and NaN/inf. A column
    (`array.array`: a run table's values) gives a column of doubles (`as_column`)."""
    if isinstance(values, array):
        return as_column(values, what=what, positive=positive)
    if isinstance(values, str | bytes):
        raise TypeError(f"{what}: expected a sequence of numbers, got a string")
    if isinstance(values, list | tuple) and (quick := _finite_floats(values, positive)) is not None:
        return quick  # the common case, checked at C speed (a cell of 10^5 runs is checked often)
    out: list[float] = []
    for i, v in enumerate(values):
        if isinstance(v, Sequence | set | frozenset) and not isinstance(v, str | bytes):
            raise TypeError(
                f"{what}[{i}] is a sequence: pass one number per run (the run's summary value, e.g. the "
                "median of its iterations; see boardlab.stats.run_values), never pooled iterations"
            )
        if isinstance(v, bool) or not isinstance(v, int | float):
            try:
                v = float(v)  # numpy scalars, Decimal, Fraction
            except (TypeError, ValueError):
                raise TypeError(f"{what}[{i}]: expected a number, got {type(v).__name__}") from None
        f = float(v)
        if not math.isfinite(f):
            raise ValueError(f"{what}[{i}] = {f}: values must be finite (drop or re-run invalid runs first)")
        if positive and f <= 0.0:
            raise ValueError(f"{what}[{i}] = {f}: ratios need positive values (times, rates, sizes)")
        out.append(f)
    return out


def as_column(values: array, *, what: str = "values", positive: bool = False) -> array[float]:
    """`as_values` of a column, kept a column: a checked copy as doubles, 8 bytes a value where a list of
    floats takes 33 (a comparison of two cells of 300,000 runs holds both arms while it runs)."""
    if values and all(map(math.isfinite, values)) and not (positive and min(values) <= 0.0):
        return array("d", values)
    return array("d", as_values(values.tolist(), what=what, positive=positive))  # names the culprit


def _finite_floats(values: list | tuple, positive: bool) -> list[float] | None:
    """The values as a new list of floats when every one is a float or an int (not a bool: it takes the
    checked path) and finite, and positive if asked; else None, for the checked path to name the culprit."""
    if not values:
        return None
    kinds = set(map(type, values))
    if not kinds <= {float, int}:
        return None
    try:
        out = list(map(float, values)) if int in kinds else list(values)
    except OverflowError:  # an int beyond a double's range: the checked path raises it as before
        return None
    if not all(map(math.isfinite, out)) or (positive and min(out) <= 0.0):
        return None
    return out


def check_level(value: float, name: str) -> None:
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be strictly between 0 and 1, got {value}")
