"""`boardlab export`: every run of a results database as JSON, CSV or Parquet."""

from __future__ import annotations

import sys

HELP = "export every run of a results database (json, csv, parquet)"


def add_arguments(parser) -> None:
    parser.add_argument(
        "--db", required=True, help="results database: a SQLite file or a postgresql:// URL (a shared store)"
    )
    parser.add_argument("--format", choices=("json", "csv", "parquet"), default="json")
    parser.add_argument(
        "-o", "--output", help="file to write; - for stdout (the default; parquet needs a file)"
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
    from boardlab.errors import InputError
    from boardlab.export import FORMATS, check_output, run_records, to_csv, write_output
    from boardlab.report.escape import term
    from boardlab.store import Store

    if args.format == "parquet" and (not args.output or args.output == "-"):
        raise InputError("--format parquet writes binary: give -o FILE (or -o DIR with --partition)")
    if args.partition:
        if args.format != "parquet":
            raise InputError("--partition writes Parquet: add --format parquet")
        from boardlab.export import _pyarrow, write_parquet_partitioned

        _pyarrow()  # refused before the store is read when pyarrow is missing
        with Store.open(args.db, create=False) as store:
            records = run_records(store, args.campaign)
        boards = write_parquet_partitioned(records, args.output)
        print(
            f"wrote {term(args.output)}: "
            + ", ".join(f"board={term(b)} ({n} runs)" for b, n in boards.items()),
            file=sys.stderr,
        )
        return 0
    if args.output:
        check_output(args.output, protect=[args.db])
    with Store.open(args.db, create=False) as store:
        records = run_records(store, args.campaign)
    data = (
        to_csv(records, formulas=args.csv_formulas) if args.format == "csv" else FORMATS[args.format](records)
    )
    if args.output and args.output != "-":
        write_output(args.output, data, protect=[args.db])
        print(f"wrote {term(args.output)}", file=sys.stderr)
    else:
        sys.stdout.buffer.write(data)
    return 0
