"""A running campaign's progress as `boardlab serve`'s /running page and a waiting `boardlab run` give it:
runs stored of planned, the ETA from the pace so far (the time since the start over the runs stored, times the
runs left), the age of the last heartbeat (the runner's last stored run). The store computes it
(`Store.campaign_progress`)."""

from __future__ import annotations

from dataclasses import dataclass

from boardlab.model.units import fmt_duration


@dataclass(frozen=True)
class CampaignProgress:
    campaign_id: int
    runs_done: int
    runs_valid: int
    runs_planned: int | None
    eta_s: float | None  # None before the first run or without a plan count
    heartbeat_age_s: float | None

    def sentence(self) -> str:
        """'37 of 150 runs stored (35 valid), ETA 12.0 min at its pace so far, last heartbeat 3 s ago'."""
        planned = self.runs_planned if self.runs_planned else "?"
        eta = (
            f"ETA {fmt_duration(self.eta_s)} at its pace so far" if self.eta_s is not None else "ETA unknown"
        )
        beat = (
            "no heartbeat yet"
            if self.heartbeat_age_s is None
            else f"last heartbeat {fmt_duration(self.heartbeat_age_s)} ago"
        )
        return f"{self.runs_done} of {planned} runs stored ({self.runs_valid} valid), {eta}, {beat}"


def progress_of(row, runs_done: int, runs_valid: int, now_s: float) -> CampaignProgress:
    """The progress of the campaign `row` (a campaigns row: id, started_unix_s, runs_planned,
    heartbeat_unix_s) with `runs_done` of its runs stored, `runs_valid` of them valid."""
    planned, beat = row["runs_planned"], row["heartbeat_unix_s"]
    pace = (beat - row["started_unix_s"]) / runs_done if runs_done and beat else None
    eta = pace * max(planned - runs_done, 0) if pace is not None and planned else None
    age = None if beat is None else max(now_s - beat, 0.0)
    return CampaignProgress(int(row["id"]), runs_done, runs_valid, planned, eta, age)
