"""Answers of pure functions of a cell's runs, remembered by a digest of their inputs.

A report asks for one cell's drift check and bimodality more than once: its summary, each comparison's
choice of test and each comparison's flags, with the same values every time. These functions are pure, so
the later asks return the first answer. The key is a SHA-256 of the inputs as doubles, 32 bytes whatever the
cell's size, so remembering costs no memory that grows with runs; at most MAX_ANSWERS answers are kept, the
oldest dropped first. Inputs that are not lists, tuples or arrays of numbers (iterators, strings, anything a
double cannot hold) are never remembered: the function runs and raises or answers as without the memo.
"""

from __future__ import annotations

import hashlib
import threading
from array import array
from collections.abc import Callable
from typing import TypeVar

MAX_ANSWERS = 1024
T = TypeVar("T")

_answers: dict[bytes, object] = {}
_lock = threading.Lock()


def digest(kind: str, *parts: object) -> bytes | None:
    """A key for `kind` applied to `parts` (sequences of numbers, numbers or None), or None when a part
    cannot be keyed. Equal doubles give equal keys: 1 and 1.0 are one input, as the functions treat them."""
    h = hashlib.sha256(kind.encode())
    for part in parts:
        if part is None:
            h.update(b"\0none")
            continue
        if isinstance(part, bool) or not isinstance(part, list | tuple | array | int | float):
            return None
        items = part if isinstance(part, list | tuple | array) else (part,)
        if not _exact_as_doubles(items):
            return None
        doubles = array("d", items)
        h.update(len(doubles).to_bytes(8, "little"))
        h.update(doubles.tobytes())
    return h.digest()


def remembered(key: bytes | None, compute: Callable[[], T]) -> T:
    """compute(), or the answer it gave before for `key` (None: not remembered)."""
    if key is None:
        return compute()
    with _lock:
        if key in _answers:
            return _answers[key]  # type: ignore[return-value]
    answer = compute()
    with _lock:
        _answers[key] = answer
        while len(_answers) > MAX_ANSWERS:
            del _answers[next(iter(_answers))]
    return answer


def _exact_as_doubles(items) -> bool:
    """Every item a float, or an int a double holds exactly (|i| <= 2^53): then equal doubles mean equal
    inputs to the functions remembered, which turn ints into floats themselves."""
    if isinstance(items, array):
        return items.typecode in "fd" or items.typecode in "bBhHiIlL"
    kinds = set(map(type, items))
    if kinds <= {float}:
        return True
    if not kinds <= {float, int}:
        return False
    return max(map(abs, items)) <= 2**53
