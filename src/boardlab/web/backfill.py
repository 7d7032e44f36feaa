"""serve's backfill: the summaries a store lacks, computed and stored in the background after serve starts.

A store written before summaries were kept, or whose summaries another build computed, has campaigns whose
pages would each be analysed on first view (seconds at 10^5 runs) and forgotten at the server's end. The
backfill lists them once (`summary.to_backfill`: a bounded number of queries, none over the runs), newest
first, so the pages a lab opens first are ready first, and has serve's one worker process (web/background.py)
compute each campaign's summary and its history step from the campaign before it (`summary.kept_of`) and store
them (`summary.write_kept`), one campaign at a time: a page's own analysis waits for one at most. A running
campaign is not listed (its page computes it on view, as before; its runner stores it when it ends).

It yields to every other writer: a campaign or an ingest holding the store's writer lock makes it wait and try
again (soon, then every RETRY_S[-1] s), never the other way round, and it writes nothing before the store's
full check (web/check.py) has passed, nor anything into a store the check found damaged. A store it cannot
write (a read-only file, directory or mount; `serve --no-backfill`) turns it off, and /backfill says why. It
stops with serve: its thread is a daemon, the worker dies with serve (platform.spawn's parent-death signal),
and each summary is one transaction, so a serve killed mid-write leaves the store valid.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

BackfillStateName = Literal["off", "listing", "computing", "waiting", "done"]
RETRY_S = (1.0, 2.0, 5.0, 10.0, 30.0)  # waits for a store another writer holds: soon, then every 30 s
# writes failed in a row that turn it off: one can be a conflict with another writer (a PostgreSQL store's
# ingest storing the same summary), three is a store that cannot be written (a read-only role or file)
UNWRITTEN_OFF = 3
SHOWN_FAILURES = 20  # campaigns whose summary could not be computed, kept for /backfill (the count is exact)


@dataclass(frozen=True)
class BackfillState:
    state: BackfillStateName
    started_unix_s: float
    ended: int = 0  # campaigns that have ended: the ones a summary is kept for
    left: int = 0  # of them, listed as lacking a fresh summary and not computed yet (the current one too)
    current: int | None = None  # the campaign being computed
    why: str | None = None  # off: why; waiting: for what
    failed: int = 0  # campaigns whose summary could not be computed (their pages compute it on view)
    failures: tuple[tuple[int, str], ...] = ()  # the first SHOWN_FAILURES of them: (campaign id, why)
    took_s: float | None = None  # once done

    @property
    def summarized(self) -> int:
        return max(self.ended - self.left - self.failed, 0)

    def as_json(self) -> dict:
        return {"state": self.state, "started_unix_s": self.started_unix_s, "campaigns_ended": self.ended,
                "campaigns_summarized": self.summarized, "campaigns_left": self.left,
                "current_campaign": self.current, "why": self.why, "failed": self.failed,
                "failures": [{"campaign_id": c, "why": w} for c, w in self.failures],
                "took_s": self.took_s}  # fmt: skip


def banner_text(s: BackfillState | None) -> str | None:
    """The note above every page while campaigns are left to summarize, or None."""
    if s is None or s.state not in ("computing", "waiting") or s.left == 0:
        return None
    text = (
        f"{s.summarized} of {s.ended} campaigns summarized; the rest are being computed in the background "
        "(newest first)."
    )
    return text + (f" Waiting: {s.why}." if s.state == "waiting" and s.why else "")


def status_text(s: BackfillState | None, now_s: float) -> str:
    """What /backfill says of the backfill's state (`now_s`: the time now, in Unix seconds)."""
    from boardlab.analysis.format import fmt_duration

    if s is None:
        return "Not run here."
    ago = fmt_duration(max(now_s - s.started_unix_s, 0.0))
    counts = f"{s.summarized} of {s.ended} campaigns summarized"
    failed = f"; {s.failed} could not be (their pages compute them on view)" if s.failed else ""
    if s.state == "off":
        return f"Off: {s.why}. A campaign without a fresh summary is computed when its page is viewed."
    if s.state == "listing":
        return f"Listing the campaigns that lack a summary (started {ago} ago)."
    if s.state == "computing":
        return (f"{counts}{failed}; computing campaign {s.current} ({s.left} left, newest first; started "
                f"{ago} ago).")  # fmt: skip
    if s.state == "waiting":
        return f"{counts}{failed}; {s.left} left, waiting: {s.why}."
    return f"Done in {s.took_s or 0.0:.1f} s: {counts}{failed}."


def off_reason(db: str, turned_off: bool) -> str | None:
    """Why the backfill is off before it starts (`serve --no-backfill`, a store this user cannot write), or
    None."""
    from boardlab.store import Store

    if turned_off:
        return "turned off (serve --no-backfill)"
    why = Store.cannot_write(db)
    return None if why is None else f"{why}: the summaries cannot be stored"


class _Off(Exception):
    """The backfill cannot go on (a store it cannot write, a damaged store): why."""


class _Unwritten(Exception):
    """A campaign's summary could not be written: why."""


class Backfill:
    """The backfill of the store at `db` through `background`'s worker; `check`: the store's full check
    (web/check.py `StoreCheck`) it waits for, None for none; `off`: why it does not run (`off_reason`).
    `start()` starts it; `state()` is where it is; `on_done(state)` is called once from its thread when it
    ended or turned off (serve prints it)."""

    def __init__(self, db: str, background, check=None, *, off: str | None = None,
                 on_done: Callable[[BackfillState], None] | None = None) -> None:  # fmt: skip
        self._db, self._background, self._check, self._on_done = db, background, check, on_done
        self._state = BackfillState("off" if off else "listing", time.time(), why=off)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="boardlab-backfill", daemon=True)

    def start(self) -> Backfill:
        if self._state.state != "off":
            self._thread.start()
        return self

    def state(self) -> BackfillState:
        return self._state  # replaced whole: a reader sees one record or the next

    def stop(self) -> None:
        self._stop.set()

    def wait(self, timeout_s: float | None = None) -> BackfillState:
        if self._thread.is_alive():
            self._thread.join(timeout_s)
        return self._state

    def _set(self, **changes) -> None:
        self._state = replace(self._state, **changes)

    # ---- the steps, each in serve's worker process but the listing (a few indexed queries) ----

    def _listing(self) -> tuple[list[int], int]:
        from boardlab.summary import to_backfill

        return to_backfill(self._db)

    def _compute(self, campaign_id: int):
        from boardlab.summary import kept_of

        return self._background.run(kept_of, self._db, campaign_id).result()

    def _write(self, kept, checked: bool) -> str | None:
        from boardlab.summary import write_kept

        return self._background.run(write_kept, self._db, kept, checked).result()

    def _check_state(self):
        return None if self._check is None else self._check.state()

    # ---- the loop ----

    def _run(self) -> None:
        t0 = time.monotonic()
        try:
            self._fill(t0)
        except _Off as off:
            self._set(state="off", why=str(off), current=None)
        except Exception as exc:  # noqa: BLE001 - a bug or a lost store: said on /backfill, serve goes on
            self._set(state="off", why=f"stopped by an error ({_why(exc)})", current=None)
        if self._on_done is not None and not self._stop.is_set():
            self._on_done(self._state)

    def _fill(self, t0: float) -> None:
        try:
            ids, ended = self._listing()
        except Exception as exc:  # noqa: BLE001 - said as the reason it is off
            raise _Off(f"the store's campaigns could not be listed ({_why(exc)})") from None
        self._set(state="computing", ended=ended, left=len(ids))
        unwritten = 0  # write failures in a row
        for cid in ids:
            if self._stop.is_set():
                return
            self._set(state="computing", current=cid, why=None)
            try:
                kept = self._compute(cid)
            except Exception as exc:  # noqa: BLE001 - one campaign that cannot be analysed: the next
                self._failed(cid, exc)
                continue
            try:
                if not self._stored(kept):
                    return
            except _Unwritten as exc:  # a conflict with another writer, or a store that cannot be written
                unwritten += 1
                if unwritten >= UNWRITTEN_OFF:
                    raise _Off(f"the summaries cannot be stored ({exc})") from None
                self._failed(cid, exc)
                continue
            unwritten = 0
            self._set(left=self._state.left - 1)
        self._set(state="done", current=None, why=None, took_s=time.monotonic() - t0)

    def _failed(self, cid: int, exc: Exception) -> None:
        s = self._state
        shown = s.failures + ((cid, _why(exc)),) if len(s.failures) < SHOWN_FAILURES else s.failures
        self._set(left=s.left - 1, failed=s.failed + 1, failures=shown)

    def _stored(self, kept) -> bool:
        """Writes `kept` once the store may be written: after its full check passed, when no other writer
        holds it (waiting RETRY_S between tries); False when serve stops first."""
        if not kept.summaries and not kept.steps:  # stored already (as a later campaign's predecessor)
            return True
        for wait_s in itertools.chain(RETRY_S, itertools.repeat(RETRY_S[-1])):
            why, checked = self._gate()
            if why is None:
                try:
                    holder = self._write(kept, checked)
                except Exception as exc:  # noqa: BLE001 - said per campaign; in a row, the reason it is off
                    raise _Unwritten(_why(exc)) from None
                if holder is None:
                    return True
                why = f"the store is held by another writer ({holder}); trying again in {wait_s:.0f} s"
            self._set(state="waiting", why=why)
            if self._stop.wait(wait_s):
                return False
            self._set(state="computing", why=None)
        return False  # never reached: the waits repeat for as long as serve runs

    def _gate(self) -> tuple[str | None, bool]:
        """(what the writing waits for, or None; whether the store's full check passed)."""
        checked = self._check_state()
        if checked is None:
            return None, False
        if checked.state == "checking":
            return "the store's full check is still running; summaries are written once it passed", False
        if checked.state == "damaged":
            raise _Off(
                f"the store's full check found a damage ({checked.problem}); nothing is written into it"
            )
        return None, checked.state == "passed"


def _why(exc: BaseException) -> str:
    """An error in one line: boardlab's own message, or the exception's kind and text."""
    from boardlab.errors import BoardlabError

    text = " ".join(str(exc).split())
    return text if isinstance(exc, BoardlabError) and text else f"{type(exc).__name__}: {text}".rstrip(": ")
