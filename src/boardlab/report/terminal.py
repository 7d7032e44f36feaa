"""The compact text report (`boardlab report --format text`, and the end of `boardlab run`): one line per cell
and per comparison, the A/A control, then every study's sections as the document gives them.
"""

from __future__ import annotations

from boardlab.analysis.core import CampaignAnalysis
from boardlab.analysis.format import (
    display_unit,
    fmt_interval,
    fmt_num,
    fmt_p,
    fmt_pct,
    fmt_ratio,
    verdict_text,
)
from boardlab.analysis.tables import drift_text, run_counts
from boardlab.report.escape import term
from boardlab.report.render import aligned, text_sections, text_table

__all__ = ["aligned", "render_text"]


def _clip(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def render_text(analysis: CampaignAnalysis, *, label_width: int = 52) -> str:
    """A compact summary for a terminal: one line per cell and per comparison, then the warnings."""
    counts = run_counts(analysis)
    out = [
        f"campaign {analysis.name!r} (id {analysis.campaign_id}): {analysis.status}, board {analysis.board_label}, "
        f"{counts['valid']}/{counts['runs']} runs valid, {counts['invalid']} invalid, {counts['failed']} failed",
        "",
    ]
    rows = []
    for c in analysis.cells:
        s = c.summary
        name = _clip(f"{c.label} @ {c.condition}", label_width)
        if s is None:
            rows.append((name, str(len(c.values)), "–", "", "–", "–", "–", _clip(c.summary_reason or "", 50)))
            continue
        div, unit = display_unit(c.unit, s.median)
        ci = fmt_interval(s.median_ci.low, s.median_ci.high, div) if s.median_ci else "–"
        rows.append(
            (
                name,
                str(s.n),
                fmt_num(s.median / div, 4),
                unit,
                ci,
                fmt_pct(s.cv),
                drift_text(c),
                "; ".join(_clip(w, 50) for w in s.warnings[:1]),
            )
        )
    out += aligned(
        ("cell", "n", "median", "unit", "95% CI", "CV %", "drift ρ, p", "note"),
        rows,
        (False, True, True, False, True, True, False, False),
    )
    if analysis.comparisons:
        out.append("")
        rows = []
        for ca in analysis.comparisons:
            c = ca.comparison
            name = _clip(f"{ca.label}: {ca.condition} vs {ca.baseline}", label_width + 16)
            if c is None:
                rows.append((name, "–", "–", "–", "–", "–", f"no verdict: {ca.reason}"))
                continue
            di = fmt_interval(c.decision_ci.low, c.decision_ci.high, sig=3) if c.decision_ci else "–"
            ci = fmt_interval(c.cost_ratio_ci.low, c.cost_ratio_ci.high, sig=3) if c.cost_ratio_ci else "–"
            rows.append(
                (
                    name,
                    fmt_ratio(c.cost_ratio),
                    di,
                    ci,
                    f"{c.delta:.0%}",
                    fmt_p(c.p_adjusted),
                    verdict_text(c.verdict.kind, c.verdict.confounded) + (" UNSTABLE" if ca.unstable else ""),
                )
            )
        out += aligned(
            ("comparison", "cost ×", "90% decision interval", "95% CI", "delta", "p adj", "verdict"),
            rows,
            (False, True, True, True, True, True, False),
        )
        out.append(
            "verdicts are decided on the 90% decision interval against delta; the 95% CI is shown, not decided "
            f"on; p adjusted by {analysis.family_text}; cost ratio > 1 means the condition is worse"
        )
        from boardlab.analysis.verdicts import aa_summary, aa_table

        out += ["", aa_summary(analysis)]
        t = aa_table(analysis)
        if t.rows:
            out += text_table(t)
            out += [f"  {r[0]} @{r[1]}: {r[-1]}" for r in t.rows if r[-1].startswith("UNSTABLE")]
    out += text_sections(analysis.study_sections())
    from boardlab.analysis.verdicts import build_note

    if build_note(analysis):
        out += ["", build_note(analysis)]
    warns = analysis.warnings
    if warns:
        out.append("")
        out.append("environment: " + ", ".join(f"{w.get('name')} {w.get('status')}" for w in warns))
    return "\n".join(term(line) for line in out) + "\n"
