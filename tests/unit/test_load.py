"""`boardlab load`: saturation decisions (pure) and a short sweep against the served endpoint."""

from __future__ import annotations

import json

import pytest

from boardlab.errors import InputError
from boardlab.services.load import LoadStep, knee, parse_rates, parse_target, saturation_reason

from helpers import run_cli


def step(target, achieved, errors=0, timeouts=0, p99_ms=1.0) -> LoadStep:
    return LoadStep(
        target,
        "open",
        "constant",
        1,
        True,
        1.0,
        int(target),
        int(achieved),
        errors,
        timeouts,
        0,
        achieved,
        1e5,
        p99_ms * 1e6,
        p99_ms * 1e6,
        1e5,
        2e5,
        1e4,
        None,
        None,
    )


def test_saturation_is_a_missed_rate_an_error_or_a_p99_over_the_slo():
    assert saturation_reason(step(100, 96), None) is None
    assert "95% of 100" in saturation_reason(step(100, 94.9), None)
    assert "1 errors" in saturation_reason(step(100, 100, errors=1), None)
    assert "SLO 5 ms" in saturation_reason(step(100, 100, p99_ms=6), 5.0)
    assert saturation_reason(step(100, 100, p99_ms=6), None) is None


def test_knee_is_the_last_rate_that_held():
    from dataclasses import replace

    steps = [step(100, 100), step(200, 200), replace(step(400, 300), saturated_reason="achieved")]
    assert knee(steps) == 200
    assert knee(steps[2:]) is None


def test_targets_and_rates_are_checked():
    assert parse_target("http://127.0.0.1:8080/vdm").port == 8080
    for bad in ("ftp://x", "http://localhost:80/x", "http://127.0.0.1/x"):
        with pytest.raises(InputError):
            parse_target(bad)
    assert parse_rates("1,10,100") == (1.0, 10.0, 100.0)
    with pytest.raises(InputError):
        parse_rates("1,x")


def test_cli_sweep_against_the_served_endpoint():
    proc = run_cli("load", "--serve", "--rates", "50,200", "--duration-s", "0.5", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["schema"] == 1 and doc["kind"] == "boardlab.load"
    assert [s["target_rate_hz"] for s in doc["steps"]] == [50, 200]
    assert [s["scheduled"] for s in doc["steps"]] == [25, 100]
    assert all(s["errors"] == 0 and s["corrected_p99_ns"] >= s["service_p50_ns"] for s in doc["steps"])


def test_cli_refuses_bad_input_in_one_line():
    proc = run_cli("load")
    assert proc.returncode == 2 and "TARGET URL or --serve" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_cli("load", "--serve", "--rate", "0")
    assert proc.returncode == 2 and "--mode closed" in proc.stderr
