"""The `snoop-sweep` preset: a plan whose conditions a [sweep] table expands from the board at load, through
the same code as `boardlab governor sweep --plan-out`. On copies of the Odroid-XU3 and BeagleBone Black
fixtures it gives each board's OPP grid; on this VM it says unsupported; on the simulator's live tree a
short run completes and `governor label --db` reads it."""

from __future__ import annotations

import dataclasses
import json
import os
import re

import pytest

from boardlab.campaign.plan import PlanUnsupported, expand_sweep, load_plan, parse_plan, preset_text
from boardlab.campaign.schedule import build_cells
from boardlab.errors import InputError
from boardlab.governor import opp, sim, sweep
from boardlab.platform import inventory
from boardlab.platform.sysroot import SysRoot
from boardlab.workloads import all_workloads

from helpers import SYSFS, copy_board, run_cli

pytestmark = pytest.mark.spawns  # starts processes: not in make test-unit

CATALOG = {w.name: w for w in all_workloads()}
XU3_A7 = (200000, 300000, 400000, 500000, 600000, 700000, 800000, 900000, 1000000, 1100000, 1200000,
          1300000, 1400000)  # fmt: skip
XU3_A15 = tuple(k * 100000 for k in range(2, 21))  # 200 MHz .. 2 GHz in 100 MHz steps
NAME = re.compile(r"policy0@(\d+)\+policy4@(\d+)")


def preset_with(**sweep_keys) -> str:
    """The bundled preset's text with some [sweep] keys changed."""
    text = preset_text("snoop-sweep")
    for key, value in sweep_keys.items():
        text, n = re.subn(rf"(?m)^{key} = .*$", f"{key} = {value}", text)
        assert n == 1, key
    return text


def test_on_the_odroid_xu3_the_preset_is_the_a7_x_a15_grid(tmp_path):
    root = copy_board("odroid-xu3", tmp_path)
    plan = expand_sweep(load_plan(None, "snoop-sweep", CATALOG), root)
    swept = [c for c in plan.conditions if not c.is_baseline]
    assert len(swept) == 13 * 19 == 247
    pairs = {tuple(map(int, NAME.fullmatch(c.name).groups())) for c in swept}
    assert pairs == {(a7, a15) for a7 in XU3_A7 for a15 in XU3_A15}
    c = next(c for c in swept if c.name == "policy0@1400000+policy4@200000")
    assert c.kind == "governor+devfreq"
    gov, bus = dict(c.parts)["governor"], dict(c.parts)["devfreq"]
    assert gov == {"governor": "userspace", "policies": ["policy0", "policy4"],
                   "frequencies_khz": {"policy0": 1400000, "policy4": 200000}}  # fmt: skip
    assert bus == {"device": "10c20000.memory-controller", "frequency_hz": "record"}
    assert plan.runs.cpu == 3 and plan.runs.repetitions == 14  # the A7's last CPU; 14 runs reach a verdict
    assert plan.runs.counters == ("memory_access", "cci_congestion")
    # 3 patterns x 9 sizes (4 KiB .. 256 MiB) under each of the 247 pairs and the implied baseline
    cells = build_cells(plan, CATALOG)
    assert len(cells) == 248 * 27
    assert {dict(x.params)["size_bytes"] for x in cells} == set(sweep.SIZES_BYTES)
    # the study's stride: 16 of its 4-byte elements, one access per 64-byte line
    strides = {dict(x.params).get("stride_bytes") for x in cells if dict(x.params)["pattern"] == "stride"}
    assert strides == {64} and len([x for x in cells if dict(x.params)["pattern"] == "stride"]) == 248 * 9
    assert "247 conditions" in plan.notes[0] and "recorded" in plan.notes[1]
    assert "# [sweep] expanded on this board: task on policy0 CPU 3 at 200000," in plan.source
    # The same conditions as the plan `governor sweep --plan-out` writes: one generator, not two.
    (grid,) = sweep.expand(inventory(SysRoot(root)), "policy0")
    written = parse_plan(sweep.plan_toml(grid), "written.toml", CATALOG)
    assert [(c.name, c.parts) for c in written.conditions] == [(c.name, c.parts) for c in plan.conditions]


def test_the_other_cluster_and_a_fixed_bus_are_keys_of_the_sweep_table(tmp_path):
    root = copy_board("odroid-xu3", tmp_path)
    text = preset_with(cluster='"policy4"', bus_hz="825000000")
    plan = expand_sweep(parse_plan(text, "sweep.toml", CATALOG), root)
    swept = [c for c in plan.conditions if not c.is_baseline]
    assert len(swept) == 19 * 13 and plan.runs.cpu == 7
    assert swept[0].name == "policy4@200000+policy0@200000"
    assert all(dict(c.parts)["devfreq"]["frequency_hz"] == 825000000 for c in swept)
    assert "fixed at 825000000" in plan.notes[1]
    # a CPU of the swept cluster may be chosen; one outside it is refused with the cluster's CPUs
    plan = expand_sweep(
        parse_plan(text.replace("iterations = 5", "iterations = 5\ncpu = 5"), "sweep.toml", CATALOG), root
    )
    assert plan.runs.cpu == 5
    with pytest.raises(InputError, match=r"sweep.toml:\d+: runs.cpu: .*policy4 \(CPUs 4, 5, 6, 7\)"):
        expand_sweep(
            parse_plan(text.replace("iterations = 5", "iterations = 5\ncpu = 1"), "sweep.toml", CATALOG), root
        )


def test_on_the_beaglebone_black_the_sweep_is_its_one_clusters_opps(tmp_path):
    root = copy_board("bbb", tmp_path)
    plan = expand_sweep(load_plan(None, "snoop-sweep", CATALOG), root)
    swept = [c for c in plan.conditions if not c.is_baseline]
    assert [c.name for c in swept] == [
        "policy0@300000",
        "policy0@600000",
        "policy0@800000",
        "policy0@1000000",
    ]
    assert all(c.kind == "governor" and c.params["frequencies_khz"] == {"policy0": int(c.name[8:])}
               for c in swept)  # fmt: skip
    assert plan.runs.cpu == 0 and len(build_cells(plan, CATALOG)) == 5 * 27
    assert "only cluster" in plan.notes[0] and "no other cluster to snoop" in plan.notes[0]
    assert "no memory-controller devfreq" in plan.notes[1]
    with pytest.raises(InputError, match=r"sweep.toml:\d+: sweep.bus_hz: .*no memory-controller devfreq"):
        expand_sweep(parse_plan(preset_with(bus_hz='"max"'), "sweep.toml", CATALOG), root)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"kind": '"grid"'}, r"sweep.toml:\d+: sweep.kind: expected one of opp-grid, found 'grid'"),
        (
            {"cluster": '"policy9"'},
            r"sweep.toml:\d+: sweep.cluster: no cpufreq policy 'policy9' .*policy0, "
            r"policy4, or auto",
        ),
        (
            {"bus_hz": "800000000"},
            r"sweep.toml:\d+: sweep.bus_hz: 10c20000.memory-controller offers .*825000000",
        ),
        ({"bus_hz": '"fast"'}, r"sweep.bus_hz: expected a frequency in Hz, max, min or record, found 'fast'"),
    ],
)
def test_a_bad_sweep_table_is_refused_naming_the_line_and_the_valid_values(change, message):
    with pytest.raises(InputError, match=message):
        expand_sweep(parse_plan(preset_with(**change), "sweep.toml", CATALOG), SYSFS / "odroid-xu3")


def test_a_sweep_with_conditions_of_its_own_or_without_a_board_is_refused():
    text = (
        preset_with()
        + '\n[[conditions]]\nname = "x"\nkind = "governor"\nparams = { governor = "ondemand" }\n'
    )
    with pytest.raises(InputError, match=r"sweep.toml:\d+: conditions\[0\]: a plan with \[sweep\] takes"):
        expand_sweep(parse_plan(text, "sweep.toml", CATALOG), SYSFS / "odroid-xu3")
    with pytest.raises(InputError, match=r"sweep.toml:\d+: sweep: a \[sweep\] is expanded from a board"):
        expand_sweep(parse_plan(preset_with(), "sweep.toml", CATALOG), None)


def test_parsing_reads_no_board_and_keeps_the_sweep_for_expansion():
    plan = parse_plan(preset_with(cluster='"policy4"'), "sweep.toml", CATALOG)
    assert plan.sweep is not None and (plan.sweep.kind, plan.sweep.cluster) == ("opp-grid", "policy4")
    assert plan.conditions == () and plan.notes == ()
    with pytest.raises(ValueError, match="not expanded"):  # nothing runs a plan whose conditions are unknown
        build_cells(plan, CATALOG)
    expanded = expand_sweep(plan, SYSFS / "odroid-xu3")
    assert expanded.sweep is None and len(expanded.conditions) == 1 + 19 * 13
    assert expand_sweep(expanded, None) is expanded  # a plan without [sweep] is as it was
    # an error of the table itself names its header's line
    text = preset_with().replace('kind = "opp-grid"\n', "")
    header = text.splitlines().index("[sweep]") + 1
    with pytest.raises(InputError, match=rf"^sweep.toml:{header}: sweep: missing key 'kind'"):
        parse_plan(text, "sweep.toml", CATALOG)


def test_on_this_vm_the_preset_says_unsupported_and_why(tmp_path):
    with pytest.raises(PlanUnsupported, match="cpufreq"):
        expand_sweep(load_plan(None, "snoop-sweep", CATALOG), SYSFS / "vm")
    db = tmp_path / "vm.db"
    p = run_cli("run", "--preset", "snoop-sweep", "--root", str(SYSFS / "vm"), "--db", str(db))
    assert p.returncode == 1, p.stderr
    assert p.stderr.startswith("boardlab run: unsupported: preset:snoop-sweep: [sweep]: no ")
    assert "cpufreq/policy*" in p.stderr and "Traceback" not in p.stderr and p.stderr.count("\n") == 1
    assert not db.exists()  # nothing written


def test_list_presets_shows_the_snoop_sweep():
    p = run_cli("list", "--presets", "--json")
    assert p.returncode == 0, p.stderr
    desc = {x["name"]: x["description"] for x in json.loads(p.stdout)["presets"]}["snoop-sweep"]
    assert "mem.latency" in desc and "every OPP" in desc and "\n" not in desc


def small_exynos() -> opp.SocSpec:
    """The Exynos 5422 simulator with each cluster's lowest and highest OPP only: a 2 x 2 grid."""
    return dataclasses.replace(
        opp.EXYNOS5422,
        clusters=tuple(dataclasses.replace(c, opps=(c.opps[0], c.opps[-1])) for c in opp.EXYNOS5422.clusters),
    )


def test_a_short_run_of_the_preset_on_the_simulator_is_labelled_from_the_store(tmp_path):
    """The preset's text (one size, one pattern, no idle gate, so that it takes seconds) run on a live
    simulator tree: the [sweep] expands from the tree, the governor and devfreq parts write to it, and
    boardlab-kern really runs on this machine (so the figures are this machine's, at its own clock)."""
    simroot = tmp_path / "sim root"
    sim.SimBoard(small_exynos(), simroot)
    text = preset_with().replace(
        "size_bytes = [4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864, 268435456]",
        "size_bytes = [65536]",
    )
    text = text.replace('pattern = ["random", "seq"]', 'pattern = ["random"]')
    head, stride = text.split("# The study's third pattern")
    text = head + stride[stride.index("[sweep]") :]  # without the stride entry
    text = text.replace("iterations = 5", "iterations = 3\nwarmup_max_iterations = 5")
    text = text.replace("seed = 1", "seed = 1\n[gates]\nidle = false\n", 1)
    plan = tmp_path / "snoop sweep.toml"
    plan.write_text(text)
    db = tmp_path / "sweep.db"
    env = {**os.environ, "BOARDLAB_STATE_DIR": str(tmp_path / "state")}
    here = sorted(os.sched_getaffinity(0))
    if 3 not in here:  # the sweep pins the A7's CPU 3, which this machine lacks: said before anything runs
        p = run_cli("run", str(plan), "--root", str(simroot), "--db", str(db), env=env)
        assert p.returncode == 2 and "runs.cpu = 3: this process cannot run on CPU 3" in p.stderr, p.stderr
        assert "Traceback" not in p.stderr and not db.exists()
    # an A7 CPU (0-3 in the simulated Exynos) that this machine has
    plan.write_text(
        text.replace("iterations = 3", f"iterations = 3\ncpu = {here[-1] if here[-1] < 4 else 0}")
    )
    p = run_cli("run", str(plan), "--root", str(simroot), "--db", str(db), "--repetitions", "3", "--json",
                env=env, timeout=300)  # fmt: skip
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    # 4 conditions at 3 runs each; their shared baseline gets more (Dunnett's allocation: sqrt(4) x 3 = 6,
    # raised toward the A/A control's 5 + 5 and capped at 3 x 3 = 9)
    assert out["status"] == "complete" and out["runs_done"] == out["runs_total"] == 4 * 3 + 9
    assert "policy4 at its 2 OPPs = 4 conditions" in p.stderr
    labels_file = tmp_path / "labels.json"
    p = run_cli("governor", "label", "--db", str(db), "--out", str(labels_file), "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["tests"] == 2  # each A7 OPP: the A15 at 200 MHz vs at 2 GHz
    cells = json.loads(labels_file.read_text())["cells"]
    assert {(c["this_khz"], c["other_khz"]) for c in cells} == {
        (200000, 200000), (200000, 2000000), (1400000, 200000), (1400000, 2000000)
    }  # fmt: skip
    assert all(c["runs"] == 3 and c["ci95_ns_per_access"] for c in cells)
    # the devfreq part recorded the simulated memory bus frequency of every run
    assert {c["bus_hz"] for c in cells} == {
        int((simroot / "sys/class/devfreq/10c20000.memory-controller/cur_freq").read_text())
    }
    # every write was undone: the tree is back under its own governor
    gov = simroot / "sys/devices/system/cpu/cpufreq/policy0/scaling_governor"
    assert gov.read_text().strip() == "ondemand"
