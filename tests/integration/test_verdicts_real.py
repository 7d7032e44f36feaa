"""Verdicts on real measurements: a parameter that adds 5% work is called a slowdown (issue: campaign engine)."""

from __future__ import annotations

import json
import warnings

import pytest

from helpers import run_cli

PLAN = """\
name = "five-percent"
seed = 5
[runs]
precision = 0.01  # METHOD.md: run each cell until its median's CI is within +-1% (compute), at most 40 runs
pilot = 20  # enough runs that the A/A half-splits (10 against 10) give a tight threshold
cap = 40
iterations = 20
order = "abba"
[gates]
idle_window_s = 0.2
timeout_s = 5
[[workloads]]
name = "noop"
params = { steps = [20000, 21000] }
compare = "steps"
"""


@pytest.mark.slow
def test_a_parameter_that_adds_five_percent_work_is_called_a_slowdown(tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    db = tmp_path / "r.db"
    assert run_cli("run", str(plan), "--db", str(db), "--quiet").returncode == 0
    proc = run_cli("compare", str(db), str(db), "--json")  # smoke: the same db against itself
    assert proc.returncode == 0
    from boardlab.report.analysis import analyze
    from boardlab.store import Store

    with Store.open(db, create=False) as store:
        a = analyze(store, 1)
    (comp,) = [c for c in a.comparisons if c.comparison is not None]
    c = comp.comparison
    assert comp.condition == "steps=21000" and comp.baseline == "steps=20000"
    assert 1.03 < c.cost_ratio < 1.08, json.dumps({"ratio": c.cost_ratio, "ci": str(c.cost_ratio_ci)})
    # The effect is real and found: significant, and the whole CI above 1.
    assert c.p_adjusted < 0.05 and c.cost_ratio_ci.low > 1.0
    if c.delta <= 0.03:
        # A board quiet enough that its A/A threshold is at most 3% must call a 5% effect a slowdown.
        assert c.verdict.kind == "slowdown", c.verdict.reasons
    else:
        # Run-to-run noise here (a VM whose host changes its clock between processes: 5-6% CV measured on
        # pure register work) puts delta above 3%, and METHOD.md rightly refuses to call a 5% effect that
        # it cannot separate from noise; it must not call it anything but a slowdown or inconclusive.
        assert c.verdict.kind in ("slowdown", "inconclusive"), c.verdict.reasons
        warnings.warn(f"delta = {c.delta:.1%} on this machine: a 5% effect is {c.verdict.kind}", stacklevel=1)
