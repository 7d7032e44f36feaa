"""The `governor` condition on copies of the BeagleBone Black and Odroid-XU3 trees: what it writes, where,
in which order, what each run records, and that every exit path (and a crash) puts the board back."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from boardlab.conditions import condition_kinds
from boardlab.conditions.base import ApplyContext
from boardlab.conditions.journal import RestoreJournal
from boardlab.errors import InputError
from boardlab.platform import inventory
from boardlab.platform.sysroot import SysRoot

from helpers import as_nobody, copy_board, shared_tmp_dir

pytestmark = pytest.mark.spawns  # starts processes: not in make test-unit

KIND = condition_kinds()["governor"]
CPUFREQ = "sys/devices/system/cpu/cpufreq"


def context(root: Path, journal: Path) -> ApplyContext:
    sr = SysRoot(root)
    info = inventory(sr)
    return ApplyContext(
        root=sr,
        journal=RestoreJournal(sr, journal),
        info=info,
        worker_cpu=info.online_cpus[-1],
        online_cpus=info.online_cpus,
    )


def snapshot(root: Path) -> dict[str, str]:
    """Every cpufreq file's value as the kernel would show it (the journal writes values, not newlines)."""
    base = root / CPUFREQ
    return {str(p.relative_to(base)): p.read_text().strip() for p in sorted(base.rglob("*")) if p.is_file()}


def read(root: Path, rel: str) -> str:
    return (root / CPUFREQ / rel).read_text().strip()


@pytest.fixture
def bbb(tmp_path):
    root = copy_board("bbb", tmp_path)
    return root, context(root, tmp_path / "journal.json")


@pytest.fixture
def xu3(tmp_path):
    root = copy_board("odroid-xu3", tmp_path)
    return root, context(root, tmp_path / "journal.json")


# ---- plan load: shape --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "key", "message"),
    [
        ({}, None, "missing key 'governor'"),
        ({"governor": "interactive"}, "governor", "expected one of ondemand, conservative, performance"),
        ({"governor": "userspace"}, None, "needs frequency_khz"),
        ({"governor": "ondemand", "frequency_khz": 600000}, "frequency_khz", "needs governor = 'userspace'"),
        ({"governor": "userspace", "frequency_khz": "fast"}, "frequency_khz", "'min' or 'max'"),
        ({"governor": "performance", "policies": "policy0"}, "policies", "expected 'all' or a list"),
        ({"governor": "performance", "policies": ["cpu0"]}, "policies", "such as 'policy0'"),
        ({"governor": "performance", "policies": []}, "policies", "selects no policy"),
        ({"governor": "performance", "min_khz": 800000, "max_khz": 600000}, "min_khz", "above max_khz"),
        ({"governor": "performance", "tunables": {"up_threshold": 90}}, "tunables", "has no tunables"),
        ({"governor": "ondemand", "tunables": {"freq_step": 5}}, "tunables", "valid: sampling_rate"),
        ({"governor": "ondemand", "tunables": {"up_threshold": 101}}, "tunables", "in [1, 100]"),
        (
            {"governor": "conservative", "tunables": {"up_threshold": 30, "down_threshold": 40}},
            "tunables",
            "must be below up_threshold",
        ),
        ({"governor": "performance", "speed": 1}, "speed", "unknown parameter"),
    ],
)
def test_malformed_parameters_are_refused_at_plan_load(params, key, message):
    reason = KIND.validate(params)
    assert reason is not None
    assert reason[0] == key and message in reason[1]


def test_well_formed_parameters_pass():
    assert KIND.validate({"governor": "userspace", "frequency_khz": "max", "policies": ["policy4"]}) is None
    assert (
        KIND.validate({"governor": "ondemand", "tunables": {"up_threshold": 95, "sampling_rate": 10000}})
        is None
    )
    assert KIND.validate({"governor": "powersave", "policies": "all", "max_khz": 800000}) is None


# ---- before the campaign: the board ------------------------------------------------------------------------


def test_a_governor_the_policy_lacks_names_the_policy_and_its_governors(bbb):
    _, ctx = bbb
    reason = KIND.check({"governor": "schedutil"}, ctx)
    assert reason == (
        "policy0 (CPUs 0) offers no 'schedutil' governor; "
        "available: conservative, ondemand, userspace, powersave, performance"
    )


def test_a_frequency_the_policy_does_not_offer_lists_the_valid_ones(bbb):
    _, ctx = bbb
    reason = KIND.check({"governor": "userspace", "frequency_khz": 700000}, ctx)
    assert reason == (
        "policy0 (CPUs 0) does not offer 700000 kHz; "
        "valid: 300000, 600000, 800000, 1000000 kHz, or 'min' / 'max'"
    )
    assert KIND.check({"governor": "userspace", "frequency_khz": 800000}, ctx) is None


def test_a_frequency_is_checked_against_each_selected_policy(xu3):
    _, ctx = xu3
    reason = KIND.check({"governor": "userspace", "frequency_khz": 1800000}, ctx)
    assert reason.startswith("policy0 (CPUs 0-3) does not offer 1800000 kHz; valid: 200000, 300000")
    assert (
        KIND.check({"governor": "userspace", "frequency_khz": 1800000, "policies": ["policy4"]}, ctx) is None
    )


def test_an_unknown_policy_lists_the_boards_policies(xu3):
    _, ctx = xu3
    reason = KIND.check({"governor": "performance", "policies": ["policy2"]}, ctx)
    assert (
        reason
        == "no cpufreq policy 'policy2' on this board; policies: policy0 (CPUs 0-3), policy4 (CPUs 4-7)"
    )


def test_limits_outside_the_hardware_range_are_refused(bbb):
    _, ctx = bbb
    reason = KIND.check({"governor": "performance", "max_khz": 1200000}, ctx)
    assert reason == "max_khz = 1200000 is outside what policy0 (CPUs 0) can do: 300000..1000000 kHz"


def test_a_userspace_frequency_outside_the_limits_would_be_clamped(bbb):
    root, ctx = bbb
    (root / CPUFREQ / "policy0/scaling_max_freq").write_text("600000\n")
    ctx = context(root, ctx.journal.path)
    reason = KIND.check({"governor": "userspace", "frequency_khz": 800000}, ctx)
    assert "800000 kHz lies outside its limits 300000..600000 kHz" in reason
    assert KIND.check({"governor": "userspace", "frequency_khz": 800000, "max_khz": 1000000}, ctx) is None


def test_a_board_without_cpufreq_is_unsupported_with_the_inventorys_reason(tmp_path):
    root = copy_board("vm", tmp_path)
    reason = KIND.check({"governor": "performance"}, context(root, tmp_path / "j.json"))
    assert reason.startswith("unsupported: no ")
    assert "cpufreq/policy*: the kernel exposes no cpufreq driver (typical of VMs)" in reason


def test_a_sampling_rate_below_two_ticks_is_refused_when_config_hz_is_known(xu3):
    import dataclasses

    _, ctx = xu3
    ctx.info = dataclasses.replace(ctx.info, kernel=dataclasses.replace(ctx.info.kernel, config_hz=250))
    reason = KIND.check({"governor": "ondemand", "tunables": {"sampling_rate": 4000}}, ctx)
    assert reason == (
        "sampling_rate = 4000 us is below this kernel's minimum of two ticks, 8000 us at CONFIG_HZ=250"
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="switches to an unprivileged user, which needs root")
def test_files_this_user_cannot_write_are_refused_with_the_fix():
    base = shared_tmp_dir()
    try:
        root = copy_board("bbb", base)
        ctx = context(root, base / "journal.json")
        reason = as_nobody(lambda: KIND.check({"governor": "ondemand"}, ctx))
        assert reason == (
            f"{root}/{CPUFREQ}/policy0/scaling_governor is not writable by this user: run boardlab as root"
        )
    finally:
        shutil.rmtree(base)


# ---- around a run ------------------------------------------------------------------------------------------


def test_userspace_at_a_fixed_frequency_is_applied_then_undone_exactly(bbb):
    root, ctx = bbb
    before = snapshot(root)
    params = {"governor": "userspace", "frequency_khz": 600000, "min_khz": 300000, "max_khz": 800000}
    with KIND.apply(params, ctx) as state:
        assert read(root, "policy0/scaling_governor") == "userspace"
        assert read(root, "policy0/scaling_setspeed") == "600000"
        assert (read(root, "policy0/scaling_min_freq"), read(root, "policy0/scaling_max_freq")) == (
            "300000",
            "800000",
        )
        pending = [(e["rel"].rsplit("/", 1)[1], e["old"], e["new"]) for e in ctx.journal.pending()]
        assert pending == [
            ("scaling_min_freq", "300000", "300000"),
            ("scaling_max_freq", "1000000", "800000"),
            ("scaling_governor", "performance", "userspace"),
            ("scaling_setspeed", "<unsupported>", "600000"),
        ]
    assert snapshot(root) == before
    assert ctx.journal.pending() == [] and not ctx.journal.path.exists()
    p0 = state["policies"]["policy0"]
    assert p0["was"] == {"governor": "performance", "min_khz": 300000, "max_khz": 1000000}
    assert p0["frequency_khz"] == 600000 and p0["limits_khz"] == [300000, 800000]


def test_min_and_max_resolve_against_each_policys_own_table(xu3):
    root, ctx = xu3
    with KIND.apply({"governor": "userspace", "frequency_khz": "max"}, ctx) as state:
        assert read(root, "policy0/scaling_setspeed") == "1400000"
        assert read(root, "policy4/scaling_setspeed") == "2000000"
    assert {p: s["frequency_khz"] for p, s in state["policies"].items()} == {
        "policy0": 1400000,
        "policy4": 2000000,
    }


ROLES = {"governor": "userspace", "frequencies_khz": {"active": "max", "idle": "min"}}


@pytest.mark.parametrize(
    ("worker_cpu", "active", "idle"),
    [(7, ("policy4", 2000000), ("policy0", 200000)), (2, ("policy0", 1400000), ("policy4", 200000))],
)
def test_active_and_idle_resolve_against_the_workers_cluster(xu3, worker_cpu, active, idle):
    root, ctx = xu3
    ctx.worker_cpu = worker_cpu
    assert KIND.check(ROLES, ctx) is None
    with KIND.apply(ROLES, ctx) as state:
        assert read(root, f"{active[0]}/scaling_setspeed") == str(active[1])
        assert read(root, f"{idle[0]}/scaling_setspeed") == str(idle[1])
    assert {p: s["frequency_khz"] for p, s in state["policies"].items()} == dict([active, idle])
    assert read(root, f"{active[0]}/scaling_governor") == "ondemand"  # undone after the run


def test_roles_need_a_pinned_worker_and_are_not_mixed_with_policy_names(xu3):
    _, ctx = xu3
    ctx.worker_cpu = None
    assert KIND.check(ROLES, ctx) == (
        "frequencies_khz by role (active / idle) needs the workload pinned: set [runs] cpu"
    )
    mixed = {"governor": "userspace", "frequencies_khz": {"active": "max", "policy0": "min"}}
    assert KIND.validate(mixed) == (
        "frequencies_khz",
        "give policy names or the roles active / idle as keys, not both",
    )
    assert KIND.validate(ROLES) is None


def test_only_the_selected_policies_are_touched(xu3):
    root, ctx = xu3
    with KIND.apply({"governor": "performance", "policies": ["policy4"]}, ctx) as state:
        assert read(root, "policy4/scaling_governor") == "performance"
        assert read(root, "policy0/scaling_governor") == "ondemand"
    assert list(state["policies"]) == ["policy4"]
    assert read(root, "policy4/scaling_governor") == "ondemand"


def test_raising_min_above_the_current_max_writes_max_first_and_undoes_without_crossing(bbb):
    root, ctx = bbb
    (root / CPUFREQ / "policy0/scaling_max_freq").write_text("600000\n")
    ctx = context(root, ctx.journal.path)
    with KIND.apply({"governor": "performance", "min_khz": 800000, "max_khz": 1000000}, ctx):
        order = [e["rel"].rsplit("/", 1)[1] for e in ctx.journal.pending()]
        assert order[:2] == ["scaling_max_freq", "scaling_min_freq"]
    assert (read(root, "policy0/scaling_min_freq"), read(root, "policy0/scaling_max_freq")) == (
        "300000",
        "600000",
    )


def make_tunables(root: Path, rel: str, values: dict[str, int]) -> Path:
    d = root / CPUFREQ / rel
    d.mkdir(parents=True, exist_ok=True)
    for k, v in values.items():
        (d / k).write_text(f"{v}\n")
    return d


def test_tunables_go_to_the_global_governor_directory_once_for_every_policy(xu3):
    root, ctx = xu3
    glob = root / CPUFREQ / "ondemand"  # cpufreq-dt keeps the running ondemand's tunables global
    params = {"governor": "ondemand", "tunables": {"up_threshold": 80, "sampling_rate": 20000}}
    assert KIND.check(params, ctx) is None
    with KIND.apply(params, ctx) as state:
        assert (glob / "up_threshold").read_text() == "80"
        assert (glob / "sampling_rate").read_text() == "20000"
        tunable_writes = [e for e in ctx.journal.pending() if "/ondemand/" in e["rel"]]
        assert len(tunable_writes) == 2  # not once per policy
        assert {e["what"] for e in tunable_writes} == {
            "ondemand tunable up_threshold (global)",
            "ondemand tunable sampling_rate (global)",
        }
    assert (glob / "up_threshold").read_text() == "95" and (glob / "sampling_rate").read_text() == "10000"
    assert state["policies"]["policy4"]["tunables_dir"] == str(glob)
    assert state["policies"]["policy4"]["tunables"] == {"up_threshold": "80", "sampling_rate": "20000"}


def test_a_tunable_this_kernel_lacks_is_refused_with_the_ones_it_has(xu3):
    root, ctx = xu3
    (root / CPUFREQ / "ondemand/io_is_busy").unlink()  # as on a kernel before io_is_busy existed
    reason = KIND.check({"governor": "ondemand", "tunables": {"io_is_busy": 1}}, ctx)
    assert reason == (
        f"{root}/{CPUFREQ}/ondemand has no tunable 'io_is_busy'; tunables here: "
        "ignore_nice_load, powersave_bias, sampling_down_factor, sampling_rate, up_threshold"
    )


def test_tunables_go_to_the_per_policy_directory_when_the_driver_keeps_one(xu3):
    root, ctx = xu3
    glob = make_tunables(root, "conservative", {"up_threshold": 80, "down_threshold": 20, "freq_step": 5})
    little = make_tunables(
        root, "policy0/conservative", {"up_threshold": 80, "down_threshold": 20, "freq_step": 5}
    )
    big = make_tunables(
        root, "policy4/conservative", {"up_threshold": 80, "down_threshold": 20, "freq_step": 5}
    )
    params = {"governor": "conservative", "tunables": {"freq_step": 10}}
    with KIND.apply(params, ctx) as state:
        assert (little / "freq_step").read_text() == "10" and (big / "freq_step").read_text() == "10"
        assert (glob / "freq_step").read_text() == "5\n"  # the per-policy directory wins
    assert (little / "freq_step").read_text() == "5" and (big / "freq_step").read_text() == "5"
    assert state["policies"]["policy0"]["tunables_dir"] == str(little)


def test_conservative_thresholds_are_written_in_the_order_the_kernel_accepts(xu3):
    root, ctx = xu3
    make_tunables(root, "conservative", {"up_threshold": 80, "down_threshold": 20})
    with KIND.apply(
        {"governor": "conservative", "tunables": {"up_threshold": 15, "down_threshold": 10}}, ctx
    ):
        names = [e["rel"].rsplit("/", 1)[1] for e in ctx.journal.pending() if "/conservative/" in e["rel"]]
        assert names == ["down_threshold", "up_threshold"]  # lowering: down first, so down < up holds
    with KIND.apply(
        {"governor": "conservative", "tunables": {"up_threshold": 90, "down_threshold": 85}}, ctx
    ):
        names = [e["rel"].rsplit("/", 1)[1] for e in ctx.journal.pending() if "/conservative/" in e["rel"]]
        assert names == ["up_threshold", "down_threshold"]  # raising: up first


def test_tunables_whose_directory_does_not_appear_are_refused_before_the_run(xu3):
    root, ctx = xu3
    before = snapshot(root)
    # on a kernel the directory appears when the governor starts; in this tree nothing starts it
    with pytest.raises(InputError, match="the conservative governor is not running on policy0, or has no"):
        with KIND.apply({"governor": "conservative", "tunables": {"freq_step": 10}}, ctx):
            pytest.fail("the run must not start")
    assert snapshot(root) == before and ctx.journal.pending() == []


def test_time_in_state_and_transitions_are_recorded_as_deltas_over_the_run(xu3):
    root, ctx = xu3
    stats = root / CPUFREQ / "policy4/stats"
    rows = dict(line.split() for line in (stats / "time_in_state").read_text().splitlines())
    with KIND.apply({"governor": "performance"}, ctx) as state:
        # the kernel counts on while the workload runs: 1.5 s at 2 GHz, 20 ms at 1.9 GHz, 4 transitions
        rows["2000000"] = str(int(rows["2000000"]) + 150)
        rows["1900000"] = str(int(rows["1900000"]) + 2)
        (stats / "time_in_state").write_text("".join(f"{k} {v}\n" for k, v in rows.items()))
        (stats / "total_trans").write_text("39506\n")
    delta = state["time_in_state_delta_ms"]["policy4"]
    assert delta[2000000] == 1500 and delta[1900000] == 20
    assert sum(delta.values()) == 1520
    assert state["time_in_state_delta_ms"]["policy0"] == dict.fromkeys(delta_keys(root, "policy0"), 0)
    assert state["transitions"] == {"policy0": 0, "policy4": 4}


def delta_keys(root: Path, policy: str) -> list[int]:
    text = (root / CPUFREQ / policy / "stats/time_in_state").read_text()
    return [int(line.split()[0]) for line in text.splitlines()]


def test_a_failing_run_is_undone_too(bbb):
    root, ctx = bbb
    before = snapshot(root)
    with pytest.raises(RuntimeError, match="worker died"):
        with KIND.apply({"governor": "powersave"}, ctx) as state:
            assert read(root, "policy0/scaling_governor") == "powersave"
            raise RuntimeError("worker died")
    assert snapshot(root) == before and ctx.journal.pending() == []
    assert "time_in_state_delta_ms" not in state


def test_what_a_crash_leaves_is_restored_from_the_journal(bbb):
    root, ctx = bbb
    before = snapshot(root)
    run = KIND.apply({"governor": "userspace", "frequency_khz": 300000}, ctx)
    run.__enter__()  # ... and the process dies here: no exit path runs
    assert read(root, "policy0/scaling_governor") == "userspace"
    restored = RestoreJournal(SysRoot(root), ctx.journal.path).recover()
    assert [r.what for r in restored] == ["policy0 scaling_setspeed", "policy0 cpufreq governor"]
    assert restored[1].detail.endswith("scaling_governor = 'performance' (was set to 'userspace')")
    assert snapshot(root) == before and not ctx.journal.path.exists()
