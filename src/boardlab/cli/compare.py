"""`boardlab compare A.db B.db`: two campaigns (two boards, or two sessions of one) side by side, cell by cell."""

from __future__ import annotations

import json
import sys

HELP = "compare two campaigns (two boards or two sessions) cell by cell"
DESCRIPTION = (
    "Compare two campaigns cell by cell (cells matched by workload, parameters and condition): each side's "
    "median and run count, the ratio B/A with a bootstrap CI, the Mann-Whitney test with Holm's correction "
    "over all matched cells, and a verdict against a threshold from both campaigns' A/A noise. Cells found "
    "on one side only are listed."
)
COMPARE_SCHEMA = 1


def add_arguments(parser) -> None:
    parser.add_argument("a", metavar="A.db", help="results database of side A (the reference)")
    parser.add_argument("b", metavar="B.db", help="results database of side B (may be the same file as A)")
    parser.add_argument("--campaign-a", type=int, help="campaign id in A (default: the latest)")
    parser.add_argument("--campaign-b", type=int, help="campaign id in B (default: the latest)")
    parser.add_argument(
        "--json", action="store_true", help=f"print a JSON document (schema {COMPARE_SCHEMA})"
    )


def _load(path: str, campaign_id: int | None):
    from boardlab.errors import InputError
    from boardlab.report.analysis import analyze, latest_campaign_id
    from boardlab.store import Store

    with Store.open(path, create=False) as store:
        cid = campaign_id if campaign_id is not None else latest_campaign_id(store)
        if cid is None:
            raise InputError(f"{path}: no campaign in this database yet")
        store.conn.execute("BEGIN")  # one consistent snapshot, even while a campaign writes
        try:
            return analyze(store, cid)
        finally:
            store.conn.execute("COMMIT")


def _key(cell) -> tuple[str, str, str]:
    return cell.workload, json.dumps(cell.params, sort_keys=True), cell.condition


def _side(path: str, a) -> dict:
    return {
        "db": path,
        "campaign_id": a.campaign_id,
        "name": a.name,
        "board": a.board_label,
        "status": a.status,
        "boardlab_version": a.boardlab_version,
        "started_unix_s": a.started_unix_s,
    }


def _interval(ci) -> list[float] | None:
    return None if ci is None else [ci.low, ci.high]


def _cell_id(cell) -> dict:
    return {
        "workload": cell.workload,
        "params": cell.params,
        "condition": cell.condition,
        "metric": cell.metric,
    }


def compare_campaigns(a, b, *, path_a: str = "A", path_b: str = "B") -> dict:
    """The comparison document: every cell of A matched in B, B/A per cell (METHOD.md "Comparing ...")."""
    from boardlab.stats import aa_delta, aa_ratios_from_runs, adjust, compare
    from boardlab.stats.threshold import MIN_SPLIT_RUNS

    b_cells = {_key(c): c for c in b.cells}
    a_keys = {_key(c) for c in a.cells}
    matched = [(ca, b_cells[_key(ca)]) for ca in a.cells if _key(ca) in b_cells]

    # The practical threshold from both sides' noise: half-splits of every baseline cell with enough runs.
    aa: list[float] = []
    for side in (a, b):
        for c in side.cells:
            if c.baseline is None and len(c.values) >= MIN_SPLIT_RUNS:
                aa.extend(aa_ratios_from_runs(c.values, seed=c.cell_id))
    delta = aa_delta(aa) if aa else None
    delta_reason = None
    if delta is None:
        delta_reason = (
            f"no baseline cell has {MIN_SPLIT_RUNS} valid runs on either side: no A/A threshold, so no verdicts; "
            "run at least 10 repetitions"
        )

    rows: list[dict] = []
    comps = []
    slots = []
    for i, (ca, cb) in enumerate(matched):
        row = {
            **_cell_id(ca),
            "unit": ca.unit,
            "higher_is_better": ca.higher_is_better,
            "a": {"n": len(ca.values), "median": ca.summary.median if ca.summary else None},
            "b": {"n": len(cb.values), "median": cb.summary.median if cb.summary else None},
            "ratio": None,
            "ratio_ci": None,
            "cost_ratio": None,
            "cost_ratio_ci": None,
            "test": None,
            "p_value": None,
            "p_adjusted": None,
            "verdict": None,
            "confounded": None,
            "reasons": [],
            "reason": None,
        }
        if ca.metric != cb.metric or ca.unit != cb.unit:
            row["reason"] = f"different metrics: {ca.metric} [{ca.unit}] in A, {cb.metric} [{cb.unit}] in B"
        elif not ca.values or not cb.values:
            row["reason"] = f"no valid runs in {'A' if not ca.values else 'B'}"
        else:
            if row["a"]["median"] is None or row["b"]["median"] is None:  # one run: its value is the median
                import statistics

                row["a"]["median"] = statistics.median(ca.values)
                row["b"]["median"] = statistics.median(cb.values)
            env_a = [r.environment for r in ca.runs if r.valid and r.value is not None]
            env_b = [r.environment for r in cb.runs if r.valid and r.value is not None]
            comps.append(
                compare(
                    list(ca.values),
                    list(cb.values),
                    higher_is_better=ca.higher_is_better,
                    delta=delta.delta if delta else 0.02,
                    seed=i,
                    baseline_env=env_a,
                    condition_env=env_b,
                )
            )
            slots.append(len(rows))
        rows.append(row)
    for slot, c in zip(slots, adjust(comps, "holm") if comps else (), strict=True):
        row = rows[slot]
        row.update(
            ratio=c.ratio,
            ratio_ci=_interval(c.ratio_ci),
            cost_ratio=c.cost_ratio,
            cost_ratio_ci=_interval(c.cost_ratio_ci),
            test=c.test.name,
            p_value=c.p_value,
            p_adjusted=c.p_adjusted,
        )
        if delta is None:
            row["reason"] = delta_reason
        else:
            row.update(
                verdict=c.verdict.kind, confounded=c.verdict.confounded, reasons=list(c.verdict.reasons)
            )
    return {
        "schema": COMPARE_SCHEMA,
        "a": _side(path_a, a),
        "b": _side(path_b, b),
        "ratio": "B / A: median of B over median of A; cost_ratio > 1 means B is worse",
        "delta": None
        if delta is None
        else {
            "delta": delta.delta,
            "p95_abs_deviation": delta.p95_abs_deviation,
            "floor": delta.floor,
            "n_ratios": delta.n_ratios,
            "warnings": list(delta.warnings),
        },
        "delta_reason": delta_reason,
        "adjustment": "holm",
        "family_size": len(comps),
        "cells": rows,
        "unmatched": {
            "a_only": [_cell_id(c) for c in a.cells if _key(c) not in b_cells],
            "b_only": [_cell_id(c) for c in b.cells if _key(c) not in a_keys],
        },
    }


def render_text(doc: dict) -> str:
    from boardlab.report.svg import fmt_num
    from boardlab.report.terminal import aligned, display_unit, fmt_interval, fmt_p, fmt_ratio, verdict_text

    def who(side: dict) -> str:
        return f"{side['db']} campaign {side['campaign_id']} {side['name']!r} on {side['board']} ({side['status']})"

    out = [f"A: {who(doc['a'])}", f"B: {who(doc['b'])}"]
    d = doc["delta"]
    out.append(
        f"threshold delta = {d['delta']:.1%} (A/A half-splits of both sides' baselines, {d['n_ratios']} ratios)"
        if d
        else f"threshold: {doc['delta_reason']}"
    )
    out.append("")
    rows = []
    for r in doc["cells"]:
        params = ", ".join(f"{k}={v}" for k, v in r["params"].items())
        name = f"{r['workload']}" + (f" ({params})" if params else "") + f" @ {r['condition']}"
        div, unit = display_unit(r["unit"], r["a"]["median"])

        def med(side, div=div):
            return "–" if side["median"] is None else fmt_num(side["median"] / div, 4)

        ci = fmt_interval(*r["ratio_ci"], sig=3) if r["ratio_ci"] else "–"
        verdict = verdict_text(r["verdict"], bool(r["confounded"])) if r["verdict"] else (r["reason"] or "–")
        rows.append(
            (
                name,
                med(r["a"]),
                str(r["a"]["n"]),
                med(r["b"]),
                str(r["b"]["n"]),
                unit,
                fmt_ratio(r["ratio"]),
                ci,
                fmt_p(r["p_adjusted"]),
                verdict,
            )
        )
    out += aligned(
        ("cell", "A median", "n", "B median", "n", "unit", "B/A", "95% CI", "p adj", "verdict"),
        rows,
        (False, True, True, True, True, False, True, True, True, False),
    )
    out.append("")
    out.append("B/A is median(B) / median(A); a slowdown means B is worse (slower, or lower throughput).")
    for side, label in (("a_only", "only in A"), ("b_only", "only in B")):
        cells = doc["unmatched"][side]
        if cells:
            out.append(f"{label} ({len(cells)}):")
            for c in cells:
                params = ", ".join(f"{k}={v}" for k, v in c["params"].items())
                out.append(f"  {c['workload']}" + (f" ({params})" if params else "") + f" @ {c['condition']}")
    from boardlab.report.escape import term

    return "\n".join(term(line) for line in out) + "\n"


def run(args) -> int:
    a = _load(args.a, args.campaign_a)
    b = _load(args.b, args.campaign_b)
    doc = compare_campaigns(a, b, path_a=args.a, path_b=args.b)
    if args.json:
        sys.stdout.write(json.dumps(doc, indent=1, allow_nan=False) + "\n")
    else:
        sys.stdout.write(render_text(doc))
    return 0
