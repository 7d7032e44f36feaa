"""`boardlab load`: saturation decisions (pure) and a short sweep against the served endpoint."""

from __future__ import annotations

import json

import pytest

from boardlab.errors import InputError
from boardlab.services.load import LoadStep, knee, parse_rates, parse_target, saturation_reason

from helpers import run_cli

pytestmark = pytest.mark.spawns  # starts processes: not in make test-unit


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
    # an open bracket and a port over 65535 were urlsplit's ValueError, an internal error
    for bad in (
        "ftp://x",
        "http://localhost:80/x",
        "http://127.0.0.1/x",
        "http://[::1",
        "http://127.0.0.1:99999/x",
    ):
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
    # out of svc.mgmt's ranges, the server never started: exit 1, "connection refused"
    proc = run_cli("load", "--serve", "--serve-stall-every-ms", "-5", "--duration-s", "0.2")
    assert proc.returncode == 2 and "--serve-stall-every-ms -5: expected 0" in proc.stderr, proc.stderr
    proc = run_cli("load", "--serve", "--serve-stall-ms", "60001", "--duration-s", "0.2")
    assert proc.returncode == 2 and "--serve-stall-ms 60001: expected 0 to 60000" in proc.stderr, proc.stderr
    proc = run_cli("load", "--serve", "--samples", "-", "--json", "--duration-s", "0.2")  # stdout: neither
    assert proc.returncode == 2 and "both write to stdout" in proc.stderr, proc.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        # was the default 100 Hz, as if --rates had not been given
        (("--serve", "--rates", ""), "--rates '': expected comma-separated rates in Hz"),
        (("--serve", "--rate", "10", "--rates", ""), "give --rate or --rates, not both"),
        # each had no effect: freezes that never come, or of an endpoint that is not boardlab's
        (
            ("--serve", "--serve-stall-ms", "300"),
            "--serve-stall-ms 300 is the length of each freeze of --serve-stall-every-ms: give that too",
        ),
        (
            ("http://127.0.0.1:9/vdm", "--serve-stall-every-ms", "100"),
            "freeze boardlab's own endpoint: give --serve instead of TARGET",
        ),
    ],
)
def test_cli_refuses_options_that_would_have_no_effect(tmp_path, args, said):
    proc = run_cli("load", *args, "--duration-s", "0.2", "--samples", str(tmp_path / "s.csv"))
    assert proc.returncode == 2 and said in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stdout == "" and not (tmp_path / "s.csv").exists()


def _closed_port() -> int:
    """A loopback port nobody listens on (bound, then closed)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_until_saturation_with_every_request_failing_records_saturation_at_the_first_rate():
    port = _closed_port()
    url = f"http://127.0.0.1:{port}/vdm"
    proc = run_cli("load", url, "--until-saturation", "--rates", "20,40", "--duration-s", "0.3", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert [s["target_rate_hz"] for s in doc["steps"]] == [20]  # stops at the first: it saturated
    first = doc["steps"][0]
    assert first["ok"] == 0 and first["errors"] == first["scheduled"] == 6
    assert first["saturated_reason"] == "6 errors and 0 timeouts"
    assert doc["knee_rate_hz"] is None and doc["saturated_at_hz"] == 20
    assert "Connection refused" in first["first_error"]
    text = run_cli("load", url, "--until-saturation", "--rates", "20", "--duration-s", "0.3")
    assert text.returncode == 0 and "knee: no rate held; saturated at 20 Hz (6 errors" in text.stdout
    # without a saturation search, a rate where nothing succeeded is a measurement failure
    plain = run_cli("load", url, "--rate", "20", "--duration-s", "0.3")
    assert plain.returncode == 1 and "no request to" in plain.stderr and "Traceback" not in plain.stderr


def test_per_request_samples_file_has_every_request_with_units_and_schema(tmp_path):
    import csv

    out = tmp_path / "dir with space" / "req.csv"
    out.parent.mkdir()
    proc = run_cli(
        "load", "--serve", "--rates", "50,100", "--duration-s", "0.4", "--samples", str(out), "--json"
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    lines = out.read_text().splitlines()
    assert lines[0].startswith("# boardlab load requests, schema 1: times in ns")
    rows = list(csv.DictReader(lines[1:]))
    assert list(rows[0]) == [
        "target_rate_hz",
        "request",
        "intended_start_ns",
        "actual_start_ns",
        "end_ns",
        "corrected_latency_ns",
        "service_time_ns",
        "outcome",
        "http_status",
    ]
    by_rate = {r: [x for x in rows if float(x["target_rate_hz"]) == r] for r in (50, 100)}
    assert [len(v) for v in by_rate.values()] == [s["scheduled"] for s in doc["steps"]] == [20, 40]
    for r, reqs in by_rate.items():
        starts = sorted(int(x["intended_start_ns"]) for x in reqs)
        assert starts == [round(i * 1e9 / r) for i in range(len(reqs))]  # the schedule, exactly
        for x in reqs:
            assert x["outcome"] == "ok" and x["http_status"] == "200"
            i, a, e = int(x["intended_start_ns"]), int(x["actual_start_ns"]), int(x["end_ns"])
            assert int(x["corrected_latency_ns"]) == e - i and int(x["service_time_ns"]) == e - a
            assert int(x["corrected_latency_ns"]) >= int(x["service_time_ns"]) > 0
    # the summary's count is the file's
    assert sum(s["ok"] for s in doc["steps"]) == len(rows)
    bad = run_cli("load", "--serve", "--rate", "10", "--samples", str(tmp_path / "no" / "x.csv"))
    assert bad.returncode == 2 and "does not exist" in bad.stderr


def test_samples_on_stdout_leave_it_to_the_csv_and_the_table_on_stderr():
    proc = run_cli("load", "--serve", "--rate", "50", "--duration-s", "0.2", "--samples", "-")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("# boardlab load requests, schema 1")
    assert lines[1].startswith("target_rate_hz,")
    assert all("," in line for line in lines[1:]) and len(lines) == 2 + 10  # 50 Hz for 0.2 s
    assert "achieved_hz" in proc.stderr and "corr_p99_ms" in proc.stderr
