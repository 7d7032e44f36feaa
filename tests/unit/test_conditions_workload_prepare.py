"""A load's preparation (a generated model built, a delegate's setup check in a process of its own) runs once
per workload and parameters while a campaign prepares, however many conditions run that load or cells measure
it: the real-time preset runs each model beside the task shared and pinned, 12 checks of 6 loads."""

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


def test_each_load_is_prepared_once_whatever_its_placement(monkeypatch, tmp_path):
    prepared: list = []
    monkeypatch.setattr(workload, "_spec", lambda name: _spec(prepared))
    sr = SysRoot(SYSFS / "vm")
    info = inventory(sr)
    journal = RestoreJournal(sr, tmp_path / "journal")
    ctx = ApplyContext(sr, journal, info, worker_cpu=info.online_cpus[-1], online_cpus=info.online_cpus)
    for placement in ("all", "other", "other"):
        for model in ("a", "b"):
            params = {"workload": "fake.load", "params": {"model": model}, "placement": placement}
            assert workload.KIND.check(params, ctx) is None
    assert prepared == [{"model": "a"}, {"model": "b"}]
    # the campaign's cells share the set: a model measured as a cell and run as a load is prepared once
    prepare_once(_spec(prepared), (("model", "a"),), ctx.prepared, lambda message: None)
    prepare_once(_spec(prepared), (("model", "c"),), ctx.prepared, lambda message: None)
    assert prepared == [{"model": "a"}, {"model": "b"}, {"model": "c"}]
    # a preparation that fails is not taken as done: the next condition asks again, and fails the same
    for _ in range(2):
        with pytest.raises(InputError, match="broken"):
            workload.KIND.check({"workload": "fake.load", "params": {"model": "broken"}}, ctx)
    # another context (another campaign) prepares afresh
    fresh = dataclasses.replace(ctx, prepared=set())
    workload.KIND.check({"workload": "fake.load", "params": {"model": "a"}}, fresh)
    assert prepared[-1] == {"model": "a"} and len(prepared) == 4
