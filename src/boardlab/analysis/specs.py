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

from boardlab.errors import InputError
from boardlab.model import facts
from boardlab.model.workload import WorkloadSpec

_SPECS: dict[str, WorkloadSpec] = {}
_HOST: dict[tuple[str, int], dict | None] = {}  # what HOST_FACTS gave for an older campaign: asked once


def _facts(store, campaign_id: int) -> tuple[dict[str, WorkloadSpec], str | None] | None:
    data = store.campaign_artifact(campaign_id, facts.WORKLOAD_FACTS)
    try:
        if data is not None:
            return facts.read_facts_document(json.loads(data))
    except ValueError as exc:  # JSONDecodeError too
        raise InputError(
            f"{store.path}: campaign {campaign_id}: its stored {facts.WORKLOAD_FACTS} cannot be read ({exc}); "
            "a newer boardlab wrote it, or the database is damaged"
        ) from None
    key = (str(store.path), campaign_id)
    if key not in _HOST and facts.HOST_FACTS is not None:
        _HOST[key] = facts.HOST_FACTS(store.path, campaign_id)
    doc = _HOST.get(key)
    return None if doc is None else facts.read_facts_document(doc)


def remember_campaign(store, campaign_id: int) -> None:
    """Adds the campaign's stored workload facts to the table; InputError for facts this boardlab cannot
    read."""
    got = _facts(store, campaign_id)
    if got is not None:
        _SPECS.update(got[0])


def energy_reason(store, campaign_id: int) -> str | None:
    """The board's statement for the services scenario's energy, as stored with the campaign: how it measured
    energy per message, or why it could not (None: not stored)."""
    got = _facts(store, campaign_id)
    return None if got is None else got[1]


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
