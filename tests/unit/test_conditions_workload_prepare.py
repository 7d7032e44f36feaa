"""A load's preparation (a generated model built, a delegate's setup check in a process of its own) runs once
per workload and parameters while a campaign prepares, however many conditions run that load or cells measure
it: the real-time preset runs each model beside the task shared and pinned, 12 checks of 6 loads. The check
(what `run --dry-run` makes) prepares nothing."""

from __future__ import annotations

import dataclasses

import pytest

from boardlab.conditions import workload
from boardlab.conditions.base import ApplyContext
from boardlab.conditions.journal import RestoreJournal
from boardlab.errors import InputError
from boardlab.model.workload import ParamSpec, WorkloadSpec
from boardlab.platform import inventory
from boardlab.platform.sysroot import SysRoot
from boardlab.workloads.params import prepare_once

from helpers import SYSFS


def _spec(prepared: list) -> WorkloadSpec:
    def prepare(params, note):
        if params["model"] == "broken":
            raise InputError("broken: no such model")
        prepared.append(dict(params))

    return WorkloadSpec(
        name="fake.load",
        family="ai",
        summary="a load that counts its preparations",
        runner="python",
        params=(ParamSpec("model", "str", "tiny"),),
        prepare=prepare,
        load_argv=lambda params: ["/bin/sleep", "60"],
    )


def _ctx(tmp_path) -> ApplyContext:
    sr = SysRoot(SYSFS / "vm")
    info = inventory(sr)
    journal = RestoreJournal(sr, tmp_path / "journal")
    return ApplyContext(sr, journal, info, worker_cpu=info.online_cpus[-1], online_cpus=info.online_cpus)


def _note(message: str) -> None:
    pass


def test_each_load_is_prepared_once_whatever_its_placement(monkeypatch, tmp_path):
    prepared: list = []
    monkeypatch.setattr(workload, "_spec", lambda name: _spec(prepared))
    ctx = _ctx(tmp_path)
    for placement in ("all", "other", "other"):
        for model in ("a", "b"):
            params = {"workload": "fake.load", "params": {"model": model}, "placement": placement}
            assert workload.KIND.check(params, ctx) is None
            workload.KIND.prepare(params, ctx, _note)
    assert prepared == [{"model": "a"}, {"model": "b"}]
    # the campaign's cells share the set: a model measured as a cell and run as a load is prepared once
    prepare_once(_spec(prepared), (("model", "a"),), ctx.prepared, _note)
    prepare_once(_spec(prepared), (("model", "c"),), ctx.prepared, _note)
    assert prepared == [{"model": "a"}, {"model": "b"}, {"model": "c"}]
    # a preparation that fails is not taken as done: the next condition asks again, and fails the same
    for _ in range(2):
        with pytest.raises(InputError, match="broken"):
            workload.KIND.prepare({"workload": "fake.load", "params": {"model": "broken"}}, ctx, _note)
    # another context (another campaign) prepares afresh
    fresh = dataclasses.replace(ctx, prepared=set())
    workload.KIND.prepare({"workload": "fake.load", "params": {"model": "a"}}, fresh, _note)
    assert prepared[-1] == {"model": "a"} and len(prepared) == 4


def test_the_check_prepares_nothing(monkeypatch, tmp_path):
    """`run --dry-run` checks every condition: a check that built the loads' models wrote 524 MB of them
    into the cache of a run that was to write nothing."""
    prepared: list = []
    monkeypatch.setattr(workload, "_spec", lambda name: _spec(prepared))
    ctx = _ctx(tmp_path)
    for model in ("a", "broken"):
        assert workload.KIND.check({"workload": "fake.load", "params": {"model": model}}, ctx) is None
    assert prepared == [] and ctx.prepared == set()


def test_every_other_kind_has_nothing_to_prepare(tmp_path):
    from boardlab.conditions import condition_kinds

    ctx = _ctx(tmp_path)
    for name, kind in condition_kinds().items():
        if name != "workload":
            assert kind.prepare({}, ctx, _note) is None  # the base's: no parameter is even read
    assert ctx.prepared == set()


PLAN = """\
name = "loads"
[runs]
repetitions = 2
[[workloads]]
name = "noop"
[[conditions]]
name = "beside"
kind = "workload"
params = { workload = "fake.load", params = { model = "a" }, placement = "all" }
"""


def test_a_campaign_prepares_its_conditions_loads_and_a_dry_run_does_not(monkeypatch, tmp_path):
    from boardlab.campaign.plan import parse_plan
    from boardlab.campaign.reach import summarize_plan
    from boardlab.campaign.session import prepare
    from boardlab.conditions.journal import SystemLock
    from boardlab.workloads import all_workloads

    prepared: list = []
    monkeypatch.setattr(workload, "_spec", lambda name: _spec(prepared))
    catalog = {w.name: w for w in all_workloads()}
    plan = parse_plan(PLAN, "loads.toml", catalog)
    root = str(SYSFS / "vm")
    summarize_plan(plan, catalog, root=root)  # what `run --dry-run` makes
    assert prepared == []
    notes: list[str] = []
    session = prepare(plan, catalog, root, notes.append, SystemLock(SysRoot(root), "campaign loads"), 0.0)
    assert prepared == [{"model": "a"}], notes
    assert [c.name for c in session.plan.conditions] == ["baseline", "beside"]
