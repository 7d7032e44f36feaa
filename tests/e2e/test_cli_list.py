"""`boardlab list`: the catalog a user browses before writing a plan."""

from __future__ import annotations

import json

from helpers import run_cli, run_kern


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


def test_list_presets_shows_every_bundled_plan_with_its_description():
    doc = json.loads(run_cli("list", "--presets", "--json").stdout)
    names = {p["name"]: p["description"] for p in doc["presets"]}
    assert {"quick", "andesite"} <= set(names)
    assert all(names.values()), "a preset without a description"
