"""`boardlab list`: the catalog a user browses before writing a plan."""

from __future__ import annotations

import json
import shutil

import pytest

from helpers import SYSFS, run_cli, run_kern


def test_list_json_matches_the_kernel_catalog(kern):
    proc = run_cli("list", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["schema"] == 1
    listed = {w["name"]: w for w in doc["workloads"]}
    catalog = json.loads(run_kern(kern, "--list", "--json").stdout)
    for k in catalog["kernels"]:
        w = listed[k["name"]]
        assert w["runner"] == "kern"
        assert w["supported"] == k["supported"] and w["reason"] == k["reason"]
        assert [m["name"] for m in w["metrics"]] == [m["name"] for m in k["metrics"]]
        assert [p["name"] for p in w["params"]] == [p["name"] for p in k["params"]]


def test_list_table_shows_status_and_primary_metric():
    proc = run_cli("list", "--verbose")
    assert proc.returncode == 0, proc.stderr
    assert "WORKLOAD" in proc.stdout and "STATUS" in proc.stdout
    assert "noop" in proc.stdout and "ns_per_rep (ns)" in proc.stdout


def test_list_filters_by_family():
    doc = json.loads(run_cli("list", "--json", "--family", "core").stdout)
    assert {w["family"] for w in doc["workloads"]} == {"core"}


def test_an_unknown_family_and_a_root_without_conditions_are_usage_errors(tmp_path):
    # before: an empty table, and this machine's workloads for a --root it ignored, both exit 0
    proc = run_cli("list", "--family", "nosuch")
    assert proc.returncode == 2 and "--family nosuch: no such family; families: " in proc.stderr
    assert "core" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_cli("list", "--root", str(SYSFS / "vm"))
    assert proc.returncode == 2 and "--root goes with --conditions" in proc.stderr, proc.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        # each was the first listing, exit 0, the second option ignored (as --root alone was before)
        (("--presets", "--conditions"), "--presets and --conditions are two listings: give one of them"),
        (("--presets", "--family", "mem"), "--family goes with the workloads' listing, not --presets"),
        (("--conditions", "--family", "mem"), "--family goes with the workloads' listing, not --conditions"),
        (("--presets", "-v"), "-v/--verbose goes with the workloads' listing, not --presets"),
        (("--presets", "--root", str(SYSFS / "vm")), "--root goes with --conditions: presets are the same"),
    ],
)
def test_options_of_another_listing_are_usage_errors(args, said):
    proc = run_cli("list", *args)
    assert proc.returncode == 2 and said in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stdout == ""


def test_list_presets_shows_every_bundled_plan_with_its_description():
    doc = json.loads(run_cli("list", "--presets", "--json").stdout)
    names = {p["name"]: p["description"] for p in doc["presets"]}
    assert {"quick", "andesite"} <= set(names)
    assert all(names.values()), "a preset without a description"


def test_list_conditions_json_lists_every_kind_with_its_declared_parameters():
    from boardlab.conditions import condition_kinds

    proc = run_cli("list", "--conditions", "--json", "--root", str(SYSFS / "odroid-xu3"))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["schema"] == 1
    kinds = {k["name"]: k for k in doc["conditions"]}
    assert set(kinds) == set(condition_kinds())
    for name, kind in condition_kinds().items():
        assert [p["name"] for p in kinds[name]["params"]] == [p.name for p in kind.params]
    stressor = {p["name"]: p for p in kinds["stressor"]["params"]}
    assert stressor["stressor"]["required"] and "memcpy" in stressor["stressor"]["choices"]
    assert stressor["workers"]["min"] == 1 and stressor["workers"]["default"] == 1
    assert stressor["warmup_s"]["unit"] == "s"
    gov = {p["name"]: p for p in kinds["governor"]["params"]}
    assert gov["frequency_khz"]["unit"] == "kHz" and gov["frequency_khz"]["words"] == ["min", "max"]
    # the Odroid-XU3 tree has cpufreq (two clusters) and two devfreq devices
    assert kinds["governor"]["supported"] and kinds["governor-daemon"]["supported"]
    assert kinds["devfreq"]["supported"]
    assert any("10c20000.memory-controller" in n for n in kinds["devfreq"]["limits"])


def test_list_conditions_says_why_a_kind_is_unsupported_on_a_board_without_cpufreq():
    doc = json.loads(run_cli("list", "--conditions", "--json", "--root", str(SYSFS / "vm")).stdout)
    kinds = {k["name"]: k for k in doc["conditions"]}
    for name in ("governor", "governor-daemon"):
        assert not kinds[name]["supported"]
        assert kinds[name]["reason"].startswith("unsupported: ") and "cpufreq" in kinds[name]["reason"]
    assert not kinds["devfreq"]["supported"] and "devfreq" in kinds["devfreq"]["reason"]
    assert kinds["baseline"]["supported"] and kinds["baseline"]["params"] == []
    stress_ng = shutil.which("stress-ng") is not None
    assert kinds["stressor"]["supported"] is stress_ng
    if not stress_ng:
        assert "stress-ng is not installed" in kinds["stressor"]["reason"]


def test_list_conditions_text_shows_parameters_units_and_status():
    proc = run_cli("list", "--conditions", "--root", str(SYSFS / "vm"))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "KIND" in out and "STATUS" in out
    assert "warmup_s (s)  [0..600]" in out and "frequency_khz (kHz)  [1..]|min|max" in out
    governor = next(line for line in out.splitlines() if line.startswith("governor "))
    assert "unsupported" in governor
    assert "unsupported: no " in out and "cpufreq/policy*" in out


def test_list_conditions_with_a_root_that_is_no_board_is_a_usage_error(tmp_path):
    proc = run_cli("list", "--conditions", "--root", str(tmp_path / "nowhere"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
