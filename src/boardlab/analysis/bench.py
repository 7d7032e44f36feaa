"""What `boardlab bench` says of its campaign: each command's median with its CI under each condition, each
command against the first ("B is x [lo, hi] times slower than A") and each condition against the baseline,
with the verdicts of the campaign's analysis (one correction family, as every report), and each cell's
outlier, bimodality and drift warnings. A JSON-ready dict (its `results` in hyperfine's `--export-json`
layout, so tools that read hyperfine's export read it) and a document for Markdown."""

from __future__ import annotations

import statistics

from boardlab.analysis import document as doc
from boardlab.analysis.records import CampaignAnalysis, CellAnalysis, ComparisonAnalysis

BENCH_SCHEMA = 1
COMMAND_PARAM = "command"  # the program parameter whose values are the commands (campaign.benchplan's)


def _ci(interval) -> list[float] | None:
    return None if interval is None else [interval.low, interval.high]


def _cell(c: CellAnalysis, names: dict[str, str]) -> dict:
    from boardlab.stats.flags import cell_flags

    values = list(c.values)
    s = c.summary
    warnings = list(s.warnings) if s else []
    if s and s.outliers.total and not any("Tukey" in w for w in warnings):
        warnings.append(f"{s.outliers.total} of {s.n} runs beyond Tukey's fences (counted, not dropped)")
    warnings += cell_flags("runs", values, higher_is_better=c.higher_is_better)
    command = str(c.params.get(COMMAND_PARAM, c.workload))
    user = c.runs.known(c.runs.user_us)
    system = c.runs.known(c.runs.system_us)
    return {
        "name": names.get(command, command),
        "command": command,
        "condition": c.condition,
        "metric": c.metric,
        "unit": c.unit,
        "n": len(values),
        "invalid": c.n_invalid,
        "failed": c.n_failed,
        "median": s.median if s else (statistics.median(values) if values else None),
        "median_ci": _ci(s.median_ci if s and s.median_ci else (s.median_bootstrap_ci if s else None)),
        "mean": statistics.fmean(values) if values else None,
        "stddev": statistics.stdev(values) if len(values) > 1 else None,
        "min": min(values, default=None),
        "max": max(values, default=None),
        "user_s": statistics.median(user) / 1e6 if user else None,
        "system_s": statistics.median(system) / 1e6 if system else None,
        "times": values,
        "outliers": s.outliers.total if s else 0,
        "warnings": warnings,
    }


def _comparison(k: ComparisonAnalysis, cells: dict[str, dict]) -> dict | None:
    c = k.comparison
    a, b = cells.get(k.baseline_key), cells.get(k.cell_key)
    if a is None or b is None:
        return None
    kind = "command" if a["condition"] == b["condition"] else "condition"
    out = {"kind": kind, "a": a["name"], "b": b["name"], "a_condition": a["condition"],
           "b_condition": b["condition"], "ratio": None, "ratio_ci": None, "decision_ci": None,
           "verdict": None, "p_adjusted": None, "flags": [], "reason": k.reason}  # fmt: skip
    if c is not None:
        out.update(ratio=c.cost_ratio, ratio_ci=_ci(c.cost_ratio_ci), decision_ci=_ci(c.decision_ci),
                   verdict=c.verdict.kind, p_adjusted=c.p_adjusted, flags=list(c.verdict.flags))  # fmt: skip
    return out


def bench_result(analysis: CampaignAnalysis, names: dict[str, str], facts: dict) -> dict:
    """The bench's result: `names` maps each command to its name, `facts` says how it ran (runs, pinning,
    shell, gates) and is kept as it is."""
    by_key = {c.key: _cell(c, names) for c in analysis.cells}
    comparisons = [x for k in analysis.comparisons if (x := _comparison(k, by_key)) is not None]
    cells = list(by_key.values())
    return {
        "schema": BENCH_SCHEMA,
        "campaign_id": analysis.campaign_id,
        "plan": analysis.name,
        **facts,
        "ratio": "B / A of the costs (the runs' 20%-trimmed geometric means; > 1: B is slower), its 95% CI, "
        "and the verdict from the 90% decision interval against a 2% threshold, p adjusted over "
        "every comparison",
        "cells": cells,
        "comparisons": comparisons,
        "results": [_hyperfine(c) for c in cells],
    }


def _hyperfine(c: dict) -> dict:
    """A cell as hyperfine's --export-json writes a command's result (times in seconds)."""
    label = c["command"] if c["condition"] == "baseline" else f"{c['command']} [under {c['condition']}]"
    return {"command": label, "mean": c["mean"], "stddev": c["stddev"], "median": c["median"],
            "user": c["user_s"], "system": c["system_s"], "min": c["min"], "max": c["max"],
            "times": c["times"], "exit_codes": [0] * c["n"]}  # fmt: skip


def bench_document(d: dict) -> doc.Document:
    """The bench's result as a document (`--export-markdown` renders it)."""
    from boardlab.analysis.format import fmt_interval, fmt_num, fmt_ratio, verdict_text

    def ci(x):
        return fmt_interval(*x) if x else "–"

    cells = doc.Table(
        (doc.Column("command"), doc.Column("condition"),
         doc.Column("median", d["cells"][0]["unit"] if d["cells"] else None, numeric=True),
         doc.Column("95% CI", numeric=True), doc.Column("runs", numeric=True), doc.Column("warnings")),
        tuple((c["name"], c["condition"], fmt_num(c["median"]), ci(c["median_ci"]), str(c["n"]),
               "; ".join(c["warnings"])) for c in d["cells"]),
    )  # fmt: skip
    comps = doc.Table(
        (doc.Column("B"), doc.Column("A"), doc.Column("B / A", numeric=True),
         doc.Column("95% CI", numeric=True), doc.Column("verdict")),
        tuple((f"{x['b']} @ {x['b_condition']}", f"{x['a']} @ {x['a_condition']}", fmt_ratio(x["ratio"]),
               ci(x["ratio_ci"]), verdict_text(x["verdict"]) if x["verdict"] else (x["reason"] or ""))
              for x in d["comparisons"]),
    )  # fmt: skip
    facts = doc.Prose(
        f"{d['runs_per_cell']} runs per command and condition ({d['runs_basis']}); {d['pinning']}."
    )
    return doc.Document(
        f"boardlab bench: {d['plan']}",
        (
            doc.section("Commands", facts, cells),
            doc.section("Comparisons", comps, doc.Prose(d["ratio"], small=True)),
        ),
    )
