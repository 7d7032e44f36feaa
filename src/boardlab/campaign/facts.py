"""The workload facts a campaign stores for its report (`boardlab.model.facts`): written by the runner when
a campaign starts, so that analysis never asks the host that renders (its catalog, its boardlab-kern); and
each cell's facts, resolved from the plan entry that produced the cell (its thresholds, its compare pairing),
with the campaign's run order."""

from __future__ import annotations

import json
from collections.abc import Iterable

from boardlab.campaign.schedule import compare_baseline, entry_of
from boardlab.errors import BoardlabError, InputError
from boardlab.model import facts
from boardlab.model.campaign import Cell, Plan
from boardlab.model.workload import WorkloadSpec
from boardlab.store import Store


def document(specs: Iterable[WorkloadSpec], root: str = "/") -> dict:
    """The facts of these workloads, and what the board under `root` lets the services scenario measure."""
    from boardlab.workloads.services import energy_reason

    return facts.facts_document(specs, energy_reason=energy_reason(root))


def store_facts(store: Store, campaign_id: int, catalog: dict[str, WorkloadSpec], root: str = "/") -> bool:
    """Stores the facts of every workload of the catalog with the campaign, unless it holds them already (a
    resumed campaign keeps those of its start). True when they were missing from a campaign that had runs:
    one stored before boardlab stored facts, now derived once from this host's catalog."""
    if store.campaign_artifact(campaign_id, facts.WORKLOAD_FACTS) is not None:
        return False
    save(store, campaign_id, document(catalog.values(), root))
    return store.count_runs(campaign_id) > 0


def save(store: Store, campaign_id: int, doc: dict) -> None:
    store.save_campaign_artifact(campaign_id, facts.WORKLOAD_FACTS, json.dumps(doc, sort_keys=True).encode())


def cell_facts(plan: Plan, cell: Cell) -> facts.CellFacts:
    """The thresholds of the entry that produced the cell (`schedule.entry_of`), not of the first entry of
    its workload: two entries of one workload judge their cells each by its own; the cell its entry's
    `compare` parameter pairs it with (`schedule.compare_baseline`); whether its metric is a tail, as the
    metric's spec declared it when the cell was built. Not its condition's parts: the store keeps them with
    the cell, and the analysis reads them there (`analysis.core.cell_facts`)."""
    entry = entry_of(plan, cell)
    pair = compare_baseline(plan, cell)
    return facts.CellFacts(
        entry.threshold if entry else None,
        entry.tail_threshold if entry else None,
        compare=None if pair is None else facts.ComparePair(pair[0], pair[2].key, pair[1]),
        tail=cell.tail,
    )


def store_cell_facts(store: Store, campaign_id: int, plan: Plan, cells: Iterable[Cell]) -> None:
    """Stores each cell's facts and the run order with the campaign. A resumed campaign has the plan of its
    start (the same plan hash), so its cells' facts are the same: cells it did not have before are added. One
    stored by an older boardlab (schema 1: thresholds only; 2: no tail-ness) is rewritten with this plan's
    facts and order; a cell it has that this run does not keeps what it stored (the analysis derives the
    rest)."""
    data = store.campaign_artifact(campaign_id, facts.CELL_FACTS)
    try:
        stored = facts.read_cell_facts_document(json.loads(data)) if data is not None else None
    except ValueError as exc:  # JSONDecodeError too
        raise InputError(
            f"{store.path}: campaign {campaign_id}: its stored {facts.CELL_FACTS} cannot be read ({exc}); "
            "a newer boardlab wrote it, or the database is damaged"
        ) from None
    mine = {c.key: cell_facts(plan, c) for c in cells}
    kept = {} if stored is None else stored.cells
    current = stored is not None and stored.schema == facts.CELL_FACTS_SCHEMA
    if current and kept.keys() >= mine.keys():
        return
    merged = {**mine, **kept} if current else {**kept, **mine}
    doc = facts.cell_facts_document(merged, plan.runs.order)
    store.save_campaign_artifact(campaign_id, facts.CELL_FACTS, json.dumps(doc, sort_keys=True).encode())


def derive_missing(store: Store, campaign_ids: Iterable[int] | None = None) -> list[int]:
    """The data step of a store about to be analysed (`store` opened to write): every campaign (of
    `campaign_ids`, or of the store) stored without workload facts, by a boardlab that did not store them,
    gets this host's catalog's, stored as the runner stores them, once. Returns their ids, for the caller
    to say: a report of them may differ from one made where another boardlab-kern is installed."""
    missing = store.campaigns_without_artifact(facts.WORKLOAD_FACTS)
    if campaign_ids is not None:
        wanted = set(campaign_ids)
        missing = [c for c in missing if c in wanted]
    if missing:
        doc = host_facts()
        for campaign_id in missing:
            save(store, campaign_id, doc)
    return missing


def host_facts() -> dict:
    """This host's catalog as a facts document: what a campaign stored without facts is given."""
    from boardlab.workloads import all_workloads

    try:
        specs = all_workloads()
    except (BoardlabError, OSError):  # no runnable boardlab-kern here: the Python-run workloads' facts only
        from boardlab.workloads import python_workload_modules

        specs = [m.SPEC for m in python_workload_modules().values()]
    return document(specs)
