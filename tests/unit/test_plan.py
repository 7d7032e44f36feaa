"""Plans: what a valid plan expands into, and how a wrong one is reported (file, line, key, fix)."""

from __future__ import annotations

import dataclasses

import pytest

from boardlab.campaign.plan import parse_plan, preset_names
from boardlab.campaign.schedule import build_cells, schedule
from boardlab.errors import InputError
from boardlab.model.workload import MetricSpec, ParamSpec, WorkloadSpec

from helpers import SYSFS

pytestmark = pytest.mark.spawns  # starts processes: not in make test-unit

CATALOG = {
    "demo.kernel": WorkloadSpec(
        name="demo.kernel",
        family="demo",
        summary="a kernel for plan tests",
        runner="kern",
        params=(
            ParamSpec("size", "enum", "small", choices=("small", "large")),
            ParamSpec("bytes", "int", "1024", min=64, max=1 << 20),
        ),
        metrics=(MetricSpec("mb_s", "MB/s", True), MetricSpec("ns_per_op", "ns", False, kind="time")),
    ),
    "demo.missing": WorkloadSpec(
        name="demo.missing",
        family="demo",
        summary="absent library",
        runner="kern",
        metrics=(MetricSpec("mb_s", "MB/s", True),),
        unsupported_reason="built without libdemo",
    ),
}

GOOD = """\
name = "t"
seed = 7
[runs]
repetitions = 4
order = "abba"
[[workloads]]
name = "demo.kernel"
params = { size = ["small", "large"], bytes = 4096 }
[[workloads]]
name = "demo.kernel"
metric = "ns_per_op"
"""


def parse(text: str):
    return parse_plan(text, "plan.toml", CATALOG)


def error_of(text: str) -> str:
    with pytest.raises(InputError) as exc:
        parse(text)
    assert exc.value.exit_code == 2
    return str(exc.value)


def test_lists_expand_into_cells_and_a_baseline_is_implied():
    plan = parse(GOOD)
    assert [c.name for c in plan.conditions] == ["baseline"]
    cells = build_cells(plan, CATALOG)
    assert [c.key for c in cells] == [
        "demo.kernel[bytes=4096,size=small]@baseline",
        "demo.kernel[bytes=4096,size=large]@baseline",
        "demo.kernel[]@baseline",
    ]
    assert cells[2].metric == "ns_per_op" and cells[0].metric == "mb_s"


def test_abba_alternates_direction_and_every_cell_gets_every_repetition():
    plan = parse(GOOD)
    cells = build_cells(plan, CATALOG)
    runs = schedule(cells, "abba", plan.seed, range(1, 5))
    assert len(runs) == 12
    first = [r.cell.key for r in runs[:3]]
    second = [r.cell.key for r in runs[3:6]]
    assert second == list(reversed(first))
    assert sorted((r.cell.key, r.repetition) for r in runs) == sorted(
        (c.key, i) for c in cells for i in range(1, 5)
    )


def test_interleaving_is_seeded_and_reproducible():
    plan = parse(GOOD)
    cells = build_cells(plan, CATALOG)
    a = [r.cell.key for r in schedule(cells, "interleave", 7, range(1, 9))]
    b = [r.cell.key for r in schedule(cells, "interleave", 7, range(1, 9))]
    c = [r.cell.key for r in schedule(cells, "interleave", 8, range(1, 9))]
    assert a == b and a != c


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            GOOD.replace("repetitions = 4", "repetitions = 'four'"),
            "plan.toml:4: runs.repetitions: expected an integer, found a string 'four'",
        ),
        (
            GOOD.replace('order = "abba"', 'order = "random"'),
            "plan.toml:5: runs.order: expected one of interleave, abba, sequential, found 'random'",
        ),
        (
            GOOD.replace('order = "abba"', 'baseline_allocation = "dunnett"'),
            "plan.toml:5: runs.baseline_allocation: expected one of sqrt, equal, found 'dunnett'",
        ),
        (
            GOOD.replace('name = "demo.kernel"\nmetric', 'name = "demo.kernal"\nmetric'),
            "plan.toml:10: workloads[1].name: unknown workload 'demo.kernal'; valid: demo.kernel, "
            "demo.missing",
        ),
        (
            GOOD.replace('size = ["small", "large"]', 'size = ["small", "huge"]'),
            "plan.toml:8: workloads[0].params.size: expected one of small, large, found 'huge'",
        ),
        (
            GOOD.replace("bytes = 4096", "bytes = 3"),
            "plan.toml:8: workloads[0].params.bytes: expected an integer in [64, 1048576], found 3",
        ),
        (
            GOOD.replace("bytes = 4096", "colour = 3"),
            "plan.toml:8: workloads[0].params.colour: demo.kernel has no parameter 'colour'; valid: "
            "size, bytes",
        ),
        (
            GOOD.replace('metric = "ns_per_op"', 'metric = "mflops"'),
            "plan.toml:11: workloads[1].metric: demo.kernel has no metric 'mflops'; valid: mb_s, ns_per_op",
        ),
        (GOOD + "[gates]\nidle_window = 2\n", "plan.toml:13: gates.idle_window: unknown key"),
        (
            GOOD + '[[conditions]]\nkind = "earthquake"\n',
            "plan.toml:13: conditions[0].kind: unknown condition kind 'earthquake'; valid kinds: baseline",
        ),
        (
            GOOD.replace("[runs]\n", "[runs]\nprecision = 0.01\n"),
            "runs.precision: give either repetitions (a fixed count) or precision, not both",
        ),
        ('name = "t"\n', "plan.toml: no [[workloads]]"),
        ('name = ""\n', "plan.toml:1: name: empty: give the campaign a name"),  # was "missing key 'name'"
        ("name = \n", "plan.toml: not valid TOML"),
    ],
)
def test_errors_name_file_line_key_and_what_was_expected(text, expected):
    assert expected in error_of(text)


def test_an_unsupported_workload_is_refused_with_its_reason():
    msg = error_of('name = "t"\n[[workloads]]\nname = "demo.missing"\n')
    assert "plan.toml:3: workloads[0].name: demo.missing is unsupported here: built without libdemo" in msg


def test_presets_are_bundled():
    assert {"quick", "andesite"} <= set(preset_names())


COMBINED = (
    GOOD
    + """
[[conditions]]
name = "shared-ondemand"
parts = [
  { kind = "isolation", params = { mode = "shared" } },
  { kind = "governor", params = { governor = "ondemand" } },
]
"""
)


def test_a_condition_may_combine_several_kinds_applied_together():
    plan = parse(COMBINED)
    cond = plan.conditions[-1]
    assert cond.name == "shared-ondemand" and cond.kind == "isolation+governor"
    assert cond.baseline == "baseline" and not cond.is_baseline
    assert cond.all_parts == (("isolation", {"mode": "shared"}), ("governor", {"governor": "ondemand"}))
    assert cond.to_dict()["parts"][1] == {"kind": "governor", "params": {"governor": "ondemand"}}


@pytest.mark.parametrize(
    "replace, expected",
    [
        (
            '{ kind = "governor", params = { governor = "ondemand" } },',
            "conditions[0].parts: a kind appears twice",
        ),
        (
            '{ kind = "isolation", params = { mode = "shared" } },\n',
            "conditions[0].parts: a baseline cannot be part",
        ),
        ('params = { governor = "ondemand" }', "conditions[0].parts.params.governor"),
    ],
)
def test_combined_conditions_are_checked_part_by_part(replace, expected):
    text = COMBINED
    if expected.endswith("twice"):
        text = text.replace(
            '{ kind = "governor", params = { governor = "ondemand" } },', '{ kind = "isolation" },'
        )
    elif "baseline" in expected:
        text = text.replace(
            '{ kind = "governor", params = { governor = "ondemand" } },', '{ kind = "baseline" },'
        )
    else:
        text = text.replace(replace, 'params = { governor = "turbo" }')
    assert expected in error_of(text)


def test_command_line_overrides_shrink_a_plan_and_are_recorded_in_its_text():
    from boardlab.campaign.plan import apply_overrides

    catalog = {
        **CATALOG,
        "demo.timed": WorkloadSpec(
            name="demo.timed",
            family="demo",
            summary="a timed workload",
            runner="python",
            params=(ParamSpec("duration_s", "int", "60", min=1, max=3600), ParamSpec("frames", "int", "90")),
            metrics=(MetricSpec("max_us", "us", False),),
        ),
    }
    plan = parse_plan(
        'name = "t"\n[runs]\nrepetitions = 30\niterations = 90\n[[workloads]]\nname = "demo.timed"\n'
        "params = { frames = 90 }\n",
        "plan.toml",
        catalog,
    )
    scaled = apply_overrides(plan, catalog, scale=0.2, duration_s=2)
    assert scaled.runs.repetitions == 6 and scaled.runs.iterations == 18
    assert scaled.workloads[0].params == {"frames": 18, "duration_s": 2}
    assert scaled.source.endswith("# command-line overrides: scale = 0.2, duration_s = 2\n")
    assert apply_overrides(plan, catalog).source == plan.source  # no override, same campaign identity
    with pytest.raises(InputError, match="demo.timed: expected an integer in"):
        apply_overrides(plan, catalog, duration_s=7200)
    with pytest.raises(InputError, match="no workload of 't' has a duration_s"):
        apply_overrides(parse(GOOD.replace('name = "t"', 'name = "t"')), CATALOG, duration_s=2)


def test_a_condition_may_be_compared_with_any_other_and_a_reference_with_none():
    text = (
        GOOD
        + '[[conditions]]\nname = "ref"\nkind = "isolation"\nparams = { mode = "shared" }\nbaseline = ""\n'
        + '[[conditions]]\nname = "x"\nkind = "isolation"\nparams = { mode = "pinned" }\nbaseline = "ref"\n'
    )
    conds = {c.name: c.baseline for c in parse(text).conditions}
    assert conds == {"baseline": None, "ref": None, "x": "ref"}
    assert "conditions[1].baseline: no condition named 'nope'" in error_of(
        text.replace('baseline = "ref"', 'baseline = "nope"')
    )


def test_a_plan_can_be_narrowed_to_some_of_its_workloads():
    from boardlab.campaign.plan import apply_overrides

    plan = parse(GOOD + '[[workloads]]\nname = "demo.missing"\n'.replace("demo.missing", "demo.kernel"))
    narrowed = apply_overrides(plan, CATALOG, only_workloads=["demo.kernel"])
    assert [w.name for w in narrowed.workloads] == ["demo.kernel"] * 3
    assert "workloads = demo.kernel" in narrowed.source
    with pytest.raises(InputError, match="--workload demo.nope: not in plan 't'; its workloads: demo.kernel"):
        apply_overrides(plan, CATALOG, only_workloads=["demo.nope"])


def test_thresholds_precision_and_the_temperature_limit_are_plan_keys():
    plan = parse_plan(
        'name = "t"\n[runs]\nprecision = "auto"\nmax_temp_c = 70\n'
        '[[workloads]]\nname = "demo.kernel"\nthreshold = 0.05\ntail_threshold = 0.2\nprecision = 0.03\n',
        "p.toml",
        CATALOG,
    )
    assert plan.runs.precision_auto and plan.runs.precision is not None and plan.runs.max_temp_c == 70.0
    (w,) = plan.workloads
    assert (w.threshold, w.tail_threshold, w.precision) == (0.05, 0.2, 0.03)
    with pytest.raises(InputError, match=r"p.toml:3: runs.precision: .*'fast'"):
        parse_plan(
            'name = "t"\n[runs]\nprecision = "fast"\n[[workloads]]\nname = "demo.kernel"\n', "p.toml", CATALOG
        )
    with pytest.raises(InputError, match=r"threshold"):
        parse_plan('name = "t"\n[[workloads]]\nname = "demo.kernel"\nthreshold = -1\n', "p.toml", CATALOG)


def test_the_schedule_labels_reference_runs_a1_a2_alternately_before_the_first_run():
    from boardlab.campaign.schedule import reference_keys

    plan = parse_plan(
        'name = "t"\n[[workloads]]\nname = "demo.kernel"\n'
        '[[conditions]]\nname = "load"\nkind = "baseline"\nbaseline = "baseline"\n'
        '[[conditions]]\nname = "baseline"\nkind = "baseline"\n',
        "p.toml",
        CATALOG,
    )
    cells = build_cells(plan, CATALOG)
    refs = reference_keys(plan, cells)
    assert [c.condition for c in cells if c.key in refs] == ["baseline"]
    runs = schedule(cells, "interleave", 1, range(1, 7), refs)
    labels = [(r.repetition, r.aa_arm) for r in runs if r.cell.condition == "baseline"]
    assert labels == [(1, "A1"), (2, "A2"), (3, "A1"), (4, "A2"), (5, "A1"), (6, "A2")]
    assert all(r.aa_arm is None for r in runs if r.cell.condition == "load")


def test_a_run_over_the_temperature_limit_is_invalid():
    from boardlab.campaign.session import over_temperature, temperature_limits_mc
    from boardlab.platform.inventory import inventory

    assert over_temperature({"temp.thermal_zone0_mc_max": 69000.0}, 70, {}) == []
    (why,) = over_temperature({"temp.thermal_zone0_mc_max": 71500.0}, 70, {})
    assert "71.5 C, over the limit 70.0 C (max_temp_c)" in why
    # keyed as the monitor names zones (zone:type): the bbb's critical trip at 125 C, minus 5 C
    limits = temperature_limits_mc(inventory(SYSFS / "bbb").thermal_zones)
    assert limits == {"thermal_zone0:cpu_thermal": 120000}
    (why,) = over_temperature({"temp.thermal_zone0:cpu_thermal_mc_max": 121000.0}, None, limits)
    assert (
        why == "thermal_zone0:cpu_thermal reached 121.0 C, over the limit 120.0 C (lowest trip point - 5 C)"
    )
    assert not over_temperature({"temp.thermal_zone0:cpu_thermal_mc_max": 119000.0}, None, limits)
    assert not over_temperature(
        {"temp.thermal_zone1:gpu_mc_max": 99000.0}, None, limits
    )  # no trip known there


def test_an_unsupported_workload_fails_the_plan_unless_it_says_skip():
    text = (
        'name = "t"\n[runs]\nunsupported = "{}"\n[[workloads]]\nname = "demo.kernel"\n[[workloads]]\n'
        'name = "demo.missing"\n'
    )
    with pytest.raises(InputError, match="demo.missing is unsupported here: built without libdemo"):
        parse_plan(text.format("fail"), "p.toml", CATALOG)
    from boardlab.campaign.plan import unsupported_workloads

    plan = parse_plan(text.format("skip"), "p.toml", CATALOG)
    assert unsupported_workloads(plan, CATALOG) == {"demo.missing": "built without libdemo"}


def test_with_unsupported_skip_an_unsupported_workload_is_accepted_for_the_runner_to_skip():
    plan = parse('name = "t"\n[runs]\nunsupported = "skip"\n[[workloads]]\nname = "demo.missing"\n')
    assert [w.name for w in plan.workloads] == ["demo.missing"]


ONLY = """\
name = "t"
[runs]
repetitions = 4
[[workloads]]
name = "demo.kernel"
repetitions = 10
[[workloads]]
name = "demo.other"
[[conditions]]
name = "baseline"
kind = "baseline"
[[conditions]]
name = "hog"
kind = "stressor"
params = { stressor = "cpu" }
workloads = ["demo.kernel"]
"""
OTHER = {**CATALOG, "demo.other": dataclasses.replace(CATALOG["demo.kernel"], name="demo.other")}


def test_a_condition_may_apply_to_some_workloads_and_a_workload_may_run_more_often():
    from boardlab.campaign.reach import summarize_plan
    from boardlab.campaign.schedule import cell_repetitions

    plan = parse_plan(ONLY, "p.toml", OTHER)
    cells = build_cells(plan, OTHER)
    assert [c.key for c in cells] == ["demo.kernel[]@baseline", "demo.kernel[]@hog", "demo.other[]@baseline"]
    reps = cell_repetitions(plan, cells)
    assert reps == {"demo.kernel[]@baseline": 10, "demo.kernel[]@hog": 10, "demo.other[]@baseline": 4}
    runs = schedule(cells, "interleave", 1, range(1, 11), repetitions=reps)
    counts = {c.key: sum(1 for r in runs if r.cell == c) for c in cells}
    assert counts == reps
    assert max(r.repetition for r in runs if r.cell.workload == "demo.other") == 4
    summary = summarize_plan(plan, OTHER)
    # the one comparison's arms have 10 runs each: those decide whether a verdict is reachable
    assert (summary.runs, summary.comparisons, summary.runs_per_arm) == (24, 1, 10)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (('workloads = ["demo.kernel"]', 'workloads = ["demo.nope"]'),
         r"p.toml:\d+: conditions\[1\].workloads: 'demo.nope' is not a workload of this plan"),
        (("repetitions = 10", 'repetitions = "ten"'), r"workloads\[0\].repetitions: expected"),
        (('[runs]\nrepetitions = 4', "[runs]\nprecision = 0.02"),
         r"workloads\[0\].repetitions: a workload's "),
        (('kind = "baseline"', 'kind = "baseline"\nworkloads = ["demo.other"]'),
         r"conditions\[1\].workloads: its baseline 'baseline' does not run demo.kernel"),
    ],
)  # fmt: skip
def test_a_wrong_condition_workloads_or_workload_repetitions_names_its_key(edit, message):
    with pytest.raises(InputError, match=message):
        parse_plan(ONLY.replace(*edit), "p.toml", OTHER)


MANY = """\
name = "t"
[runs]
repetitions = {n}
order = "{order}"
{allocation}
[[workloads]]
name = "demo.kernel"
[[conditions]]
name = "baseline"
kind = "baseline"
""" + "".join(f'[[conditions]]\nname = "c{i}"\nkind = "baseline"\nbaseline = "baseline"\n' for i in range(4))


@pytest.mark.parametrize(
    ("n", "order", "allocation", "reference"),
    [
        (10, "interleave", "", 20),  # ceil(sqrt(4) x 10): Dunnett's square-root rule
        (5, "interleave", "", 10),  # sqrt(4) x 5 = 10: the A/A control's 5 + 5
        (4, "interleave", "", 10),  # sqrt(4) x 4 = 8, raised to the A/A control's 10 (the cap, 3 x 4, is 12)
        (10, "interleave", 'baseline_allocation = "equal"', 10),
        (10, "abba", "", 10),  # a block pairs one run of each cell
    ],
)
def test_the_shared_reference_cell_gets_dunnetts_square_root_share_unless_the_plan_says_equal(
    n, order, allocation, reference
):
    from boardlab.campaign.reach import summarize_plan
    from boardlab.campaign.schedule import cell_repetitions, reference_keys

    plan = parse(MANY.format(n=n, order=order, allocation=allocation))
    cells = build_cells(plan, CATALOG)
    reps = cell_repetitions(plan, cells)
    assert reps["demo.kernel[]@baseline"] == reference
    assert {reps[f"demo.kernel[]@c{i}"] for i in range(4)} == {n}
    runs = schedule(cells, order, 1, range(1, reference + 1), reference_keys(plan, cells), reps)
    base = [r.aa_arm for r in runs if r.cell.condition == "baseline"]
    assert len(base) == reference and base.count("A1") == (reference + 1) // 2
    # the conditions' runs are spread over the reference's whole span (drift reaches both arms alike)
    cond = [r for r in runs if r.cell.condition == "c0"]
    assert [r.repetition for r in cond] == list(range(1, n + 1)) and cond[-1].block == reference
    middle = len(runs) / 2
    assert 0.3 < sum(r.seq < middle for r in cond) / n < 0.7
    summary = summarize_plan(plan, CATALOG).to_dict()
    assert summary["runs"] == 4 * n + reference and summary["runs_per_arm"] == n
    assert summary["allocation"]["reference_cells"]["demo.kernel[]@baseline"] == {
        "comparisons": 4,
        "runs": reference,
    }
    assert summary["repetitions_for_power"] >= 5 and summary["power"][0]["family_size"] == 4
    assert summary["power"][0]["cv_source"].startswith("assumed")
