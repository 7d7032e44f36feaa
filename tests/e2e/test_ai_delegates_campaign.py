"""ai.inference with `delegate = ["xnnpack", "none"]` in a plan: two cells that run (LiteRT with and without
its XNNPACK delegate, the delegates this machine has), stored with what each run delegated, and shown apart in
the report."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from boardlab.ai.build import build_models

from helpers import run_cli, shared_tmp_dir

pytest.importorskip("ai_edge_litert", reason="the ai extra is not installed (pip install 'boardlab[ai]')")

PLAN = """
name = "delegates"
seed = 1
[runs]
repetitions = 2
iterations = 5
[gates]
idle = false
[[workloads]]
name = "ai.inference"
params = {{ runtime = "litert", model = "mobilenet_v1", frames = 5, delegate = ["xnnpack", "none"], models_dir = "{models}" }}
"""  # noqa: E501 (an inline TOML table is one line)


def test_delegate_xnnpack_and_none_are_two_cells_of_the_report(tmp_path):
    models = shared_tmp_dir()
    try:
        build_models(models, ["mobilenet_v1"])
        plan = tmp_path / "delegates plan.toml"
        plan.write_text(PLAN.format(models=models))
        db = tmp_path / "d.db"
        env = {**os.environ, "BOARDLAB_STATE_DIR": str(tmp_path / "state")}
        p = run_cli("run", str(plan), "--db", str(db), "--json", env=env, timeout=600)
        assert p.returncode == 0, p.stderr
        assert json.loads(p.stdout)["status"] == "complete"
        p = run_cli("export", "--db", str(db), "--format", "json")
        assert p.returncode == 0, p.stderr
        runs = json.loads(p.stdout)["runs"]
        by_delegate: dict[str, set] = {}
        for r in runs:
            if r["metric"] == "latency_ms":
                assert r["valid"], r
                by_delegate.setdefault(r["params"]["delegate"], set()).add(r["cell_id"])
        assert set(by_delegate) == {"xnnpack", "none"}
        assert by_delegate["xnnpack"].isdisjoint(by_delegate["none"])  # different cells
        p = run_cli("report", "--db", str(db), "--format", "md", "-o", str(tmp_path / "r.md"))
        assert p.returncode == 0, p.stderr
        md = (tmp_path / "r.md").read_text()
        assert "delegate=xnnpack" in md and "delegate=none" in md
    finally:
        shutil.rmtree(models, ignore_errors=True)


def test_a_delegate_that_cannot_load_stops_the_campaign_before_any_run_with_exit_2(tmp_path):
    # docs/ai.md: the library is checked before anything is stored, not found failing in each of the runs
    models = shared_tmp_dir()
    try:
        build_models(models, ["mobilenet_v1"])
        junk = tmp_path / "libjunk.so"
        junk.write_bytes(b"\x7fELF junk")
        plan = tmp_path / "junk.toml"
        plan.write_text(PLAN.format(models=models).replace('["xnnpack", "none"]', f'"{junk}"'))
        db = tmp_path / "d.db"
        p = run_cli("run", str(plan), "--db", str(db), timeout=600)
        assert p.returncode == 2, p.stderr
        assert f"delegate {junk}: cannot be loaded" in p.stderr and "before any run" in p.stderr
        assert "Traceback" not in p.stderr and not db.exists()  # nothing stored, no empty file left
    finally:
        shutil.rmtree(models, ignore_errors=True)
