"""`boardlab restore`: undo the system settings and stop the loads that a killed boardlab left behind."""

from __future__ import annotations

import json

HELP = "undo settings a killed boardlab left changed (governors, limits, loads) from the restore journal"
DESCRIPTION = (
    "Before boardlab changes a system setting it writes the old value to a restore journal; every exit path "
    "restores it, and the next `boardlab run` restores what a killed run left. This command does it by hand "
    "and says what it restored."
)


def add_arguments(parser) -> None:
    parser.add_argument("--root", default="/", help="the tree whose settings were changed (default /)")
    parser.add_argument("--json", action="store_true", help="print what was restored as JSON")


def run(args) -> int:
    from boardlab.conditions.journal import RestoreJournal
    from boardlab.platform.sysroot import SysRoot

    root = SysRoot(args.root)
    root.require_board_tree()
    journal = RestoreJournal(root)
    restored = journal.recover()
    if args.json:
        print(
            json.dumps(
                {
                    "schema": 1,
                    "journal": str(journal.path),
                    "restored": [{"what": r.what, "detail": r.detail} for r in restored],
                }
            )
        )
    elif not restored:
        print(f"nothing to restore for {args.root} (journal {journal.path} is empty)")
    else:
        for r in restored:
            print(f"restored {r.what}: {r.detail}")
    return 0
