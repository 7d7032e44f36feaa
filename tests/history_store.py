"""A store of five campaigns of one plan on one board, the third with a planted 10% slowdown of one cell
(tests of `boardlab history` and `boardlab serve`)."""

from __future__ import annotations

from pathlib import Path

from boardlab.store import Store

from helpers import EVIL, make_campaign_db

PLANTED = "planted.ops"
SLOW = 3  # the third of five campaigns is 10% slower on the planted cell


def make_history_db(
    path: Path, *, board: str = "board-a", campaigns: int = 5, stays_slow: bool = False
) -> Path:
    """Campaigns of the plan "nightly" (each its own noise); the third has the planted cell 10% slower (and
    every later one too when `stays_slow`) and a kernel upgrade recorded with its label."""
    for k in range(1, campaigns + 1):
        slow = k >= SLOW if stays_slow else k == SLOW
        ops = 1000.0 / (1.10 if slow else 1.0)  # higher is better: 10% more time per operation
        make_campaign_db(
            path,
            name="nightly",
            board=board,
            seed=100 + k,
            n=10,
            with_latency=False,
            conditions=("baseline", "cpu-stress"),
            extra_cells=((PLANTED, ops),),
        )
        with Store.open(path) as store:
            cid = store.campaigns()[-1]["id"]
            inventory = {
                "kernel": {"release": "6.12.0-test" if k >= SLOW else "6.6.0-test"},
                "model": "board",
            }
            label = {SLOW: "kernel 6.6 -> 6.12", 5: f"{EVIL} rebuilt"}.get(k)  # the last: a hostile label
            store.set_campaign_context(cid, label=label, inventory=inventory, runs_planned=10)
    return path


def commit_of_campaign(k: int) -> tuple[str, str, str]:
    """The (commit hash, describe name, branch) `with_commits` gives the k-th campaign (1-based)."""
    return (f"{k:02d}" * 20, f"v1.{k}-0-g{k:02d}{k:02d}{k:02d}{k:01d}", "main")


def with_commits(path: Path) -> Path:
    """Each campaign of the store gets its commit, as `run --commit SHA --commit-describe ... --branch main`
    would have stored it."""
    with Store.open(path) as store:
        for k, row in enumerate(store.campaigns(), start=1):
            store.set_campaign_identity(row["id"], *commit_of_campaign(k))
    return path
