"""serve's store check beside the pages (web/check.py): while it runs every page says so above its own part;
a damage it found is every page's 503; its end is said once."""

from __future__ import annotations

import pytest

from boardlab.web.check import CheckState, StoreCheck

from helpers import damaged_copy, make_campaign_db

pytest.importorskip("starlette", reason="boardlab serve needs the web extra: pip install 'boardlab[web]'")


def _request(path: str):
    from starlette.requests import Request

    return Request({"type": "http", "method": "GET", "path": path, "query_string": b"", "headers": []})


class _Fixed(StoreCheck):
    """A check whose state is given (the real one's timing is not the test's)."""

    def __init__(self, state: CheckState) -> None:
        self._state = state


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    return str(make_campaign_db(tmp_path_factory.mktemp("check") / "lab.db", n=2, with_latency=False))


def _boards(db: str, state: CheckState | None):
    from boardlab.web import pages
    from boardlab.web.app import _Site

    site = _Site(db, False, None if state is None else _Fixed(state))
    return site.read(lambda s: pages.boards(s, 0), _request("/boards")), site


def test_a_page_says_the_check_is_still_running(db):
    response, site = _boards(db, CheckState("checking", 0.0))
    body = response.body.decode()
    assert response.status_code == 200 and "full check is still running" in body
    assert body.index("</h1>") < body.index("full check is still running")  # under the page's one heading
    checked = site.store_check(_request("/check"))
    assert "Running since" in checked.body.decode()


def test_no_banner_once_it_passed_and_none_without_a_check(db):
    for state in (CheckState("passed", 0.0, 1.5), None):
        response, _ = _boards(db, state)
        assert response.status_code == 200 and "full check" not in response.body.decode()


def test_a_damage_found_is_every_pages_503(db):
    response, site = _boards(
        db, CheckState("damaged", 0.0, 2.0, "x.db: damaged results database (runs.value, row id 7)")
    )
    assert response.status_code == 503 and "runs.value, row id 7" in response.body.decode()
    assert "Failed after 2.0 s" in site.store_check(_request("/check")).body.decode()


def test_a_check_that_did_not_finish_is_said_and_the_pages_still_served(db):
    response, site = _boards(
        db, CheckState("unfinished", 0.0, 3.0, "the check's process ended with exit code -9")
    )
    body = response.body.decode()
    assert (
        response.status_code == 200
        and "did not finish (the check&#x27;s process ended with exit code -9)" in body
    )
    assert "Did not finish" in site.store_check(_request("/check")).body.decode()


def test_the_check_in_process_passes_a_good_store_and_names_a_damaged_value(tmp_path, db):
    """check_store is what the check's process runs (the process itself: tests/e2e/test_serve.py)."""
    from boardlab.web.check import check_store

    assert check_store(db) is None
    bad = tmp_path / "bad.db"
    rowid = damaged_copy(db, bad)
    assert f"(runs.value, row id {rowid})" in (check_store(str(bad)) or "")
