"""serve's background analyses (web/background.py): a page asks, is told it is being computed, then gets the
result; a running campaign's newer version shows the last result meanwhile; a failure is said once."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from boardlab.web import background as bg


class _InThread(bg.Background):
    """The same bookkeeping with the work in a thread of this process (the unit tier starts no process), each
    piece of work held until the test lets it go."""

    def __init__(self) -> None:
        super().__init__("unused.db")
        self.go = threading.Event()
        self.calls: list[tuple[str, int]] = []
        self._threads = ThreadPoolExecutor(max_workers=1)

    def _executor(self):
        test = self

        class _Held:
            def submit(self, fn, db, campaign_id):
                test.calls.append((fn.__name__, campaign_id))

                def work():
                    test.go.wait(10)
                    if campaign_id < 0:
                        raise RuntimeError("damaged")
                    return f"analysis of {campaign_id}"

                return test._threads.submit(work)

        return _Held()


@pytest.fixture
def b():
    """An _InThread whose held work is let go at the end: work left waiting kept the test process from
    exiting (its thread pool is joined at exit) for the rest of the 10 s wait."""
    held = _InThread()
    yield held
    held.go.set()
    held._threads.shutdown(wait=True)


def _settle(b: _InThread) -> None:
    b.go.set()
    b._threads.shutdown(wait=True)
    b._threads = ThreadPoolExecutor(max_workers=1)
    b.go.clear()


def test_computing_then_the_result_and_one_analysis_for_two_asks(b):
    version = ("x.db", 7, "complete", 100)
    with pytest.raises(bg.Computing) as first:
        b.get("summary", 7, version, 100)
    with pytest.raises(bg.Computing) as second:
        b.get("summary", 7, version, 100)
    assert first.value.since_unix_s == second.value.since_unix_s and len(b.calls) == 1
    assert "campaign 7 (100 runs stored)" in first.value.what
    _settle(b)
    assert b.get("summary", 7, version, 100) == "analysis of 7"


def test_a_running_campaign_shows_its_last_analysis_while_the_next_is_computed(b):
    with pytest.raises(bg.Computing):
        b.get("summary", 3, ("x.db", 3, "running", 40), 40, stale_ok=True)  # nothing computed yet
    _settle(b)
    got = b.get("summary", 3, ("x.db", 3, "running", 55), 55, stale_ok=True)
    assert got == bg.Stale("analysis of 3", 40) and len(b.calls) == 2
    _settle(b)
    assert b.get("summary", 3, ("x.db", 3, "running", 55), 55, stale_ok=True) == "analysis of 3"


def test_a_failed_analysis_is_raised_to_the_page_once_then_tried_again(b):
    version = ("x.db", -1, "complete", 5)
    with pytest.raises(bg.Computing):
        b.get("view", -1, version, 5)
    _settle(b)
    with pytest.raises(RuntimeError, match="damaged"):
        b.get("view", -1, version, 5)
    with pytest.raises(bg.Computing):  # asked again: started again
        b.get("view", -1, version, 5)
    assert len(b.calls) == 2
