"""serve's backfill (web/backfill.py): which campaigns it lists and in what order, what it says while it
computes, waits for another writer or for the store's check, and when it is off; and that serve's start reads
no run whatever the store's size."""

from __future__ import annotations

import re
import threading
import time

import pytest

from boardlab.web import backfill as bf
from boardlab.web.check import CheckState


class _Check:
    """A store check whose state the test sets."""

    def __init__(self, state: str = "passed", problem: str | None = None) -> None:
        self.now = CheckState(state, time.time(), problem=problem)  # type: ignore[arg-type]

    def state(self) -> CheckState:
        return self.now


class _Steps(bf.Backfill):
    """The backfill's bookkeeping with its steps played by the test (the unit tier starts no process): the
    listing it gives, an analysis per campaign (an exception for those in `broken`), and a store whose writer
    lock is held by `holders` in turn (None: free)."""

    def __init__(self, ids, ended, *, check=None, holders=(), broken=(), write_error=None, off=None):
        self.ended: list[bf.BackfillState] = []  # what on_done was told
        super().__init__("unused.db", background=None, check=check, off=off, on_done=self.ended.append)
        self.ids, self.ended_count, self.broken = list(ids), ended, set(broken)
        self.holders, self.write_error = list(holders), write_error
        self.computed: list[int] = []
        self.written: list[tuple[int, bool]] = []
        self.seen: list[bf.BackfillState] = []  # the state at each write
        self.states: list[bf.BackfillState] = []  # every state it went through

    def _set(self, **changes):
        super()._set(**changes)
        self.states.append(self.state())

    def _listing(self):
        return self.ids, self.ended_count

    def _compute(self, campaign_id):
        self.computed.append(campaign_id)
        if campaign_id in self.broken:
            raise ValueError(f"campaign {campaign_id}'s runs do not read")
        return _Kept(campaign_id)

    def _write(self, kept, checked):
        self.seen.append(self.state())
        if self.write_error is not None:
            raise self.write_error
        if self.holders:
            return self.holders.pop(0)
        self.written.append((kept.summaries[0], checked))
        return None


class _Kept:
    def __init__(self, cid: int) -> None:
        self.summaries, self.steps = (cid,), ()


def _make(*args, **kwargs) -> _Steps:
    return _Steps(*args, **kwargs)


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch):
    monkeypatch.setattr(bf, "RETRY_S", (0.01, 0.02))


def test_newest_first_one_at_a_time_then_done_with_every_campaign_counted():
    b = _make([9, 7, 4], 10, check=_Check("passed")).start()
    done = b.wait(10)
    assert b.computed == [9, 7, 4] and [cid for cid, _ in b.written] == [9, 7, 4]
    assert all(checked for _, checked in b.written)  # the check passed: no quick check at each write
    assert done.state == "done" and done.summarized == 10 and done.left == 0 and done.took_s >= 0
    # while it ran, the counts of each step: 7 of 10 summarized before the first write, 9 before the last
    assert [s.summarized for s in b.seen] == [7, 8, 9] and [s.current for s in b.seen] == [9, 7, 4]
    assert b.ended == [done] and bf.banner_text(done) is None
    said = bf.status_text(done, time.time())
    assert said.startswith("Done in ") and said.endswith(" s: 10 of 10 campaigns summarized."), said
    assert done.as_json()["campaigns_summarized"] == 10 and done.as_json()["campaigns_left"] == 0


def test_the_banner_says_how_many_are_summarized_while_campaigns_are_left():
    s = bf.BackfillState("computing", time.time(), ended=40, left=15, current=31)
    assert bf.banner_text(s) == (
        "25 of 40 campaigns summarized; the rest are being computed in the background (newest first)."
    )
    assert "computing campaign 31 (15 left, newest first" in bf.status_text(s, time.time() + 3)
    for quiet in ("listing", "done", "off"):
        assert bf.banner_text(bf.BackfillState(quiet, 0.0, ended=40, left=15)) is None, quiet  # type: ignore[arg-type]
    assert bf.banner_text(None) is None and bf.status_text(None, 0.0) == "Not run here."


def test_a_store_held_by_another_writer_is_waited_for_and_written_after():
    b = _make([3], 3, holders=["pid 42: boardlab run --db lab.db", "pid 42: boardlab run --db lab.db"])
    b.start()
    done = b.wait(10)
    assert done.state == "done" and b.written == [(3, False)]  # no check given: the writer's quick check
    waiting = [s for s in b.states if s.state == "waiting"]
    assert len(waiting) == 2 and "held by another writer (pid 42: boardlab run --db lab.db)" in waiting[0].why
    assert bf.banner_text(waiting[0]).endswith(f"Waiting: {waiting[0].why}.")
    assert re.search(r"trying again in \d+ s", waiting[0].why)


def test_nothing_is_written_before_the_store_check_passed_nor_into_a_damaged_store():
    check = _Check("checking")
    b = _make([5, 4], 5, check=check).start()
    deadline = time.monotonic() + 10
    while b.state().state != "waiting" and time.monotonic() < deadline:
        time.sleep(0.005)
    assert b.state().why.startswith("the store's full check is still running") and b.written == []
    check.now = CheckState("damaged", check.now.started_unix_s, 1.0, "runs.value, row id 7")
    done = b.wait(10)
    assert done.state == "off" and "runs.value, row id 7" in done.why and b.written == []
    assert bf.status_text(done, time.time()).startswith("Off: the store's full check found a damage")


def test_a_campaign_that_cannot_be_analysed_is_said_and_the_next_one_computed():
    b = _make([6, 5, 4], 6, broken={5}).start()
    done = b.wait(10)
    assert [cid for cid, _ in b.written] == [6, 4] and done.state == "done"
    assert done.failed == 1 and done.summarized == 5
    assert done.failures == ((5, "ValueError: campaign 5's runs do not read"),)
    assert "5 of 6 campaigns summarized; 1 could not be" in bf.status_text(done, time.time())


def test_a_store_that_cannot_be_written_turns_it_off_saying_why():
    from boardlab.errors import InputError

    b = _make([5, 4, 3, 2, 1], 5, write_error=InputError("lab.db: the results database cannot be written"))
    done = b.start().wait(10)
    assert done.state == "off" and b.computed == [5, 4, 3]  # one failure may be a conflict; three in a row
    assert done.why == "the summaries cannot be stored (lab.db: the results database cannot be written)"
    assert done.failed == 2 and [cid for cid, _ in done.failures] == [5, 4]


def test_off_from_the_start_is_never_started_and_says_why(tmp_path):
    b = _make([1], 1, off=bf.off_reason(str(tmp_path / "lab.db"), True))
    assert b.start().wait(1).state == "off" and b.computed == []
    assert bf.status_text(b.state(), time.time()) == (
        "Off: turned off (serve --no-backfill). A campaign without a fresh summary is computed when its page "
        "is viewed."
    )
    assert not any(t.name == "boardlab-backfill" for t in threading.enumerate())


def test_a_store_file_that_cannot_be_written_is_named(tmp_path):
    import os

    db = tmp_path / "lab.db"
    db.write_bytes(b"")
    assert bf.off_reason(str(db), False) is None
    if os.geteuid() == 0:
        pytest.skip("root may write any file: the mode cannot make it read-only here")
    db.chmod(0o444)
    assert bf.off_reason(str(db), False) == (
        f"{db}: the store's file is not writable here (its mode, its owner, or a read-only mount): the "
        "summaries cannot be stored"
    )


# ---- the listing, and serve's start, over a real store -----------------------------------------------------


def _lab(path, campaigns: int, runs_each: int = 8):
    """A store of `campaigns` ended campaigns of one plan on two boards (facts stored, as the runner stores
    them), each of `runs_each` one-value runs; the last one still running."""
    from boardlab.campaign.facts import save as save_facts
    from boardlab.model.campaign import Cell, ConditionSpec
    from boardlab.model.facts import facts_document
    from boardlab.store import Store

    specs = {"baseline": ConditionSpec("baseline", "baseline", {}, None)}
    cells = [Cell("bench.w00", (), "baseline", "seconds")]
    with Store.open(path) as store:
        for k in range(campaigns):
            board = store.upsert_board(f"fp-{k % 2}", f"board-{k % 2}", {"model": "test board"})
            cid = store.create_campaign(name="nightly", plan_hash="h", plan_source="p.toml", plan_text="",
                                        board_id=board, boardlab_version="0.1.0", kern_version="0.1.0",
                                        root="/", environment={})  # fmt: skip
            save_facts(store, cid, facts_document((), energy_reason=None))
            ids = store.ensure_cells(cid, cells, specs, {c.key: ("s", False) for c in cells})
            runs = (
                (ids[cells[0].key], r + 1, r, 1.7e9 + r, 10**9, 1.0 + r / 100, None) for r in range(runs_each)
            )
            store.record_value_runs(cid, ("seconds", "s", False), runs)
            store.set_campaign_status(cid, "running" if k == campaigns - 1 else "complete")
    return path


def test_the_listing_is_the_ended_campaigns_lacking_a_summary_of_this_code_newest_first(tmp_path):
    import boardlab.summary as summary
    from boardlab.store import Store

    db = _lab(tmp_path / "lab.db", 8)
    with Store.open(db) as store:
        for cid in (2, 5, 6):
            summary.keep(store, cid)
        row = store.campaign_summary(6, with_document=True)  # 6: a summary of another build
        store.put_campaign_summary(6, schema=row["schema"] + 1, runs_stored=row["runs_stored"],
                                   status=row["status"], cells_json=row["cells_json"],
                                   document_json=row["document_json"])  # fmt: skip
    ids, ended = summary.to_backfill(str(db))
    # 8 is running (its page computes it); keep stored 3 and 4 as the predecessors of 5 and 6 on their boards
    assert ended == 7 and ids == [7, 6, 1]


def _statements(monkeypatch) -> list[str]:
    """Every SQL statement the store's connections run from here on."""
    from boardlab.store import Store

    seen: list[str] = []
    connect = Store._connect

    def traced(*args, **kwargs):
        conn = connect(*args, **kwargs)
        conn.set_trace_callback(seen.append)
        return conn

    monkeypatch.setattr(Store, "_connect", staticmethod(traced))
    return seen


def test_serves_start_and_the_backfills_listing_read_no_run_at_any_size(tmp_path, monkeypatch):
    """What serve runs before it listens (the workload facts' check, the store's open) and the backfill's
    listing: the same few statements for 6 campaigns as for 60, none reading the runs or their values."""
    from boardlab.cli.workload_facts import store_missing_facts
    from boardlab.store import Store
    from boardlab.summary import to_backfill

    stores = {n: str(_lab(tmp_path / f"lab{n}.db", n)) for n in (6, 60)}
    seen = _statements(monkeypatch)
    counts = {}
    for n, db in stores.items():
        seen.clear()
        store_missing_facts(db)
        with Store.open(db, create=False, verify=False):
            pass
        ids, ended = to_backfill(db)
        assert ended == n - 1 and len(ids) == n - 1
        queries = [s for s in seen if not s.lstrip().upper().startswith("PRAGMA")]
        reading_runs = [s for s in queries if re.search(r"\b(runs|run_values|run_metrics|series)\b", s)]
        assert reading_runs == [], reading_runs
        counts[n] = len(queries)
    assert counts[6] == counts[60] <= 20, counts  # three opens of the store, each reading its schema


def test_a_campaign_starting_while_the_backfill_writes_waits_the_instant_and_one_holding_on_refuses(
    tmp_path, monkeypatch
):
    """The backfill holds the store's writer lock for one summary's write (about 0.1 s): a campaign opening it
    then is let in once it is free, not refused; a writer that holds on (a campaign) still refuses another,
    once the brief hold has passed (0.5 s here, not the 1 s a refusal waits in use: the same rule, sooner)."""
    from boardlab.errors import InputError
    from boardlab.store import Store
    from boardlab.store import db as store_db

    hold_s = 0.5
    monkeypatch.setattr(store_db, "BRIEF_HOLD_S", hold_s)

    db = tmp_path / "lab.db"
    Store.open(db).close()
    held = threading.Event()

    def backfill_writes() -> None:  # its writer's open, about 0.1 s of writing, its close
        with Store.open(db):
            held.set()
            time.sleep(0.2)

    writer = threading.Thread(target=backfill_writes)
    writer.start()
    held.wait(10)
    t0 = time.monotonic()
    with Store.open(db):  # `boardlab run`'s open: no wait asked
        assert time.monotonic() - t0 < hold_s + 0.5
    writer.join()
    with Store.open(db), pytest.raises(InputError, match="in use by"):
        Store.open(db)
