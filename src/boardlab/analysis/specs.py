"""The workload specs analysis reads (tails, histograms, roles, curves, composites), by workload name.

They come from the store, never from the host that renders: the runner stores every workload's analysis
facts with the campaign when it starts (`boardlab.model.facts`), and `remember_campaign(store, id)`, called
when a campaign is analysed, adds them to this process's table, so one database gives one report on any
host, with or without a working boardlab-kern. The table is keyed by workload name over the campaigns a
process has read (a workload's facts do not change between the campaigns one report compares).

A campaign stored before boardlab stored these facts has none: its facts are derived once from this host's
catalog when the program that reads it (the CLI) offers one (`boardlab.model.facts.HOST_FACTS`), and that
program says so; without one its workloads read as plain workloads (no roles, tails or composites).
"""

from __future__ import annotations

import json

from boardlab.model import facts
from boardlab.model.workload import WorkloadSpec

_SPECS: dict[str, WorkloadSpec] = {}


def _facts_document(store, campaign_id: int) -> dict | None:
    data = store.campaign_artifact(campaign_id, facts.WORKLOAD_FACTS)
    if data is not None:
        return json.loads(data)
    return facts.HOST_FACTS(store.path, campaign_id) if facts.HOST_FACTS is not None else None


def remember_campaign(store, campaign_id: int) -> None:
    """Adds the campaign's stored workload facts to the table. Raises ValueError for facts this boardlab
    cannot read."""
    doc = _facts_document(store, campaign_id)
    if doc is not None:
        _SPECS.update(facts.read_facts_document(doc)[0])


def energy_reason(store, campaign_id: int) -> str | None:
    """The board's statement for the services scenario's energy, as stored with the campaign: how it measured
    energy per message, or why it could not (None: not stored)."""
    doc = _facts_document(store, campaign_id)
    return None if doc is None else facts.read_facts_document(doc)[1]


def catalog() -> dict[str, WorkloadSpec]:
    """Every workload whose facts the campaigns read so far stored."""
    return dict(_SPECS)


def spec_of(workload: str) -> WorkloadSpec | None:
    return _SPECS.get(workload)


def has_role(workload: str, role: str) -> bool:
    spec = spec_of(workload)
    return spec is not None and role in spec.roles


def tail_samples(workload: str) -> bool:
    spec = spec_of(workload)
    return spec is not None and spec.tail_samples
