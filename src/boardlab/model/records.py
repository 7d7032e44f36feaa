"""One codec for frozen records kept as JSON: a record to JSON-safe data and back, driven by its dataclass
fields and their declared types, so a record kept in a document (a campaign's summary, its history steps, its
report's document) needs no hand-written pair of functions to write and read it.

`to_plain(value)`: a record is an object with its class name under "type" and each field by name; tuples,
lists and other sequences are lists; a set is a sorted list; a dict's non-text key is its JSON text; a
non-finite float is null (JSON has no NaN); an `array.array` is its typecode and its little-endian bytes in
base64 (a cell's runs are columns of 10^5 numbers: read back at C speed, about as long as their text).

`from_plain(hint, data, kinds)`: the value of the declared type `hint` again: records, tuples, frozensets,
integer and tuple keys and arrays as the types say; a field a record lacks takes its default (a document from
an older writer), a key the record does not declare is left out (one from a newer writer); null in a field
declared `float` (not optional) is NaN, as it was written. Where the type does not say which record (`Any`,
a union of records), the "type" names it among `kinds`; a name not among them raises ValueError, so a
document cannot make the reader build a class it did not list.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import json
import math
import sys
import types
import typing
from array import array
from collections.abc import Callable, Mapping, Sequence
from typing import Any

Kinds = Mapping[str, type]
_NO_KINDS: Kinds = types.MappingProxyType({})
_SEQUENCES = (tuple, list, frozenset, Sequence)


def to_plain(value: Any) -> Any:
    """`value` as JSON-safe data (the module's docstring says how each type is written)."""
    kind: Any = type(value)
    if kind is str or kind is int or kind is bool or value is None:  # most of a document: checked first
        return value
    if kind is float:
        return value if math.isfinite(value) else None
    if kind is list or kind is tuple:
        return [to_plain(v) for v in value]
    names = _field_names(kind)
    if names is not None:
        return {"type": kind.__name__, **{name: to_plain(getattr(value, name)) for name in names}}
    if isinstance(value, array):
        return {"array": value.typecode, "base64": base64.b64encode(_little(value).tobytes()).decode()}
    if isinstance(value, Mapping):
        return {(k if isinstance(k, str) else json.dumps(to_plain(k))): to_plain(v) for k, v in value.items()}
    if isinstance(value, frozenset | set):
        return sorted(to_plain(v) for v in value)
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):  # e.g. a plot's Points
        return [to_plain(v) for v in value]
    if isinstance(value, float):  # a float subclass (numpy's)
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str | int):
        return value
    return str(value)


def from_plain(hint: Any, data: Any, kinds: Kinds = _NO_KINDS) -> Any:
    """The value of type `hint` from its `to_plain` data; `kinds`: the records a "type" may name where `hint`
    does not say which (ValueError for any other name)."""
    return _decoder(hint)(data, kinds)


Decoder = Callable[[Any, Kinds], Any]


@functools.cache
def _decoder(hint: Any) -> Decoder:
    """`from_plain` for one declared type (a type hint: hashable), which it reads once: a history step decodes
    its predecessor's summary, 16,000 values of a few dozen types, and reading each value's type again was a
    fifth of the step's CPU."""
    decode = _typed_decoder(hint)
    missing = math.nan if hint is float else None  # null where a float is declared was a NaN

    def decoder(data: Any, kinds: Kinds) -> Any:
        return missing if data is None else decode(data, kinds)

    return decoder


def _typed_decoder(hint: Any) -> Decoder:
    """The decoder of a value that is not null, by what `hint` declares."""
    origin = typing.get_origin(hint)
    if origin is types.UnionType or origin is typing.Union:
        return functools.partial(_union, typing.get_args(hint))
    if origin is typing.Literal:
        return _as_written
    if hint is Any or hint is object:
        return _untyped
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return functools.partial(_record, hint)
    if hint is array:
        return _array_of
    if origin in _SEQUENCES or hint is tuple or hint is list:
        return _sequence_decoder(hint, origin)
    if origin is dict or origin is Mapping or hint is dict:
        return _mapping_decoder(hint)
    return _as_written  # as written: an int stays an int where a float is declared, as the record held it


def _as_written(data: Any, kinds: Kinds) -> Any:
    return data


def _array_of(data: Any, kinds: Kinds) -> array:
    return _array(data)


def _union(args: tuple, data: Any, kinds: Kinds) -> Any:
    """A value of one of `args`: a record by its "type" among the union's records (or `kinds`)."""
    if isinstance(data, dict) and "type" in data:
        records = {a.__name__: a for a in args if isinstance(a, type) and dataclasses.is_dataclass(a)}
        if records:
            kind = records.get(data["type"]) or kinds.get(data["type"])
            if kind is None:
                raise ValueError(f"a stored document holds a record of unknown type {data['type']!r}")
            return _record(kind, data, kinds)
    typed = [a for a in args if a is not type(None)]
    return from_plain(typed[0], data, kinds) if len(typed) == 1 else _untyped(data, kinds)


def _untyped(data: Any, kinds: Kinds) -> Any:
    """Data of an undeclared type (`Any`, a plot's data): a record by its "type", lists as tuples, keys
    written as JSON text (a heatmap's cell) as tuples."""
    if isinstance(data, list):
        return tuple(_untyped(v, kinds) for v in data)
    if not isinstance(data, dict):
        return data
    if "type" in data:
        kind = kinds.get(data["type"])
        if kind is None:
            raise ValueError(f"a stored document holds a record of unknown type {data['type']!r}")
        return _record(kind, data, kinds)
    if "array" in data and "base64" in data and len(data) == 2:
        return _array(data)
    return {_key(k): _untyped(v, kinds) for k, v in data.items()}


def _key(key: str) -> Any:
    return _untyped(json.loads(key), _NO_KINDS) if key.startswith("[") else key


def _record(kind: type, data: Any, kinds: Kinds) -> Any:
    if not isinstance(data, dict):
        raise TypeError(f"a {kind.__name__} is stored as an object, not {type(data).__name__}")
    if "type" in data and data["type"] != kind.__name__:
        raise ValueError(f"a {data['type']!r} stored where a {kind.__name__} belongs")
    return kind(**{name: decode(data[name], kinds) for name, decode in _field_decoders(kind) if name in data})


def _sequence_decoder(hint: Any, origin: Any) -> Decoder:
    args = typing.get_args(hint)
    fixed = origin is tuple and args and args[-1] is not Ellipsis  # a fixed tuple: a type per position
    positions = tuple(_decoder(a) for a in args) if fixed else ()
    item = _decoder(args[0] if args else Any)
    build = frozenset if origin is frozenset else list if origin is list else tuple

    def sequence(data: Any, kinds: Kinds) -> Any:
        if isinstance(data, dict) and "array" in data:  # a sequence that was an array (a box's values)
            return _array(data)
        if not isinstance(data, list):
            raise TypeError(f"a sequence is stored as a list, not {type(data).__name__}")
        if fixed:
            return tuple(decode(v, kinds) for decode, v in zip(positions, data, strict=True))
        return build([item(v, kinds) for v in data])

    return sequence


def _mapping_decoder(hint: Any) -> Decoder:
    key_hint, value_hint = typing.get_args(hint) or (str, Any)
    value = _decoder(value_hint)

    def mapping(data: Any, kinds: Kinds) -> Any:
        if not isinstance(data, dict):
            raise TypeError(f"a mapping is stored as an object, not {type(data).__name__}")
        return {_typed_key(key_hint, k): value(v, kinds) for k, v in data.items()}

    return mapping


def _typed_key(hint: Any, key: str) -> Any:
    return int(key) if hint is int else _key(key)


def _little(a: array) -> array:
    if sys.byteorder == "little":
        return a
    swapped = array(a.typecode, a)
    swapped.byteswap()
    return swapped


def _array(data: Any) -> array:
    a = array(data["array"])
    a.frombytes(base64.b64decode(data["base64"], validate=True))
    return _little(a)


@functools.cache
def _field_names(kind: Any) -> tuple[str, ...] | None:
    """The field names of a record class, None for any other type (asked once per class)."""
    return tuple(f.name for f in dataclasses.fields(kind)) if dataclasses.is_dataclass(kind) else None


class _ArrayHint:
    """`array[int]` in a record's annotations, read as `array`: array.array takes no subscript before Python
    3.12, and which typecode a column has is stored with it, not declared."""

    def __class_getitem__(cls, item: Any) -> type:
        return array


@functools.cache
def _field_decoders(kind: type) -> tuple[tuple[str, Decoder], ...]:
    """Each init field of a record class with the decoder of its declared type (once per class)."""
    return tuple((name, _decoder(hint)) for name, hint in _field_hints(kind).items())


@functools.cache
def _field_hints(kind: type) -> dict[str, Any]:
    """Each init field of a record class with its declared type (type hints are slow: once per class)."""
    hints = typing.get_type_hints(kind, localns={"array": _ArrayHint})
    return {f.name: hints[f.name] for f in dataclasses.fields(kind) if f.init}
