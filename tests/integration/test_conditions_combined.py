"""A combined condition for real: the satellite-computer preset's main stress condition, its relay-like bursty
traffic and its dd + gzip loop together around each run, each part's state kept apart in the run, both
stopped after it, nothing left behind."""

from __future__ import annotations

import json
import os
import sqlite3
import time
import tomllib

import pytest

from boardlab.campaign.plan import preset_text

from helpers import run_cli, tagged_env, tagged_processes

pytestmark = pytest.mark.integration


def _inline(value) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_inline(v)}" for k, v in value.items()) + " }"
    return json.dumps(value)  # strings, numbers and booleans read the same in TOML


def test_the_satellite_presets_relay_and_dd_gzip_run_together_and_both_stop(tmp_path):
    preset = tomllib.loads(preset_text("andesite"))
    combined = next(c for c in preset["conditions"] if c["name"] == "relay+dd-gzip")
    parts = ",\n".join(f"  {_inline(p)}" for p in combined["parts"])
    (tmp_path / "plan.toml").write_text(
        'name = "combined"\n[runs]\nrepetitions = 2\niterations = 3\n[gates]\nidle = false\n'
        f'[[workloads]]\nname = "noop"\n[[conditions]]\nname = "relay+dd-gzip"\nparts = [\n{parts}\n]\n'
    )
    tag = f"combined-{os.getpid()}-{time.time()}"
    (tmp_path / "tmp").mkdir()
    env = tagged_env(tag, BOARDLAB_STATE_DIR=str(tmp_path / "state"), TMPDIR=str(tmp_path / "tmp"))
    db = tmp_path / "r.db"
    proc = run_cli("run", str(tmp_path / "plan.toml"), "--db", str(db), env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    with sqlite3.connect(db) as c:
        rows = c.execute(
            "SELECT r.valid, r.condition_state_json FROM runs r JOIN cells c ON c.id = r.cell_id "
            "WHERE c.condition = 'relay+dd-gzip'"
        ).fetchall()
    assert len(rows) == 2
    for valid, state in rows:
        s = json.loads(state)
        assert valid == 1 and s["kind"] == "burstynet+ddgzip"
        relay, ddgzip = s["parts"]
        assert relay["kind"] == "burstynet" and ddgzip["kind"] == "ddgzip"
        for part in (relay, ddgzip):  # both loads ran through the run, and were stopped, not killed
            assert part["load_processes"] >= 1 and not part["load_exited_early"] and not part["load_killed"]
        assert ddgzip["load_cpu_pct"] > 0 and ddgzip["errors"] == 0
        # applied in order and stopped in reverse: the relay's window encloses the dd + gzip loop's (which
        # started a warm-up later and stopped first)
        assert relay["load_window_s"] > ddgzip["load_window_s"] + 0.5
    assert sum(json.loads(s)["parts"][0]["messages_sent"] for _, s in rows) > 0
    assert tagged_processes(tag) == {}  # both loads stopped
    assert not list((tmp_path / "state").glob("restore-*.json"))  # every journal entry undone
    assert not list((tmp_path / "tmp").iterdir())  # the dd + gzip files removed
