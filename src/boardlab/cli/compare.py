"""`boardlab compare A.db B.db`: two campaigns (two boards, or two sessions of one) side by side, cell by cell."""

from __future__ import annotations

import json
import sys

HELP = "compare two campaigns (two boards or two sessions) cell by cell"
DESCRIPTION = (
    "Compare two campaigns cell by cell (cells matched by workload, parameters and condition): each side's "
    "median and run count, the ratio B/A with its 90% decision interval (and a 95% CI, shown), the "
    "Mann-Whitney test corrected over all matched cells (Holm up to 50, Benjamini-Hochberg above), and a "
    "verdict against each workload's threshold (the plan's `threshold`, default 2%, tails 10%). Each side's "
    "A/A control is shown, and a cell whose A/A control failed on either side is marked unstable. Cells "
    "found on one side only are listed."
)
COMPARE_SCHEMA = 1


def add_arguments(parser) -> None:
    parser.add_argument(
        "a",
        metavar="A",
        help="results database of side A (the reference): a SQLite file or a postgresql:// URL",
    )
    parser.add_argument("b", metavar="B", help="results database of side B (may be the same store as A)")
    parser.add_argument("--campaign-a", type=int, help="campaign id in A (default: the latest)")
    parser.add_argument("--campaign-b", type=int, help="campaign id in B (default: the latest)")
    parser.add_argument(
        "--board-a", metavar="LABEL", help="in a store of many boards: the latest campaign of this board in A"
    )
    parser.add_argument(
        "--board-b", metavar="LABEL", help="in a store of many boards: the latest campaign of this board in B"
    )
    parser.add_argument(
        "--json", action="store_true", help=f"print a JSON document (schema {COMPARE_SCHEMA})"
    )


def _load(path: str, campaign_id: int | None, board: str | None = None):
    from boardlab.errors import InputError
    from boardlab.report.analysis import analyze, latest_campaign_id
    from boardlab.store import Store

    with Store.open(path, create=False) as store:
        if campaign_id is not None and board is not None:
            raise InputError("give a campaign id or a board for each side, not both")
        if board is not None:
            cid = store.latest_campaign_of_board(board)
            if cid is None:
                labels = ", ".join(sorted({b["label"] for b in store.boards()})) or "none"
                raise InputError(
                    f"{store.path}: no campaign of a board labelled {board!r} (boards: {labels})"
                )
        else:
            cid = campaign_id if campaign_id is not None else latest_campaign_id(store)
        if cid is None:
            raise InputError(f"{store.path}: no campaign in this database yet")
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
    """The comparison document: every cell of A matched in B, B/A per cell (docs/method.md "Comparing ...")."""
    import tomllib

    from boardlab.report.analysis import threshold_for
    from boardlab.stats import adjust, compare, family_method

    b_cells = {_key(c): c for c in b.cells}
    a_keys = {_key(c) for c in a.cells}
    matched = [(ca, b_cells[_key(ca)]) for ca in a.cells if _key(ca) in b_cells]
    try:
        plan_a = tomllib.loads(a.plan_text)
    except tomllib.TOMLDecodeError:
        plan_a = {}
    # A/A controls of both sides, by cell: a cell whose control is unstable on either side is unstable here.
    unstable: dict[tuple, list[str]] = {}
    for side, analysis in (("A", a), ("B", b)):
        for ctl in analysis.aa_controls:
            if ctl.unstable:
                key = (ctl.workload, json.dumps(ctl.params, sort_keys=True), ctl.condition)
                unstable.setdefault(key, []).append(f"{side}: {ctl.remedy}")

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
            "decision_ci": None,
            "delta": None,
            "delta_source": None,
            "test": None,
            "p_value": None,
            "p_adjusted": None,
            "verdict": None,
            "confounded": None,
            "reasons": [],
            "reason": None,
            "unstable": unstable.get(_key(ca)),
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
            delta, source = threshold_for(plan_a, ca.workload, ca.metric)
            row.update(delta=delta, delta_source=source)
            comps.append(
                compare(
                    list(ca.values),
                    list(cb.values),
                    higher_is_better=ca.higher_is_better,
                    delta=delta,
                    seed=i,
                    baseline_env=env_a,
                    condition_env=env_b,
                )
            )
            slots.append(len(rows))
        rows.append(row)
    method = family_method(len(comps))
    for slot, c in zip(slots, adjust(comps, method) if comps else (), strict=True):
        row = rows[slot]
        row.update(
            ratio=c.ratio,
            ratio_ci=_interval(c.ratio_ci),
            cost_ratio=c.cost_ratio,
            cost_ratio_ci=_interval(c.cost_ratio_ci),
            decision_ci=_interval(c.decision_ci),
            test=c.test.name,
            p_value=c.p_value,
            p_adjusted=c.p_adjusted,
            verdict=c.verdict.kind,
            confounded=c.verdict.confounded,
            reasons=list(c.verdict.reasons),
        )
    return {
        "schema": COMPARE_SCHEMA,
        "a": _side(path_a, a),
        "b": _side(path_b, b),
        "ratio": "B / A: median of B over median of A; cost_ratio > 1 means B is worse",
        "decision": "verdicts are decided on decision_ci, the 90% bootstrap interval of the cost ratio, "
        "against each cell's delta; cost_ratio_ci (95%) is shown, not decided on",
        "adjustment": method,
        "family_size": len(comps),
        "aa_controls": {side: _aa_doc(analysis) for side, analysis in (("a", a), ("b", b))},
        "cells": rows,
        "unmatched": {
            "a_only": [_cell_id(c) for c in a.cells if _key(c) not in b_cells],
            "b_only": [_cell_id(c) for c in b.cells if _key(c) not in a_keys],
        },
    }


def _aa_doc(analysis) -> list[dict]:
    out = []
    for ctl in analysis.aa_controls:
        c = ctl.comparison
        out.append(
            {
                "workload": ctl.workload,
                "params": ctl.params,
                "condition": ctl.condition,
                "n_a1": ctl.n_a1,
                "n_a2": ctl.n_a2,
                "verdict": None if ctl.reason or c is None else c.verdict.kind,
                "cost_ratio": None if c is None else c.cost_ratio,
                "decision_ci": None if c is None else _interval(c.decision_ci),
                "unstable": ctl.unstable,
                "remedy": ctl.remedy,
                "reason": ctl.reason,
            }
        )
    return out


def render_text(doc: dict) -> str:
    from boardlab.report.svg import fmt_num
    from boardlab.report.terminal import aligned, display_unit, fmt_interval, fmt_p, fmt_ratio, verdict_text

    def who(side: dict) -> str:
        return f"{side['db']} campaign {side['campaign_id']} {side['name']!r} on {side['board']} ({side['status']})"

    out = [f"A: {who(doc['a'])}", f"B: {who(doc['b'])}"]
    method = {"holm": "Holm", "bh": "Benjamini-Hochberg"}.get(doc["adjustment"], doc["adjustment"])
    out.append(
        "verdicts are decided on the 90% decision interval of B/A against each cell's threshold delta; "
        f"p adjusted by {method} over {doc['family_size']} cells"
    )
    for side in ("a", "b"):
        controls = doc["aa_controls"][side]
        judged = [c for c in controls if c["verdict"]]
        bad = [c for c in controls if c["unstable"]]
        if not controls:
            text = "none (no comparison in that campaign)"
        elif bad:
            text = "UNSTABLE for " + ", ".join(f"{c['workload']} @{c['condition']}" for c in bad)
        elif judged:
            stable = sum(1 for c in judged if c["verdict"] == "no_change")
            text = f"no alarm in {len(judged)} reference cells judged ({stable} shown stable, the others too noisy to tell)"
        else:
            text = "no A/A verdict (too few labelled baseline runs)"
        out.append(f"A/A control of {side.upper()}: {text}")
        for c in controls:  # per workload: its A2/A1 verdict, or why there is none
            params = ", ".join(f"{k}={v}" for k, v in c["params"].items())
            name = c["workload"] + (f" ({params})" if params else "") + f" @ {c['condition']}"
            if c["verdict"] is None:
                out.append(f"  {name}: no A/A verdict: {c['reason']}")
                continue
            lo, hi = c["decision_ci"] or (float("nan"), float("nan"))
            mark = f" UNSTABLE: {c['remedy']}" if c["unstable"] else ""
            out.append(
                f"  {name}: {verdict_text(c['verdict'])} (A2/A1 cost {fmt_ratio(c['cost_ratio'])}, 90% decision "
                f"interval {fmt_interval(lo, hi, sig=3)}){mark}"
            )
    out.append("")
    rows = []
    for r in doc["cells"]:
        params = ", ".join(f"{k}={v}" for k, v in r["params"].items())
        name = f"{r['workload']}" + (f" ({params})" if params else "") + f" @ {r['condition']}"
        div, unit = display_unit(r["unit"], r["a"]["median"])

        def med(side, div=div):
            return "–" if side["median"] is None else fmt_num(side["median"] / div, 4)

        ci = fmt_interval(*r["decision_ci"], sig=3) if r["decision_ci"] else "–"
        ci95 = fmt_interval(*r["cost_ratio_ci"], sig=3) if r["cost_ratio_ci"] else "–"
        verdict = verdict_text(r["verdict"], bool(r["confounded"])) if r["verdict"] else (r["reason"] or "–")
        if r["unstable"]:
            verdict += " (unstable: A/A control failed)"
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
                ci95,
                "–" if r["delta"] is None else f"{r['delta']:.0%}",
                fmt_p(r["p_adjusted"]),
                verdict,
            )
        )
    out += aligned(
        (
            "cell",
            "A median",
            "n",
            "B median",
            "n",
            "unit",
            "B/A",
            "90% decision interval (cost)",
            "95% CI (cost)",
            "delta",
            "p adj",
            "verdict",
        ),
        rows,
        (False, True, True, True, True, False, True, True, True, True, True, False),
    )
    out.append("")
    out.append(
        "B/A is median(B) / median(A); the intervals are of the cost ratio (> 1 = B worse); a slowdown means "
        "B is worse (slower, or lower throughput)."
    )
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
    from boardlab.store.pg import display_url, is_url

    a = _load(args.a, args.campaign_a, args.board_a)
    b = _load(args.b, args.campaign_b, args.board_b)
    shown = [display_url(p) if is_url(p) else p for p in (args.a, args.b)]  # never a password in output
    doc = compare_campaigns(a, b, path_a=shown[0], path_b=shown[1])
    if args.json:
        sys.stdout.write(json.dumps(doc, indent=1, allow_nan=False) + "\n")
    else:
        sys.stdout.write(render_text(doc))
    return 0
