"""The satellite-computer ("andesite") preset reaches verdicts where the effect is large: a trimmed plan with
the preset's own [runs] table (its default repetitions and the baseline allocation the product gives it)
plants a 2x slowdown through a real condition (a stress-ng CPU hog time-sharing the worker's CPU) and must
be called a slowdown (docs/method.md "Test": the trimmed t's p-value is not floored by the run count)."""

from __future__ import annotations

import shutil
import tomllib

import pytest

from boardlab.campaign.plan import preset_text

from helpers import run_cli

pytestmark = [pytest.mark.integration, pytest.mark.slow]

QUIET_CV = 0.20  # the compared cells' run-to-run spread below which the claim is tested

TRIMMED = """\
name = "andesite-trimmed"
seed = 0
[runs]
repetitions = {repetitions}
order = "{order}"
iterations = 3
[gates]
# the test must decide on a busy machine too: the idle gate would only time out there
idle = false
temperature = false
[[workloads]]
name = "mibench.crc32"
[[workloads]]
name = "scimark.sor"
params = {{ size = "small" }}
[[conditions]]
name = "baseline"
kind = "baseline"
[[conditions]]
name = "cpu-hog-same"
kind = "stressor"
params = {{ stressor = "cpu", workers = 1, placement = "same" }}
[[conditions]]
name = "dd-gzip"
kind = "ddgzip"
params = {{ source = "urandom", size = "16M", placement = "other" }}
"""


@pytest.mark.skipif(shutil.which("stress-ng") is None, reason="needs stress-ng (apt-get install stress-ng)")
def test_a_2x_slowdown_through_a_real_condition_is_a_verdict_at_the_andesite_defaults(tmp_path):
    runs = tomllib.loads(preset_text("andesite"))["runs"]
    plan = tmp_path / "plan.toml"
    plan.write_text(TRIMMED.format(repetitions=runs["repetitions"], order=runs["order"]))
    db = tmp_path / "r.db"
    proc = run_cli("run", str(plan), "--db", str(db), "--quiet", timeout=1800)
    assert proc.returncode == 0, proc.stderr
    from boardlab.analysis.core import analyze
    from boardlab.store import Store

    with Store.open(db, create=False) as store:
        a = analyze(store, 1)
    assert a.family_size == 4
    # the shared baseline got Dunnett's share: ceil(sqrt(2) x 10) = 15 runs against 10 per condition
    base = [c for c in a.cells if c.condition == "baseline"]
    assert {len(c.values) for c in base} == {15}
    hog = [ca for ca in a.comparisons if ca.condition == "cpu-hog-same"]
    assert len(hog) == 2
    cvs = ", ".join(f"{c.label}@{c.condition}: CV {c.summary.cv:.1%}" for c in a.cells if c.summary)
    # The claim is for a quiet machine and a steady condition: with the compared runs spread by more than
    # 20% (another job sharing the cores, or the hog's time slices landing unevenly on short runs), 10-15
    # runs cannot be expected to call even a 2x effect. Measured, and said.
    compared = [c for c in a.cells if c.summary and c.condition in ("baseline", "cpu-hog-same")]
    noisiest = max(compared, key=lambda c: c.summary.cv)
    if noisiest.summary.cv > QUIET_CV:
        pytest.skip(
            f"not quiet or not steady here: {noisiest.label}@{noisiest.condition} runs spread by CV "
            f"{noisiest.summary.cv:.0%} ({cvs})"
        )
    for ca in hog:
        c = ca.comparison
        assert c is not None
        # No escape: a CPU time-shared with a hog slows the worker by far more than delta; if the machine is
        # too noisy to call it at the preset's repetitions, the test fails and says how noisy it measured.
        assert c.cost_ratio > 1.3, f"{ca.label}: cost ratio {c.cost_ratio:.3f}; measured {cvs}"
        assert c.verdict.kind == "slowdown", (
            f"{ca.label}: {c.verdict.kind} at cost ratio {c.cost_ratio:.3f}, decision interval "
            f"{c.decision_ci}, adjusted p {c.p_adjusted:.3g}: {c.verdict.reasons}; measured {cvs}"
        )
