"""Markdown report (`boardlab report --format md`): the document's sections, tables and verdicts, without
images."""

from __future__ import annotations

from boardlab.analysis.core import CampaignAnalysis
from boardlab.analysis.sections import build_document
from boardlab.report.render import md_escape, render_document

__all__ = ["md_escape", "render_markdown"]


def render_markdown(analysis: CampaignAnalysis) -> str:
    return render_document(build_document(analysis), "md")
