"""History and the lab's web view: bounded reads of a store that holds many campaigns."""

from __future__ import annotations

import sqlite3
import time

from boardlab.model.progress import CampaignProgress, progress_of
from boardlab.store.base import RUNS_COUNTED, Connected, _json


class LabPages(Connected):
    """History and the lab's web view (a part of `Store`, store/db.py)."""

    # ---- history and the lab's web view (boardlab history, boardlab serve): bounded reads ----

    def set_campaign_context(
        self, campaign_id: int, *, label: str | None, inventory: dict, runs_planned: int
    ) -> None:
        """What history and serve read of a campaign: the user's label of its change (kept on a resume without
        one), the board's inventory at this start, the runs its schedule plans."""
        with self.conn:
            self.conn.execute(
                "UPDATE campaigns SET label=coalesce(?, label), inventory_json=?, runs_planned=?,"
                " heartbeat_unix_s=? WHERE id=?",
                (label, _json(inventory), runs_planned, time.time(), campaign_id),
            )

    _CAMPAIGN_COLUMNS = (
        "c.id, c.name, c.plan_hash, c.board_id, c.boardlab_version, c.kern_version, c.status,"
        " c.started_unix_s, c.finished_unix_s, c.label, c.runs_planned, c.heartbeat_unix_s, b.label AS"
        " board_label"
    )

    def campaigns_of_plan(
        self, plan: str, board: str | None = None, *, limit: int = 1000
    ) -> list[sqlite3.Row]:
        """The campaigns of a plan (its name or plan hash), on one board (label or fingerprint) or all, in the
        order they arrived; the latest `limit` of each board. Arrival, not the board's wall clock: a board
        without a battery-backed clock starts campaigns "in 2000" until NTP answers. A board's own store
        numbers its campaigns as they start, and an ingest copies a file's campaigns in that order, so the
        ids of a board's campaigns follow the order it ran them (analysis.history flags a clock that went
        back against it)."""
        on_board = "" if board is None else " AND (b.label=? OR b.fingerprint=?)"
        rows = self.conn.execute(
            f"SELECT {self._CAMPAIGN_COLUMNS}, c.environment_json, c.inventory_json, b.inventory_json AS"
            " board_inventory_json FROM campaigns c JOIN boards b ON b.id = c.board_id"
            f" WHERE (c.name=? OR c.plan_hash=?){on_board} ORDER BY b.label, c.id DESC",
            (plan, plan) + (() if board is None else (board, board)),
        ).fetchall()
        kept: dict[str, list] = {}
        for r in rows:
            if len(kept.setdefault(r["board_label"], [])) < limit:
                kept[r["board_label"]].append(r)
        return [r for label in sorted(kept) for r in reversed(kept[label])]

    def campaign_page(self, *, limit: int, offset: int = 0, board_id: int | None = None) -> list[sqlite3.Row]:
        """Campaigns, the latest to arrive first, one page."""
        on_board = "" if board_id is None else " WHERE c.board_id=?"
        return self.conn.execute(
            f"SELECT {self._CAMPAIGN_COLUMNS} FROM campaigns c JOIN boards b ON b.id = c.board_id{on_board}"
            " ORDER BY c.id DESC LIMIT ? OFFSET ?",
            (() if board_id is None else (board_id,)) + (limit, offset),
        ).fetchall()

    def board_page(self, *, limit: int, offset: int = 0) -> list[sqlite3.Row]:
        """Boards by label, one page, each with its campaign count and latest campaign's id."""
        return self.conn.execute(
            "SELECT b.id, b.label, b.fingerprint, b.inventory_json, b.first_seen_unix_s,"
            " (SELECT count(*) FROM campaigns c WHERE c.board_id = b.id) AS n_campaigns,"
            " (SELECT c.id FROM campaigns c WHERE c.board_id = b.id ORDER BY c.id DESC"
            " LIMIT 1) AS last_campaign_id FROM boards b ORDER BY b.label, b.id LIMIT ? OFFSET ?",
            (limit, offset),
        ).fetchall()

    def campaigns_with_status(self, status: str, *, limit: int) -> list[sqlite3.Row]:
        return self.conn.execute(
            f"SELECT {self._CAMPAIGN_COLUMNS} FROM campaigns c JOIN boards b ON b.id = c.board_id"
            " WHERE c.status=? ORDER BY c.id DESC LIMIT ?",
            (status, limit),
        ).fetchall()

    def run_progress(self, campaign_id: int) -> tuple[int, int]:
        """(runs stored, of them valid) of a campaign: its own counts (migration 14), or on an older store
        read as it is, counted from its runs."""
        if self._schema() >= RUNS_COUNTED:
            sql = "SELECT runs_stored, runs_valid FROM campaigns WHERE id=?"
        else:
            sql = "SELECT count(*), coalesce(sum(valid), 0) FROM runs WHERE campaign_id=?"
        row = self.conn.execute(sql, (campaign_id,)).fetchone()
        return (int(row[0]), int(row[1])) if row else (0, 0)

    def campaign_progress(self, row, now_s: float) -> CampaignProgress:
        """The progress of the campaign `row` (a campaigns row) at `now_s` from its stored runs."""
        return progress_of(row, *self.run_progress(row["id"]), now_s)

    def plan_names(self, *, limit: int) -> list[sqlite3.Row]:
        """The plans of the store's campaigns (name, campaigns, latest start), most recently run first."""
        return self.conn.execute(
            "SELECT name, count(*) AS n_campaigns, max(started_unix_s) AS latest_unix_s FROM campaigns"
            " GROUP BY name ORDER BY max(started_unix_s) DESC LIMIT ?",
            (limit,),
        ).fetchall()
