"""The worker result: one typed record, one schema constant; a document of the previous schema still loads."""

from __future__ import annotations

import json

import pytest

from boardlab.model.worker_result import (
    WORKER_SCHEMA,
    SeriesSamples,
    WorkerResultError,
    build_worker_result,
    parse_worker_result,
    read_worker_result,
    stored_worker_result,
)

# boardlab-kern's schema-1 result as release 0.1.0 printed it (trimmed to what is read): "kernel", not
# "workload"
KERN_V1 = {
    "schema": 1, "tool": "boardlab-kern", "version": "0.1.0", "kernel": "scimark.sor", "family": "scimark",
    "params": {"size": "small"}, "ok": True, "supported": True, "reason": None, "verified": True,
    "errors": [], "warmup": {"iterations": 12, "capped": False, "cv": 0.004},
    "iterations_ns": [1000, 1010, 990],
    "metrics": {"mflops": {"unit": "Mflop/s", "higher_is_better": True, "kind": "rate",
                           "values": [410.0, 405.9, 414.1], "median": 410.0, "min": 405.9, "p90": 414.1,
                           "p99": 414.1}},
    "checksum": "0123456789abcdef",
}  # fmt: skip


def test_a_previous_schema_kern_document_loads_upgraded():
    result = parse_worker_result(KERN_V1)
    assert result.schema == 1 and result.workload == "scimark.sor" and result.tool == "boardlab-kern"
    assert result.ok and result.supported and result.errors == ()
    assert result.iterations_ns == (1000, 1010, 990)
    assert (result.warmup_iterations, result.warmup_capped) == (12, False)
    (m,) = result.metrics
    assert (m.name, m.unit, m.higher_is_better, m.median, m.values) == (
        "mflops", "Mflop/s", True, 410.0, (410.0, 405.9, 414.1))  # fmt: skip
    # the document a study reads is the current schema's, with everything else kept
    assert result.document["schema"] == WORKER_SCHEMA and result.document["workload"] == "scimark.sor"
    assert "kernel" not in result.document and result.document["checksum"] == "0123456789abcdef"


def test_a_previous_schema_python_worker_document_loads():
    # stored before the Python worker's module was renamed to boardlab.pyrun: its tool name is kept as written
    doc = {"schema": 1, "tool": "boardlab.worker", "workload": "rt.cyclictest", "params": {}, "ok": False,
           "supported": False, "reason": "cyclictest not found", "errors": [], "metrics": {}}  # fmt: skip
    result = read_worker_result(json.dumps(doc))
    assert (
        result.workload == "rt.cyclictest"
        and result.tool == "boardlab.worker"
        and not result.supported
        and result.reason == "cyclictest not found"
    )


def test_a_single_value_metric_and_a_histogram_are_read():
    body = {
        "ok": True,
        "metrics": {"max_us": {"unit": "us", "higher_is_better": False, "value": 42}},
        "histograms": {
            "cpu1": {"bucket_width": 1, "unit": "us", "counts": [0, 3, 1], "overflow": 1, "total": 5}
        },
    }
    result = build_worker_result("boardlab.pyrun", "rt.cyclictest", {"cpus": "1"}, body)
    assert result.schema == WORKER_SCHEMA and result.metric("max_us").median == 42
    (h,) = result.histograms
    assert (h.name, h.bucket_width, h.counts, h.overflow, h.total) == ("cpu1", 1.0, (0, 3, 1), 1, 5)
    again = read_worker_result(result.to_json())
    assert again == result  # what the Python worker prints is what the runner reads


@pytest.mark.parametrize(
    ("doc", "match"),
    [
        ("[]", "not a JSON object"),
        ("{", "no valid JSON"),
        ('{"schema": 3, "ok": true}', "schema 3: this boardlab reads schemas 1, 2"),
        ('{"ok": true}', "schema None"),
        ('{"schema": 2, "ok": "yes"}', "ok is str"),
        ('{"schema": 2, "ok": true, "metrics": {"x": {"unit": "s"}}}',
         "metrics.x.higher_is_better is missing"),
        ('{"schema": 2, "ok": true, "metrics": {"x": {"unit": "s", "higher_is_better": true, '
         '"median": "1"}}}',
         "metrics.x.median is str"),
        # an element of a long list is named by its index (the name is made only for the one refused)
        ('{"schema": 2, "ok": true, "iterations_ns": [5, 6.0, -7]}', r"iterations_ns\[2\] is int -7"),
        ('{"schema": 2, "ok": true, "metrics": {"x": {"unit": "s", "higher_is_better": true, '
         '"values": [1, null, NaN]}}}', r"metrics\.x\.values\[2\] is float nan"),
        ('{"schema": 2, "ok": true, "histograms": {"h": {"counts": [1, 2.5], "bucket_width": 1, '
         '"unit": "us", "overflow": 0, "total": 1}}}', r"histograms\.h\.counts\[1\] is float 2\.5"),
    ],
)  # fmt: skip
def test_a_document_that_is_not_a_worker_result_is_refused_with_its_key(doc, match):
    with pytest.raises(WorkerResultError, match=match):
        read_worker_result(doc)


# Malformed outputs that made the reader raise ValueError, TypeError, OverflowError or RecursionError (the
# campaign then ended in "internal error"): each is now a WorkerResultError naming the place.
def _doc(extra: str) -> str:
    return '{"schema": 2, "ok": true, ' + extra + "}"


MALFORMED = {
    "deep nesting": "[" * 100_000 + "]" * 100_000,
    "deep params": _doc('"params": ' + '{"a": ' * 200 + "1" + "}" * 200),
    "huge integer": _doc('"iterations_ns": [' + "9" * 5000 + "]"),
    "infinite iteration": _doc('"iterations_ns": [1e400]'),
    "NaN iteration": _doc('"iterations_ns": [NaN]'),
    "text iteration": _doc('"iterations_ns": ["12"]'),
    "iterations not a list": _doc('"iterations_ns": 5'),
    "histogram count text": _doc(
        '"histograms": {"h": {"counts": ["x"], "bucket_width": 1, "unit": "us", "overflow": 0, "total": 1}}'
    ),
    "histogram width infinite": _doc(
        '"histograms": {"h": {"counts": [1], "bucket_width": 1e999, "unit": "us", "overflow": 0, "total": 1}}'
    ),
    "params a list": _doc('"params": [1, 2]'),
    "counters a list": _doc('"counters": [1]'),
    "counter count text": _doc('"counters": {"cycles": {"count": "many"}}'),
    "warmup iterations text": _doc('"warmup": {"iterations": "twelve"}'),
    "warmup iterations negative": _doc('"warmup": {"iterations": -3}'),
    "warmup capped a number": _doc('"warmup": {"capped": 2}'),
    "schema a list": '{"schema": [2], "ok": true}',
    "metric median infinite": _doc(
        '"metrics": {"m": {"unit": "s", "higher_is_better": false, "median": -Infinity}}'
    ),
    "errors of objects": _doc('"errors": [{"a": 1}]'),
    "reason a number": _doc('"supported": false, "reason": 3'),
    "wall_ns text": _doc('"wall_ns": "1s"'),
    # numbers no store column or statistic can hold: 10**400 was an OverflowError that ended the campaign,
    # a count of 2**64 an error of the store's insert
    "metric value 10**400": _doc(
        '"metrics": {"m": {"unit": "s", "higher_is_better": false, "values": [1' + "0" * 400 + "]}}"
    ),
    "metric median 10**400": _doc(
        '"metrics": {"m": {"unit": "s", "higher_is_better": false, "median": -1' + "0" * 400 + "}}"
    ),
    "metric value 1e300": _doc('"metrics": {"m": {"unit": "s", "higher_is_better": false, "value": 1e300}}'),
    "histogram width 10**400": _doc(
        '"histograms": {"h": {"counts": [1], "bucket_width": 1' + "0" * 400 + ', "unit": "us", '
        '"overflow": 0, "total": 1}}'
    ),
    "warmup iterations 2**64": _doc(f'"warmup": {{"iterations": {2**64}}}'),
    "iteration 2**63": _doc(f'"iterations_ns": [{2**63}]'),
    "wall_ns 2**64": _doc(f'"wall_ns": {2**64}'),
    "histogram count 2**64": _doc(
        f'"histograms": {{"h": {{"counts": [{2**64}], "bucket_width": 1, "unit": "us", "overflow": 0, '
        '"total": 1}}'
    ),
    "counter count 2**64": _doc(f'"counters": {{"cycles": {{"count": {2**64}}}}}'),
    "warnings not text": _doc('"warnings": [3]'),
}


@pytest.mark.parametrize("text", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_output_raises_only_the_declared_error(text):
    with pytest.raises(WorkerResultError, match="worker"):
        read_worker_result(text)


def test_a_list_keeps_its_numbers_and_drops_only_its_gaps():
    metric = {"unit": "s", "higher_is_better": True, "values": [1, None, 2.5, 0]}
    doc = {"schema": 2, "ok": True, "iterations_ns": [5, 6.0, 2**63 - 1], "metrics": {"x": metric}}
    result = parse_worker_result(doc)
    assert result.iterations_ns == (5, 6, 2**63 - 1) and type(result.iterations_ns[1]) is int
    assert result.metric("x").values == (1, 2.5, 0)


def test_the_largest_numbers_a_result_may_hold_are_read():
    doc = {**KERN_V1, "warmup": {"iterations": 2**63 - 1}, "iterations_ns": [2**63 - 1], "wall_ns": 2**63 - 1}
    doc["metrics"] = {
        "m": {"unit": "x", "higher_is_better": True, "values": [1e100, -(10**100)], "median": 0}
    }
    result = parse_worker_result({**doc, "warnings": ["searched in part", None]})
    assert result.warmup_iterations == result.iterations_ns[0] == result.wall_ns == 2**63 - 1
    assert result.metrics[0].values == (1e100, -(10**100)) and result.warnings == ("searched in part",)


def test_a_series_point_of_10_to_the_400_is_a_gap_not_an_overflow():
    body = {
        "ok": True,
        "series": [{"metric": "m", "label": "l", "points": [[0, 10**400], [10**400, 1], [1, 2]]}],
    }
    (series,) = build_worker_result("boardlab.pyrun", "w", {}, body).series
    assert series.points == ((0.0, None), (1.0, 2.0))


def test_warmup_iterations_is_read_as_a_count():
    doc = {**KERN_V1, "warmup": {"iterations": 12.0, "capped": True}}
    result = parse_worker_result(doc)
    assert result.warmup_iterations == 12 and isinstance(result.warmup_iterations, int)
    assert result.warmup_capped is True


def test_what_only_a_study_reads_is_typed_on_the_record():
    """info, wall_ns and the per-second series: the studies read them here, never from the JSON text."""
    body = {
        "ok": True,
        "wall_ns": 2_000_000_000,
        "info": {"peer": "10.0.0.2:5201"},
        "series": [
            {
                "metric": "rss_bytes",
                "label": "position",
                "unit": "bytes",
                "points": [[1.0, 5.0], [2.0, None]],
            },
            {"metric": "cpu", "label": "x", "unit": "%", "points": []},  # no points: no series
            {"metric": 3, "label": "x", "points": [[1.0, 1.0]]},  # a name that is not text: left out
            {"metric": "cpu", "label": "y", "points": [["t", 1.0], [1.0, "high"], [2.0, 2.0]]},
            "not an object",
        ],
    }
    result = read_worker_result(build_worker_result("boardlab.worker", "svc.vehicle", {}, body).to_json())
    assert result.info == {"peer": "10.0.0.2:5201"} and result.wall_ns == 2_000_000_000
    assert result.series == (
        SeriesSamples("rss_bytes", "position", "bytes", ((1.0, 5.0), (2.0, None))),
        SeriesSamples("cpu", "y", "", ((1.0, None), (2.0, 2.0))),
    )
    bare = build_worker_result("boardlab.worker", "sys.fork", {}, {"ok": True})
    assert bare.info == {} and bare.series == () and bare.wall_ns is None


def test_a_stored_result_reads_back_and_a_run_without_one_has_none():
    text = build_worker_result("boardlab.worker", "sys.fork", {}, {"ok": True, "info": {"a": 1}}).to_json()
    stored = stored_worker_result(text)
    assert stored is not None and stored.ok and stored.info == {"a": 1}
    assert stored_worker_result(None) is None and stored_worker_result("") is None
    # a simulated campaign's runs store a placeholder, not a worker's result: no result to read
    assert stored_worker_result(json.dumps({"simulated": "rk3399"})) is None
