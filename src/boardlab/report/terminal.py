"""The compact text report (`boardlab report --format text`, and the end of `boardlab run`): the document's
text blocks: one line per cell and per comparison, the A/A control, every study's tables, the warnings."""

from __future__ import annotations

from boardlab.analysis.core import CampaignAnalysis
from boardlab.analysis.sections import build_document
from boardlab.report.render import aligned, render_document

__all__ = ["aligned", "render_text"]


def render_text(analysis: CampaignAnalysis) -> str:
    return render_document(build_document(analysis), "text")
