"""One database, one report, on any host: a campaign run here is reported byte for byte the same by a host
where boardlab-kern does not run and the workload catalog cannot be imported, because analysis reads what a
workload is (roles, curves, composites, tails) from the facts the runner stored with the campaign.

The other host is this one in a subprocess whose import system refuses `boardlab.workloads` and whose
BOARDLAB_KERN names a file that does not exist."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pytest

from boardlab.model.facts import WORKLOAD_FACTS

from helpers import run_cli

# Two SciMark kernels (members of the SciMark composite, so the summary card's composite needs the stored
# membership) and GEMM (the "compute" role, so the data-stream study reads it), each as small as they come.
PLAN = """
name = "two hosts"
seed = 1
[runs]
repetitions = 3
iterations = 3
warmup_max_iterations = 0
[gates]
idle = false
temperature = false
[[workloads]]
name = "compute.gemm"
params = { n = 64, impl = "native" }
[[workloads]]
name = "scimark.sor"
[[workloads]]
name = "scimark.fft"
"""

OTHER_HOST = """
import importlib.abc
import sys


class NotInstalledHere(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "boardlab.workloads" or name.startswith("boardlab.workloads."):
            raise ImportError(f"{name}: not on this host")
        return None


sys.meta_path.insert(0, NotInstalledHere())
from boardlab.cli import main

code = main(sys.argv[1:])
assert not [m for m in sys.modules if m.startswith("boardlab.workloads")], "the catalog was imported"
sys.exit(code)
"""


def _other_host(*args: str, tmp_path) -> subprocess.CompletedProcess:
    env = {**os.environ, "BOARDLAB_KERN": str(tmp_path / "no such boardlab-kern")}
    return subprocess.run(
        [sys.executable, "-c", OTHER_HOST, *args], capture_output=True, text=True, timeout=300, env=env
    )


@pytest.fixture(scope="module")
def campaign_db(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("two hosts")
    plan = tmp / "two hosts.toml"
    plan.write_text(PLAN)
    db = tmp / "board.db"
    env = {**os.environ, "BOARDLAB_STATE_DIR": str(tmp / "state")}
    p = run_cli("run", str(plan), "--db", str(db), "--json", env=env, timeout=900)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["status"] == "complete"
    return db


def test_the_runner_stores_every_catalog_workloads_facts_with_the_campaign(campaign_db):
    with sqlite3.connect(campaign_db) as conn:
        (data,) = conn.execute("SELECT data FROM artifacts WHERE name=?", (WORKLOAD_FACTS,)).fetchone()
    stored = json.loads(data)
    assert stored["schema"] == 1 and stored["energy_reason"]
    facts = stored["workloads"]
    assert "compute" in facts["compute.gemm"]["roles"]
    # the composite's whole membership, not only the two members this campaign ran
    assert {w for w, f in facts.items() if f["composite"] == "SciMark composite"} >= {
        "scimark.sor", "scimark.fft", "scimark.mc", "scimark.lu", "scimark.sparse"
    }  # fmt: skip
    assert facts["rt.cyclictest"]["tail_samples"]


@pytest.mark.parametrize("fmt", ["md", "html", "text"])
def test_a_host_without_boardlab_kern_or_the_catalog_reports_it_byte_for_byte(campaign_db, tmp_path, fmt):
    here, there = tmp_path / f"here.{fmt}", tmp_path / f"there.{fmt}"
    p = run_cli("report", "--db", str(campaign_db), "--format", fmt, "-o", str(here))
    assert p.returncode == 0, p.stderr
    q = _other_host("report", "--db", str(campaign_db), "--format", fmt, "-o", str(there), tmp_path=tmp_path)
    assert q.returncode == 0, q.stderr
    assert "workload facts derived" not in p.stderr + q.stderr
    assert here.read_bytes() == there.read_bytes()
    if fmt == "md":  # what the stored facts carry shows: the compute role's study, the composite's card
        text = here.read_text()
        assert "Data-stream study" in text and "GFLOPS" in text
        assert "SciMark composite" not in text  # three of five members measured: no composite of two


def test_a_campaign_stored_before_facts_were_takes_this_hosts_and_says_so(campaign_db, tmp_path):
    old = tmp_path / "old.db"
    with sqlite3.connect(campaign_db) as src, sqlite3.connect(old) as dst:
        src.backup(dst)
        dst.execute("DELETE FROM artifacts WHERE name=?", (WORKLOAD_FACTS,))
    p = run_cli("report", "--db", str(old), "--format", "md", "-o", str(tmp_path / "old.md"))
    assert p.returncode == 0, p.stderr
    assert "campaign 1: workload facts derived from this host's catalog and stored" in p.stderr
    new = tmp_path / "new.md"
    assert run_cli("report", "--db", str(campaign_db), "--format", "md", "-o", str(new)).returncode == 0
    assert (tmp_path / "old.md").read_bytes() == new.read_bytes()  # this host's catalog is the one it ran
