"""`boardlab report`: a campaign of a results database as HTML, Markdown or a terminal table."""

from __future__ import annotations

import sys
from pathlib import Path

DESCRIPTION = (
    "Report one campaign of a results database: per-cell summaries with confidence intervals, comparisons "
    "with verdicts, the environment's warnings and, in HTML, plots. Works while the campaign is still "
    "running (it reports the runs stored so far)."
)


def add_arguments(parser) -> None:
    parser.add_argument(
        "--db", required=True, help="results database: a SQLite file or a postgresql:// URL (a shared store)"
    )
    parser.add_argument(
        "-o",
        "--output",
        help="file to write; '-' for stdout (default: stdout for md and text, required for html)",
    )
    parser.add_argument(
        "--format",
        choices=("html", "md", "text"),
        help="default: what -o's suffix names (.html, .md, .txt), else html",
    )
    parser.add_argument("--campaign", type=int, help="campaign id (default: the latest)")
    parser.add_argument(
        "--board", metavar="LABEL", help="in a store of many boards: the latest campaign of this board"
    )
    parser.add_argument(
        "--across-boards",
        action="store_true",
        help="the campaign's plan on every board of the store (a fleet run, or board files ingested into one "
        "store): each board's latest campaign of that plan, the same cells side by side and verdicts of "
        "every board against the reference board (the campaign's board, or --reference-board)",
    )
    parser.add_argument(
        "--reference-board",
        metavar="LABEL",
        help="with --across-boards: compare every board with this one (default: the board of the campaign)",
    )
    parser.add_argument(
        "--all-pairs",
        action="store_true",
        help="with --across-boards: verdicts for every pair of boards (n(n-1)/2 pairs; the default compares "
        "each board with the reference board only)",
    )


def run(args) -> int:
    from boardlab.analysis import analyze, latest_campaign_id, monitor_series
    from boardlab.analysis.cellruns import REPORT_RUNS_BUDGET
    from boardlab.cli.output_format import REPORT_SUFFIXES, chosen_format
    from boardlab.cli.workload_facts import store_missing_facts
    from boardlab.errors import InputError
    from boardlab.export import check_output, write_output
    from boardlab.platform import heap
    from boardlab.report.escape import term
    from boardlab.store import Store

    args.format = chosen_format(args.format, args.output, REPORT_SUFFIXES, "html")
    if args.format == "html" and not args.output:
        raise InputError("--format html writes a file: give -o report.html (or -o - for stdout)")
    if (args.reference_board is not None or args.all_pairs) and not args.across_boards:
        raise InputError("--reference-board and --all-pairs go with --across-boards")
    if args.output:
        check_output(args.output, protect=[args.db])  # refused before the analysis, not after
    # the store's content check runs beside the analysis (a third of a report's time before): nothing is shown
    # before it passed (the store's close waits for it), and a damage it finds is the error said
    store_missing_facts(args.db)  # campaigns stored before their workloads' facts were: stored once
    with Store.open(args.db, create=False, verify="beside") as store:
        if args.board is not None:
            if args.campaign is not None:
                raise InputError("give --campaign or --board, not both")
            campaign_id = store.latest_campaign_of_board(args.board)
            if campaign_id is None:
                raise InputError(f"{store.path}: no campaign of a board labelled {args.board!r}")
        else:
            campaign_id = args.campaign if args.campaign is not None else latest_campaign_id(store)
        if campaign_id is None:
            raise InputError(f"{store.path}: no campaign in this database yet")
        # One read transaction: a consistent snapshot while a running campaign commits runs (WAL).
        with store.snapshot():
            if args.across_boards:
                return _across_boards(args, store, campaign_id)
            # cells read a few at a time, also by the sections: rendered before the store closes; the columns
            # of a cell let go are given back to the kernel, not kept by the C heap (platform/heap.py)
            heap.keep_large_blocks_mapped()
            analysis = analyze(store, campaign_id, runs_budget=REPORT_RUNS_BUDGET)
            series = monitor_series(store, campaign_id) if args.format == "html" else None
            text = _render(analysis, series, args.format)
    if not args.output or args.output == "-":
        sys.stdout.write(text)
        return 0
    write_output(args.output, text.encode(), protect=[args.db])
    print(
        f"report: {Path(args.output).resolve()} (campaign {campaign_id} {term(repr(analysis.name))}, "
        f"{analysis.status}, {sum(len(c.runs) for c in analysis.cells)} runs)"
    )
    return 0


def _render(analysis, series, fmt: str) -> str:
    if fmt == "html":
        from boardlab.report.html import render_html

        return render_html(analysis, series=series)
    if fmt == "md":
        from boardlab.report.markdown import render_markdown

        return render_markdown(analysis)
    from boardlab.report.terminal import render_text

    return render_text(analysis)


def _across_boards(args, store, campaign_id: int) -> int:
    from boardlab.analysis import analyze
    from boardlab.analysis.boards import board_campaign_ids, boards_document, compare_boards
    from boardlab.errors import InputError
    from boardlab.export import write_output
    from boardlab.report.render import render_document

    ids = board_campaign_ids(store, campaign_id, reference=args.reference_board)
    if len(ids) < 2:
        raise InputError(
            f"{store.path}: campaign {campaign_id}'s plan was run on one board only in this store; "
            "ingest the other boards' files (boardlab ingest) or drop --across-boards"
        )
    # a board at a time: each board's analysis is compared with the reference's and dropped (compare_boards)
    analyses = (analyze(store, cid) for cid in ids)
    d = compare_boards(analyses, names=[store.path] * len(ids), all_pairs=args.all_pairs)
    document = boards_document(d, f"boardlab report: {d['boards'][0]['name']} on {len(ids)} boards")
    if args.format == "html":
        from boardlab.report.html import page

        text = page(document.title, render_document(document, "html"))
    else:
        text = render_document(document, args.format)
    store.verified()  # shown only from a store whose check passed (the caller's store is still open)
    if not args.output or args.output == "-":
        sys.stdout.write(text)
        return 0
    write_output(args.output, text.encode(), protect=[args.db])
    boards = ", ".join(b["board"] for b in d["boards"])
    print(
        f"report: {Path(args.output).resolve()} ({len(ids)} boards: {boards}; {d['family_size']} comparisons)"
    )
    return 0
