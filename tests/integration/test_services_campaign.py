"""The vehicle-services study end to end: a small plan of svc.scenario cells through `boardlab run`, then
the report's services section, in Markdown and text. The full preset is `boardlab run --preset victory`."""

from __future__ import annotations

import json

import pytest

from helpers import RESULT, run_cli

pytestmark = pytest.mark.integration

PLAN = """
name = "victory-mini"
seed = 4
[runs]
repetitions = 2
order = "interleave"
[gates]
# no idle gate: nothing here is a timing claim, and in `make test` the other xdist worker keeps the machine
# busy, so each run waited out the whole 2 s timeout
idle = false
[[workloads]]
name = "svc.scenario"
params = { scenario = "position", source = "nmea", read_mode = "canonical", duration_s = 2.5 }
[[workloads]]
name = "svc.scenario"
params = { scenario = "soap", mode = "closed", rate_hz = 20.0, duration_s = 1.5 }
"""


def test_scenarios_run_as_cells_and_the_report_has_the_services_section(tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    db = tmp_path / "v.db"
    proc = run_cli("run", str(plan), "--db", str(db), "--json", timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["status"] == "complete" and out["runs_done"] == 4
    md = run_cli("report", "--db", str(db), "--format", "md")
    assert md.returncode == 0, md.stderr
    text = md.stdout
    assert "## Vehicle services" in text
    assert "| Position, nmea (canonical reads) | 2 |" in text
    assert "| SOAP closed loop 20 Hz, keep-alive | 2 | 20.0 |" in text
    assert "Energy per message and power at rest vs operating:" in text
    txt = run_cli("report", "--db", str(db), "--format", "text")
    assert txt.returncode == 0 and "Vehicle services" in txt.stdout
    # each run keeps its services' per-second samples, and the HTML report draws them over time
    import sqlite3

    with sqlite3.connect(db) as conn:
        query = f"SELECT w.worker_json FROM runs r{RESULT} WHERE r.valid = 1"
        docs = [json.loads(r[0]) for r in conn.execute(query)]
    series = [s for d in docs for s in d.get("series", [])]
    assert {s["metric"] for s in series} >= {"cpu_pct_one_cpu", "rss_bytes"}
    assert all(len(s["points"]) >= 1 and s["label"] for s in series)
    html = run_cli("report", "--db", str(db), "-o", str(tmp_path / "r.html"))
    assert html.returncode == 0, html.stderr
    page = (tmp_path / "r.html").read_text()
    assert "Per-second series" in page and "cpu_pct_one_cpu per second" in page


def test_victory_preset_is_valid_and_scales(tmp_path):
    from boardlab.campaign.plan import apply_overrides, load_plan
    from boardlab.workloads import all_workloads

    catalog = {w.name: w for w in all_workloads()}
    plan = load_plan(None, "victory", catalog)
    scenarios = [w.params["scenario"] for w in plan.workloads]
    assert scenarios.count("position") == 4 and "three" in scenarios and scenarios.count("soap") == 4
    assert scenarios.count("soap-saturation") == 2 and plan.runs.repetitions == 10
    # every service with a sensor has its sensor-vs-synthetic pair: Position (GPS), Orientation (INS over UDP)
    sources = {(w.params["scenario"], w.params.get("source", "synthetic")) for w in plan.workloads}
    assert sources >= {("position", "synthetic"), ("position", "nmea"), ("orientation", "synthetic"),
                       ("orientation", "ins")}  # fmt: skip
    scaled = apply_overrides(plan, catalog, scale=0.1)
    assert {w.params["duration_s"] for w in scaled.workloads} == {6.0} and scaled.runs.repetitions == 5


def test_scenario_runs_inside_the_netns_placement(tmp_path, netns):
    """One repetition: every run of the netns condition is checked alike (its own namespace, the services
    inside it, what they exchanged), and one run goes through the whole path; the plan's second repetition
    only doubled the minutes."""
    plan = tmp_path / "plan.toml"
    plan.write_text(
        PLAN.split("[[workloads]]")[0]
        + '[[workloads]]\nname = "svc.scenario"\n'
        + 'params = { scenario = "three", duration_s = 2.0 }\n'
        + '[[conditions]]\nname = "ns"\nkind = "netns"\nparams = { mode = "private" }\nbaseline = ""\n'
    )
    db = tmp_path / "v.db"
    args = ["run", str(plan), "--db", str(db), "--json", "--workload", "svc.scenario", "--repetitions", "1"]
    proc = run_cli(*args, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["status"] == "complete" and out["runs_done"] == 2  # the baseline's run and the namespace's
    import sqlite3

    rows = (
        sqlite3.connect(db)
        .execute(
            "SELECT w.worker_json, r.condition_state_json FROM runs r JOIN cells c ON c.id = r.cell_id"
            f"{RESULT} WHERE c.condition = 'ns'"
        )
        .fetchall()
    )
    assert rows
    for worker, state in rows:
        doc, st = json.loads(worker), json.loads(state)
        assert doc["ok"] and doc["info"]["netns"] == st["netns"] and st["netns"].startswith("boardlab-")
        assert doc["info"]["services"]["sub"]["by_kind"]["DirectionOfTravel"]["unique"] >= 1


def test_soak_is_one_long_run_per_cell_and_refuses_bad_durations(tmp_path):
    from boardlab.cli.run import _soak_s

    assert _soak_s("1h") == 3600 and _soak_s("30m") == 1800 and _soak_s("90s") == 90 and _soak_s("45") == 45
    db = tmp_path / "x.db"
    proc = run_cli("run", "--preset", "victory", "--soak", "1x", "--db", str(db))
    assert proc.returncode == 2 and "--soak '1x'" in proc.stderr and not db.exists()
    proc = run_cli("run", "--preset", "victory", "--soak", "1h", "--duration", "5", "--db", str(db))
    assert proc.returncode == 2 and "drop --duration" in proc.stderr and not db.exists()
