"""What every report format says about verdicts: the decision interval, the thresholds, the correction
family and the A/A control (docs/method.md "Comparing a condition with its baseline"). The HTML, Markdown and
terminal renderers lay these out so that the three say the same thing in the same words."""

from __future__ import annotations

from typing import TYPE_CHECKING

from boardlab.analysis import document as doc
from boardlab.analysis.format import fmt_interval, fmt_p, fmt_ratio, section_labels, verdict_text
from boardlab.analysis.tables import Table

if TYPE_CHECKING:
    from boardlab.analysis.core import CampaignAnalysis, ComparisonAnalysis


def method_note(a: CampaignAnalysis) -> str:
    """The verdict rule in one paragraph, with this report's family and thresholds."""
    deltas = sorted({(ca.comparison.delta, ca.delta_source) for ca in _all(a) if ca.comparison})
    thresholds = "; ".join(f"{d:.1%} ({src})" for d, src in deltas) or "none (no comparison)"
    return (
        "Verdicts are decided on the 90% decision interval: the two-sided 90% interval of the cost ratio "
        "(condition / baseline, > 1 = worse) from the statistic the row's test uses (Yuen's trimmed t; a "
        "bootstrap of whole runs where the rank test or a pooled tail decided), because each side is a "
        "one-sided test at alpha = 0.05. slowdown: "
        "adjusted p < 0.05 and the decision interval above 1 + delta; speedup: the mirror; no change: the "
        "decision interval inside [1 - delta, 1 + delta] (equivalence, TOST); otherwise inconclusive. A 95% "
        "CI is shown beside it for reading, labelled; it does not decide. "
        f"Threshold delta per plan entry: {thresholds}. {a.adjusted_text[0].upper()}{a.adjusted_text[1:]}."
        + (f" {a.pairing_source}" if a.pairing_source else "")
    )


def _all(a: CampaignAnalysis) -> list[ComparisonAnalysis]:
    return list(a.comparisons) + list(a.tail_comparisons)


AA_HEADERS = (
    "workload",
    "reference condition",
    "n A1/A2 [runs]",
    "cost ratio A2/A1 [×]",
    "90% decision interval [×]",
    "delta",
    "p (uncorrected)",
    "A/A verdict",
    "status",
)


def aa_table(a: CampaignAnalysis) -> doc.Table:
    t = Table(AA_HEADERS, (False, False, True, True, True, True, True, False, False))
    labels = section_labels((ctl.workload, ctl.params) for ctl in a.aa_controls)
    for ctl, label in zip(a.aa_controls, labels, strict=True):
        c = ctl.comparison
        if c is None or ctl.reason:
            status = f"no A/A verdict: {ctl.reason}"
            t.rows.append(
                (label, ctl.condition, f"{ctl.n_a1}/{ctl.n_a2}", "–", "–", "–", "–", "no verdict", status)
            )
            t.row_classes.append("v-none")
            continue
        di = fmt_interval(c.decision_ci.low, c.decision_ci.high, sig=4) if c.decision_ci else "–"
        if ctl.unstable:
            status = f"UNSTABLE: {ctl.remedy}"
        elif c.verdict.kind == "no_change":
            status = "stable"
        else:  # no alarm, but no evidence of stability either
            status = "not shown stable: the halves are too noisy or too few to tell (no alarm)"
        t.rows.append(
            (
                label,
                ctl.condition,
                f"{ctl.n_a1}/{ctl.n_a2}",
                fmt_ratio(c.cost_ratio),
                di,
                f"{c.delta:.1%}",
                fmt_p(c.p_value),
                verdict_text(c.verdict.kind),
                status,
            )
        )
        t.row_classes.append("flagged" if ctl.unstable else "")
    return t.done(note_column="status")


def aa_note(a: CampaignAnalysis) -> str:
    return (
        "A/A control: the schedule labelled each reference cell's runs A1 and A2 alternately before the "
        "first run; A2 is compared with A1 by the same rule as every comparison (uncorrected, so it errs "
        "towards calling a workload unstable). Expected: no change or inconclusive. A slowdown or speedup "
        "marks that workload's verdicts UNSTABLE."
    )


def aa_summary(a: CampaignAnalysis) -> str:
    if not a.aa_controls:
        return "A/A control: none (no comparison in this campaign)."
    unstable = a.unstable_workloads
    judged = [c for c in a.aa_controls if c.comparison is not None and not c.reason]
    if unstable:
        names = ", ".join(f"{c.label} @{c.condition}" for c in unstable)
        return f"A/A control: UNSTABLE for {names}: their verdicts are marked unstable."
    if not judged:
        return "A/A control: no A/A verdict (too few labelled baseline runs; it needs 10 per reference cell)."
    stable = sum(1 for c in judged if c.comparison is not None and c.comparison.verdict.kind == "no_change")
    return (
        f"A/A control: no alarm in {len(judged)} reference cells judged; {stable} shown stable (no change), "
        f"{len(judged) - stable} too noisy to tell."
    )


def build_note(a: CampaignAnalysis) -> str | None:
    """The native kernels' compiler and flags, so that a reader comparing with published SciMark or
    MiBench scores knows what was compared (an -O2 multi-file build reads differently from -O3 or LTO)."""
    build = a.environment.get("kern_build")
    if not isinstance(build, dict) or not build.get("compiler"):
        return None
    return (
        f"native kernels built with {build['compiler']} {build.get('flags') or build.get('cflags', '')}"
    ).rstrip()


# ---- a campaign's verdicts at a glance (serve's lists read them from the stored summary) -------------------

TALLY_WORDS = (
    ("slowdown", "slowdown", "slowdowns"),
    ("speedup", "speedup", "speedups"),
    ("inconclusive", "inconclusive", "inconclusive"),
    ("no_change", "no change", "no change"),
    ("insufficient", "insufficient", "insufficient"),
    ("none", "no verdict", "no verdict"),
)


def verdict_tally(a: CampaignAnalysis) -> dict:
    """How many comparisons (medians and tails) ended in each verdict, and the A/A control's state ("ok",
    "unstable", "not judged", "none"): what a list of campaigns shows without opening one."""
    counts: dict[str, int] = {}
    for ca in (*a.comparisons, *a.tail_comparisons):
        kind = ca.comparison.verdict.kind if ca.comparison else "none"
        counts[kind] = counts.get(kind, 0) + 1
    judged = [c for c in a.aa_controls if c.comparison is not None and not c.reason]
    aa = (
        "none"
        if not a.aa_controls
        else "unstable"
        if a.unstable_workloads
        else "ok"
        if judged
        else "not judged"
    )
    return {"counts": counts, "aa": aa}


def tally_words(tally: dict | None) -> str:
    """A tally as a list cell reads it: "1 slowdown, 3 no change; A/A ok"; a campaign whose summary is not
    stored (still running, or from before summaries were kept) says so rather than being analysed for a
    list."""
    if not tally:
        return "not summarized"
    counts = tally.get("counts") or {}
    said = [f"{n} {one if n == 1 else many}" for kind, one, many in TALLY_WORDS if (n := counts.get(kind))]
    aa = {"ok": "A/A ok", "unstable": "A/A UNSTABLE", "not judged": "A/A not judged"}.get(tally.get("aa", ""))
    return "; ".join(x for x in (", ".join(said) or "no comparison", aa) if x)
