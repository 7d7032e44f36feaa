"""`boardlab compare A.db B.db`: two campaigns (two boards, or two sessions of one) side by side, cell by
cell."""

from __future__ import annotations

import json
import sys

DESCRIPTION = (
    "Compare two campaigns cell by cell (cells matched by workload, parameters and condition): each side's "
    "median and run count, the ratio B/A of the runs' 20%-trimmed geometric means (of their medians where "
    "runs in two groups make the rank test decide) with its 90% decision interval (and a 95% CI, shown), "
    "Yuen's trimmed t on log runs (its p by permutation where the correction could use it) corrected over "
    "all matched cells (Holm up to 50, Benjamini-Hochberg above), and a verdict against each workload's "
    "threshold (the plan's `threshold`, default 2%, tails 10%). Each side's "
    "A/A control is shown, and a cell whose A/A control failed on either side is marked unstable. Cells "
    "found on one side only are listed."
)


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
        "--json", action="store_true", help="print a JSON document (its `schema` field is its version)"
    )


def _load(path: str, campaign_id: int | None, board: str | None = None):
    from boardlab.analysis import analyze, latest_campaign_id
    from boardlab.cli.workload_facts import store_missing_facts
    from boardlab.errors import InputError
    from boardlab.store import Store

    store_missing_facts(path)  # campaigns stored before their workloads' facts were: stored once
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
        with store.snapshot():  # one consistent snapshot, even while a campaign writes
            return analyze(store, cid)


def render_text(doc: dict) -> str:
    from boardlab.analysis.format import display_unit, fmt_interval, fmt_num, fmt_p, fmt_ratio, verdict_text
    from boardlab.report.render import aligned

    def who(side: dict) -> str:
        return (
            f"{side['db']} campaign {side['campaign_id']} {side['name']!r} on {side['board']} "
            f"({side['status']})"
        )

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
            text = (
                f"no alarm in {len(judged)} reference cells judged ({stable} shown stable, the others too "
                "noisy to tell)"
            )
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
                f"  {name}: {verdict_text(c['verdict'])} (A2/A1 cost {fmt_ratio(c['cost_ratio'])}, 90% "
                f"decision interval {fmt_interval(lo, hi, sig=3)}){mark}"
            )
    out.append("")
    rows = []
    for r in doc["cells"]:  # each a ComparisonRow
        params = ", ".join(f"{k}={v}" for k, v in r.params.items())
        name = f"{r.workload}" + (f" ({params})" if params else "") + f" @ {r.condition}"
        div, unit = display_unit(r.unit, r.a.median)

        def med(side, div=div):
            return "–" if side.median is None else fmt_num(side.median / div, 4)

        ci = fmt_interval(r.decision_ci[0], r.decision_ci[1], sig=3) if r.decision_ci else "–"
        ci95 = fmt_interval(r.cost_ratio_ci[0], r.cost_ratio_ci[1], sig=3) if r.cost_ratio_ci else "–"
        verdict = verdict_text(r.verdict, bool(r.confounded)) if r.verdict else (r.reason or "–")
        if r.unstable:
            verdict += " (unstable: A/A control failed)"
        rows.append(
            (
                name,
                med(r.a),
                str(r.a.n),
                med(r.b),
                str(r.b.n),
                unit,
                fmt_ratio(r.ratio),
                ci,
                ci95,
                "–" if r.delta is None else f"{r.delta:.0%}",
                fmt_p(r.p_adjusted),
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
    estimators = sorted({r.estimator for r in doc["cells"] if r.estimator})
    tests = sorted({r.test_words.split(", p ")[0] for r in doc["cells"] if r.test_words})
    out.append(
        f"B/A is the ratio of the {' or the '.join(estimators) or 'runs’ estimates'} (the medians are shown "
        f"for reading); test: {'; '.join(tests) or 'none'}. The intervals are of the cost ratio (> 1 = B "
        "worse); a slowdown means B is worse (slower, or lower throughput)."
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
    from boardlab.analysis import compare_campaigns
    from boardlab.analysis.compare import plain
    from boardlab.store.pg import display_url, is_url

    a = _load(args.a, args.campaign_a, args.board_a)
    b = _load(args.b, args.campaign_b, args.board_b)
    shown = [display_url(p) if is_url(p) else p for p in (args.a, args.b)]  # never a password in output
    if _same_campaign(a, b):  # `compare lab.db lab.db` without --campaign-a: the latest against itself
        print(
            f"note: A and B are one campaign ({a.name!r} on {a.board_label}, campaign {a.campaign_id} of A):"
            " every B/A is 1 by construction; name another with --campaign-a/--campaign-b or"
            " --board-a/--board-b",
            file=sys.stderr,
        )
    doc = compare_campaigns(a, b, path_a=shown[0], path_b=shown[1])
    if args.json:
        sys.stdout.write(json.dumps(plain(doc), indent=1, allow_nan=False) + "\n")
    else:
        sys.stdout.write(render_text(doc))
    return 0


def _same_campaign(a, b) -> bool:
    """One campaign on both sides: the same store's, or a board's file and the lab store it was ingested into
    (a campaign's board, plan name and start identify it across stores)."""
    return (a.board_label, a.name, a.started_unix_s) == (b.board_label, b.name, b.started_unix_s)
