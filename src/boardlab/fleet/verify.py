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

    try:
        return {c.key for c in build_cells(plan, catalog)}
    except Exception:  # noqa: BLE001 - a plan the board expands (sweep) has no local expansion
        return None


def checkpoint(db: Path) -> None:
    """Folds a fetched -wal file into the database, so the file alone holds every committed run."""
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode=DELETE")
    finally:
        conn.close()


def verify(db: Path, plan: Plan, expected: set[str] | None) -> Verified:
    plan_hash = hashlib.sha256(plan.source.encode()).hexdigest()
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        return Verified(False, f"cannot open the fetched database: {exc}", None, 0, 0, 0)
    try:
        check = conn.execute("PRAGMA integrity_check").fetchone()[0]
        if check != "ok":
            return Verified(False, f"integrity check failed: {check}", None, 0, 0, 0)
        row = conn.execute(
            "SELECT id, status, notes_json FROM campaigns WHERE plan_hash=? ORDER BY id DESC LIMIT 1",
            (plan_hash,),
        ).fetchone()
        if row is None:
            return Verified(False, "no campaign of this plan in the board's database", None, 0, 0, 0)
        cid, status, notes_json = row
        notes = json.loads(notes_json or "{}")
        skipped_w = set((notes.get("skipped_workloads") or {}).keys())
        skipped_c = set((notes.get("skipped_conditions") or {}).keys())
        cells = {
            key: (workload, condition)
            for key, workload, condition in conn.execute(
                "SELECT key, workload, condition FROM cells WHERE campaign_id=?", (cid,)
            )
        }
        runs, valid = conn.execute(
            "SELECT count(*), coalesce(sum(valid), 0) FROM runs WHERE campaign_id=?", (cid,)
        ).fetchone()
        tries: dict[tuple[str, int], list[bool]] = {}
        for key, rep, ok in conn.execute(
            "SELECT c.key, r.repetition, r.valid FROM runs r JOIN cells c ON c.id = r.cell_id"
            " WHERE r.campaign_id=? ORDER BY r.attempt",
            (cid,),
        ):
            tries.setdefault((key, rep), []).append(bool(ok))
    except sqlite3.Error as exc:
        return Verified(False, f"unreadable database: {exc}", None, 0, 0, 0)
    finally:
        conn.close()
    policy = plan.runs
    reps = policy.repetitions if policy.precision is None else policy.pilot
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
