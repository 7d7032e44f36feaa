"""`boardlab restore`: undo the system settings and stop the loads that a killed boardlab left behind."""

from __future__ import annotations

import json
import sys

DESCRIPTION = (
    "Before boardlab changes a system setting it writes the old value to a restore journal; every exit path "
    "restores it, and the next `boardlab run` restores what a killed run left. This command does it by hand "
    "and says what it restored. Every entry is tried; one it cannot undo (a file that refuses the write) "
    "stays in the journal and is listed with the fix, and the command exits 1."
)


def add_arguments(parser) -> None:
    parser.add_argument("--root", default="/", help="the tree whose settings were changed (default /)")
    parser.add_argument("--json", action="store_true", help="print what was restored as JSON")
    from boardlab.cli.run import add_wait_arguments

    add_wait_arguments(parser)  # a live boardlab's entries are its own to undo: restore waits for it


def run(args) -> int:
    from boardlab.cli.run import take_system_lock
    from boardlab.conditions.journal import RestoreJournal, failures
    from boardlab.platform.sysroot import SysRoot
    from boardlab.report.escape import term

    root = SysRoot(args.root)
    root.require_board_tree()
    journal = RestoreJournal(root)
    # under the system lock, as a campaign recovers: never undo what a live boardlab is still using
    lock = take_system_lock(root, "restore", args)
    try:
        results = journal.recover()  # tries every entry; those it could not undo stay in the journal
    finally:
        lock.release()
    failed = failures(results)
    restored = [r for r in results if not r.failed]
    if args.json:
        print(
            json.dumps(
                {
                    "schema": 2,
                    "journal": str(journal.path),
                    "restored": [{"what": r.what, "detail": r.detail} for r in restored],
                    "failed": [{"what": r.what, "detail": r.detail, "reason": r.failed} for r in failed],
                }
            )
        )
    elif not results:
        print(f"nothing to restore for {term(args.root)} (journal {term(str(journal.path))} is empty)")
    else:
        for r in restored:
            print(f"restored {term(r.what)}: {term(r.detail)}")
        if failed:  # one error line (the CLI's contract), naming every entry left and its fix
            from boardlab.errors import MeasurementError

            sys.stdout.flush()
            raise MeasurementError(
                f"{len(failed)} of {len(results)} journal entries could not be undone and stay in "
                f"{journal.path}: "
                + "; ".join(f"NOT restored {r.what}: {r.detail}: {r.failed}" for r in failed)
            )
    return 1 if failed else 0
