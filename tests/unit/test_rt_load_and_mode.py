"""The real-time study lays its cells out by load and isolation mode read from each condition's parts, as the
plan declared them, never from the condition's name: the rt-isolation preset's 18 conditions give 6 loads by
3 modes, and renaming every condition changes nothing. A campaign that does not vary isolation, or whose
parts do not tell its cells apart, gets one box per condition, by name."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

from boardlab.analysis.studies.rt import _layout
from boardlab.campaign.plan import load_plan
from boardlab.model.facts import CellFacts, ConditionPart, condition_parts
from boardlab.workloads import all_workloads

MODELS = ("mobilenet_v1", "mobilenet_v2", "ssd_mobilenet_v1", "ssd_mobilenet_v2", "resnet18", "resnet50")


def _cells(conditions, params=None):
    """Cells as the study reads them: their condition's name and stored parts, and their params."""
    return [
        SimpleNamespace(
            condition=c.name, params=params or {}, facts=CellFacts(condition=condition_parts(c.to_dict()))
        )
        for c in conditions
    ]


def _preset():
    return load_plan(None, "rt-isolation", {w.name: w for w in all_workloads()}).conditions


def test_the_preset_gives_six_loads_by_three_modes_from_its_parts():
    conditions = _preset()
    layout = dict(zip([c.name for c in conditions], _layout(_cells(conditions)), strict=True))
    assert layout["none/shared"] == ("none", "shared")
    assert layout["none/pinned"] == ("none", "pinned")  # no isolation part: as the runner places a worker
    assert layout["resnet50/isolated"] == ("ai.inference (model=resnet50)", "isolated")
    # shared puts the load on every CPU, pinned and isolated beside the measured one: one load all the same
    shared, pinned = layout["mobilenet_v1/shared"][0], layout["mobilenet_v1/pinned"][0]
    assert shared == pinned == "ai.inference (model=mobilenet_v1)"
    assert {load for load, _ in layout.values()} == {"none", *(f"ai.inference (model={m})" for m in MODELS)}
    assert {mode for _, mode in layout.values()} == {"shared", "pinned", "isolated"}


def test_names_mean_nothing_to_the_layout():
    conditions = _preset()
    renamed = [dataclasses.replace(c, name=f"c{i}") for i, c in enumerate(conditions)]
    assert _layout(_cells(renamed)) == _layout(_cells(conditions))


def test_without_isolation_parts_or_when_parts_collide_each_condition_is_its_own_box():
    conditions = _preset()
    stress = [
        dataclasses.replace(
            conditions[0], name="cpu-same", kind="stressor", params={"stressor": "cpu"}, parts=()
        ),
        dataclasses.replace(
            conditions[0], name="vm-same", kind="stressor", params={"stressor": "vm"}, parts=()
        ),
    ]
    assert _layout(_cells(stress)) == [("cpu-same", ""), ("vm-same", "")]
    twins = [conditions[1], dataclasses.replace(conditions[1], name="none/pinned-again")]
    assert _layout(_cells(twins)) == [("none/pinned", ""), ("none/pinned-again", "")]
    # one load set of a workload shows all its parameters: which model ran beside it
    alone = SimpleNamespace(
        condition="x",
        params={},
        facts=CellFacts(
            condition=(
                ConditionPart("isolation", {"mode": "isolated"}),
                ConditionPart("workload", {"workload": "ai.inference", "params": {"model": "resnet18"}}),
            )
        ),
    )
    assert _layout([alone]) == [("ai.inference (model=resnet18)", "isolated")]
