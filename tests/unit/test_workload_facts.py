"""The workload facts a campaign stores (model/facts.py) carry every field analysis reads of a spec, and a
report refuses facts it cannot read with the place, instead of reading the workloads as plain ones."""

from __future__ import annotations

import dataclasses
import json
import pickle

import pytest

from boardlab.analysis import specs
from boardlab.errors import InputError
from boardlab.model import facts
from boardlab.model.workload import MetricSpec
from boardlab.workloads import all_workloads

# what analysis reads of a spec (analysis/, grep "spec."): the stored facts must give back each of them
ANALYSIS_FIELDS = ("name", "family", "metrics", "tail_samples", "tail_metric", "tail_count_metric",
                   "sample_histogram", "roles", "throughput_curve", "composite")  # fmt: skip


def _analysis_view(spec) -> dict:
    out = {f: getattr(spec, f) for f in ANALYSIS_FIELDS}
    out["metrics"] = tuple(
        (m.name, m.unit, m.higher_is_better, m.kind, m.phase) for m in spec.metrics
    )  # help text is not stored; tail-ness is each cell's (CELL_FACTS), judged on its metric
    return out


def test_every_catalog_workload_comes_back_from_its_stored_facts_as_analysis_reads_it():
    catalog = all_workloads()
    doc = json.loads(json.dumps(facts.facts_document(catalog, energy_reason="energy unsupported: none")))
    back = facts.read_facts_document(doc)
    assert back.energy_reason == "energy unsupported: none" and back.stored
    assert set(back.specs) == {s.name for s in catalog}
    for spec in catalog:
        assert _analysis_view(back.specs[spec.name]) == _analysis_view(spec), spec.name
    # the fields are all there is to analysis: a new analysis field must be stored too (spec_facts)
    stored = set(facts.spec_facts(catalog[0]))
    analysis_block = {f.name for f in dataclasses.fields(catalog[0])} - {
        "summary", "runner", "params", "unsupported_reason", "phases", "measured_argv", "load_argv",
        "load_params", "prepare", "cell_unsupported", "run_timeout_s", "launcher", "direct",
    }  # fmt: skip
    assert analysis_block <= stored


def test_facts_of_another_schema_are_refused():
    with pytest.raises(ValueError, match="schema 2"):
        facts.read_facts_document({"schema": 2, "workloads": {}})
    with pytest.raises(ValueError, match="malformed"):
        facts.read_facts_document({"schema": 1, "workloads": {"x": {"family": "f"}}})


class _Store:
    path = "board.db"

    def __init__(self, data: bytes | None):
        self.data = data

    def campaign_artifact(self, _campaign_id, name):
        assert name == facts.WORKLOAD_FACTS
        return self.data


def test_a_report_names_the_campaign_whose_stored_facts_it_cannot_read():
    with pytest.raises(InputError, match=r"board.db: campaign 3: its stored workload-facts cannot be read"):
        specs.workload_facts(_Store(b"{not json"), 3)
    with pytest.raises(InputError, match="schema 9"):
        specs.workload_facts(_Store(json.dumps({"schema": 9}).encode()), 3)


def test_analysis_knows_a_workload_from_the_stored_facts_alone():
    made_up = dataclasses.replace(all_workloads()[0], name="made.up", roles=("compute",), composite="Made up")
    doc = facts.facts_document([made_up], energy_reason=None)
    got = specs.workload_facts(_Store(json.dumps(doc).encode()), 1)
    assert got.has_role("made.up", "compute") and got.spec_of("made.up").composite == "Made up"
    assert got.energy_reason is None and got.catalog() == {"made.up": got.spec_of("made.up")}
    # none stored: plain workloads, no roles, tails or composites
    plain = specs.workload_facts(_Store(None), 1)
    assert not plain.stored and plain.spec_of("made.up") is None and not plain.has_role("made.up", "compute")
    # the facts one analysis reads cannot be changed under it
    with pytest.raises(TypeError):
        got.specs["other"] = made_up  # type: ignore[index]


def test_cell_facts_come_back_as_stored_and_a_document_this_boardlab_cannot_read_is_refused():
    pair = facts.ComparePair("size", "crc32[size=small]@baseline", "small")
    cells = {
        "crc32[size=large]@baseline": facts.CellFacts(0.02, None, compare=pair, tail=False),
        "x[]@b": facts.CellFacts(None, 0.2, tail=True),
    }
    doc = json.loads(json.dumps(facts.cell_facts_document(cells, "abba")))
    assert facts.read_cell_facts_document(doc) == facts.StoredCellFacts(cells, "abba")
    # schema 1 (thresholds only) still reads: no pairing, no order, no tail-ness, for the reader to derive
    old = {"schema": 1, "cells": {"x[]@b": {"threshold": None, "tail_threshold": 0.2}}}
    assert facts.read_cell_facts_document(old) == facts.StoredCellFacts(
        {"x[]@b": facts.CellFacts(None, 0.2)}, None, schema=1
    )
    # schema 2 (pairing and order, no tail-ness) still reads: its cells' tail unknown
    two = {"schema": 2, "order": "abba", "cells": {"x[]@b": {**old["cells"]["x[]@b"], "compare": None}}}
    assert facts.read_cell_facts_document(two) == facts.StoredCellFacts(
        {"x[]@b": facts.CellFacts(None, 0.2, tail=None)}, "abba", schema=2
    )
    with pytest.raises(ValueError, match="schema 4"):
        facts.read_cell_facts_document({"schema": 4, "cells": {}})
    for bad in ({"k": {"threshold": 0.02}}, {"k": {"threshold": "2%", "tail_threshold": None}}, {"k": 3}):
        with pytest.raises(ValueError, match="malformed"):
            facts.read_cell_facts_document({"schema": 1, "cells": bad})
    no_pair = {"threshold": None, "tail_threshold": None}
    for bad_doc in (
        {"schema": 2, "cells": {"k": no_pair}, "order": "abba"},  # a schema-2 cell without its pairing
        {
            "schema": 2,
            "cells": {"k": {**no_pair, "compare": {"param": 1, "baseline": "b", "value": 1}}},
            "order": "x",
        },
        {
            "schema": 2,
            "cells": {"k": {**no_pair, "compare": {"param": "p", "baseline": "b", "value": [1]}}},
            "order": "x",
        },
        {"schema": 2, "cells": {}, "order": 3},
        {"schema": 2, "cells": {}},  # no order
        {"schema": 3, "cells": {"k": {**no_pair, "compare": None}}, "order": "x"},  # no tail
        {"schema": 3, "cells": {"k": {**no_pair, "compare": None, "tail": "p99"}}, "order": "x"},
    ):
        with pytest.raises(ValueError, match="malformed"):
            facts.read_cell_facts_document(bad_doc)


class _Artifacts:
    """A store's campaign artifacts, by name."""

    path = "board.db"

    def __init__(self, **data: bytes):
        self.data = {k.replace("_", "-"): v for k, v in data.items()}

    def campaign_artifact(self, _campaign_id, name):
        return self.data.get(name)

    def save_campaign_artifact(self, _campaign_id, name, data):
        self.data[name] = data


def test_a_report_names_the_campaign_whose_stored_cell_facts_it_cannot_read():
    from boardlab.analysis.core import cell_facts

    rows = [{"key": "k", "workload": "w", "params_json": "{}", "condition": "baseline", "metric": "mb_s",
             "condition_json": '{"kind": "baseline", "params": {}}'}]  # fmt: skip
    with pytest.raises(InputError, match=r"board.db: campaign 3: its stored cell-facts cannot be read"):
        cell_facts(_Artifacts(cell_facts=b"{not json"), 3, "", rows)
    with pytest.raises(InputError, match="schema 9"):
        cell_facts(_Artifacts(cell_facts=json.dumps({"schema": 9}).encode()), 3, "", rows)
    # none stored (an older campaign): derived from the stored plan by workload name, once per workload
    plan = '[runs]\norder = "abba"\n[[workloads]]\nname = "w"\nthreshold = 0.05\n'
    got = cell_facts(_Artifacts(), 3, plan, rows + [{**rows[0], "key": "k2"}])
    derived = facts.CellFacts(
        0.05, None, derived=True, tail=False, condition=(facts.ConditionPart("baseline"),)
    )
    assert got == ({"k": derived, "k2": derived}, "abba", "")  # no compare in the plan: nothing to say


def test_a_resumed_campaign_keeps_its_stored_cell_facts_and_adds_the_cells_it_did_not_have():
    from boardlab.campaign.facts import store_cell_facts
    from boardlab.campaign.schedule import build_cells

    from helpers import CRC, entries_plan

    plan = entries_plan()
    cells = build_cells(plan, {"crc32": CRC})
    store = _Artifacts()
    store_cell_facts(store, 1, plan, cells[:1])
    first = store.data[facts.CELL_FACTS]
    store_cell_facts(store, 1, plan, cells[:1])
    assert store.data[facts.CELL_FACTS] is first  # nothing new: not written again
    store_cell_facts(store, 1, plan, cells)
    got = facts.read_cell_facts_document(json.loads(store.data[facts.CELL_FACTS])).cells
    assert {k: f.threshold for k, f in got.items()} == {
        c.key: 0.02 if c.params_dict["size"] == "small" else 0.10 for c in cells
    }
    store.data[facts.CELL_FACTS] = b"\x00"
    with pytest.raises(InputError, match="campaign 1: its stored cell-facts cannot be read"):
        store_cell_facts(store, 1, plan, cells)


# crc32 judged on a tail its spec declares, under a name the old name rule would not read as one
SLOWEST = MetricSpec("slowest_block_ms", "ms", False, "value", tail=True)


def test_the_runner_stores_each_cells_tail_ness_as_its_metric_spec_declares_it():
    from boardlab.campaign.facts import store_cell_facts
    from boardlab.campaign.schedule import build_cells

    from helpers import CRC, entries_plan

    plan = entries_plan()  # its large entry judged on the tail metric "x"
    small, large = plan.workloads
    plan = dataclasses.replace(plan, workloads=(small, dataclasses.replace(large, metric="x")))
    spec = dataclasses.replace(CRC, metrics=(*CRC.metrics, dataclasses.replace(SLOWEST, name="x")))
    cells = build_cells(plan, {"crc32": spec})
    assert {c.params_dict["size"]: c.tail for c in cells} == {"small": False, "large": True}
    store = _Artifacts()
    store_cell_facts(store, 1, plan, cells)
    doc = json.loads(store.data[facts.CELL_FACTS])
    assert doc["schema"] == facts.CELL_FACTS_SCHEMA == 3
    got = facts.read_cell_facts_document(doc).cells
    assert {k: f.tail for k, f in got.items()} == {c.key: c.params_dict["size"] == "large" for c in cells}


def test_a_cell_stored_without_its_tail_ness_gets_it_from_its_metrics_name_once_when_analysed():
    from boardlab.analysis.core import cell_facts

    rows = [
        {
            "key": k,
            "workload": "w",
            "params_json": "{}",
            "condition": "baseline",
            "metric": m,
            "condition_json": '{"kind": "baseline", "params": {}}',
        }
        for k, m in (("a", "max_latency_us"), ("b", "mb_s"), ("c", "slowest_block_ms"))  # fmt: skip
    ]
    cells = {r["key"]: {"threshold": None, "tail_threshold": None, "compare": None} for r in rows}
    two = {"schema": 2, "order": "interleave", "cells": cells}  # a boardlab before tail-ness was stored
    got, order, said = cell_facts(_Artifacts(cell_facts=json.dumps(two).encode()), 1, "", rows)
    assert {k: f.tail for k, f in got.items()} == {"a": True, "b": False, "c": False}
    assert (order, said) == ("interleave", "")
    three = {
        "schema": 3,
        "order": "interleave",
        "cells": {k: {**d, "tail": k == "c"} for k, d in cells.items()},  # as the specs declared them
    }
    got, _, _ = cell_facts(_Artifacts(cell_facts=json.dumps(three).encode()), 1, "", rows)
    assert {k: f.tail for k, f in got.items()} == {"a": False, "b": False, "c": True}  # the facts, not names


def test_a_resumed_campaign_stored_before_tail_ness_is_rewritten_with_it():
    from boardlab.campaign.facts import store_cell_facts
    from boardlab.campaign.schedule import build_cells

    from helpers import CRC, entries_plan

    plan = entries_plan()
    spec = dataclasses.replace(CRC, metrics=(dataclasses.replace(SLOWEST, name="mb_s"),))
    cells = build_cells(plan, {"crc32": spec})
    cell = {"threshold": None, "tail_threshold": None, "compare": None}
    two = {"schema": 2, "order": "interleave", "cells": {c.key: cell for c in cells} | {"gone[]@b": cell}}
    store = _Artifacts(cell_facts=json.dumps(two).encode())
    store_cell_facts(store, 1, plan, cells)
    got = facts.read_cell_facts_document(json.loads(store.data[facts.CELL_FACTS]))
    assert got.schema == 3 and got.cells["gone[]@b"].tail is None  # kept as stored: the analysis derives it
    assert all(got.cells[c.key].tail is True for c in cells)


def test_every_catalog_metric_declares_the_tail_ness_its_name_gave_it():
    """So a campaign stored before cells carried their tail-ness (read by `named_tail`) and one stored now
    judge the same metric by the same threshold: the reports of older stores do not change."""
    from boardlab.analysis.core import named_tail
    from boardlab.workloads import all_workloads
    from boardlab.workloads.program import ALWAYS

    metrics = [(w.name, m) for w in all_workloads() for m in w.metrics] + [("program", m) for m in ALWAYS]
    assert [(w, m.name) for w, m in metrics if m.tail != named_tail(m.name)] == []
    assert any(m.tail for _, m in metrics)


def test_each_cells_condition_parts_are_those_the_store_keeps_with_it():
    from boardlab.analysis.core import cell_facts
    from boardlab.campaign.schedule import build_cells
    from boardlab.model.campaign import ConditionSpec

    from helpers import CRC, entries_plan

    parts = (("isolation", {"mode": "isolated"}), ("workload", {"workload": "ai.inference"}))
    two = ConditionSpec("two", "isolation+workload", parts=parts)
    plan = entries_plan()
    plan = dataclasses.replace(plan, conditions=(*plan.conditions, two))
    cells = build_cells(plan, {"crc32": CRC})
    stored = {c.name: c.to_dict() for c in plan.conditions}
    stored["cpu-stress"].pop("parts")  # as a store whose conditions had no parts yet keeps it
    rows = [
        {"key": c.key, "workload": c.workload, "params_json": c.params_json, "condition": c.condition,
         "metric": c.metric, "condition_json": json.dumps(stored[c.condition])}
        for c in cells
    ]  # fmt: skip
    got, _, _ = cell_facts(_Artifacts(), 1, "", rows)
    want = {
        "cpu-stress": (facts.ConditionPart("stressor", {"stressor": "cpu"}),),  # its own one part
        "two": tuple(facts.ConditionPart(k, p) for k, p in parts),
    }
    for c in cells:
        planned = next(p for p in plan.conditions if p.name == c.condition)
        assert got[c.key].condition == tuple(facts.ConditionPart(k, p) for k, p in planned.all_parts), c.key
        if c.condition in want:
            assert got[c.key].condition == want[c.condition]
    with pytest.raises(TypeError):
        got[cells[0].key].condition[0].params["x"] = 1  # type: ignore[index]
    # an analysis crosses to serve's and ingest's worker processes and back, pickled
    assert pickle.loads(pickle.dumps(got)) == got


def test_a_cells_parameter_is_the_plans_or_the_default_the_campaign_stored():
    """A study keys a cell by a parameter its plan may leave out (mem.latency's `pattern`): the default comes
    from the campaign's stored facts, not from a default written again in Python."""
    doc = json.loads(json.dumps(facts.facts_document(all_workloads(), energy_reason=None)))
    back = facts.read_facts_document(doc)
    kernel = {w.name: w for w in all_workloads()}["mem.latency"].param("pattern")
    assert kernel is not None and back.cell_param("mem.latency", {}, "pattern") == kernel.default
    assert back.cell_param("mem.latency", {"pattern": "stride"}, "pattern") == "stride"
    assert back.cell_param("mem.latency", {}, "no such parameter") is None
    assert back.cell_param("no.such.workload", {}, "pattern") is None
    for spec in doc["workloads"].values():  # a campaign stored before the defaults were: not known
        del spec["param_defaults"]
    assert facts.read_facts_document(doc).cell_param("mem.latency", {}, "pattern") is None
    doc["workloads"]["mem.latency"]["param_defaults"] = {"pattern": ["random"]}
    with pytest.raises(ValueError, match="malformed.*pattern"):
        facts.read_facts_document(doc)
