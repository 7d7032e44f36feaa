"""The record codec (`boardlab.model.records`): a frozen record kept as JSON reads back as the record it was,
driven by its declared fields, for every summary document boardlab keeps."""

from __future__ import annotations

import json
import math
from array import array
from dataclasses import dataclass, field

import pytest

from boardlab.model.records import from_plain, to_plain


@dataclass(frozen=True)
class Point:
    x: float
    y: float | None = None


@dataclass(frozen=True)
class Shape:
    name: str
    points: tuple[Point, ...]
    corners: tuple[int, str]
    tags: frozenset[str] = frozenset()
    by_cpu: dict[int, str] = field(default_factory=dict)
    values: array[float] = field(default_factory=lambda: array("d"))
    mark: Point | Shape | None = None


def _round_trip(hint, value, kinds=None):
    text = json.dumps(to_plain(value), allow_nan=False)  # JSON has no NaN: what the store keeps
    return from_plain(hint, json.loads(text), kinds or {})


def test_a_record_reads_back_as_it_was_with_its_declared_types():
    shape = Shape(
        "s", (Point(1.5, None), Point(math.inf, 2)), (3, "three"), frozenset({"b", "a"}), {7: "seven"},
        array("d", [1.0, math.nan]), Point(0.25),
    )  # fmt: skip
    back = _round_trip(Shape, shape)
    assert back.points[0] == Point(1.5, None) and math.isnan(back.points[1].x)  # a non-finite float: NaN
    assert (back.name, back.corners, back.tags, back.by_cpu, back.mark) == (
        "s", (3, "three"), frozenset({"a", "b"}), {7: "seven"}, Point(0.25),
    )  # fmt: skip
    assert back.values.typecode == "d" and back.values[0] == 1.0 and math.isnan(back.values[1])


def test_a_union_of_records_is_read_by_the_type_written():
    inner = Shape("inner", (), (1, "one"))
    assert _round_trip(Shape, Shape("outer", (), (2, "two"), mark=inner)).mark == inner


def test_an_integer_column_keeps_its_typecode_and_bytes():
    column = array("h", [1, -(2**15), 300])
    back = _round_trip(array, column)
    assert back.typecode == "h" and back.tobytes() == column.tobytes()


def test_an_older_document_takes_the_defaults_and_a_newer_ones_extra_keys_are_left_out():
    assert from_plain(Point, {"type": "Point", "x": 1.0}) == Point(1.0)
    assert from_plain(Point, {"type": "Point", "x": 1.0, "z": 9}) == Point(1.0)


def test_an_undeclared_type_is_read_only_among_the_kinds_given():
    data = to_plain({"shape": Point(1.0), (1, 2): "a tuple key"})
    assert from_plain(object, data, {"Point": Point}) == {"shape": Point(1.0), (1, 2): "a tuple key"}
    with pytest.raises(ValueError, match="unknown type 'Point'"):
        from_plain(object, data, {})


def test_a_damaged_document_is_an_error_not_a_record():
    with pytest.raises(TypeError):
        from_plain(Shape, [])
    with pytest.raises(ValueError, match="'Point' stored where a Shape belongs"):
        from_plain(Shape, {"type": "Point", "x": 1.0})
    with pytest.raises(TypeError):
        from_plain(Point, {"type": "Point"})  # its one field without a default is missing
