"""`boardlab export`: every run of a results database as JSON, CSV or Parquet."""

from __future__ import annotations

import os
import sys


def add_arguments(parser) -> None:
    parser.add_argument(
        "--db", required=True, help="results database: a SQLite file or a postgresql:// URL (a shared store)"
    )
    parser.add_argument(
        "--format",
        choices=("json", "csv", "parquet"),
        help="default: what -o's suffix names (.json, .csv, .parquet), else parquet with --partition, "
        "else json",
    )
    parser.add_argument(
        "-o", "--output", help="file to write; - for stdout (the default; parquet needs a file)"
    )
    parser.add_argument(
        "--table",
        choices=("runs", "metrics"),
        default="runs",
        help="runs (default): one row per run, its primary metric's value and time columns; metrics: every "
        "metric each run stored, one row per run and metric (run_id, metric, value, unit, ...), a long table "
        "(docs/results.md)",
    )
    parser.add_argument("--campaign", type=int, action="append", help="only this campaign id (repeatable)")
    parser.add_argument(
        "--partition",
        choices=("board",),
        help="parquet only: write hive-partitioned Parquet, -o DIR/board=LABEL/part-0.parquet (for DuckDB, "
        "see docs/results.md)",
    )
    parser.add_argument(
        "--csv-formulas",
        action="store_true",
        help="keep CSV cells starting with = + - @ as they are (by default they get a leading ' so a "
        "spreadsheet shows them as text, not formulas)",
    )


def run(args) -> int:
    from boardlab import export as ex
    from boardlab.cli.output_format import EXPORT_SUFFIXES, chosen_format
    from boardlab.errors import InputError
    from boardlab.report.escape import term
    from boardlab.store import Store

    # Arrow's default allocator (mimalloc) gives freed memory back to the kernel lazily: what a row group's
    # write used stayed resident (an export of 882,354 runs peaked at 135-141 MB with it, 103 with glibc's
    # malloc, which unmaps a large block as it is freed). A process-wide setting, so the command that owns
    # the process makes it, before Arrow's first allocation reads it.
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    default = "parquet" if args.partition else "json"
    args.format = chosen_format(args.format, args.output, EXPORT_SUFFIXES, default)
    if args.partition and args.table != "runs":
        raise InputError("--partition writes the runs table: drop --table metrics, or --partition")
    if args.format == "parquet" and (not args.output or args.output == "-"):
        raise InputError("--format parquet writes binary: give -o FILE (or -o DIR with --partition)")
    if args.partition:
        if args.format != "parquet":
            raise InputError(f"--partition writes Parquet: drop --format {args.format}, or --partition")
        ex._pyarrow()  # refused before the store is read when pyarrow is missing
        with Store.open(args.db, create=False) as store, store.snapshot():
            _named_campaigns(store, args.campaign)
            boards = ex.write_parquet_partitioned(ex.iter_run_rows(store, args.campaign), args.output)
        print(
            f"wrote {term(args.output)}: "
            + ", ".join(f"board={term(b)} ({n} runs)" for b, n in boards.items()),
            file=sys.stderr,
        )
        return 0
    if args.format == "parquet":
        ex._pyarrow()
    output = args.output or "-"
    if output != "-":
        ex.check_output(output, protect=[args.db])
    # streamed from the store to the file a run at a time (a Parquet row group at a time), in one snapshot
    with Store.open(args.db, create=False) as store, store.snapshot():
        _named_campaigns(store, args.campaign)
        with ex.open_output(output, [args.db]) as out:
            _write(args, store, out)
    if output != "-":
        print(f"wrote {term(output)}", file=sys.stderr)
    return 0


def _named_campaigns(store, ids: list[int] | None) -> None:
    """Each --campaign is in the store, else NotFound: a mistyped id exported no run and said nothing."""
    for campaign_id in ids or ():
        store.campaign(campaign_id)


def _write(args, store, out) -> None:
    from boardlab import export as ex
    from boardlab.report.escape import csv_cell

    long = args.table == "metrics"
    rows, fields = (ex.iter_metric_rows, ex.METRIC_FIELDS) if long else (ex.iter_run_rows, ex.FIELDS)
    if args.format == "json":
        records = ex.iter_metric_records if long else ex.iter_run_records
        ex.write_json(records(store, args.campaign), out, args.table)
    elif args.format == "csv":  # each string neutralized as it is read (csv_cell), unless kept as is
        text = (lambda s: s) if args.csv_formulas else csv_cell
        ex.write_csv_rows(rows(store, args.campaign, text=text), out, fields)
    else:
        ex.write_parquet_rows(rows(store, args.campaign), out, fields)
