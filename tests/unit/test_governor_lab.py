"""The governor lab (the governor study's method) on the simulator and on copies of the board fixtures:
the sweep shows the snoop penalty, labels and the tree recover the simulator's true slow region, the
exported C decides like the Python tree, anti-snoop beats ondemand where it should, the daemon writes only
OPPs and everything is restored, and where cpufreq or counters are missing the tool says why."""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from boardlab.campaign.plan import parse_plan
from boardlab.conditions import condition_kinds
from boardlab.governor import evaluate, label, opp, sim, sweep, tree
from boardlab.platform import inventory
from boardlab.platform.sysroot import SysRoot
from boardlab.workloads import all_workloads

from helpers import SYSFS, copy_board, run_cli

pytestmark = pytest.mark.spawns  # starts processes: not in make test-unit

SOC = opp.EXYNOS5422
CPUFREQ = "sys/devices/system/cpu/cpufreq"
MiB = 1 << 20


def snapshot(root: Path) -> dict[str, str]:
    base = root / CPUFREQ
    return {str(p.relative_to(base)): p.read_text().strip() for p in sorted(base.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def labelled():
    cells = sweep.simulate(SOC, sizes=sweep.SIZES_BYTES[::2], repetitions=6, seed=3)
    return label.label(cells)


# ---- the sweep plan on real board layouts ---------------------------------------------------------------


def test_the_sweep_expands_to_each_boards_opp_grid():
    xu3 = sweep.expand(inventory(SysRoot(SYSFS / "odroid-xu3")))
    assert [(g.this_policy, len(g.this_khz), g.other_policy, len(g.other_khz)) for g in xu3] == [
        ("policy0", 13, "policy4", 19),
        ("policy4", 19, "policy0", 13),
    ]
    assert xu3[0].this_khz[0] == 200000 and xu3[0].this_khz[-1] == 1400000 and xu3[1].this_khz[-1] == 2000000
    assert len(xu3[0].pairs()) == 13 * 19
    (bbb,) = sweep.expand(inventory(SysRoot(SYSFS / "bbb")))
    assert bbb.this_khz == (300000, 600000, 800000, 1000000) and bbb.other_policy is None
    assert bbb.pairs() == [(300000, None), (600000, None), (800000, None), (1000000, None)]


def test_the_sweep_plan_loads_and_its_conditions_fit_the_board(tmp_path):
    from boardlab.conditions.base import ApplyContext
    from boardlab.conditions.journal import RestoreJournal

    root = copy_board("odroid-xu3", tmp_path)
    sr = SysRoot(root)
    info = inventory(sr)
    grid = sweep.expand(info, "policy0")[0]
    assert grid.bus_device == "10c20000.memory-controller" and max(grid.bus_hz) == 825000000
    plan = parse_plan(
        sweep.plan_toml(grid, bus_hz=825000000), "snoop-sweep", {w.name: w for w in all_workloads()}
    )
    swept = [c for c in plan.conditions if c.kind == "governor+devfreq"]
    assert len(swept) == 13 * 19 and plan.runs.cpu == 3
    assert plan.runs.counters == ("memory_access", "cci_congestion")
    ctx = ApplyContext(root=sr, journal=RestoreJournal(sr, tmp_path / "j.json"), info=info, worker_cpu=3,
                       online_cpus=info.online_cpus)  # fmt: skip
    kinds = condition_kinds()
    before = snapshot(root)
    dmc = root / "sys/class/devfreq/10c20000.memory-controller"
    dmc_before = {f: (dmc / f).read_text().strip() for f in ("min_freq", "max_freq")}
    cond = next(c for c in swept if c.name == "policy0@1400000+policy4@200000")
    states = {}
    with contextlib.ExitStack() as stack:
        for kind, params in cond.parts:
            assert kinds[kind].check(params, ctx) is None
            states[kind] = stack.enter_context(kinds[kind].apply(params, ctx))
        assert (root / CPUFREQ / "policy0/scaling_setspeed").read_text().strip() == "1400000"
        assert (root / CPUFREQ / "policy4/scaling_setspeed").read_text().strip() == "200000"
        assert (dmc / "min_freq").read_text().strip() == (dmc / "max_freq").read_text().strip() == "825000000"
    assert states["governor"]["policies"]["policy4"]["frequency_khz"] == 200000
    assert states["devfreq"]["fixed_hz"] == 825000000 and states["devfreq"]["cur_hz_before"] == 165000000
    assert snapshot(root) == before
    assert {f: (dmc / f).read_text().strip() for f in ("min_freq", "max_freq")} == dmc_before
    # "record" only records; a frequency the controller lacks is refused with the valid ones
    assert (
        kinds["devfreq"].check({"device": grid.bus_device, "frequency_hz": 800000000}, ctx).count("825000000")
    )
    assert "no devfreq device" in kinds["devfreq"].check({"device": "gpu"}, ctx)


def test_a_per_policy_frequency_the_policy_lacks_is_refused(tmp_path):
    from boardlab.conditions.base import ApplyContext
    from boardlab.conditions.journal import RestoreJournal

    sr = SysRoot(SYSFS / "odroid-xu3")
    info = inventory(sr)
    ctx = ApplyContext(root=sr, journal=RestoreJournal(sr, tmp_path / "j.json"), info=info, worker_cpu=3,
                       online_cpus=info.online_cpus)  # fmt: skip
    kind = condition_kinds()["governor"]
    reason = kind.check(
        {"governor": "userspace", "frequencies_khz": {"policy0": 1500000, "policy4": 200000}}, ctx
    )
    assert "policy0" in reason and "1500000" in reason
    assert (
        kind.validate({"governor": "ondemand", "frequencies_khz": {"policy0": 200000}})[0]
        == "frequencies_khz"
    )


def test_on_this_vm_the_sweep_says_unsupported_and_why():
    with pytest.raises(sweep.Unsupported, match="cpufreq"):
        sweep.expand(inventory(SysRoot(SYSFS / "vm")))
    p = run_cli("governor", "sweep", "--root", str(SYSFS / "vm"))
    assert p.returncode == 1 and "unsupported:" in p.stderr and "cpufreq" in p.stderr


# ---- the simulator's sweep, labels and tree -------------------------------------------------------------


def mean_ns(labels, **key) -> float:
    (lab,) = [x for x in labels if all(getattr(x.cell, k) == v for k, v in key.items())]
    return lab.mean_ns


def test_the_simulated_sweep_shows_the_snoop_penalty(labelled):
    big = dict(pattern="random", size_bytes=16 * MiB, this_policy="policy0", this_khz=1400000)
    slow = mean_ns(labelled, other_khz=200000, **big)
    fast = mean_ns(labelled, other_khz=2000000, **big)
    knee = mean_ns(labelled, other_khz=800000, **big)
    assert slow > 1.3 * fast  # an idle A15 at 200 MHz slows the A7's DRAM-bound chase
    assert knee < 1.02 * fast  # above the knee the other cluster no longer matters
    small = dict(pattern="random", size_bytes=4096, this_policy="policy0", this_khz=1400000)
    assert mean_ns(labelled, other_khz=200000, **small) < 1.05 * mean_ns(labelled, other_khz=2000000, **small)


def test_labels_mark_the_slow_region_and_spare_cache_resident_cells(labelled):
    by = {(lab.cell.pattern, lab.cell.size_bytes, lab.cell.this_policy, lab.cell.this_khz,
           lab.cell.other_khz): lab for lab in labelled}  # fmt: skip
    assert by[("random", 16 * MiB, "policy0", 1400000, 200000)].slow
    assert not by[("random", 4096, "policy0", 1400000, 200000)].slow
    ref = by[("random", 16 * MiB, "policy0", 1400000, 2000000)]
    assert ref.p is None and not ref.slow  # the reference is not tested against itself
    lab = by[("random", 16 * MiB, "policy0", 1400000, 200000)]
    assert lab.p_adjusted >= lab.p and lab.ci95_ns[0] < lab.mean_ns < lab.ci95_ns[1]


def split_rows(labelled, seed=7):
    rows = [(lab, f) for lab in labelled if lab.p is not None and (f := label.features(lab))]
    random.Random(seed).shuffle(rows)
    half = len(rows) // 2
    return rows[:half], rows[half:]


def test_the_tree_recovers_the_true_slow_region_on_held_out_cells(labelled):
    train, test = split_rows(labelled)
    t = tree.fit([tree.quantize(f) for _, f in train], [int(lab.slow) for lab, _ in train], max_depth=3)
    assert 1 <= t.depth() <= 3
    truth = [sweep.true_slow(SOC, lab.cell, label.MIN_EFFECT) for lab, _ in test]
    assert 0 < sum(truth) < len(truth)
    hits = sum(t.predict(tree.quantize(f)) == int(tr) for (_, f), tr in zip(test, truth, strict=True))
    assert hits / len(test) >= 0.90


def test_the_exported_c_decides_every_cell_like_the_python_tree(labelled, tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler (cc or gcc) on PATH to compile the exported tree")
    rows = [tree.quantize(f) for lab in labelled if (f := label.features(lab))]
    t = tree.fit(rows, [int(lab.slow) for lab in labelled if label.features(lab)], max_depth=3)
    src = tmp_path / "tree test.c"
    table = ",\n".join("{" + ",".join(f"{v}LL" for v in r) + "}" for r in rows)
    src.write_text(
        tree.to_c(t)
        + "#include <stdio.h>\nstatic const long long rows[][5] = {\n" + table + "};\n"
        + "int main(void) { for (unsigned i = 0; i < sizeof rows / sizeof rows[0]; i++) "
        "putchar('0' + boardlab_snoop_slow(rows[i][0], rows[i][1], rows[i][2], rows[i][3], rows[i][4])); "
        "return 0; }\n"
    )  # fmt: skip
    exe = tmp_path / "tree"
    subprocess.run([cc, "-std=c99", "-Wall", "-Werror", "-o", str(exe), str(src)], check=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    assert out == "".join(str(t.predict(r)) for r in rows)
    assert "1" in out and "0" in out
    assert tree.predict_json(tree.to_json(t), rows) == [t.predict(r) for r in rows]


def test_label_and_train_through_the_cli(tmp_path):
    sw, lab, tj, tc = (tmp_path / n for n in ("sweep.json", "labels.json", "tree.json", "tree.h"))
    p = run_cli(
        "governor", "sweep", "--sim", "exynos5422", "--quick", "--cluster", "policy0", "--out", str(sw)
    )
    assert p.returncode == 0, p.stderr
    assert f"x {len(sweep.PATTERNS)} patterns x" in p.stderr  # the progress line counts what it simulates
    p = run_cli("governor", "label", str(sw), "--out", str(lab), "--json")
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)
    assert 0 < s["slow"] < s["tests"] and s["correction"] == "benjamini-hochberg"
    p = run_cli("governor", "train", str(lab), "--out", str(tj), "--c-out", str(tc), "--depth", "2", "--json")
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout)
    assert res["cross_validation"]["accuracy"] >= 0.9
    assert sum(res["cross_validation"]["confusion"].values()) == s["tests"]
    assert "static int boardlab_snoop_slow(" in tc.read_text()
    bad = run_cli("governor", "train", str(sw), "--out", str(tmp_path / "x.json"))
    assert bad.returncode == 2 and "not labels" in bad.stderr and not (tmp_path / "x.json").exists()
    # before: --folds 10**20 looped for ever over empty folds, --runs 10**20 filled the memory
    huge = str(10**20)
    bad = run_cli(
        "governor", "train", str(lab), "--out", str(tmp_path / "x.json"), "--folds", huge, timeout=60
    )
    assert bad.returncode == 2 and f"--folds {huge}: expected 2 to " in bad.stderr, bad.stderr
    bad = run_cli("governor", "sweep", "--sim", "exynos5422", "--runs", huge, "--out", str(sw), timeout=60)
    assert bad.returncode == 2 and f"--runs {huge}: expected 2" in bad.stderr, bad.stderr


# ---- policies on traces ------------------------------------------------------------------------------------


def test_anti_snoop_beats_ondemand_on_the_memory_bound_trace_and_not_loses_on_the_compute_bound(labelled):
    rows = [(lab, f) for lab in labelled if (f := label.features(lab))]
    t = tree.fit([tree.quantize(f) for _, f in rows], [int(lab.slow) for lab, _ in rows], max_depth=3)
    from boardlab.cli.governor import tree_rule

    res = evaluate.compare(
        SOC,
        ["memory-bound", "compute-bound"],
        ["ondemand", "daemon:ondemand", "daemon:anti-snoop"],
        slow=tree_rule(t),
    )
    r = {(x["trace"], x["policy"]): x for x in res["rows"]}
    for trace in ("memory-bound", "compute-bound"):
        for pol in ("ondemand", "daemon:ondemand", "daemon:anti-snoop"):
            x = r[(trace, pol)]
            assert (
                x["time_s"] > 0
                and x["energy_j"] > 0
                and x["edp_j_s"] == pytest.approx(x["energy_j"] * x["time_s"])
            )
    mem_as, mem_od = r[("memory-bound", "daemon:anti-snoop")], r[("memory-bound", "daemon:ondemand")]
    assert mem_as["time_s"] < 0.95 * mem_od["time_s"]
    assert mem_as["time_s"] < 0.95 * r[("memory-bound", "ondemand")]["time_s"]
    cpu_as, cpu_od = r[("compute-bound", "daemon:anti-snoop")], r[("compute-bound", "daemon:ondemand")]
    assert cpu_as["time_s"] <= 1.02 * cpu_od["time_s"]
    # anti-snoop held the idle A15 at or above the snoop knee (0.7 GHz) for most of the memory-bound run
    a15 = mem_as["time_in_state_s"]["policy4"]
    assert sum(s for khz, s in a15.items() if khz >= 600000) > 0.5 * mem_as["time_s"]
    assert mem_as["daemon"]["samples"] > 10 and mem_as["daemon"]["cpu_s"] > 0


# ---- the daemon on fixture copies ------------------------------------------------------------------------


def write_stat(root: Path, ncpu: int, busy: list[int], idle: list[int]) -> None:
    lines = [f"cpu  {sum(busy)} 0 0 {sum(idle)} 0 0 0 0 0 0"]
    lines += [f"cpu{i} {busy[i]} 0 0 {idle[i]} 0 0 0 0 0 0" for i in range(ncpu)]
    tmp = root / "proc" / "stat.tmp"
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, root / "proc" / "stat")


def drive_load(root: Path, ncpu: int, seconds: float, seed: int = 1, while_running=None) -> None:
    """Moves /proc/stat on like a board with a changing load, so the daemon picks many frequencies; for
    `seconds`, or less if the process `while_running` ends first."""
    rng = random.Random(seed)
    busy, idle = [0] * ncpu, [0] * ncpu
    end = time.monotonic() + seconds
    while time.monotonic() < end and (while_running is None or while_running.poll() is None):
        for i in range(ncpu):
            b = rng.choice((0, 1, 2, 3, 4, 5))
            busy[i] += b
            idle[i] += 5 - b
        write_stat(root, ncpu, busy, idle)
        time.sleep(0.02)


def state_env(tmp_path: Path) -> dict:
    return {**os.environ, "BOARDLAB_STATE_DIR": str(tmp_path / "state")}


@pytest.mark.parametrize(
    ("args", "said"),
    [  # before: nan ran (and was NaN in --json), inf overflowed the sleep, -1 looped for ever in simulate
        (("run", "--sampling-ms", "nan"), "--sampling-ms nan: expected 1 to 3600000 ms"),
        (("run", "--sampling-ms", "1e400"), "--sampling-ms inf: expected 1 to 3600000 ms"),
        (("run", "--duration-s", "-1"), "--duration-s -1: expected a positive number of seconds"),
        (("run", "--duration-s", "nan"), "--duration-s nan: expected a positive number of seconds"),
        (("simulate", "--sampling-ms", "-1"), "--sampling-ms -1: expected 1 to 3600000 ms"),
        (("simulate", "--sampling-ms", "nan"), "--sampling-ms nan: expected 1 to 3600000 ms"),
    ],
)
def test_a_sampling_period_or_duration_that_is_no_time_is_refused_before_anything_changes(
    tmp_path, args, said
):
    root = copy_board("odroid-xu3", tmp_path)
    write_stat(root, 8, [0] * 8, [0] * 8)
    before = snapshot(root)
    where = ["--root", str(root), "--policy", "ondemand"] if args[0] == "run" else ["--soc", "am335x"]
    proc = run_cli("governor", *args, *where, env=state_env(tmp_path), timeout=60)
    assert proc.returncode == 2 and said in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert snapshot(root) == before


@pytest.mark.parametrize(("board", "ncpu"), [("odroid-xu3", 8), ("bbb", 1)])
def test_the_daemon_writes_only_opps_and_restores_after_it_ends(tmp_path, board, ncpu):
    root = copy_board(board, tmp_path)
    write_stat(root, ncpu, [0] * ncpu, [0] * ncpu)
    before = snapshot(root)
    proc = subprocess.Popen(
        [sys.executable, "-m", "boardlab", "governor", "run", "--root", str(root), "--policy", "ondemand",
         "--sampling-ms", "20", "--duration-s", "1.5", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=state_env(tmp_path),
    )  # fmt: skip
    # the load changes for as long as the daemon runs: on a loaded machine its start alone can take seconds
    drive_load(root, ncpu, 60, while_running=proc)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    s = json.loads(out)
    info = inventory(SysRoot(root))
    for p in info.cpufreq_policies:
        written = s["frequencies_written_khz"][p.name]
        assert set(written) <= set(p.frequencies_khz)
    assert len({f for v in s["frequencies_written_khz"].values() for f in v}) >= 2
    assert s["samples"] >= 20 and s["cpu_us_per_sample"] > 0
    assert snapshot(root) == before


@pytest.mark.parametrize(("board", "ncpu"), [("odroid-xu3", 8), ("bbb", 1)])
def test_after_sigkill_boardlab_restore_puts_the_board_back(tmp_path, board, ncpu):
    root = copy_board(board, tmp_path)
    write_stat(root, ncpu, [0] * ncpu, [0] * ncpu)
    before = snapshot(root)
    proc = subprocess.Popen(
        [sys.executable, "-m", "boardlab", "governor", "run", "--root", str(root), "--policy", "conservative",
         "--sampling-ms", "20"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=state_env(tmp_path),
    )  # fmt: skip
    try:
        seen = set()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(seen) < 2:
            drive_load(root, ncpu, 0.2)
            seen |= {(root / CPUFREQ / "policy0/scaling_setspeed").read_text().strip()}
            seen -= {
                "<unsupported>",
                "",
            }  # a fixture file is rewritten in place (sysfs is not): skip a torn read
        assert (root / CPUFREQ / "policy0/scaling_governor").read_text().strip() == "userspace"
        table = {str(f) for f in inventory(SysRoot(root)).policy("policy0").frequencies_khz}
        assert seen and seen <= table
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    assert snapshot(root) != before
    p = run_cli("restore", "--root", str(root), "--json", env=state_env(tmp_path))
    assert p.returncode == 0, p.stderr
    restored = json.loads(p.stdout)["restored"]
    assert any("governor" in r["what"] for r in restored)
    assert snapshot(root) == before


def test_on_this_vm_the_daemon_and_counters_say_unsupported_and_why(tmp_path):
    root = copy_board("vm", tmp_path)
    p = run_cli("governor", "run", "--root", str(root), "--policy", "ondemand", env=state_env(tmp_path))
    assert p.returncode == 1 and "unsupported:" in p.stderr and "cpufreq" in p.stderr
    p = run_cli("governor", "run", "--root", str(root), "--policy", "anti-snoop", env=state_env(tmp_path))
    assert p.returncode == 1 and "unsupported:" in p.stderr and "cpufreq" in p.stderr
    # With cpufreq but without the CCI-400 PMU (the Odroid-XU3's mainline device tree), anti-snoop says so.
    xu3 = copy_board("odroid-xu3", tmp_path)
    write_stat(xu3, 8, [0] * 8, [0] * 8)
    p = run_cli("governor", "run", "--root", str(xu3), "--policy", "anti-snoop", env=state_env(tmp_path))
    assert p.returncode == 1 and "unsupported:" in p.stderr
    assert "live system" in p.stderr  # a fixture tree has no perf; on the board itself: no CCI-400 PMU
    assert (xu3 / CPUFREQ / "policy0/scaling_governor").read_text().strip() == "ondemand"  # nothing touched


def test_the_simulator_tree_reads_like_a_board(tmp_path):
    board = sim.SimBoard(SOC, tmp_path / "sim")
    info = inventory(SysRoot(tmp_path / "sim"))
    assert [p.name for p in info.cpufreq_policies] == ["policy0", "policy4"]
    assert info.policy("policy4").frequencies_khz == opp.EXYNOS5422.cluster("policy4").khz
    trace = sim.traces(SOC)["memory-bound"]
    for _ in range(50):
        board.step(0.01, trace.phases[0])
    board.publish()
    info = inventory(SysRoot(tmp_path / "sim"))
    tis = {f.frequency_khz: f.time_ms for f in info.policy("policy0").time_in_state}
    assert sum(tis.values()) == pytest.approx(500, abs=20)
    assert sim.read_counters(tmp_path / "sim")["clusters"]["policy0"]["bus_access"] > 0


# ---- the governor-daemon condition ----------------------------------------------------------------------


def daemon_context(root: Path, tmp_path: Path):
    from boardlab.conditions.base import ApplyContext
    from boardlab.conditions.journal import RestoreJournal

    sr = SysRoot(root)
    info = inventory(sr)
    return ApplyContext(root=sr, journal=RestoreJournal(sr, tmp_path / "journal.json"), info=info,
                        worker_cpu=info.online_cpus[-1], online_cpus=info.online_cpus)  # fmt: skip


def test_the_governor_daemon_condition_governs_around_a_run_and_undoes_it(tmp_path, monkeypatch):
    monkeypatch.setenv("BOARDLAB_STATE_DIR", str(tmp_path / "state"))
    root = copy_board("odroid-xu3", tmp_path)
    write_stat(root, 8, [0] * 8, [0] * 8)
    before = snapshot(root)
    kind = condition_kinds()["governor-daemon"]
    params = {"policy": "ondemand", "sampling_ms": 20}
    assert kind.validate(params) is None
    assert kind.validate({"policy": "turbo"})[0] == "policy"
    ctx = daemon_context(root, tmp_path)
    assert kind.check(params, ctx) is None
    with kind.apply(params, ctx) as state:
        assert (root / CPUFREQ / "policy4/scaling_governor").read_text().strip() == "userspace"
        drive_load(root, 8, 0.5)
        assert [e["kind"] for e in ctx.journal.pending()] == ["process"]
    assert state["daemon"]["samples"] >= 5 and state["daemon"]["restored"]
    assert snapshot(root) == before and ctx.journal.pending() == []


def test_the_governor_daemon_condition_says_why_it_cannot_run(tmp_path):
    kind = condition_kinds()["governor-daemon"]
    xu3 = daemon_context(SYSFS / "odroid-xu3", tmp_path)
    assert "CCI-400" in kind.check({"policy": "anti-snoop"}, xu3)
    bbb = daemon_context(SYSFS / "bbb", tmp_path)
    assert "two clusters" in kind.check({"policy": "anti-snoop"}, bbb)
    vm = daemon_context(SYSFS / "vm", tmp_path)
    assert kind.check({"policy": "ondemand"}, vm).startswith("unsupported:")


# ---- a sweep campaign through the store and the report ---------------------------------------------------


def test_a_sweep_campaign_is_labelled_from_the_store_and_reported(tmp_path):
    """The real-board path on a simulator tree: boardlab-kern really runs on this machine (the frequencies
    are written to the tree only, so the figures are this machine's), then label --db and the report."""
    sim.SimBoard(SOC, tmp_path / "simroot")
    bus = ("10c20000.memory-controller", opp.EXYNOS5422.devfreq_hz)
    g = sweep.Grid("policy0", (0,), (200000, 1400000), "policy4", (200000, 2000000), *bus)
    text = sweep.plan_toml(g, sizes=[65536], patterns=["random"], repetitions=3, bus_hz=413000000)
    text = text.replace("iterations = 5", "iterations = 3\nwarmup_max_iterations = 5")
    text = text.replace("seed = 1", "seed = 1\n[gates]\nidle = false\n", 1)
    (tmp_path / "plan.toml").write_text(text)
    db = tmp_path / "s.db"
    p = run_cli(
        "run", str(tmp_path / "plan.toml"), "--db", str(db), "--root", str(tmp_path / "simroot"), "--quiet"
    )
    assert p.returncode == 0, p.stderr
    p = run_cli("governor", "label", "--db", str(db), "--out", str(tmp_path / "labels.json"), "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["tests"] == 2  # 2 this-frequencies x (200 MHz vs the 2 GHz reference)
    labels = json.loads((tmp_path / "labels.json").read_text())
    assert {c["this_khz"] for c in labels["cells"]} == {200000, 1400000}
    assert all(c["runs"] == 3 and c["ci95_ns_per_access"] for c in labels["cells"])
    assert {c["bus_hz"] for c in labels["cells"]} == {413000000}  # the devfreq part fixed and recorded it
    # This VM counts neither BUS_ACCESS nor the CCI: the tree has nothing to learn from, and says so.
    p = run_cli("governor", "train", str(tmp_path / "labels.json"), "--out", str(tmp_path / "t.json"))
    assert p.returncode == 2 and "counter features" in p.stderr
    p = run_cli("report", "--db", str(db), "--format", "md", "-o", str(tmp_path / "r.md"))
    assert p.returncode == 0, p.stderr
    md = (tmp_path / "r.md").read_text()
    assert "## Governor study" in md and "policy0 random 64 KiB" in md and "labels: " in md
    p = run_cli("report", "--db", str(db), "-o", str(tmp_path / "r.html"))
    assert p.returncode == 0, p.stderr
    html = (tmp_path / "r.html").read_text()
    assert "<h2>Governor study</h2>" in html and "policy0 random 64 KiB" in html


def test_simulate_compares_policies_with_time_energy_and_edp(tmp_path):
    page = tmp_path / "simulate page.html"
    p = run_cli(
        "governor", "simulate", "--soc", "am335x", "--trace", "compute-bound", "--json", "--html", str(page)
    )
    html = page.read_text()
    assert "run time relative to ondemand" in html and "<svg" in html and "powersave" in html
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout)
    assert res["source"].startswith("simulator am335x")
    rows = {r["policy"]: r for r in res["rows"]}
    assert "two clusters" in rows["daemon:anti-snoop"]["unsupported"]  # one cluster: nothing to snoop
    perf, save = rows["performance"], rows["powersave"]
    assert perf["time_s"] < rows["ondemand"]["time_s"] * 1.02 < save["time_s"]
    assert save["energy_j"] > 0 and perf["edp_j_s"] == pytest.approx(perf["energy_j"] * perf["time_s"])
    assert save["verdict"] == "slower" and rows["ondemand"]["time_ratio_vs_ondemand"] == 1.0
    p = run_cli("governor", "simulate", "--trace", "nope")
    assert p.returncode == 2 and "nope" in p.stderr


def test_a_governor_eval_campaign_reports_policies_side_by_side(tmp_path):
    """governor-eval's conditions on a simulator tree: the stock governors are written to the tree and the
    anti-snoop daemon runs against it (its counters from the simulator); the workload really runs here."""
    sim.SimBoard(SOC, tmp_path / "simroot")
    from boardlab.campaign.plan import preset_text

    text = preset_text("governor-eval")
    head, _, rest = text.partition("[[workloads]]")
    conditions = rest[rest.index("[[conditions]]") :]
    plan = (head.replace("repetitions = 10", "repetitions = 2")
            .replace("iterations = 5", "iterations = 3\ncpu = 0\nwarmup_max_iterations = 5")
            + '[gates]\nidle = false\n\n[[workloads]]\nname = "noop"\n\n' + conditions)  # fmt: skip
    (tmp_path / "plan.toml").write_text(plan)
    db = tmp_path / "e.db"
    env = {**os.environ, "BOARDLAB_STATE_DIR": str(tmp_path / "state")}
    p = run_cli("run", str(tmp_path / "plan.toml"), "--db", str(db), "--root", str(tmp_path / "simroot"),
                "--quiet", env=env)  # fmt: skip
    assert p.returncode == 0, p.stderr
    p = run_cli("report", "--db", str(db), "--format", "text", env=env)
    assert p.returncode == 0, p.stderr
    text = p.stdout
    assert "Governor study\n==============" in text
    for policy in ("ondemand", "performance", "powersave", "schedutil", "anti-snoop"):
        assert f" {policy} " in text
    assert "energy unsupported in this campaign" in text
    assert (tmp_path / "simroot" / CPUFREQ / "policy0/scaling_governor").read_text().strip() == "ondemand"


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


# "inherited-ignored": started as a shell without job control starts a background job (`setsid nohup
# boardlab ... &` on a fleet's board), with SIGINT ignored; Ctrl-C (and the stop of every load) still works
@pytest.mark.parametrize("sigint", ["default", "inherited-ignored"])
def test_ctrl_c_stops_the_daemon_and_restores_at_once(tmp_path, sigint):
    root = copy_board("odroid-xu3", tmp_path)
    write_stat(root, 8, [0] * 8, [0] * 8)
    before = snapshot(root)
    proc = subprocess.Popen(
        [sys.executable, "-m", "boardlab", "governor", "run", "--root", str(root),
         "--policy", "schedutil-like", "--sampling-ms", "20", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=state_env(tmp_path),
        preexec_fn=_ignore_sigint if sigint == "inherited-ignored" else None,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while (root / CPUFREQ / "policy4/scaling_governor").read_text().strip() != "userspace":
            assert time.monotonic() < deadline and proc.poll() is None, (
                proc.stderr.read() if proc.poll() else ""
            )
            time.sleep(0.02)
        drive_load(root, 8, 0.3)
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    s = json.loads(out)
    assert s["interrupted"] is True and len(s["restored"]) == 4  # two governors, two setspeeds
    assert snapshot(root) == before
    assert not list((tmp_path / "state").glob("restore-*.json"))  # nothing left for `boardlab restore`


def test_a_sweep_cells_frequencies_are_read_from_its_conditions_governor_part_not_its_name():
    from boardlab.governor.store_io import sweep_frequencies
    from boardlab.model.facts import ConditionPart, condition_parts

    def of(table: dict) -> tuple | None:
        return sweep_frequencies(condition_parts(table))

    gov = {"governor": "userspace", "policies": ["policy4", "policy0"],
           "frequencies_khz": {"policy0": 200000, "policy4": 1400000}}  # fmt: skip
    bus = {"device": "10c20000.memory-controller", "frequency_hz": "record"}
    swept = {"kind": "governor+devfreq", "parts": [{"kind": "governor", "params": gov},
                                                   {"kind": "devfreq", "params": bus}]}  # fmt: skip
    assert of(swept) == ("policy4", 1400000, "policy0", 200000)  # this policy first, as the table lists
    alone = {
        "kind": "governor",
        "params": {**gov, "policies": ["policy0"], "frequencies_khz": {"policy0": 5}},
    }
    assert of(alone) == ("policy0", 5, None, None)  # one cluster: a condition stored without parts
    # governor-eval's policies, a frequency given as a word: not sweep cells, whatever their names
    words = {"governor": "userspace", "frequencies_khz": {"active": "max", "idle": "min"}}
    assert of({"kind": "governor", "params": words, "name": "policy0@1400000"}) is None
    assert of({"kind": "governor", "params": {"governor": "ondemand"}}) is None
    assert sweep_frequencies([ConditionPart("baseline")]) is None
    # the conditions the sweep writes are read back as the frequencies it swept
    for grid in (
        sweep.Grid("policy0", (0, 1), (200000, 1400000), "policy4", (200000, 2000000), "dmc", (165000000,)),
        sweep.Grid("policy0", (0, 1), (200000, 1400000), None, ()),
    ):
        tables = sweep.condition_tables(grid)
        assert len(tables) == len(grid.pairs())
        for table in tables:
            this, this_khz, other, other_khz = of(table)  # type: ignore[misc]
            assert table["name"] == sweep.cell_name(this, this_khz, other, other_khz)
    for odd in ({"policies": "all"}, {"policies": [["policy0"]]}, {"policies": ["policy0", "policy4", "x"]}):
        assert of({"kind": "governor", "params": {**gov, **odd}}) is None
