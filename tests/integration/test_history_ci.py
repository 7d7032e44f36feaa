"""`boardlab history` for CI: each campaign's commit shown (text, JSON, serve's campaign list), the latest
step as JUnit XML that a JUnit parser reads with one failure naming the cell and the commit, as GitHub
annotations, and `--bisect` naming the first campaign (and commit) from which a cell that stayed slower is
slower."""

from __future__ import annotations

import json

import pytest

from helpers import run_cli
from history_store import PLANTED, SLOW, commit_of_campaign, make_history_db, with_commits

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def regressed_db(tmp_path_factory):
    """Three campaigns with their commits, the last (the third) with the planted 10% slowdown."""
    return with_commits(make_history_db(tmp_path_factory.mktemp("ci") / "lab.db", campaigns=SLOW))


def _history(db, *extra: str):
    return run_cli("history", "--db", str(db), "--plan", "nightly", *extra)


def test_junit_has_one_failure_naming_the_cell_and_the_commit(regressed_db, tmp_path):
    junitparser = pytest.importorskip("junitparser", reason="the test extra's junitparser is not installed")
    out = tmp_path / "history.xml"
    r = _history(regressed_db, "--format", "junit", "-o", str(out), "--fail-on", "regression")
    assert r.returncode == 3, r.stderr  # a regression, and the file is written all the same
    xml = junitparser.JUnitXml.fromfile(str(out))
    cases = [case for suite in xml for case in suite]
    failures = [(case, res) for case in cases for res in case.result if isinstance(res, junitparser.Failure)]
    assert len(failures) == 1, [c.name for c in cases]
    case, failure = failures[0]
    sha, describe, branch = commit_of_campaign(SLOW)
    assert PLANTED in case.name and case.name.endswith("@ baseline: ops")
    assert PLANTED in failure.message and f"commit {describe} ({branch})" in failure.message
    assert "B / A 0.9" in failure.message and "90% decision interval" in failure.message
    assert len(cases) > 1 and all(c.name for c in cases)  # every cell of the step is a test case
    (suite,) = list(xml)
    assert suite.failures == 1 and suite.tests == len(cases)


def test_github_annotations_and_the_commit_in_text_and_json(regressed_db):
    r = _history(regressed_db, "--format", "github")
    assert r.returncode == 0, r.stderr
    errors = [line for line in r.stdout.splitlines() if line.startswith("::error ")]
    _, describe, _ = commit_of_campaign(SLOW)
    assert len(errors) == 1 and f"title=boardlab regression%3A {PLANTED}" in errors[0]
    assert f"commit {describe} (main)" in errors[0]
    text = _history(regressed_db).stdout
    assert all(commit_of_campaign(k)[1] in text for k in range(1, SLOW + 1))
    d = json.loads(_history(regressed_db, "--json").stdout)
    assert [c["commit"]["sha"] for c in d["boards"][0]["campaigns"]] == [
        commit_of_campaign(k)[0] for k in range(1, SLOW + 1)
    ]
    third = d["boards"][0]["campaigns"][SLOW - 1]
    assert (
        f"commit: {commit_of_campaign(SLOW - 1)[1]} (main) → {commit_of_campaign(SLOW)[1]} (main)"
        in (third["changed"])
    )


def test_bisect_names_the_first_slower_campaign_and_its_commit(tmp_path):
    db = with_commits(make_history_db(tmp_path / "stays.db", campaigns=6, stays_slow=True))
    r = _history(db, "--bisect", "--json")
    assert r.returncode == 0, r.stderr
    (found,) = json.loads(r.stdout)["bisect"]
    assert found["workload"] == PLANTED
    assert found["first_slower"]["commit"]["sha"] == commit_of_campaign(SLOW)[0]
    assert found["last_not_slower"]["commit"]["sha"] == commit_of_campaign(SLOW - 1)[0]
    assert 1.08 < 1 / found["ratio"] < 1.12
    text = _history(db, "--bisect").stdout
    assert "Bisect: where each slowed cell became slower" in text and commit_of_campaign(SLOW)[1] in text
    # where the slowdown was undone, the last campaign is not slower than the first: nothing to bisect
    undone = with_commits(make_history_db(tmp_path / "undone.db", campaigns=5))
    assert json.loads(_history(undone, "--bisect", "--json").stdout)["bisect"] == []


def test_serves_campaign_list_shows_each_commit(regressed_db):
    pytest.importorskip("starlette", reason="the web extra is not installed")
    from boardlab.store import Store
    from boardlab.web import pages

    with Store.open(regressed_db, create=False) as store:
        document, twin = pages.campaigns(store)
    describes = {c["commit"]["describe"] for c in twin["campaigns"]}
    assert describes == {commit_of_campaign(k)[1] for k in range(1, SLOW + 1)}
    (section,) = document.sections
    table = next(b for b in section.blocks if hasattr(b, "columns"))
    assert table.columns[-1].name == "commit" and table.rows[0][-1] == f"{commit_of_campaign(SLOW)[1]} (main)"
