"""`boardlab ingest BOARD.db... --db URL`: copy boards' results files into a shared store."""

from __future__ import annotations

import json
import sys

DESCRIPTION = (
    "Copy every campaign of each board's results file (boardlab run's SQLite database) into a shared store: "
    "a postgresql:// URL or another SQLite file. Each file is verified first (SQLite integrity check, a "
    "store schema this boardlab knows) and ingested in one transaction: all its new runs or none. Ingesting "
    "a file again, or again after its campaign was resumed on the board, adds only the runs not yet there (a "
    "run is identified by campaign, board, cell, repetition and attempt). A SQLite store in use by another "
    "ingest or a campaign is waited for. A hyperfine --export-json file is read too: it becomes a campaign "
    "of the plan `boardlab bench` writes for the same commands (attributed to this board), so `history` "
    "shows it beside later bench campaigns. See docs/results.md."
)


def add_arguments(parser) -> None:
    from boardlab.cli.run import add_full_check_argument

    parser.add_argument(
        "files",
        metavar="BOARD.db",
        nargs="+",
        help="a board's results file (SQLite), or a hyperfine JSON export",
    )
    parser.add_argument(
        "--db",
        required=True,
        help="the shared store: postgresql://USER@HOST/DB (needs the fleet extra) or a SQLite file path",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print a JSON document (schema 1): per file, its boards, campaigns and runs added and skipped",
    )
    add_full_check_argument(parser)


def _say_waiting(db: str, who: str) -> None:
    from boardlab.report.escape import term

    print(f"{term(db)}: in use by {term(who)}; waiting for it (Ctrl-C to stop)", file=sys.stderr, flush=True)


def _warn(text: str) -> None:
    from boardlab.report.escape import term

    print(f"warning: {term(text)}", file=sys.stderr)


def _note(text: str) -> None:
    from boardlab.report.escape import term

    print(f"note: {term(text)}", file=sys.stderr)


def run(args) -> int:
    import contextlib

    with contextlib.ExitStack() as scratch:
        return _ingest(args, scratch)


def _converted(files: list[str], scratch) -> list:
    """Each file as ingest reads it: a results database as it is, a hyperfine export written as one
    (campaign.hyperfine) into a temporary directory that `scratch` (an ExitStack) removes. Made only for a
    hyperfine export: an ingest of results databases, SIGKILLed, leaves nothing in TMPDIR."""
    import tempfile
    from pathlib import Path

    from boardlab.campaign import hyperfine
    from boardlab.report.escape import term

    out = []
    where: Path | None = None
    for i, name in enumerate(files):
        path = Path(name)
        if hyperfine.looks_like_hyperfine(path):
            if where is None:
                where = Path(scratch.enter_context(tempfile.TemporaryDirectory(prefix="boardlab-ingest-")))
            dest = where / f"{i}-hyperfine.db"
            runs = hyperfine.write_campaign_file(path, dest)
            print(f"{term(name)}: hyperfine export: {runs} runs as a campaign of this board", file=sys.stderr)
            path = dest
        out.append(path)
    return out


def _ingest(args, scratch) -> int:
    from pathlib import Path

    from boardlab.campaign.facts import derive_missing
    from boardlab.cli.workload_facts import say_derived
    from boardlab.report.escape import term
    from boardlab.store.ingest import INGEST_SCHEMA, ingest_files

    def progress(i: int, path: Path) -> None:
        if not args.json and len(args.files) > 1:
            print(f"[{i}/{len(args.files)}] {term(str(path))}", file=sys.stderr)

    # Each ingested campaign's summary, stored for `boardlab serve` and `history` (boardlab.summary): computed
    # beside the copy of the next file, written by the ingest between its files and at the end.
    summaries = None

    def then(store, result) -> None:
        nonlocal summaries
        # campaigns copied from a board's file stored before their workloads' facts were: stored once, before
        # their summaries are computed from them
        say_derived(store.path, derive_missing(store, result.campaign_ids))
        if summaries is None:
            from boardlab.summary import KeepBehind

            summaries = KeepBehind(args.db, _warn)
        summaries.submit(store, result.campaign_ids)

    # Every file is verified (or found unchanged since its last ingest) before any is ingested: a bad one
    # among several writes nothing at all.
    try:
        results = ingest_files(
            _converted(args.files, scratch),
            args.db,
            wait=lambda who: _say_waiting(args.db, who),
            progress=progress,
            then=then,
            last=lambda store: summaries.finish(store) if summaries is not None else None,
            note=_note,
            full_check=args.full_check,
        )
    finally:  # an ingest that failed or was interrupted: the summaries' process ends with it
        if summaries is not None:
            summaries.close()
    for path, res in zip(args.files, results, strict=True):
        if not args.json:
            print(
                f"{term(path)}: {res.campaigns} campaign(s) ({res.campaigns_added} new) of "
                f"{term(', '.join(res.boards))}: {res.runs_added} runs added, {res.runs_skipped} already in "
                f"{term(res.db)}"
            )
    if args.json:
        doc = {"schema": INGEST_SCHEMA, "files": [r.to_dict() for r in results]}
        sys.stdout.write(json.dumps(doc, indent=1) + "\n")
    return 0
