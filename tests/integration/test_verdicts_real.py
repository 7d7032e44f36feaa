"""Verdicts on real measurements: a parameter that adds 5% work is called a slowdown (issue: campaign
engine)."""

from __future__ import annotations

import json

import pytest

from helpers import run_cli

# quiet: the measured cost ratio must land within 3-8%; beside another test suite it needed seven times the
# runs
pytestmark = [pytest.mark.integration, pytest.mark.quiet]

PLAN = """\
name = "five-percent"
seed = 5
[runs]
# 30 runs per arm: the 90% decision interval of a 5% effect clears 1 + 2% up to a run-to-run CV of about
# 6% (n = 2 (1.645 x 1.2533 x CV / 0.03)^2 = 29 at CV 6%), the noise this VM shows on register work.
repetitions = 30
iterations = 20
order = "abba"
[gates]
# The test must decide on a busy machine too: the idle gate would only time out there, run after run.
idle = false
temperature = false
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
    assert run_cli("run", str(plan), "--db", str(db), "--quiet", timeout=900).returncode == 0
    proc = run_cli("compare", str(db), str(db), "--json")  # smoke: the same db against itself
    assert proc.returncode == 0
    from boardlab.analysis.core import analyze
    from boardlab.store import Store

    with Store.open(db, create=False) as store:
        a = analyze(store, 1)
    (comp,) = [c for c in a.comparisons if c.comparison is not None]
    c = comp.comparison
    assert comp.condition == "steps=21000" and comp.baseline == "steps=20000"
    cvs = {cell.label + " " + json.dumps(cell.params): cell.summary.cv for cell in a.cells if cell.summary}
    measured = ", ".join(f"{k}: CV {v:.1%}" for k, v in cvs.items())
    assert 1.03 < c.cost_ratio < 1.08, f"cost ratio {c.cost_ratio:.4f}; {measured}"
    assert c.delta == 0.02  # the default threshold, never estimated from these runs
    # 30 runs per arm resolve a 5% effect up to a run-to-run CV of about 6% (see the plan). Noisier than that
    # (other programs on these cores), the honest verdict may be "inconclusive" but never the opposite claims.
    worst_cv = max(cvs.values())
    if worst_cv > 0.06:
        assert c.verdict.kind in ("slowdown", "inconclusive"), (c.verdict.kind, c.verdict.reasons, measured)
        if c.verdict.kind == "inconclusive":
            pytest.skip(f"a 5% effect at 30 runs per arm needs a CV <= 6%; this machine measured {measured}")
    assert c.verdict.kind == "slowdown", (
        f"a 5% effect was called {c.verdict.kind}: {c.verdict.reasons[0]}; measured {measured}: this "
        "machine is too noisy to decide at 30 runs per arm"
    )
    assert c.decision_ci.low > 1.02 and c.p_adjusted < 0.05
