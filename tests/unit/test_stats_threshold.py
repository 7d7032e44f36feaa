"""The practical threshold delta (docs/method.md): a plan statement, never estimated from the compared runs;
the report's one correction family; and reachability of a verdict at plan load."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from boardlab.analysis.core import named_tail, named_thresholds
from boardlab.model.facts import CellFacts
from boardlab.stats import DEFAULT_DELTA, DEFAULT_TAIL_DELTA, family_method, reachability, smallest_p
from boardlab.stats.threshold import threshold_of

from helpers import CRC, ENTRIES, PAIRS, make_entries_db
from helpers import entries_plan as _entries_plan


def test_defaults_are_two_percent_and_ten_percent_for_tails():
    assert DEFAULT_DELTA == 0.02 and DEFAULT_TAIL_DELTA == 0.10
    assert threshold_of(CellFacts(tail=False)) == (0.02, "default for run-time and throughput")
    assert threshold_of(CellFacts(tail=True))[0] == 0.10  # the cell's metric is a tail, as its spec declared
    tail = threshold_of(CellFacts(threshold=0.05, tail=False), tail=True)  # a tail comparison of the cell
    assert tail == (0.10, "default for tail metrics")
    # a cell stored before its facts said so: the name rule, read once by the analysis
    assert named_tail("p99_latency_us") and named_tail("max_latency_us") and not named_tail("latency_ms")


def test_the_cells_entry_threshold_wins_and_a_stored_plan_without_cell_facts_is_read_by_workload_name():
    assert threshold_of(CellFacts(0.05, 0.2)) == (0.05, "plan: threshold = 0.05")
    assert threshold_of(CellFacts(0.05, 0.2), tail=True) == (0.2, "plan: tail_threshold = 0.2")
    plan = {"workloads": [{"name": "mem.bandwidth", "params": {"n": 1}},
                          {"name": "mem.bandwidth", "threshold": 0.05, "tail_threshold": True},
                          {"name": "mem.bandwidth", "threshold": 0.3, "tail_threshold": 0.2}]}  # fmt: skip
    # an old store: the first entry of the workload that sets each, whichever entry made the cell
    assert named_thresholds(plan, "mem.bandwidth") == CellFacts(0.05, 0.2, derived=True)
    delta, source = threshold_of(named_thresholds(plan, "mem.bandwidth"))
    assert delta == 0.05 and "the campaign was stored without its cells' thresholds" in source
    assert named_thresholds(plan, "scimark.fft") == CellFacts(derived=True)  # another workload: the default
    assert threshold_of(named_thresholds(plan, "scimark.fft"))[0] == 0.02


def _by_size(comparisons) -> dict:
    return {ca.params["size"]: ca for ca in comparisons}


def test_two_entries_of_one_workload_are_judged_each_by_its_own_threshold(tmp_path):
    from boardlab.analysis.core import aa_controls, analyze
    from boardlab.analysis.runs import RunTable
    from boardlab.analysis.verdicts import method_note
    from boardlab.store import Store

    db = make_entries_db(tmp_path / "entries.db", _entries_plan())  # 5% slower under the stressor
    with Store.open(db, create=False) as store:
        a = analyze(store, 1)
    got = _by_size(a.comparisons)
    small, large = got["small"].comparison, got["large"].comparison
    assert 1.045 < small.cost_ratio < 1.055 and 1.045 < large.cost_ratio < 1.055  # the same 5% slowdown
    assert (small.delta, got["small"].delta_source) == (0.02, "plan: threshold = 0.02")
    assert (large.delta, got["large"].delta_source) == (0.10, "plan: threshold = 0.1")
    assert small.verdict.kind == "slowdown" and large.verdict.kind == "no_change"
    # the A/A control of each reference cell (its runs labelled A1, A2 alternately) uses its entry's delta
    labelled = tuple(
        dataclasses.replace(
            c,
            runs=RunTable.of_points(
                dataclasses.replace(r, aa_arm=("A1", "A2")[i % 2]) for i, r in enumerate(c.runs)
            ),
        )
        for c in a.cells
    )
    controls = {c.params["size"]: c.comparison.delta for c in aa_controls(labelled)}
    assert controls == {"small": 0.02, "large": 0.10}
    assert "per plan entry: 2.0% (plan: threshold = 0.02); 10.0% (plan: threshold = 0.1)" in method_note(a)


def test_a_campaign_stored_without_cell_facts_is_judged_by_the_first_entrys_threshold_and_says_so(tmp_path):
    from boardlab.analysis.core import analyze
    from boardlab.analysis.verdicts import method_note
    from boardlab.store import Store

    db = make_entries_db(tmp_path / "old.db", _entries_plan(), cell_facts=False)
    with Store.open(db, create=False) as store:
        a = analyze(store, 1)
    got = _by_size(a.comparisons)
    # as boardlab judged before cells carried their thresholds: the first entry's 2% for both
    assert got["small"].comparison.delta == got["large"].comparison.delta == 0.02
    assert got["large"].comparison.verdict.kind == "slowdown"
    assert "stored without its cells' thresholds" in got["large"].delta_source
    assert "stored without its cells' thresholds" in method_note(a)


def test_comparing_two_campaigns_judges_each_cell_by_its_entrys_threshold(tmp_path):
    from boardlab.analysis.compare import compare_campaigns
    from boardlab.analysis.core import analyze
    from boardlab.store import Store

    plan = _entries_plan()
    a_db = make_entries_db(tmp_path / "a.db", plan, slower=1.0)
    b_db = make_entries_db(tmp_path / "b.db", plan, slower=1.0 / 1.05)
    with Store.open(a_db, create=False) as sa, Store.open(b_db, create=False) as sb:
        doc = compare_campaigns(analyze(sa, 1), analyze(sb, 1))
    rows = {r.params["size"]: r for r in doc["cells"] if r.condition == "cpu-stress"}
    assert (rows["small"].delta, rows["small"].delta_source) == (0.02, "plan: threshold = 0.02")
    assert (rows["large"].delta, rows["large"].delta_source) == (0.10, "plan: threshold = 0.1")
    # B's stressed cells run 5% faster than A's (cost ratio about 0.95): a speedup at 2%, no change at 10%
    assert rows["small"].cost_ratio is not None and 0.945 < rows["small"].cost_ratio < 0.955
    assert rows["small"].verdict == "speedup" and rows["large"].verdict == "no_change"


def test_the_runners_stopping_rule_decides_each_cell_against_its_own_entrys_threshold():
    import random

    from boardlab.campaign.precision import PrecisionRule
    from boardlab.campaign.schedule import build_cells

    plan = _entries_plan(ENTRIES.replace("repetitions = 10", "precision = 0.001"))  # never precise enough
    cells = build_cells(plan, {"crc32": CRC})
    rule = PrecisionRule(plan, {"crc32": CRC}, {c.name: c for c in plan.conditions}, tuple(cells))
    rng = random.Random(1)
    values = {}
    for c in cells:  # 10% slower under the stressor: beyond 2%, on the edge of 10% (12 runs, 1.5% noise)
        slower = 1.10 if c.condition == "cpu-stress" else 1.0
        values[c.key] = [100.0 / slower * (1 + rng.gauss(0, 0.015)) for _ in range(12)]
    stop = {
        c.params_dict["size"]: rule.precise_enough(values, c) for c in cells if c.condition == "cpu-stress"
    }
    assert stop == {"small": True, "large": False}  # decided at 2%; at 10% the interval crosses 1.10


@pytest.mark.slow
def test_the_power_advice_is_given_per_threshold_when_one_workloads_entries_set_two():
    from boardlab.campaign.advice import power_advice
    from boardlab.campaign.reach import _compared_keys
    from boardlab.campaign.schedule import build_cells

    plan = _entries_plan()
    cells = build_cells(plan, {"crc32": CRC})
    got = dict(power_advice(plan, cells, _compared_keys(plan, cells), 2, {}))
    assert set(got) == {"crc32 (threshold 0.02)", "crc32 (threshold 0.1)"}
    tight, loose = got["crc32 (threshold 0.02)"], got["crc32 (threshold 0.1)"]
    assert (tight.delta, loose.delta) == (0.02, 0.10)
    # a 5% effect needs more power than a 25% one; both get the 10 runs the A/A control needs of a reference
    assert tight.power < loose.power and tight.runs_per_arm >= loose.runs_per_arm >= 10
    assert loose.aa_runs == 10  # the control, not power, decided the loose one
    one = _entries_plan(ENTRIES.replace("threshold = 0.10", "threshold = 0.02"))
    assert [w for w, _ in power_advice(one, cells, _compared_keys(one, cells), 2, {})] == ["crc32"]


def test_holm_up_to_fifty_comparisons_then_benjamini_hochberg():
    assert family_method(1) == "holm" and family_method(50) == "holm" and family_method(51) == "bh"


def test_the_smallest_mann_whitney_p_is_two_over_2n_choose_n_where_exact():
    for n in (5, 6, 7, 8):
        assert smallest_p(n, n) == pytest.approx(2 / math.comb(2 * n, n))
    assert smallest_p(6, 6, paired=True) == pytest.approx(2 / 2**6)


def test_with_the_rank_test_five_runs_per_arm_cannot_decide_seventy_comparisons_and_the_message_names_the_fix():  # noqa: E501
    r = reachability(5, 70, test_kind="rank")
    assert not r.reachable and r.method == "bh"
    assert r.smallest_adjusted_p == pytest.approx(70 * 2 / math.comb(10, 5))
    assert reachability(r.repetitions_needed, 70, test_kind="rank").reachable
    assert not reachability(r.repetitions_needed - 1, 70, test_kind="rank").reachable
    assert f"--repetitions {r.repetitions_needed}" in r.message


def test_the_reports_trimmed_test_reaches_a_verdict_at_the_rules_five_runs_in_any_family():
    r = reachability(5, 70)
    assert r.reachable and r.smallest_adjusted_p == 0.0 and r.repetitions_needed == 5
    bad = reachability(4, 70)
    assert not bad.reachable and "--repetitions 5" in bad.message


def test_ten_runs_per_arm_decide_the_interference_preset_and_fewer_than_five_never():
    assert reachability(10, 70).reachable and reachability(10, 70).message is None
    assert not reachability(4, 1).reachable
    assert reachability(5, 0).reachable  # nothing to compare: nothing to reach


# -- a `compare` parameter belongs to its entry, like a threshold --------------------------------------------


def _size_pairs(a) -> dict:
    """(lanes, condition label) of each comparison of `size` values, with its baseline label."""
    return {
        (ca.params["lanes"], ca.condition): ca.baseline
        for ca in a.comparisons
        if ca.condition.startswith("size=")
    }


def test_a_compare_parameter_pairs_only_the_cells_of_its_own_entry(tmp_path):
    from boardlab.analysis.core import analyze
    from boardlab.analysis.verdicts import method_note
    from boardlab.store import Store

    from helpers import make_pairs_db, pairs_plan

    with Store.open(make_pairs_db(tmp_path / "pairs.db", pairs_plan()), create=False) as store:
        a = analyze(store, 1)
    # the second entry (lanes = 2) compares large with small under each condition; the first entry's cells
    # (lanes = 1, no compare) only against their condition's baseline
    assert _size_pairs(a) == {
        (2, "size=large"): "size=small",
        (2, "size=large @cpu-stress"): "size=small @cpu-stress",
    }
    assert all(c.facts.compare is None for c in a.cells if c.params["lanes"] == 1)
    for ca in a.comparisons:
        if ca.condition.startswith("size="):  # large is 5% slower than small: the real pair was compared
            assert 1.045 < ca.comparison.cost_ratio < 1.055 and ca.comparison.verdict.kind == "slowdown"
    assert a.order == "interleave" and a.pairing_source == ""
    assert "stored without its cells' compare pairing" not in method_note(a)
    assert a.family_size == 4 + 2  # each stressed cell against its baseline, and the second entry's pairs


def test_a_campaign_stored_without_its_pairing_is_paired_by_workload_name_and_says_so(tmp_path):
    from boardlab.analysis.core import analyze
    from boardlab.analysis.verdicts import method_note
    from boardlab.model import facts
    from boardlab.store import Store

    from helpers import make_pairs_db, pairs_plan

    plan = pairs_plan(PAIRS_ABBA)
    by_name = {
        (1, "size=large"),
        (1, "size=large @cpu-stress"),
        (2, "size=large"),
        (2, "size=large @cpu-stress"),
    }
    old = make_pairs_db(tmp_path / "none.db", plan, cell_facts=False)  # no cell-facts at all
    schema1 = make_pairs_db(tmp_path / "schema1.db", plan)  # cell-facts of schema 1: thresholds only
    with Store.open(schema1) as store:
        doc = {
            "schema": 1,
            "cells": {r["key"]: {"threshold": 0.03, "tail_threshold": None} for r in store.cells(1)},
        }
        store.save_campaign_artifact(1, facts.CELL_FACTS, json.dumps(doc).encode())
    for db in (old, schema1):
        with Store.open(db, create=False) as store:
            a = analyze(store, 1)
        assert set(_size_pairs(a)) == by_name, db  # as boardlab paired before: the first entry's cells too
        assert a.order == "abba", db  # the run order read from the stored plan
        assert "stored without its cells' compare pairing" in a.pairing_source
        assert a.pairing_source in method_note(a)
    # a schema-1 store's thresholds are its own, stored ones: only the pairing and the order were derived
    assert {ca.comparison.delta for ca in a.comparisons if ca.comparison} == {0.03}


# the same plan, run ABBA
PAIRS_ABBA = PAIRS.replace("repetitions = 10\n", 'repetitions = 10\norder = "abba"\n', 1)


def test_the_runner_stores_each_cells_pairing_from_its_own_entry_and_the_run_order():
    from boardlab.campaign.facts import cell_facts, store_cell_facts
    from boardlab.campaign.schedule import build_cells
    from boardlab.model import facts

    from helpers import PAIRS_CRC, pairs_plan

    plan = pairs_plan(PAIRS_ABBA)
    cells = build_cells(plan, {"crc32": PAIRS_CRC})
    pairs = {c.key: cell_facts(plan, c).compare for c in cells}
    assert {k: p for k, p in pairs.items() if p is not None} == {
        "crc32[lanes=2,size=large]@baseline": facts.ComparePair(
            "size", "crc32[lanes=2,size=small]@baseline", "small"
        ),
        "crc32[lanes=2,size=large]@cpu-stress": facts.ComparePair(
            "size", "crc32[lanes=2,size=small]@cpu-stress", "small"
        ),
    }

    class Artifacts:
        path = "board.db"
        data: dict = {}

        def campaign_artifact(self, _cid, name):
            return self.data.get(name)

        def save_campaign_artifact(self, _cid, name, data):
            self.data[name] = data

    store = Artifacts()
    store.data[facts.CELL_FACTS] = json.dumps(
        {"schema": 1, "cells": {cells[0].key: {"threshold": 0.05, "tail_threshold": None}}}
    ).encode()
    store_cell_facts(store, 1, plan, cells)  # a schema-1 campaign resumed: rewritten with pairing and order
    got = facts.read_cell_facts_document(json.loads(store.data[facts.CELL_FACTS]))
    assert got.order == "abba" and {k: f.compare for k, f in got.cells.items()} == pairs
    assert got.cells[cells[0].key].threshold is None  # this plan's own facts win over the old document's


def test_reach_counts_and_allocates_the_compare_pairs_of_each_entry_alone():
    from boardlab.campaign.reach import _compared_keys, count_comparisons
    from boardlab.campaign.schedule import build_cells, comparisons_per_reference, reference_keys

    from helpers import PAIRS_CRC, pairs_plan

    catalog = {"crc32": PAIRS_CRC}
    plan = pairs_plan()
    cells = build_cells(plan, catalog)
    assert count_comparisons(plan, cells, catalog) == 4 + 2  # not 4 + 4: the first entry compares nothing
    # without the stressor only the second entry's pair is compared: the first entry's cells are not
    alone = pairs_plan(PAIRS.split("[[conditions]]")[0])
    cells = build_cells(alone, catalog)
    assert count_comparisons(alone, cells, catalog) == 1
    small, large = "crc32[lanes=2,size=small]@baseline", "crc32[lanes=2,size=large]@baseline"
    assert _compared_keys(alone, cells) == {small, large}
    assert reference_keys(alone, cells) == {small}  # the A/A-labelled reference: not lanes = 1's small
    assert comparisons_per_reference(alone, cells) == {small: 1}


def test_a_sweep_condition_reads_in_hertz_in_the_comparisons_and_their_parameter_labels(tmp_path):
    """A condition the sweep named from its frequencies reads as them wherever a comparison names it: its
    rows against the baseline, and the labels of a `compare` parameter's pairs made under it."""
    from boardlab.analysis.core import analyze
    from boardlab.analysis.tables import verdict_lines
    from boardlab.store import Store

    from helpers import make_pairs_db, pairs_plan

    swept = PAIRS.replace(
        'name = "cpu-stress"\nkind = "stressor"\nparams = { stressor = "cpu" }',
        'name = "policy0@1400000"\nkind = "governor"\n'
        'params = { governor = "userspace", policies = ["policy0"], '
        "frequencies_khz = { policy0 = 1400000 } }",
    )
    plan = pairs_plan(swept)
    conditions = {c.name: c for c in plan.conditions}  # the sweep's condition with its governor part
    with Store.open(make_pairs_db(tmp_path / "swept.db", plan, conditions=conditions), create=False) as store:
        a = analyze(store, 1)
    assert _size_pairs(a) == {
        (2, "size=large"): "size=small",
        (2, "size=large @policy0 1.4 GHz"): "size=small @policy0 1.4 GHz",
    }
    lines = verdict_lines(a)
    assert any(": policy0 1.4 GHz vs baseline" in ln for ln in lines), lines
    assert not any("policy0@" in ln for ln in lines), lines


def test_a_compared_parameter_is_carried_by_its_comparisons_not_read_from_a_condition_name(tmp_path):
    """Each comparison says which `compare` parameter it compares ("" for a condition against its baseline),
    and the heatmap leaves that parameter out of the row's label. A condition the user named like a compared
    value (`size=large`) is a condition: its cells keep their size in the row's label, and none of its
    comparisons lands on the cell of the `size` pair with the same text (read from the name, one did)."""
    from boardlab.analysis.core import analyze
    from boardlab.analysis.sections import heatmap
    from boardlab.store import Store

    from helpers import make_pairs_db, pairs_plan

    plan = pairs_plan(PAIRS.replace('name = "cpu-stress"', 'name = "size=large"'))
    conditions = {c.name: c for c in plan.conditions}
    with Store.open(make_pairs_db(tmp_path / "named.db", plan, conditions=conditions), create=False) as store:
        a = analyze(store, 1)
    got = sorted((ca.params["lanes"], ca.params["size"], ca.condition, ca.compared) for ca in a.comparisons)
    assert got == sorted(
        [(lanes, size, "size=large", "") for lanes in (1, 2) for size in ("small", "large")]
        + [(2, "large", "size=large", "size"), (2, "large", "size=large @size=large", "size")]
    )
    spec = heatmap(a).blocks[0].spec
    assert len(spec.cells) == len(a.comparisons)  # each comparison its own cell
    positions = {(spec.rows[r], spec.cols[c]) for r, c in spec.cells}
    assert {
        ("crc32 (lanes=1, size=small)", "size=large"),
        ("crc32 (lanes=1, size=large)", "size=large"),
        ("crc32 (lanes=2)", "size=large"),  # the `size` pair: large against small
        ("crc32 (lanes=2)", "size=large @size=large"),
    } <= positions
