"""`boardlab compare A.db B.db`: two boards or two campaigns, cell by cell, with verdicts on B / A."""

from __future__ import annotations

import json

import pytest

from helpers import make_campaign_db, run_cli


@pytest.fixture(scope="module")
def two_boards(tmp_path_factory):
    d = tmp_path_factory.mktemp("compare")
    # B is 10% faster everywhere; each side has one cell the other lacks
    a = make_campaign_db(d / "a.db", board="board-a", with_latency=False, extra_cells=(("only.a", 5.0),))
    b = make_campaign_db(
        d / "b.db", board="board-b", with_latency=False, speed=1.1, seed=7, extra_cells=(("only.b", 5.0),)
    )
    return a, b


def compare_json(*args: str) -> dict:
    proc = run_cli("compare", *args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_matched_cells_get_a_ratio_ci_test_and_verdict(two_boards):
    a, b = two_boards
    doc = compare_json(str(a), str(b))
    assert doc["schema"] == 3
    assert doc["a"]["board"] == "board-a" and doc["b"]["board"] == "board-b"
    assert doc["adjustment"] == "holm" and doc["family_size"] == len(doc["cells"]) == 6
    fft = next(c for c in doc["cells"] if c["workload"] == "scimark.fft" and c["condition"] == "baseline")
    assert fft["a"]["n"] == 11 and fft["b"]["n"] == 11  # the invalid run counts on neither side
    assert fft["ratio"] == pytest.approx(1.1, rel=0.02)  # MFLOPS: B / A > 1 ...
    assert fft["cost_ratio"] == pytest.approx(1 / 1.1, rel=0.02)  # ... is a cost below 1
    lo, hi = fft["ratio_ci"]
    assert lo < fft["ratio"] < hi
    assert fft["test"] == "yuen-welch-log" and fft["test_method"] in ("permutation", "student-t")
    assert fft["test_words"].startswith("Yuen's trimmed t on log runs, p ")
    assert fft["estimator"] == "20%-trimmed geometric means of the runs"
    assert "trimmed geometric means" in doc["ratio"] and "median of B over median of A" not in doc["ratio"]
    assert fft["p_value"] <= fft["p_adjusted"] < 0.05
    assert fft["verdict"] == "speedup" and fft["confounded"] is False
    assert all(c["verdict"] == "speedup" for c in doc["cells"] if c["workload"] != "crc32")


def test_the_threshold_is_the_plan_default_and_the_decision_interval_decides(two_boards):
    doc = compare_json(*map(str, two_boards))
    for c in doc["cells"]:
        assert c["delta"] == 0.02 and "default" in c["delta_source"]  # never estimated from the runs
        lo, hi = c["decision_ci"]
        clo, chi = c["cost_ratio_ci"]
        assert clo <= lo <= hi <= chi  # the 90% interval lies inside the 95% one
        if c["verdict"] == "speedup":
            assert hi < 1 - c["delta"]
    assert set(doc["aa_controls"]) == {"a", "b"}


def test_unmatched_cells_are_listed(two_boards):
    doc = compare_json(*map(str, two_boards))
    assert [c["workload"] for c in doc["unmatched"]["a_only"]] == ["only.a"]
    assert [c["workload"] for c in doc["unmatched"]["b_only"]] == ["only.b"]
    text = run_cli("compare", *map(str, two_boards)).stdout
    assert "only in A (1):\n  only.a @ baseline" in text
    assert "only in B (1):\n  only.b @ baseline" in text


def test_text_output_is_a_table_side_by_side(two_boards):
    proc = run_cli("compare", *map(str, two_boards))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("A: ") and "board-a" in lines[0] and "board-b" in lines[1]
    header = next(line for line in lines if line.startswith("cell"))
    for col in (
        "A median",
        "B median",
        "B/A",
        "90% decision interval",
        "95% CI",
        "delta",
        "p adj",
        "verdict",
    ):
        assert col in header
    assert any(line.startswith("scimark.fft (size=small) @ baseline") and "speedup" in line for line in lines)


def test_a_campaign_against_itself_changes_nothing_and_says_so(two_boards):
    a, b = two_boards
    proc = run_cli("compare", str(a), str(a), "--json")
    assert proc.returncode == 0 and "note: A and B are one campaign" in proc.stderr, proc.stderr
    doc = json.loads(proc.stdout)
    assert "note:" not in run_cli("compare", str(a), str(b), "--json").stderr
    assert all(c["ratio"] == 1.0 for c in doc["cells"])
    verdicts = [c["verdict"] for c in doc["cells"]]
    assert set(verdicts) <= {"no_change", "inconclusive"} and "no_change" in verdicts
    assert doc["unmatched"] == {"a_only": [], "b_only": []}


def test_two_campaigns_of_one_database(tmp_path):
    db = make_campaign_db(tmp_path / "x.db", name="monday", with_latency=False, n=10)
    make_campaign_db(db, name="tuesday", with_latency=False, n=10, speed=0.8, seed=3)
    doc = compare_json(str(db), str(db), "--campaign-a", "1", "--campaign-b", "2")
    assert (doc["a"]["name"], doc["b"]["name"]) == ("monday", "tuesday")
    fft = next(c for c in doc["cells"] if c["workload"] == "scimark.fft" and c["condition"] == "memcpy")
    assert fft["verdict"] == "slowdown" and fft["cost_ratio"] == pytest.approx(1.25, rel=0.03)


def test_too_few_runs_means_no_verdict(tmp_path):
    a = make_campaign_db(tmp_path / "a.db", with_latency=False, n=3)
    b = make_campaign_db(tmp_path / "b.db", with_latency=False, n=3, seed=4)
    doc = compare_json(str(a), str(b))
    assert all(c["verdict"] == "insufficient" and c["ratio"] is not None for c in doc["cells"])
    assert all("at least 5 per arm" in c["reasons"][0] for c in doc["cells"])


def test_missing_database_or_campaign_is_a_usage_error(two_boards, tmp_path):
    a, _ = two_boards
    proc = run_cli("compare", str(a), str(tmp_path / "nope.db"))
    assert proc.returncode == 2 and "no such results database" in proc.stderr
    proc = run_cli("compare", str(a), str(a), "--campaign-b", "42")
    assert proc.returncode == 2 and "no campaign with id 42" in proc.stderr
