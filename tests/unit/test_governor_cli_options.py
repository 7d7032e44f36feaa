"""The governor CLI's options: an option the command would ignore, an input it would find wrong only after
writing its outputs, or two outputs naming one file, are refused with exit 2 naming the options, before
anything is written."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from helpers import copy_board, run_cli

pytestmark = pytest.mark.spawns  # starts processes: not in make test-unit

NOOP_PLAN = """\
name = "noop"
[runs]
repetitions = 2
iterations = 3
[gates]
idle = false
temperature = false
[[workloads]]
name = "noop"
"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> Path:
    """labels.json of a quick simulated sweep, and noop.db: a campaign that is no sweep."""
    d = tmp_path_factory.mktemp("govcli")
    sw = d / "sweep.json"
    p = run_cli(
        "governor", "sweep", "--sim", "exynos5422", "--quick", "--cluster", "policy0", "--out", str(sw)
    )
    assert p.returncode == 0, p.stderr
    p = run_cli("governor", "label", str(sw), "--out", str(d / "labels.json"))
    assert p.returncode == 0, p.stderr
    (d / "noop.toml").write_text(NOOP_PLAN)
    p = run_cli("run", str(d / "noop.toml"), "--db", str(d / "noop.db"), "--quiet")
    assert p.returncode == 0, p.stderr
    return d


def state_env(tmp_path: Path) -> dict:
    return {**os.environ, "BOARDLAB_STATE_DIR": str(tmp_path / "state")}


def snapshot(root: Path) -> dict[str, str]:
    base = root / "sys/devices/system/cpu/cpufreq"
    return {str(p.relative_to(base)): p.read_text() for p in sorted(base.rglob("*")) if p.is_file()}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def refused(p, *said: str) -> None:
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    for s in said:
        assert s in p.stderr, p.stderr


@pytest.mark.parametrize("db", ["nosuch.db", "noop.db"])
def test_train_checks_its_database_before_writing_its_outputs(lab, tmp_path, db):
    """before: a missing database was found after tz.json and tz.h were written, and a noop campaign took
    the tree as if it were a sweep (exit 0)."""
    path = lab / db
    before = digest(path) if path.exists() else None
    out, c_out = tmp_path / "tz.json", tmp_path / "tz.h"
    p = run_cli("governor", "train", str(lab / "labels.json"), "--out", str(out), "--c-out", str(c_out),
                "--db", str(path))  # fmt: skip
    refused(p, str(path))
    assert "no such results database" in p.stderr or "no valid mem.latency runs" in p.stderr
    assert not out.exists() and not c_out.exists()
    assert (digest(path) if path.exists() else None) == before


def test_train_checks_its_campaign_before_writing_its_outputs(lab, tmp_path):
    out = tmp_path / "tz.json"
    before = digest(lab / "noop.db")
    db = ["--db", str(lab / "noop.db"), "--campaign", "99"]
    p = run_cli("governor", "train", str(lab / "labels.json"), "--out", str(out), *db)
    refused(p, "--campaign 99: not in")
    assert not out.exists() and digest(lab / "noop.db") == before


def test_train_refuses_two_outputs_naming_one_file(lab, tmp_path):
    """before: --out t6.json --c-out t6.json exited 0 leaving only the C."""
    out = tmp_path / "t6.json"
    p = run_cli("governor", "train", str(lab / "labels.json"), "--out", str(out), "--c-out",
                str(tmp_path / "." / "t6.json"))  # fmt: skip
    refused(p, "--out", "--c-out", "are the same file")
    assert not out.exists()
    out.write_text("mine")
    (tmp_path / "link.h").symlink_to(out)
    p = run_cli("governor", "train", str(lab / "labels.json"), "--out", str(out), "--c-out",
                str(tmp_path / "link.h"))  # fmt: skip
    refused(p, "--out", "--c-out", "are the same file")
    assert out.read_text() == "mine"


@pytest.mark.parametrize("command", ["label", "train"])
def test_campaign_without_db_is_refused(lab, tmp_path, command):
    """before: --campaign without --db was ignored."""
    given = ["--campaign", "3", str(lab / ("sweep.json" if command == "label" else "labels.json"))]
    p = run_cli("governor", command, *given, "--out", str(tmp_path / "o.json"))
    refused(p, "--campaign 3", "--campaign goes with --db")
    assert not (tmp_path / "o.json").exists()


@pytest.mark.parametrize(
    ("args", "said"),
    [  # before: ondemand ran ignoring the anti-snoop options, and a nan threshold was taken
        (("--policy", "ondemand", "--t1", "nan"), "--t1: only with --policy anti-snoop, not ondemand"),
        (("--policy", "conservative", "--tree", "tree.json"), "--tree: only with --policy anti-snoop"),
        (("--policy", "ondemand", "--t2", "0.1", "--cci-source", "policy0=3"), "--t2, --cci-source: only"),
        (("--policy", "anti-snoop", "--t1", "nan"), "--t1 nan: expected a finite threshold"),
        (("--policy", "anti-snoop", "--t2", "inf"), "--t2 inf: expected a finite threshold"),
        (("--policy", "anti-snoop", "--t1", "-1"), "--t1 -1: expected a finite threshold"),
    ],
)
def test_run_refuses_anti_snoop_options_elsewhere_and_thresholds_that_are_no_number(tmp_path, args, said):
    xu3 = copy_board("odroid-xu3", tmp_path)
    before = snapshot(xu3)
    p = run_cli("governor", "run", "--root", str(xu3), "--duration-s", "1", *args, env=state_env(tmp_path))
    refused(p, said)
    assert snapshot(xu3) == before


@pytest.mark.parametrize(
    ("args", "said"),
    [  # before: "unsupported" (exit 1) where cpufreq is missing, the option never looked at
        (("--policy", "ondemand", "--wait", "-1"), "--wait -1: expected 0 to"),
        (("--policy", "ondemand", "--wait", "nan"), "--wait nan: expected 0 to"),
        (("--policy", "anti-snoop", "--cci-source", "garbage"), "--cci-source: expected POLICY=N pairs"),
    ],
)
def test_run_checks_its_options_before_cpufreq(tmp_path, args, said):
    vm = copy_board("vm", tmp_path)
    p = run_cli("governor", "run", "--root", str(vm), *args, env=state_env(tmp_path))
    refused(p, said)


def test_the_doc_quotes_what_run_says_without_cpufreq(tmp_path):
    vm = copy_board("vm", tmp_path)
    p = run_cli("governor", "run", "--root", str(vm), "--policy", "ondemand", env=state_env(tmp_path))
    assert p.returncode == 1 and "unsupported: no cpufreq policy under " in p.stderr, p.stderr
    doc = " ".join((Path(__file__).parents[2] / "docs/governor.md").read_text().split())
    assert "`unsupported: no cpufreq policy under /sys/devices/system/cpu/cpufreq`" in doc


@pytest.mark.parametrize(
    ("args", "said"),
    [  # before: each was accepted and ignored (exit 0)
        (("--out", "o.json"), "--out: only with --sim"),
        (("--runs", "3"), "--runs: only with --sim"),
        (("--quick",), "--quick: only with --sim"),
        (("--sim", "am335x", "--plan-out", "p.toml"), "--plan-out: not with --sim am335x"),
        (("--sim", "am335x", "--bus-hz", "max", "--out", "o.json"), "--bus-hz: not with --sim"),
        (("--sim", "am335x", "--root", "xu3", "--out", "o.json"), "--root: not with --sim"),
        (("--sim", "am335x", "--quick", "--runs", "3", "--out", "o.json"), "--runs 3 and --quick: give one"),
        (("--root", "xu3", "--cluster", "policy0", "--bus-hz", "max"), "--bus-hz goes with --plan-out"),
    ],
)
def test_sweep_refuses_the_options_of_the_other_kind_of_sweep(tmp_path, args, said):
    copy_board("odroid-xu3", tmp_path).rename(tmp_path / "xu3")
    p = run_cli("governor", "sweep", *args, cwd=tmp_path)
    refused(p, said)
    assert not (tmp_path / "o.json").exists() and not (tmp_path / "p.toml").exists()


def test_sweep_keeps_the_combinations_the_doc_gives(tmp_path):
    xu3 = copy_board("odroid-xu3", tmp_path)
    plan = tmp_path / "sweep-a15.toml"
    p = run_cli("governor", "sweep", "--root", str(xu3), "--cluster", "policy4", "--plan-out", str(plan),
                "--bus-hz", "max")  # fmt: skip
    assert p.returncode == 0 and plan.exists(), p.stderr
    p = run_cli("governor", "sweep", "--sim", "am335x", "--runs", "2", "--out", str(tmp_path / "s.json"))
    assert p.returncode == 0 and (tmp_path / "s.json").exists(), p.stderr
