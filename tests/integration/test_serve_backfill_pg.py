"""serve's backfill on a lab's PostgreSQL store: the same listing and the same writes as on a SQLite file
(`summary.to_backfill`, `kept_of`, `write_kept`), against a server the test starts (tests/pg.py)."""

from __future__ import annotations

import boardlab.summary as summary
from boardlab.store import Store

from helpers import make_campaign_db


def test_a_postgresql_store_is_listed_and_backfilled_as_a_file_is(pg_url):
    for k in range(3):  # three campaigns of one plan on one board, the last still running
        make_campaign_db(pg_url, name="nightly", seed=20 + k, n=4, with_latency=False,
                         conditions=("baseline",), status="running" if k == 2 else "complete")  # fmt: skip
    assert Store.cannot_write(pg_url) is None  # a role's rights show at its first write
    ids, ended = summary.to_backfill(pg_url)
    assert ids == [2, 1] and ended == 2
    for cid in ids:
        kept = summary.kept_of(pg_url, cid)
        assert summary.write_kept(pg_url, kept, True) is None  # no file lock: never held by another writer
    assert summary.to_backfill(pg_url) == ([], 2)
    with Store.open(pg_url, create=False) as store:
        assert summary.stored(store, 1) is not None and summary.stored(store, 2) is not None
        step = store.step_summary(1, 2)
        assert step is not None and step["schema"] == summary.code_fingerprint()
