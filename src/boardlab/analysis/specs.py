"""What analysis knows of a campaign's workloads (tails, histograms, roles, curves, composites): read from the
store, never from the host that renders.

The runner stores every workload's analysis facts with the campaign when it starts (`boardlab.model.facts`);
`workload_facts(store, id)` reads them into a `WorkloadFacts` for one analysis, which `analysis.core.analyze`
hands to the studies (`StudyContext.workloads`) and keeps in its result (`CampaignAnalysis.workloads`) for
the document. Nothing is kept between calls: one process analysing campaigns of two builds (`boardlab serve`)
gives each campaign its own facts, and one database gives one report on any host.

A campaign stored before boardlab stored these facts has none until the program that opens its store writes
them (the CLI does, once, from its host's catalog, and says so: `boardlab.campaign.facts.derive_missing`);
until then, or where the store cannot be written, its workloads read as plain workloads (no roles, tails or
composites).
"""

from __future__ import annotations

import json

from boardlab.errors import InputError
from boardlab.model import facts
from boardlab.model.facts import WorkloadFacts


def workload_facts(store, campaign_id: int) -> WorkloadFacts:
    """The campaign's stored workload facts (empty when it has none); InputError for facts this boardlab
    cannot read, naming the store and the campaign."""
    data = store.campaign_artifact(campaign_id, facts.WORKLOAD_FACTS)
    if data is None:
        return WorkloadFacts()
    try:
        return facts.read_facts_document(json.loads(data))
    except ValueError as exc:  # JSONDecodeError too
        raise InputError(
            f"{store.path}: campaign {campaign_id}: its stored {facts.WORKLOAD_FACTS} cannot be read "
            f"({exc}); a newer boardlab wrote it, or the database is damaged"
        ) from None
