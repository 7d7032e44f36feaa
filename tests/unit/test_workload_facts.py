"""The workload facts a campaign stores (model/facts.py) carry every field analysis reads of a spec, and a
report refuses facts it cannot read with the place, instead of reading the workloads as plain ones."""

from __future__ import annotations

import dataclasses
import json

import pytest

from boardlab.analysis import specs
from boardlab.errors import InputError
from boardlab.model import facts
from boardlab.workloads import all_workloads

# what analysis reads of a spec (analysis/, grep "spec."): the stored facts must give back each of them
ANALYSIS_FIELDS = ("name", "family", "metrics", "tail_samples", "tail_metric", "tail_count_metric",
                   "sample_histogram", "roles", "throughput_curve", "composite")  # fmt: skip


def _analysis_view(spec) -> dict:
    out = {f: getattr(spec, f) for f in ANALYSIS_FIELDS}
    out["metrics"] = tuple(
        (m.name, m.unit, m.higher_is_better, m.kind, m.phase) for m in spec.metrics
    )  # help text is not stored
    return out


def test_every_catalog_workload_comes_back_from_its_stored_facts_as_analysis_reads_it():
    catalog = all_workloads()
    doc = json.loads(json.dumps(facts.facts_document(catalog, energy_reason="energy unsupported: none")))
    back, energy = facts.read_facts_document(doc)
    assert energy == "energy unsupported: none"
    assert set(back) == {s.name for s in catalog}
    for spec in catalog:
        assert _analysis_view(back[spec.name]) == _analysis_view(spec), spec.name
    # the fields are all there is to analysis: a new analysis field must be stored too (spec_facts)
    stored = set(facts.spec_facts(catalog[0]))
    analysis_block = {f.name for f in dataclasses.fields(catalog[0])} - {
        "summary", "runner", "params", "unsupported_reason", "phases", "measured_argv", "load_argv",
        "load_params", "prepare", "cell_unsupported", "run_timeout_s", "launcher",
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
        specs.remember_campaign(_Store(b"{not json"), 3)
    with pytest.raises(InputError, match="schema 9"):
        specs.remember_campaign(_Store(json.dumps({"schema": 9}).encode()), 3)


def test_analysis_knows_a_workload_from_the_stored_facts_alone():
    made_up = dataclasses.replace(all_workloads()[0], name="made.up", roles=("compute",), composite="Made up")
    doc = facts.facts_document([made_up], energy_reason=None)
    specs.remember_campaign(_Store(json.dumps(doc).encode()), 1)
    assert specs.has_role("made.up", "compute") and specs.spec_of("made.up").composite == "Made up"
    assert specs.energy_reason(_Store(json.dumps(doc).encode()), 1) is None
