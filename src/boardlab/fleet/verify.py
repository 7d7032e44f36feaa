"""Checks a board's fetched SQLite before it is ingested: the file is sound, it holds the campaign of this
plan, and every cell has all its repetitions (or says which do not)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from boardlab.model.campaign import Plan


@dataclass(frozen=True)
class Verified:
    ok: bool  # sound, the plan's campaign, complete
    problem: str | None  # why not ok, one line
    campaign_status: str | None
    runs: int  # rows in runs for the campaign (attempts included)
    valid_runs: int
    cells: int
    # cell key -> repetitions not settled (no valid run and reruns left); the board's unfinished cells
    unfinished: dict[str, list[int]] = field(default_factory=dict)


def expected_cells(plan: Plan, catalog: dict) -> set[str] | None:
    """The cell keys the plan expands to, before a board skips what it cannot run; None when the board
    expands them itself (a [sweep] plan)."""
    from boardlab.campaign.schedule import build_cells

    return None if plan.sweep is not None else {c.key for c in build_cells(plan, catalog)}


def checkpoint(db: Path) -> None:
    """Folds a fetched -wal file into the database, so the file alone holds every committed run."""
    from boardlab.store.db import fold_wal

    fold_wal(db)


def verify(db: Path, plan: Plan, expected: set[str] | None) -> Verified:
    from boardlab.errors import InputError
    from boardlab.store.ingest import open_source

    plan_hash = hashlib.sha256(plan.source.encode()).hexdigest()
    try:
        store = open_source(db)  # a boardlab database of a known schema that passes the integrity check
    except InputError as exc:
        return Verified(False, str(exc), None, 0, 0, 0)
    try:
        mine = [c for c in store.campaigns() if c["plan_hash"] == plan_hash]
        if not mine:
            return Verified(False, "no campaign of this plan in the board's database", None, 0, 0, 0)
        row = mine[-1]
        cid, status = row["id"], row["status"]
        notes = json.loads(row["notes_json"] or "{}")
        skipped_w = set((notes.get("skipped_workloads") or {}).keys())
        skipped_c = set((notes.get("skipped_conditions") or {}).keys())
        cells = {c["key"]: (c["workload"], c["condition"]) for c in store.cells(cid)}
        stored = store.runs(cid)
        runs, valid = len(stored), sum(1 for r in stored if r["valid"])
        tries = store.attempts(cid)
    except (InputError, sqlite3.Error) as exc:
        return Verified(False, f"unreadable database: {exc}", None, 0, 0, 0)
    finally:
        store.close()
    policy = plan.runs
    reps = policy.repetitions if policy.precision is None else policy.pilot
    assert reps is not None  # a plan without the precision rule has its repetitions (or the default)
    unfinished: dict[str, list[int]] = {}
    keys = set(cells)
    if expected is not None:
        # a cell the board skipped (unsupported workload or condition) was said so in the campaign's notes
        missing = {
            k
            for k in expected - keys
            if k.split("[", 1)[0] not in skipped_w and k.rsplit("@", 1)[-1] not in skipped_c
        }
        for k in missing:
            unfinished[k] = list(range(1, reps + 1))
        keys |= missing
    for key in sorted(keys):
        if key in unfinished:
            continue
        left = [
            rep
            for rep in range(1, reps + 1)
            if not (any(tries.get((key, rep), [])) or len(tries.get((key, rep), [])) > policy.max_reruns)
        ]
        if left:
            unfinished[key] = left
    problem = None
    if status != "complete":
        problem = f"campaign {status}"
    elif unfinished:
        problem = f"campaign says complete but {len(unfinished)} cells lack repetitions"
    if problem and unfinished:
        problem += f" ({sum(map(len, unfinished.values()))} runs of {len(unfinished)} cells not done)"
    return Verified(problem is None, problem, status, runs, int(valid), len(cells), unfinished)
