"""`boardlab export`: every run of a results database as JSON, CSV or Parquet."""

from __future__ import annotations

import sys

HELP = "export every run of a results database (json, csv, parquet)"


def add_arguments(parser) -> None:
    parser.add_argument("--db", required=True, help="results database")
    parser.add_argument("--format", choices=("json", "csv", "parquet"), default="json")
    parser.add_argument("-o", "--output", help="file to write (default: stdout; required for parquet)")
    parser.add_argument("--campaign", type=int, action="append", help="only this campaign id (repeatable)")


def run(args) -> int:
    from boardlab.errors import InputError
    from boardlab.store import Store
    from boardlab.store.export import FORMATS, run_records, write_atomically

    if args.format == "parquet" and not args.output:
        raise InputError("--format parquet writes binary: give -o FILE")
    with Store.open(args.db, create=False) as store:
        data = FORMATS[args.format](run_records(store, args.campaign))
    if args.output:
        write_atomically(args.output, data)
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.buffer.write(data)
    return 0
