"""`boardlab info` lists every power source with what it measures, and why there is none."""

from __future__ import annotations

import json

import pytest

from helpers import SYSFS, run_cli

KEYS = {"name", "kind", "scope", "unit", "update_interval_s", "resolution", "measured"}


def info_json(root) -> dict:
    proc = run_cli("info", "--json", "--root", str(root))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize(
    "board, primary, scope, kind",
    [
        ("odroid-xu3", "hwmon:rails", "rail", "power-reading"),
        ("jetson-orin", "hwmon:VDD_IN", "board", "power-reading"),
        ("intel-rapl", "rapl:psys", "board", "energy-counter"),
    ],
)
def test_power_sources_in_json(board, primary, scope, kind):
    doc = info_json(SYSFS / board)
    srcs = doc["power_sources"]
    assert srcs and all(KEYS <= set(s) for s in srcs)
    [p] = [s for s in srcs if s["primary"]]
    assert (p["name"], p["scope"], p["kind"], p["measured"]) == (primary, scope, kind, True)
    assert doc["energy"] == {"supported": True, "reason": None}


def test_the_vm_tree_has_no_power_source_and_says_why():
    doc = info_json(SYSFS / "vm")
    assert doc["power_sources"] == []
    assert doc["energy"]["supported"] is False
    assert doc["energy"]["reason"].startswith("unsupported: no power source")
    text = run_cli("info", "--root", str(SYSFS / "odroid-xu3")).stdout
    assert "Power sources" in text and "hwmon:rails *" in text and "rest of the board is not measured" in text


def test_why_there_is_no_power_source_is_wrapped_to_the_terminal():
    """The reason names each kind of source tried, about 300 characters: one line of it overran every other
    section's width."""
    import os

    proc = run_cli("info", "--root", str(SYSFS / "vm"), env={**os.environ, "COLUMNS": "80"})
    assert proc.returncode == 0, proc.stderr
    section = proc.stdout.split("Power sources (energy per run)\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert len(section) > 1 and all(len(line) <= 80 and line.startswith("  ") for line in section), section
    reason = info_json(SYSFS / "vm")["energy"]["reason"]
    assert " ".join(line.strip() for line in section) == reason
