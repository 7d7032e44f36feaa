"""Markdown report (`boardlab report --format md`): the HTML report's tables and verdicts, without images."""

from __future__ import annotations

from boardlab.report import study_governor
from boardlab.report.analysis import CampaignAnalysis
from boardlab.report.escape import term
from boardlab.report.study_energy import energy_markdown
from boardlab.report.terminal import (
    Table,
    ai_frames_note,
    ai_table,
    cell_table,
    comparison_table,
    fmt_duration,
    fmt_time,
    rt_percentile_table,
    rt_short_sample_levels,
    run_counts,
    verdict_lines,
)


def md_escape(s: object) -> str:
    """Plan and board strings are data: no table breaks, no raw HTML, no code spans, no links."""
    text = str(s).replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`")
    text = term(text.replace("](", "]\\(").replace("][", "]\\["))  # no [x](url) link; controls shown
    text = text.replace("<", "&lt;").replace(">", "&gt;")
    return " ".join(text.splitlines())


def md_table(table: Table) -> list[str]:
    out = [
        "| " + " | ".join(md_escape(h) for h in table.headers) + " |",
        "|" + "|".join("---:" if num else "---" for num in table.numeric) + "|",
    ]
    out += ["| " + " | ".join(md_escape(c) for c in row) + " |" for row in table.rows]
    return out


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
    from boardlab.report.verdicts import build_note

    if build_note(a):
        out.append(f"- {md_escape(build_note(a))}")
    if a.status != "complete":
        out.append(
            f"- **partial:** the campaign is {md_escape(a.status)}; this covers the runs stored so far"
        )
    out += ["", "## Verdicts", ""]
    lines = verdict_lines(a)
    out += [f"- {md_escape(line)}" for line in lines] if lines else ["No comparisons in this campaign."]
    from boardlab.report.verdicts import aa_note, aa_summary, aa_table, method_note

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
    if a.rt_cells:
        short = rt_short_sample_levels(a)
        out += [
            "",
            "## Real-time latency",
            "",
            "Per rt.cyclictest cell: nearest-rank percentiles of the histogram merged over its valid runs (a "
            "percentile in the overflow shows only its bound, >= the histogram's limit); min, avg and max over "
            "every sample. Verdicts on the max latency are in the comparisons above."
            + (f" {md_escape(short)}" if short else ""),
            "",
        ] + md_table(rt_percentile_table(a))
    if a.ai_cells:
        out += [
            "",
            "## AI inference",
            "",
            "Per model and condition: the median over valid runs of each run's per-frame p50/p90/p99. Median "
            "verdict: the runs' median latencies (the primary comparison); p99 verdict: per-run p99s with at "
            "least 100 frames per run, else the pooled p99 with a cluster bootstrap over runs, in the report's "
            "one correction family. Cost ratio > 1 = slower than the baseline."
            + (f" {note}" if (note := ai_frames_note(a)) else ""),
            "",
        ] + md_table(ai_table(a))
    out += energy_markdown(a)
    out += study_governor.markdown_lines(a)
    if a.stream:
        from boardlab.report.study_stream import markdown_lines

        out += markdown_lines(a.stream)
    return "\n".join(out) + "\n"
