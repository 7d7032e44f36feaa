"""Each analysis reads the workload facts its own campaign stored, handed to it, never a table of the process:
one process analysing campaigns of two builds (as `boardlab serve` does) gives each its own, in any order."""

from __future__ import annotations

import dataclasses
import json

from boardlab.analysis import analyze
from boardlab.analysis.headline import headlines
from boardlab.campaign import facts as campaign_facts
from boardlab.model import facts
from boardlab.store import Store

from helpers import host_workload_facts, make_campaign_db


def _build(composite: str, tail: bool) -> dict:
    """The facts a build stores: this host's catalog, with crc32 the member of `composite` and its tails
    compared or not (two builds of boardlab-kern that disagree)."""
    specs = dict(host_workload_facts().specs)
    fft = specs["scimark.fft"]
    specs["crc32"] = dataclasses.replace(
        fft, name="crc32", family="crc", composite=composite, tail_samples=tail
    )
    return facts.facts_document(specs.values(), energy_reason=f"energy of {composite}")


def test_two_campaigns_of_two_builds_each_get_their_own_facts_in_one_process(tmp_path):
    db = tmp_path / "lab.db"
    make_campaign_db(db, name="build a", seed=1, n=4, with_latency=False)
    make_campaign_db(db, name="build b", seed=2, n=4, with_latency=False)
    with Store.open(db) as store:
        a_id, b_id = (r["id"] for r in store.campaigns())
        campaign_facts.save(store, a_id, _build("Build A composite", tail=False))
        campaign_facts.save(store, b_id, _build("Build B composite", tail=True))
    with Store.open(db, create=False) as store:
        first_a, b, again_a = analyze(store, a_id), analyze(store, b_id), analyze(store, a_id)
    for a in (first_a, again_a):
        assert a.workloads.spec_of("crc32").composite == "Build A composite"
        assert [h.label for h in headlines(a) if "composite" in h.label] == ["Build A composite"]
        assert not a.tail_comparisons  # build A compares no tails of crc32
        assert a.workloads.energy_reason == "energy of Build A composite"
    assert b.workloads.spec_of("crc32").composite == "Build B composite"
    assert [h.label for h in headlines(b) if "composite" in h.label] == ["Build B composite"]
    assert {t.workload for t in b.tail_comparisons} == {"crc32"}
    assert json.dumps(first_a.workloads.catalog()["crc32"].composite) == json.dumps(
        again_a.workloads.catalog()["crc32"].composite
    )


def test_a_campaign_without_stored_facts_reads_its_workloads_as_plain_ones_beside_one_with_them(tmp_path):
    db = tmp_path / "lab.db"
    make_campaign_db(db, name="old", seed=1, n=4, with_latency=False)
    make_campaign_db(db, name="new", seed=2, n=4, with_latency=False)
    with Store.open(db) as store:
        old_id, new_id = (r["id"] for r in store.campaigns())
        store.conn.execute(
            "DELETE FROM artifacts WHERE campaign_id=? AND name=?", (old_id, facts.WORKLOAD_FACTS)
        )
        assert store.campaigns_without_artifact(facts.WORKLOAD_FACTS) == [old_id]
    with Store.open(db, create=False) as store:
        new, old = analyze(store, new_id), analyze(store, old_id)
    assert new.workloads.stored and new.workloads.spec_of("scimark.fft") is not None
    assert not old.workloads.stored and old.workloads.catalog() == {}


def test_the_data_step_stores_host_facts_once_for_the_campaigns_that_lack_them(tmp_path):
    db = tmp_path / "lab.db"
    make_campaign_db(db, name="old", seed=1, n=4, with_latency=False)
    make_campaign_db(db, name="new", seed=2, n=4, with_latency=False)
    with Store.open(db) as store:
        old_id, new_id = (r["id"] for r in store.campaigns())
        store.conn.execute(
            "DELETE FROM artifacts WHERE campaign_id=? AND name=?", (old_id, facts.WORKLOAD_FACTS)
        )
        kept = store.campaign_artifact(new_id, facts.WORKLOAD_FACTS)
        assert campaign_facts.derive_missing(store, [new_id]) == []  # not asked for: left alone
        assert campaign_facts.derive_missing(store) == [old_id]
        assert campaign_facts.derive_missing(store) == []  # once
        assert store.campaign_artifact(new_id, facts.WORKLOAD_FACTS) == kept
        stored = facts.read_facts_document(json.loads(store.campaign_artifact(old_id, facts.WORKLOAD_FACTS)))
    assert stored.specs.keys() == host_workload_facts().specs.keys()


def test_a_row_is_marked_with_its_metric_when_it_compares_the_tail_not_when_the_metric_is_named_p99(tmp_path):
    """A comparison says whether it compared the p99 (`tail`); the table marks that row with its metric. A
    median comparison of a metric whose name holds "p99" (a per-run p99 a worker reports) compares medians:
    read from the name, it was marked as a tail."""
    from boardlab.analysis.tables import comparison_cells

    db = tmp_path / "lab.db"
    make_campaign_db(db, name="tails", seed=2, n=4, with_latency=False)
    with Store.open(db) as store:
        (cid,) = (r["id"] for r in store.campaigns())
        campaign_facts.save(store, cid, _build("composite", tail=True))
    with Store.open(db, create=False) as store:
        a = analyze(store, cid)
    tail = next(t for t in a.tail_comparisons if t.comparison is not None)
    median = next(
        m for m in a.comparisons if m.cell_key == tail.cell_key and m.baseline_key == tail.baseline_key
    )
    assert tail.tail and not median.tail and tail.metric != median.metric
    row = {
        name: comparison_cells(ca, ca.comparison, str, ca.label, "")[0]
        for name, ca in (("tail", tail), ("median", median))
    }
    assert row == {"tail": f"{tail.label} [{tail.metric}]", "median": median.label}
    named_p99 = dataclasses.replace(median, metric="latency_p99_ns")
    assert comparison_cells(named_p99, named_p99.comparison, str, named_p99.label, "")[0] == median.label
