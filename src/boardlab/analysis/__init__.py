"""The analysis layer: the only reader of the store for reports and the only home of comparison.

`analyze(store, campaign_id)` turns a stored campaign into a `CampaignAnalysis` (per-cell summaries,
verdicts, the A/A control, and every applying study's typed record, `analysis.studies`);
`compare_campaigns(a, b)` compares two analyses cell by cell. `analysis.document` is the neutral document
model the studies yield and `boardlab.report` renders.
"""

from __future__ import annotations

from boardlab.analysis.compare import COMPARE_SCHEMA, compare_campaigns
from boardlab.analysis.core import CampaignAnalysis, CellAnalysis, analyze, latest_campaign_id, monitor_series

__all__ = [
    "COMPARE_SCHEMA",
    "CampaignAnalysis",
    "CellAnalysis",
    "analyze",
    "compare_campaigns",
    "latest_campaign_id",
    "monitor_series",
]
