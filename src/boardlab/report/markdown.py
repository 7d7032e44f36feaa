"""Markdown report (`boardlab report --format md`): the HTML report's tables and verdicts, without images."""

from __future__ import annotations

from boardlab.analysis.core import CampaignAnalysis
from boardlab.analysis.format import fmt_duration, fmt_time
from boardlab.analysis.tables import cell_table, comparison_table, run_counts, verdict_lines
from boardlab.report.render import md_escape, md_sections
from boardlab.report.render import md_table as _md_rows

__all__ = ["md_escape", "render_markdown"]


def md_table(table) -> list[str]:
    return _md_rows(table.headers, table.rows, table.numeric)


def render_markdown(analysis: CampaignAnalysis) -> str:
    a = analysis
    counts = run_counts(a)
    duration = (a.finished_unix_s - a.started_unix_s) if a.finished_unix_s else None
    reruns = "–" if counts["reruns"] is None else str(counts["reruns"])
    out = [
        f"# boardlab report: {md_escape(a.name)}",
        "",
        f"- campaign: {a.campaign_id}, status **{md_escape(a.status)}**, plan {md_escape(a.plan_source)}, "
        f"order {md_escape(a.order)}",
        f"- board: {md_escape(a.board_label)}; boardlab {md_escape(a.boardlab_version)}",
        f"- started {fmt_time(a.started_unix_s)}, finished {fmt_time(a.finished_unix_s)} "
        f"({fmt_duration(duration)})",
        f"- runs: {counts['runs']} ({counts['valid']} valid, {counts['invalid']} invalid, {counts['failed']} "
        f"failed, {reruns} re-runs)",
    ]
    from boardlab.analysis.verdicts import build_note

    if build_note(a):
        out.append(f"- {md_escape(build_note(a))}")
    if a.status != "complete":
        out.append(
            f"- **partial:** the campaign is {md_escape(a.status)}; this covers the runs stored so far"
        )
    out += ["", "## Verdicts", ""]
    lines = verdict_lines(a)
    out += [f"- {md_escape(line)}" for line in lines] if lines else ["No comparisons in this campaign."]
    from boardlab.analysis.verdicts import aa_note, aa_summary, aa_table, method_note

    if a.comparisons or a.tail_comparisons:
        out += ["", md_escape(method_note(a))]
    out += ["", "## A/A control", "", md_escape(aa_summary(a)), ""]
    t = aa_table(a)
    if t.rows:
        out += md_table(t) + [""]
    out.append(md_escape(aa_note(a)))
    out += ["", "## Environment", ""]
    warns = a.warnings
    if warns:
        for w in warns:
            fix = f" Fix: {md_escape(w['fix'])}" if w.get("fix") else ""
            out.append(
                f"- **{md_escape(w.get('status'))}** {md_escape(w.get('name'))}: {md_escape(w.get('detail'))}{fix}"
            )
    else:
        out.append("Every environment check passed.")
    caps = (a.environment.get("capabilities") or {}).items()
    missing = [(k, v) for k, v in caps if isinstance(v, dict) and not v.get("supported")]
    if missing:
        out += ["", "Unsupported here:", ""]
        out += [f"- {md_escape(k)}: {md_escape(v.get('reason') or 'no reason recorded')}" for k, v in missing]
    out += ["", "## Cells", ""] + md_table(cell_table(a))
    if a.comparisons:
        out += ["", "## Comparisons", ""] + md_table(comparison_table(a))
        out += [
            "",
            "Cost ratio > 1 means the condition is worse (slower, or lower throughput). Verdicts are decided on "
            f"the 90% decision interval; the 95% CI is shown, not decided on; p adjusted by {a.family_text}.",
        ]
    out += md_sections(a.study_sections())
    return "\n".join(out) + "\n"
