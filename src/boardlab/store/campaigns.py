"""Boards, campaigns, their commit identity and artifacts: what a campaign is and where it ran."""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Iterator

from boardlab.errors import NotFound
from boardlab.store.base import SERIES_COUNTED, Connected, _json

_ID_RANGE = range(-(2**63), 2**63)  # what an id column holds: SQLite's INTEGER, PostgreSQL's BIGINT


class CampaignRecords(Connected):
    """Boards, campaigns, their commit identity and artifacts (a part of `Store`, store/db.py)."""

    # ---- boards and campaigns ----

    def upsert_board(self, fingerprint: str, label: str, inventory: dict) -> int:
        row = self.conn.execute("SELECT id FROM boards WHERE fingerprint=?", (fingerprint,)).fetchone()
        if row:
            self.conn.execute("UPDATE boards SET inventory_json=? WHERE id=?", (_json(inventory), row[0]))
            return int(row[0])
        cur = self.conn.execute(
            "INSERT INTO boards(fingerprint, label, inventory_json, first_seen_unix_s) VALUES (?,?,?,?)",
            (fingerprint, label, _json(inventory), time.time()),
        )
        assert cur.lastrowid is not None  # an INSERT sets it
        return int(cur.lastrowid)

    def find_campaign(self, plan_hash: str, board_id: int) -> sqlite3.Row | None:
        return self.conn.execute(
            "SELECT * FROM campaigns WHERE plan_hash=? AND board_id=? ORDER BY id DESC LIMIT 1",
            (plan_hash, board_id),
        ).fetchone()

    def create_campaign(
        self,
        *,
        name: str,
        plan_hash: str,
        plan_source: str,
        plan_text: str,
        board_id: int,
        boardlab_version: str,
        kern_version: str | None,
        root: str,
        environment: dict,
        uid: str | None = None,
    ) -> int:
        """A new campaign, running; `uid` its identity across stores (a random one unless given: a campaign
        made from an imported file takes one from the file, so importing it twice adds it once). Its count of
        runs with series starts at 0 (a store from before migration 15, where tests stand in for an old
        boardlab, has no such column)."""
        values = {
            "uid": uid or uuid.uuid4().hex, "name": name, "plan_hash": plan_hash, "plan_source": plan_source,
            "plan_text": plan_text, "board_id": board_id, "boardlab_version": boardlab_version,
            "kern_version": kern_version, "root": root, "status": "running", "started_unix_s": time.time(),
            "environment_json": _json(environment),
        }  # fmt: skip
        if self._schema() >= SERIES_COUNTED:
            values["runs_series"] = 0
        cur = self.conn.execute(
            f"INSERT INTO campaigns({', '.join(values)}) VALUES ({','.join('?' * len(values))})",
            tuple(values.values()),
        )
        assert cur.lastrowid is not None  # an INSERT sets it
        return int(cur.lastrowid)

    def set_campaign_status(
        self, campaign_id: int, status: str, *, monitor: dict | None = None, notes: dict | None = None
    ) -> None:
        finished = time.time() if status in ("complete", "interrupted", "failed") else None
        self.conn.execute(
            "UPDATE campaigns SET status=?, finished_unix_s=?, monitor_json=coalesce(?, monitor_json),"
            " notes_json=coalesce(?, notes_json) WHERE id=?",
            (
                status,
                finished,
                _json(monitor) if monitor is not None else None,
                _json(notes) if notes is not None else None,
                campaign_id,
            ),
        )

    def campaigns(self) -> list[sqlite3.Row]:
        return self.conn.execute("SELECT * FROM campaigns ORDER BY id").fetchall()

    def campaign(self, campaign_id: int) -> sqlite3.Row:
        row = None
        if campaign_id in _ID_RANGE:  # beyond it the driver raises (OverflowError), and no campaign has it
            row = self.conn.execute("SELECT * FROM campaigns WHERE id=?", (campaign_id,)).fetchone()
        if row is None:
            raise NotFound(f"{self.path}: no campaign with id {campaign_id}")
        return row

    def board(self, board_id: int) -> sqlite3.Row:
        return self.conn.execute("SELECT * FROM boards WHERE id=?", (board_id,)).fetchone()

    def boards(self) -> list[sqlite3.Row]:
        return self.conn.execute("SELECT * FROM boards ORDER BY id").fetchall()

    def latest_campaign_of_board(self, label: str) -> int | None:
        """The latest campaign of the board with this label (or fingerprint) in a store of many boards."""
        row = self.conn.execute(
            "SELECT c.id FROM campaigns c JOIN boards b ON b.id = c.board_id"
            " WHERE b.label=? OR b.fingerprint=? ORDER BY c.id DESC LIMIT 1",
            (label, label),
        ).fetchone()
        return None if row is None else int(row[0])

    def describe_schema(self) -> dict[str, list[tuple[str, str, bool, bool]]]:
        """table -> [(column, kind, not null, in the primary key)] with kind one of integer, real, text,
        blob: what both backends must agree on (SQLite's INTEGER is PostgreSQL's BIGINT, and so on)."""
        kinds = {"integer": "integer", "bigint": "integer", "real": "real", "double precision": "real",
                 "text": "text", "blob": "blob", "bytea": "blob"}  # fmt: skip
        out: dict[str, list[tuple[str, str, bool, bool]]] = {}
        if self.dialect == "postgresql":
            pk = {
                (r[0], r[1])
                for r in self.conn.execute(
                    "SELECT k.table_name, k.column_name FROM information_schema.table_constraints t"
                    " JOIN information_schema.key_column_usage k ON k.constraint_name = t.constraint_name"
                    " AND k.table_schema = t.table_schema WHERE t.constraint_type = 'PRIMARY KEY'"
                    " AND t.table_schema = current_schema()"
                )
            }
            for r in self.conn.execute(
                "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns"
                " WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position"
            ):
                out.setdefault(r[0], []).append(
                    (r[1], kinds.get(r[2], r[2]), r[3] == "NO" or (r[0], r[1]) in pk, (r[0], r[1]) in pk)
                )
            return out
        tables = [
            r[0]
            for r in self.conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
            )
        ]
        for t in tables:
            for r in self.conn.execute(f"PRAGMA table_info({t})"):
                # a SQLite primary key column is implicitly NOT NULL (a rowid alias or WITHOUT ROWID)
                out.setdefault(t, []).append(
                    (r[1], kinds.get(r[2].lower(), r[2].lower()), bool(r[3] or r[5]), bool(r[5]))
                )
        return out

    # ---- a campaign's commit and branch (`run --commit`, store schema 11) ----

    def set_campaign_identity(
        self, campaign_id: int, sha: str | None, describe: str | None, branch: str | None
    ) -> None:
        """The commit, its `git describe` name and the branch the campaign measured."""
        with self.conn:
            self.conn.execute(
                "UPDATE campaigns SET commit_sha=?, commit_describe=?, branch=? WHERE id=?",
                (sha, describe, branch, campaign_id),
            )

    def campaign_identities(
        self, campaign_ids: list[int]
    ) -> dict[int, tuple[str | None, str | None, str | None]]:
        """(commit hash, describe name, branch) of each of these campaigns that has one (none in a store from
        before schema 11)."""
        if not campaign_ids or self._schema() < 11:
            return {}
        marks = ",".join("?" * len(campaign_ids))
        rows = self.conn.execute(
            f"SELECT id, commit_sha, commit_describe, branch FROM campaigns WHERE id IN ({marks})"
            " AND (commit_sha IS NOT NULL OR commit_describe IS NOT NULL OR branch IS NOT NULL)",
            tuple(campaign_ids),
        ).fetchall()
        return {int(r[0]): (r[1], r[2], r[3]) for r in rows}

    def iter_export_metrics(self, campaign_id: int) -> Iterator[tuple]:
        """Every metric stored of each run of a campaign, in run order (seq, attempt) and metric name: (run
        id, cell id, repetition, attempt, seq, valid, metric, value, unit, higher is better), `value` the
        run's value of the metric (the median of its iterations), one tuple at a time:
        `export --table metrics`."""
        sql = (
            "SELECT r.id, r.cell_id, r.repetition, r.attempt, r.seq, r.valid, m.metric, m.median, m.unit,"
            " m.higher_is_better FROM runs r JOIN run_metrics m ON m.run_id = r.id WHERE r.campaign_id=?"
            " ORDER BY r.seq, r.attempt, r.id, m.metric"
        )
        return self.iter_rows(sql, (campaign_id,))

    # ---- the store owns every query: planning reads, campaign artifacts (issue 24, layering) ----
    # Reads a plan's dry-run makes of earlier runs (campaign/reach.py, campaign/advice.py) and the campaign
    # artifacts the governor lab and the runner write, so that no SQL lives outside store/. Portable SQL.

    def earlier_run_times(self) -> list[tuple[str, int, float | None]]:
        """(cell key, wall ns, gate wait s) of every run that finished, in any campaign of the store: what a
        dry-run's estimate of a plan's duration reads."""
        return [
            (r[0], int(r[1]), None if r[2] is None else float(r[2]))
            for r in self.conn.execute(
                "SELECT c.key, r.wall_ns, r.gate_waited_s FROM runs r JOIN cells c ON c.id = r.cell_id"
                " WHERE r.ok = 1 AND r.wall_ns IS NOT NULL ORDER BY r.id"
            )
        ]

    def earlier_valid_values(self) -> dict[str, list[float]]:
        """cell key -> the value of every valid run, in any campaign of the store, in the order stored: what
        the dry-run's power advice reads of the cells' spread."""
        out: dict[str, list[float]] = {}
        for r in self.conn.execute(
            "SELECT c.key, r.value FROM runs r JOIN cells c ON c.id = r.cell_id"
            " WHERE r.ok = 1 AND r.valid = 1 AND r.value IS NOT NULL ORDER BY r.id"
        ):
            out.setdefault(r[0], []).append(float(r[1]))
        return out

    def save_campaign_artifact(
        self, campaign_id: int, name: str, data: bytes, media_type: str = "application/json"
    ) -> None:
        """Replaces the campaign's artifact `name` in one transaction (`campaign_artifact` reads it)."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            self.conn.execute("DELETE FROM artifacts WHERE campaign_id=? AND name=?", (campaign_id, name))
            self.conn.execute(
                "INSERT INTO artifacts (campaign_id, run_id, name, media_type, data) VALUES (?, "
                "NULL, ?, ?, ?)",
                (campaign_id, name, media_type, data),
            )
            self.conn.execute("COMMIT")
        except BaseException:
            self._rollback()
            raise
