"""`boardlab history`: one plan's campaigns on a board (or every board) in time order, and the steps between
them."""

from __future__ import annotations

import json
import sys

DESCRIPTION = (
    "Show a plan's campaigns on one board (or on every board of a store) in the order they ran (their "
    "arrival in the store, not the board's clock, which is flagged where it went back): each cell's median "
    "with its 95% CI per campaign, what changed in the environment between campaigns (kernel, boardlab, "
    "compiler and flags, governor, firmware, and the campaign's `run --label`), and every step between "
    "consecutive campaigns judged as `boardlab compare` judges two campaigns (90% decision interval against "
    "each workload's threshold, p adjusted over every step of the history). A slowdown step is a regression."
)
# A status of its own: 1 is every command's internal or runtime failure and 2 its bad input (a damaged store
# among them), so a nightly job that reads 3 as "regression found" is never misled by a crash.
EXIT_REGRESSION = 3


def add_arguments(parser) -> None:
    parser.add_argument(
        "--db", required=True, help="a results database: a SQLite file or a postgresql:// URL"
    )
    parser.add_argument(
        "--plan", required=True, help="the plan: its name (as `run` stored it) or its plan hash"
    )
    parser.add_argument(
        "--board", metavar="LABEL", help="one board (label or fingerprint); default every board"
    )
    parser.add_argument(
        "--last", type=int, default=10, metavar="N", help="the last N campaigns per board (default 10)"
    )
    parser.add_argument(
        "--format",
        choices=("text", "md", "html", "junit", "github"),
        help="default: what -o's suffix names (.txt, .md, .html, .xml: junit), else text; junit: the latest "
        "step of each board as JUnit XML (a test case per cell, a "
        "regression a <failure> naming the cell, B/A, its interval and the commit); github: that step as "
        "GitHub Actions annotations (::error per regression, ::notice per improvement); docs/lab.md",
    )
    parser.add_argument(
        "--bisect",
        action="store_true",
        help="per cell slower in the last campaign than in the first shown, the first campaign (and its "
        "commit) from which it is slower, found by bisection as `asv find` does",
    )
    parser.add_argument("-o", "--output", help="file to write (required for html; default stdout)")
    parser.add_argument(
        "--json", action="store_true", help="print the JSON document (`schema` is its version)"
    )
    parser.add_argument(
        "--fail-on",
        choices=("regression",),
        help=f"exit {EXIT_REGRESSION} when a step is a regression (for a nightly job; 0 none, 1 a failure, 2 "
        "bad input or a damaged store); the report is written either way",
    )


def run(args) -> int:
    import boardlab.summary as summary
    from boardlab.analysis.history import build_history, history_document, load_history
    from boardlab.cli.output_format import HISTORY_SUFFIXES, chosen_format
    from boardlab.cli.workload_facts import store_missing_facts
    from boardlab.errors import InputError
    from boardlab.export import check_output, write_output
    from boardlab.report.render import render_document
    from boardlab.store import Store

    if not 2 <= args.last <= 100:
        raise InputError(f"--last {args.last}: expected 2 to 100 campaigns per board")
    args.format = chosen_format(args.format, args.output, HISTORY_SUFFIXES, "text")
    if args.format == "html" and not args.output and not args.json:
        raise InputError("--format html writes a file: give -o history.html (or -o - for stdout)")
    if args.output and args.output != "-":
        check_output(args.output, protect=[args.db])
    store_missing_facts(args.db)  # campaigns stored before their workloads' facts were: stored once
    with Store.open(args.db, create=False) as store, store.snapshot():
        per_board = [
            (rows, [summary.analysis_view(store, int(r["id"])) for r in rows])
            for rows in load_history(store, args.plan, args.board, last=args.last)
        ]
        if not per_board:
            on = f" on a board labelled {args.board!r}" if args.board else ""
            raise InputError(f"{store.path}: no campaign of a plan named {args.plan!r}{on}")
        d = build_history(per_board, args.plan, [summary.steps(store, views) for _, views in per_board])
        if args.bisect:
            from boardlab.analysis.history import bisect

            d["bisect"] = bisect(per_board)
    if args.json:
        from boardlab.analysis.compare import plain

        text = json.dumps(plain(d), indent=1, allow_nan=False) + "\n"
    elif args.format in ("junit", "github"):
        from boardlab.report.ci import github_annotations, junit_xml

        text = junit_xml(d) if args.format == "junit" else github_annotations(d)
    else:
        boards = ", ".join(b["board"] for b in d["boards"])
        document = history_document(d, f"boardlab history: {args.plan} on {boards}")
        text = render_document(document, args.format)
        if args.format == "html":
            from boardlab.report.html import page

            text = page(document.title, text)
    if not args.output or args.output == "-":
        sys.stdout.write(text)
    else:
        write_output(args.output, text.encode(), protect=[args.db])
        print(
            f"history: {args.output} ({len(d['regressions'])} regressions, {len(d['improvements'])} "
            "improvements)"
        )
    if args.fail_on == "regression" and d["regressions"]:
        return EXIT_REGRESSION
    return 0
