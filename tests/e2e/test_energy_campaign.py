"""A campaign on the Odroid-XU3 fixture with scripted INA231 sensors: energy, idle power, GFLOPS/W, nJ/bit and
EDP per cell with CIs, in the store, the exports and every report format. And on this VM's tree, where
there is no power source: every energy figure is unsupported with its reason, never zero.

The scripted sensor follows the worker like a real rail: the A15 rail reads 5.03 W while a boardlab-kern
started by the campaign runs and 2.02 W otherwise (the data-stream study's load and idle power), written
into the fixture's power1_input files as the INA231 driver presents them.
"""

from __future__ import annotations

import csv
import io
import json
import os
import sqlite3
import sys
import threading
from pathlib import Path

import pytest
from energy_sim import copy_tree

from helpers import run_cli

IDLE_W, LOAD_W = 2.02, 5.03

PLAN = """
name = "energy-odroid"
seed = 7
[runs]
repetitions = 4
iterations = 5
cpu = "none"
[gates]
idle_window_s = 0.2
timeout_s = 5
[energy]
idle_window_s = 0.6
[[workloads]]
name = "scimark.mc"
[[workloads]]
name = "mibench.crc32"
[[conditions]]
name = "performance"
kind = "governor"
params = { governor = "performance" }
"""


class WorkerFollowingRail:
    """Writes the A15 rail's power1_input (uW): LOAD_W while the CLI process has a boardlab-kern child."""

    def __init__(self, root: Path):
        self.files = [
            root / "sys/class/hwmon" / h / "power1_input" for h in ("hwmon0", "hwmon1", "hwmon2", "hwmon3")
        ]
        self.pid: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.loaded_ticks = 0

    def _busy(self) -> bool:
        if self.pid is None:
            return False
        try:
            kids = Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text().split()
        except OSError:
            return False
        for k in kids:
            try:
                if Path(f"/proc/{k}/comm").read_text().strip() == "boardlab-kern":
                    return True
            except OSError:
                continue
        return False

    def _write(self, path: Path, uw: int) -> None:
        tmp = path.with_name(path.name + ".new")
        tmp.write_text(f"{uw}\n")
        os.replace(tmp, path)  # a reader sees a whole value, as from sysfs

    def _run(self) -> None:
        while not self._stop.is_set():
            busy = self._busy()
            self.loaded_ticks += busy
            self._write(self.files[0], round((LOAD_W if busy else IDLE_W) * 1e6))
            self._stop.wait(0.002)

    def __enter__(self):
        for f in self.files:
            self._write(f, 0)
        self._write(self.files[0], round(IDLE_W * 1e6))
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def _run_campaign(root: Path, plan: Path, db: Path, rail: WorkerFollowingRail | None):
    import subprocess

    argv = [
        sys.executable,
        "-m",
        "boardlab",
        "run",
        str(plan),
        "--root",
        str(root),
        "--db",
        str(db),
        "--quiet",
    ]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if rail is not None:
        rail.pid = proc.pid
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err + out
    return out + err


@pytest.fixture(scope="module")
def odroid_campaign(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("energy campaign")  # a path with a space
    root = copy_tree("odroid-xu3", tmp)
    plan = tmp / "plan.toml"
    plan.write_text(PLAN)
    db = tmp / "e.db"
    with WorkerFollowingRail(root) as rail:
        _run_campaign(root, plan, db, rail)
    assert rail.loaded_ticks > 0
    return tmp, db


def _rows(db: Path, sql: str):
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_every_run_has_its_energy_and_the_idle_windows_read_idle_power(odroid_campaign):
    _, db = odroid_campaign
    runs = _rows(db, "SELECT r.id, r.valid, r.wall_ns FROM runs r")
    energy = {r["run_id"]: r for r in _rows(db, "SELECT * FROM run_energy WHERE source = 'hwmon:rails'")}
    assert len(runs) == 16 and all(r["id"] in energy for r in runs if r["valid"])
    for r in runs:
        e = energy[r["id"]]
        assert e["end_ns"] - e["start_ns"] == r["wall_ns"]  # clipped to the worker's exact life
        assert e["method"] == "trapezoid" and e["samples"] > 0 and e["quantization_j"] > 0
        # the rail reads 2.02 W or 5.03 W: the average lies between, mostly loaded
        assert IDLE_W - 0.01 <= e["power_avg_w"] <= LOAD_W + 0.01
        assert e["power_avg_w"] > 4.0, "the rail follows the worker"
    idle = _rows(db, "SELECT * FROM energy_idle ORDER BY block")
    assert len(idle) == 5  # before each of the 4 rounds and after the last
    assert all(abs(w["power_w"] - IDLE_W) < 0.01 for w in idle)
    assert all("idle" in (w["gate_detail"] or "") for w in idle)  # gated like a run
    src = {r["name"]: r for r in _rows(db, "SELECT * FROM energy_sources")}
    spec = json.loads(src["hwmon:rails"]["spec_json"])
    assert src["hwmon:rails"]["is_primary"] and spec["scope"] == "rail" and spec["measured"]


def test_exports_carry_energy_idle_dynamic_edp_and_efficiency_derived_from_units(odroid_campaign):
    tmp, db = odroid_campaign
    out = tmp / "runs.json"
    proc = run_cli("export", "--db", str(db), "--format", "json", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    recs = [r for r in doc["runs"] if r["valid"]]
    assert recs
    units = set()
    for r in recs:
        t = r["wall_ns"] / 1e9
        assert r["energy_source"] == "hwmon:rails" and r["energy_reason"] is None
        assert r["power_idle_w"] == pytest.approx(IDLE_W, abs=0.01)
        assert r["energy_dynamic_j"] == pytest.approx(r["energy_j"] - r["power_idle_w"] * t, rel=1e-9)
        assert r["edp_js"] == pytest.approx(r["energy_j"] * t, rel=1e-9)
        assert r["ed2p_js2"] == pytest.approx(r["energy_j"] * t * t, rel=1e-9)
        p_dyn = r["energy_dynamic_j"] / t
        if r["unit"] == "MFLOPS":
            assert r["efficiency_unit"] == "GFLOPS/W"
            assert r["efficiency_dynamic"] == pytest.approx(r["value"] / 1000 / p_dyn, rel=1e-9)
            assert r["efficiency_total"] == pytest.approx(r["value"] / 1000 / (r["energy_j"] / t), rel=1e-9)
        else:
            assert r["unit"] == "MB/s" and r["efficiency_unit"] == "nJ/bit"
            assert r["efficiency_dynamic"] == pytest.approx(p_dyn / (r["value"] * 8e6) * 1e9, rel=1e-9)
        units.add(r["efficiency_unit"])
    assert units == {"GFLOPS/W", "nJ/bit"}
    csv_out = tmp / "runs.csv"
    assert run_cli("export", "--db", str(db), "--format", "csv", "-o", str(csv_out)).returncode == 0
    rows = list(csv.DictReader(io.StringIO(csv_out.read_text().split("\n", 1)[1])))
    assert all(float(r["energy_j"]) > 0 for r in rows if r["valid"] == "True")
    pq = pytest.importorskip("pyarrow.parquet")
    pq_out = tmp / "runs.parquet"
    assert run_cli("export", "--db", str(db), "--format", "parquet", "-o", str(pq_out)).returncode == 0
    table = pq.read_table(pq_out)
    assert "energy_dynamic_j" in table.column_names and "efficiency_dynamic" in table.column_names


def test_every_report_format_has_the_energy_section_with_cis_per_cell_and_governor(odroid_campaign):
    from boardlab.analysis.core import analyze
    from boardlab.store import Store

    tmp, db = odroid_campaign
    with Store.open(db, create=False) as store:
        a = analyze(store, 1)
    study = a.study("boardlab.analysis.studies.energy")
    assert study.primary == "hwmon:rails" and study.reason is None
    assert len(study.cells) == 4  # 2 workloads x (baseline, performance governor)
    for c in study.cells:
        e = c.estimates
        assert e["energy_j"].n == 4 and e["energy_j"].ci_low <= e["energy_j"].median <= e["energy_j"].ci_high
        assert e["power_idle_w"].median == pytest.approx(IDLE_W, abs=0.01)
        assert e["edp_js"].ci_low is not None and e["efficiency_dynamic"].ci_low is not None
        if c.unit == "MFLOPS":
            assert c.efficiency.unit == "GFLOPS/W"
    assert set(study.traces) == {"baseline", "performance"}
    [(cond, base, n, e_ratio, edp_ratio)] = study.by_condition  # energy and EDP per governor
    assert (cond, base, n) == ("performance", "baseline", 2) and e_ratio > 0 and edp_ratio > 0

    md = run_cli("report", "--db", str(db), "--format", "md")
    assert md.returncode == 0, md.stderr
    section = md.stdout.split("## Energy", 1)[1]
    for needle in (
        "hwmon:rails",
        "GFLOPS/W",
        "nJ/bit",
        "EDP [J·s]",  # edp_js in words
        "95% CI",
        "@ performance",
        "@ baseline",
        "Idle power",
    ):
        assert needle in section, needle
    text = run_cli("report", "--db", str(db), "--format", "text")
    assert "energy (hwmon:rails)" in text.stdout and "GFLOPS/W" in text.stdout
    html = tmp / "r.html"
    proc = run_cli("report", "--db", str(db), "-o", str(html))
    assert proc.returncode == 0, proc.stderr
    page = html.read_text()
    energy = page.split("<h2>Energy</h2>", 1)[1].split("<h2>", 1)[0]
    assert "Energy per run" in energy and "Energy-delay product" in energy
    assert (
        "Power during a median run: baseline" in energy and "Power during a median run: performance" in energy
    )
    assert energy.count("<svg") == 4  # energy and EDP boxplots, one power trace per condition


def test_on_this_vm_every_energy_figure_is_unsupported_with_its_reason_never_zero(tmp_path):
    root = copy_tree("vm", tmp_path)
    plan = tmp_path / "plan.toml"
    plan.write_text(
        'name = "vm-energy"\n[runs]\nrepetitions = 2\niterations = 3\ncpu = "none"\n'
        '[gates]\nidle_window_s = 0.1\ntimeout_s = 2\n[[workloads]]\nname = "noop"\n'
    )
    db = tmp_path / "vm.db"
    out = _run_campaign(root, plan, db, None)
    assert "energy: unsupported: no power source" in out
    proc = run_cli("export", "--db", str(db), "--format", "json", "-o", str(tmp_path / "x.json"))
    assert proc.returncode == 0, proc.stderr
    for r in json.loads((tmp_path / "x.json").read_text())["runs"]:
        assert r["energy_j"] is None and r["efficiency_total"] is None and r["power_idle_w"] is None
        assert r["energy_reason"].startswith("unsupported: no power source")
        assert "powercap" in r["energy_reason"]
    md = run_cli("report", "--db", str(db), "--format", "md").stdout
    assert "**Energy: unsupported: no power source" in md
    text = run_cli("report", "--db", str(db), "--format", "text").stdout
    assert "energy: unsupported: no power source" in text
    assert not _rows(db, "SELECT * FROM run_energy") and not _rows(db, "SELECT * FROM energy_idle")
