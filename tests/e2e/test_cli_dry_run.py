"""`boardlab run --dry-run`: a plan checked and summarized (cells, runs, comparisons, duration, reachability)
without running or writing anything; and a plan that cannot reach a verdict is announced before its first
run (docs/method.md reachability)."""

from __future__ import annotations

import json
import re

import pytest

from boardlab.campaign.plan import preset_names, preset_text

from helpers import SYSFS, run_cli

# Presets whose conditions come from the board (the snoop sweep's OPP grid) or need one (the governor study's
# cpufreq governors, which this VM lacks: its dry-run here says "not reachable", tested elsewhere) are checked
# on a board that has them.
BOARD_PRESETS = {"snoop-sweep": SYSFS / "odroid-xu3", "governor-eval": SYSFS / "odroid-xu3"}


@pytest.mark.parametrize("preset", preset_names())
def test_every_preset_reaches_a_verdict_at_its_default_repetitions(preset, tmp_path):
    db = tmp_path / "none.db"
    root = ("--root", str(BOARD_PRESETS[preset])) if preset in BOARD_PRESETS else ()
    proc = run_cli("run", "--preset", preset, *root, "--dry-run", "--json", "--db", str(db))
    doc = json.loads(proc.stdout)
    assert proc.returncode == (2 if doc["refused"] else 0), proc.stderr
    for key in ("cells", "runs", "comparisons", "verdict_reachable", "repetitions_needed"):
        assert key in doc
    if doc["refused"]:  # conditions this machine lacks, under unsupported = "fail": said, never "yes"
        assert doc["verdict_reachable"] is False and "unsupported" in doc["refused"]
        assert "a real run stops before its first run" in proc.stderr
        pytest.skip(f"unsupported here: {doc['refused']}")
    for key in ("repetitions_for_power", "allocation", "power"):
        assert key in doc
    assert doc["verdict_reachable"] is True, doc["message"]
    # every cell runs its workload's repetitions (the plan's, or the workload's own): the compared arms
    # have runs_per_arm each, and no cell runs more than the most any workload asks
    plan = preset_text(preset)
    most = max([int(n) for n in re.findall(r"^repetitions = (\d+)", plan, re.M)] + [doc["runs_per_arm"]])
    assert doc["cells"] * min(doc["runs_per_arm"], 5) <= doc["runs"] <= doc["cells"] * most * 3
    if "\nrepetitions = " not in plan.split("[[workloads]]", 1)[1]:  # one count for every cell
        # ... but a reference cell shared by several comparisons gets its square-root share
        extra = sum(r["runs"] - doc["runs_per_arm"] for r in doc["allocation"]["reference_cells"].values())
        assert doc["runs"] == doc["cells"] * doc["runs_per_arm"] + extra
    assert not db.exists()  # nothing written


def test_the_quick_preset_runs_its_interference_pair_more_often_than_the_rest(tmp_path):
    proc = run_cli("run", "--preset", "quick", "--dry-run", "--json", "--db", str(tmp_path / "none.db"))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    # 17 baseline cells, 2 of them (triad, SOR) also under memcpy-same; those 4 cells 10 runs, the rest 5
    assert (doc["cells"], doc["runs"], doc["comparisons"], doc["runs_per_arm"]) == (
        19,
        15 * 5 + 4 * 10,
        2,
        10,
    )
    assert doc["verdict_reachable"] is True and doc["correction"] == "holm"


def test_the_quick_preset_on_a_board_without_stress_ng_skips_its_comparison_and_says_why(tmp_path):
    """A board with only the bundle installed (the booted ARM guests of make test-arm-system) has no
    stress-ng: the main job still runs, the memcpy-same cells are skipped with the reason and the fix."""
    import os
    import sys

    env = {**os.environ, "PATH": os.path.dirname(sys.executable)}  # the venv's bin: no stress-ng on it
    proc = run_cli(
        "run", "--preset", "quick", "--dry-run", "--json", "--db", str(tmp_path / "none.db"), env=env
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert (doc["cells"], doc["comparisons"], doc["verdict_reachable"]) == (17, 0, False)
    text = run_cli("run", "--preset", "quick", "--dry-run", "--db", str(tmp_path / "none.db"), env=env).stdout
    assert (
        "skipped here: condition memcpy-same: unsupported: stress-ng is not installed: apt-get install "
        "stress-ng" in text
    )


def test_the_interference_preset_at_four_repetitions_says_no_verdict_and_names_the_fix(tmp_path):
    args = (
        "run",
        "--preset",
        "interference",
        "--repetitions",
        "4",
        "--dry-run",
        "--db",
        str(tmp_path / "x.db"),
    )
    doc = json.loads(run_cli(*args, "--json").stdout)
    assert doc["comparisons"] == 70 and doc["correction"] == "bh"  # 5 workloads x 14 stressor conditions
    assert doc["verdict_reachable"] is False and doc["repetitions_needed"] == 5
    text = run_cli(*args)
    assert text.returncode == 0
    assert "verdict reachable: NO" in text.stdout and "--repetitions 5" in text.stdout
    # 70 condition cells x 4 runs, and each workload's shared baseline min(3 x 4, ceil(sqrt(14) x 4)) = 12
    assert "cells: 75" in text.stdout and "runs: 340" in text.stdout


def test_the_interference_dry_run_gives_the_repetitions_for_power_the_allocation_and_the_duration(tmp_path):
    args = ("run", "--preset", "interference", "--dry-run", "--db", str(tmp_path / "x.db"))
    doc = json.loads(run_cli(*args, "--json").stdout)
    assert doc["verdict_reachable"] is True and doc["runs_per_arm"] == 11
    # 80% power for a 5% effect at the assumed CV of 2% among 70 comparisons, shared baselines at 3 x n
    assert doc["repetitions_for_power"] == 11
    (first, *_) = doc["power"]
    assert first["family_size"] == 70 and first["effect"] == 1.05 and first["power"] >= 0.8
    assert first["reference_runs"] == 33 and first["cv"] == 0.02 and first["cv_source"].startswith("assumed")
    refs = doc["allocation"]["reference_cells"]
    assert doc["allocation"]["rule"] == "sqrt" and len(refs) == 5
    assert all(r == {"comparisons": 14, "runs": 33} for r in refs.values())
    assert doc["runs"] == 70 * 11 + 5 * 33
    assert "repetitions_for_power_duration_s" in doc and doc["repetitions_for_power_duration_s"] is None
    text = run_cli(*args).stdout
    assert "allocation: sqrt; shared reference cells get 33 runs" in text
    assert "repetitions for 80% power: 11" in text


def test_an_unreachable_plan_is_announced_before_the_first_run(tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text(
        'name = "tiny"\n[runs]\nrepetitions = 4\niterations = 2\nwarmup_max_iterations = 0\n'
        "[gates]\nidle = false\ntemperature = false\n"
        '[[workloads]]\nname = "noop"\n'
        '[[conditions]]\nname = "base"\nkind = "baseline"\n'
        '[[conditions]]\nname = "other"\nkind = "baseline"\nbaseline = "base"\n'
    )
    db = tmp_path / "r.db"
    dry = json.loads(run_cli("run", str(plan), "--dry-run", "--json", "--db", str(db)).stdout)
    assert dry["verdict_reachable"] is False and dry["comparisons"] == 1
    proc = run_cli("run", str(plan), "--db", str(db), "--quiet", timeout=300)
    assert proc.returncode == 0, proc.stderr
    first = proc.stderr.splitlines()[0]
    assert first.startswith("warning:") and "no verdict is reachable" in first and "--repetitions 5" in first


def test_dry_run_estimates_the_duration_from_earlier_runs(tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text(
        'name = "tiny"\n[runs]\nrepetitions = 2\niterations = 2\nwarmup_max_iterations = 0\n'
        "[gates]\nidle = false\ntemperature = false\n"
        '[[workloads]]\nname = "noop"\n'
    )
    db = tmp_path / "r.db"
    before = json.loads(run_cli("run", str(plan), "--dry-run", "--json", "--db", str(db)).stdout)
    assert before["estimated_duration_s"] is None
    assert run_cli("run", str(plan), "--db", str(db), "--quiet", timeout=300).returncode == 0
    after = json.loads(run_cli("run", str(plan), "--dry-run", "--json", "--db", str(db)).stdout)
    assert after["estimated_duration_s"] > 0 and "1 of 1 cells" in after["estimate_basis"]


def test_the_pilot_predicts_and_warns_over_the_cap_and_the_cap_stops_the_cell(tmp_path):
    plan = tmp_path / "plan.toml"
    # A program whose value is random (uniform in 1000..66535: a CV near 50%), so that a +-0.1% CI needs far
    # more than 4 runs. A real kernel will not do: noop's runs on a quiet machine can agree to 0.01%, and
    # at that CV 3 runs already meet the precision.
    plan.write_text(
        'name = "adaptive"\n[runs]\nprecision = 0.001\npilot = 3\ncap = 4\n'
        "[gates]\nidle = false\ntemperature = false\n"
        '[[workloads]]\nkind = "program"\nname = "dice"\n'
        'argv = ["sh", "-c", "echo value=$(( $(od -An -N2 -tu2 /dev/urandom) + 1000 ))"]\n'
        'metric = { regex = "value=(?P<v>[0-9]+)", name = "value", unit = "items", better = "higher" }\n'
    )
    db = tmp_path / "r.db"
    proc = run_cli("run", str(plan), "--db", str(db), "--json", timeout=300)
    assert proc.returncode == 0, proc.stderr
    # said after the pilot, before going on
    assert "more than the cap of 4" in proc.stderr and "dice" in proc.stderr
    import sqlite3

    with sqlite3.connect(db) as conn:
        (n,) = conn.execute("SELECT count(*) FROM runs WHERE valid = 1").fetchone()
    assert n == 4  # the pilot's 3, then one more round up to the cap


def test_an_unsupported_workload_is_skipped_and_said_under_unsupported_skip(tmp_path):
    from boardlab.workloads import all_workloads

    afalg = next(w for w in all_workloads() if w.name == "crypto.afalg")
    if afalg.supported:
        pytest.skip("this kernel offers AF_ALG sockets: crypto.afalg runs, nothing to skip")
    plan = tmp_path / "plan.toml"
    plan.write_text(
        'name = "skip"\n[runs]\nrepetitions = 2\niterations = 2\nwarmup_max_iterations = 0\n'
        'unsupported = "skip"\n[gates]\nidle = false\ntemperature = false\n[[workloads]]\nname = "noop"\n'
        '[[workloads]]\nname = "crypto.afalg"\n'
    )
    db = tmp_path / "r.db"
    dry = json.loads(run_cli("run", str(plan), "--dry-run", "--json", "--db", str(db)).stdout)
    assert dry["cells"] == 1 and "AF_ALG" in dry["skipped_workloads"]["crypto.afalg"]
    proc = run_cli("run", str(plan), "--db", str(db), "--quiet", timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert (
        "skipping workload 'crypto.afalg': unsupported: this kernel offers no AF_ALG sockets" in proc.stderr
    )
    import sqlite3

    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT DISTINCT workload FROM cells").fetchall() == [("noop",)]
        env = json.loads(conn.execute("SELECT environment_json FROM campaigns").fetchone()[0])
    assert "crypto.afalg" in env["skipped_workloads"]
    # with nothing else to run, the run is refused (exit 2), and the dry-run exits the same and says why
    lone = tmp_path / "lone.toml"
    lone.write_text(plan.read_text().replace('[[workloads]]\nname = "noop"\n', ""))
    dry_lone = run_cli("run", str(lone), "--dry-run", "--db", str(tmp_path / "y.db"))
    real_lone = run_cli("run", str(lone), "--db", str(tmp_path / "y.db"), "--quiet")
    assert dry_lone.returncode == real_lone.returncode == 2, (dry_lone.stderr, real_lone.stderr)
    assert f"refused here: {lone}: no workload of this plan is supported here" in dry_lone.stderr
    assert f"{lone}: no workload of this plan is supported here" in real_lone.stderr
    assert not (tmp_path / "y.db").exists()
    # without "skip" the plan is refused at load, naming the place and the reason
    plan.write_text(plan.read_text().replace('unsupported = "skip"\n', ""))
    bad = run_cli("run", str(plan), "--db", str(tmp_path / "x.db"))
    assert bad.returncode == 2 and "crypto.afalg is unsupported here" in bad.stderr


def test_conditions_the_board_lacks_are_listed_with_their_reason_and_their_runs_not_counted(tmp_path):
    # the VM tree has no cpufreq: the satellite preset's three governor conditions cannot run there
    args = (
        "run",
        "--preset",
        "andesite",
        "--root",
        str(SYSFS / "vm"),
        "--dry-run",
        "--db",
        str(tmp_path / "x"),
    )
    doc = json.loads(run_cli(*args, "--json").stdout)
    # the VM tree has no cpufreq (three governor conditions) and no crypto engine driver (one)
    skipped = doc["skipped_conditions"]
    assert set(skipped) == {"ondemand", "performance", "conservative", "crypto-engine-off"}
    assert all("no cpufreq driver" in skipped[c] for c in ("ondemand", "performance", "conservative"))
    assert "no kernel driver 'omap-aes'" in skipped["crypto-engine-off"]
    # against a board that has all of them (the BeagleBone Black tree): nothing skipped there, and the
    # skipped conditions' cells, runs and comparisons are not counted here
    full = ("run", "--preset", "andesite", "--root", str(SYSFS / "bbb"), "--dry-run", "--json")
    there = json.loads(run_cli(*full, "--db", str(tmp_path / "x")).stdout)
    assert there["skipped_conditions"] == {}
    assert doc["cells"] < there["cells"] and doc["runs"] < there["runs"]
    assert doc["comparisons"] < there["comparisons"]
    assert doc["verdict_reachable"] is True
    text = run_cli(*args).stdout
    assert (
        "skipped here: condition ondemand: unsupported: no "
        f"{SYSFS / 'vm'}/sys/devices/system/cpu/cpufreq/policy*" in text
    )
    assert f"runs: {doc['runs']}\n" in text


def test_a_plan_whose_comparisons_all_fall_on_unsupported_conditions_is_not_reachable(tmp_path):
    plan = tmp_path / "plan.toml"
    text = (
        'name = "gov"\n[runs]\nrepetitions = 10\nunsupported = "{}"\n[[workloads]]\nname = "noop"\n'
        '[[conditions]]\nname = "base"\nkind = "baseline"\n'
        '[[conditions]]\nname = "perf"\nkind = "governor"\nparams = {{ governor = "performance" }}\n'
        'baseline = "base"\n'
    )
    root = ("--root", str(SYSFS / "vm"))
    for policy in ("skip", "fail"):
        plan.write_text(text.format(policy))
        proc = run_cli("run", str(plan), *root, "--dry-run", "--db", str(tmp_path / "x.db"))
        # the dry-run exits as the run would: 0 where the baseline runs, 2 where the run is refused
        assert proc.returncode == (0 if policy == "skip" else 2), proc.stderr
        assert "cells: 1\nruns: 10\ncomparisons: 0" in proc.stdout  # the perf cell is neither run nor counted
        assert "skipped here: condition perf: unsupported: no " in proc.stdout
        assert "verdict reachable: NO: no verdict is reachable here" in proc.stdout
        doc = json.loads(
            run_cli("run", str(plan), *root, "--dry-run", "--json", "--db", str(tmp_path / "x.db")).stdout
        )
        assert doc["verdict_reachable"] is False
        if policy == "skip":
            assert "none of its 1 comparisons can run on this board" in doc["message"]
            assert doc["refused"] is None
        else:  # the run itself would stop there: the dry-run says so, with the way out, and exits as it
            assert doc["refused"].startswith(f"{plan}: conditions[1] (perf): unsupported: ")
            assert 'unsupported = "skip" runs the rest' in doc["refused"]
            assert f"boardlab run: refused here: {plan}: conditions[1] (perf): unsupported: " in proc.stderr
            assert "a real run stops before its first run" in proc.stderr
            real = run_cli("run", str(plan), *root, "--db", str(tmp_path / "x.db"), "--quiet")
            assert real.returncode == proc.returncode == 2, real.stderr
            assert "conditions[1] (perf): unsupported: " in real.stderr
    assert not (tmp_path / "x.db").exists()


def test_the_governor_evaluation_on_a_board_without_cpufreq_says_no_verdict(tmp_path):
    args = ("run", "--preset", "governor-eval", "--root", str(SYSFS / "vm"), "--dry-run")
    doc = json.loads(run_cli(*args, "--json", "--db", str(tmp_path / "x")).stdout)
    assert set(doc["skipped_conditions"]) == {
        "ondemand",
        "performance",
        "powersave",
        "schedutil",
        "anti-snoop",
        "active-max-idle-min",
    }
    assert doc["verdict_reachable"] is False and doc["comparisons"] == 0
    assert "verdict reachable: yes" not in run_cli(*args, "--db", str(tmp_path / "x")).stdout


def test_power_at_rest_without_a_power_sensor_is_skipped_not_run_and_failed(tmp_path):
    from boardlab.workloads.services import power_unsupported

    why = power_unsupported({"scenario": "rest"})
    if why is None:
        pytest.skip("this machine has a power source: the rest scenario runs here")
    plan = tmp_path / "plan.toml"
    plan.write_text(
        'name = "rest"\n[runs]\nrepetitions = 2\niterations = 2\nwarmup_max_iterations = 0\n'
        'unsupported = "skip"\n[gates]\nidle = false\ntemperature = false\n[[workloads]]\nname = "noop"\n'
        '[[workloads]]\nname = "svc.scenario"\nparams = { scenario = "rest", duration_s = 1.0 }\n'
    )
    db = tmp_path / "r.db"
    dry = json.loads(run_cli("run", str(plan), "--dry-run", "--json", "--db", str(db)).stdout)
    key = "svc.scenario[duration_s=1.0,scenario=rest]@baseline"
    assert dry["skipped_cells"] == {key: why} and dry["cells"] == 1 and dry["runs"] == 2
    proc = run_cli("run", str(plan), "--db", str(db), "--quiet", timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert f"skipping {key}: unsupported: no power source" in proc.stderr
    import sqlite3

    with sqlite3.connect(db) as conn:  # never run, so never failed nor retried
        assert conn.execute(
            "SELECT DISTINCT c.workload FROM runs r JOIN cells c ON c.id = r.cell_id"
        ).fetchall() == [("noop",)]
        env = json.loads(conn.execute("SELECT environment_json FROM campaigns").fetchone()[0])
    assert env["skipped_cells"] == {key: why}
    report = run_cli("report", "--db", str(db), "--format", "md")
    assert "Cells skipped on this board" in report.stdout and "no power source" in report.stdout
    # under unsupported = "fail" the run is refused before anything is written, with the way out
    plan.write_text(plan.read_text().replace('unsupported = "skip"', 'unsupported = "fail"'))
    bad = run_cli("run", str(plan), "--db", str(tmp_path / "y.db"))
    assert bad.returncode == 2 and f"{key}: unsupported here: no power source" in bad.stderr
    assert not (tmp_path / "y.db").exists()


def test_the_pilot_gives_the_repetitions_for_power_at_the_cv_it_measured(tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text(
        'name = "pilot-power"\n[runs]\nprecision = 0.001\npilot = 3\ncap = 4\niterations = 3\n'
        "warmup_max_iterations = 0\n[gates]\nidle = false\ntemperature = false\n"
        '[[workloads]]\nname = "noop"\n'
        '[[conditions]]\nname = "base"\nkind = "baseline"\n'
        '[[conditions]]\nname = "again"\nkind = "baseline"\nbaseline = "base"\n'
    )
    proc = run_cli("run", str(plan), "--db", str(tmp_path / "r.db"), "--json", timeout=300)
    assert proc.returncode == 0, proc.stderr
    (line,) = [x for x in proc.stderr.splitlines() if "pilot: noop:" in x]
    assert "for 80% power to detect a 5.0% effect" in line
    # the pilot's 6 runs give a spread whose upper confidence bound the advice uses, and says so
    assert "(the upper 95% confidence bound of the spread of 6 earlier runs of 2 of its cells)" in line
