"""The cross-board report a board at a time: `compare_boards` fed a generator holds one board's analysis at
once (each is compared with the reference and dropped) and gives the document a list of them gives."""

from __future__ import annotations

import json
import weakref

import pytest

from boardlab.analysis import analyze
from boardlab.analysis.boards import board_campaign_ids, compare_boards
from boardlab.analysis.compare import plain
from boardlab.store import Store

from helpers import make_campaign_db

SPEEDS = {"board-a": 1.0, "board-b": 2.0, "board-c": 1.0, "board-d": 0.5}


@pytest.fixture(scope="module")
def store_of_boards(tmp_path_factory):
    db = tmp_path_factory.mktemp("boards") / "lab.db"
    for board, speed in SPEEDS.items():  # one store, the same plan on four boards
        make_campaign_db(db, board=board, n=6, speed=speed, seed=3)
    return db


def _one_at_a_time(store, ids, seen: list):
    """The boards' analyses as a generator that checks, before making each, that the one before is gone."""
    for cid in ids:
        assert all(ref() is None for ref in seen), "an earlier board's whole analysis is still held"
        a = analyze(store, cid)
        seen.append(weakref.ref(a))
        yield a
        del a


@pytest.mark.parametrize("all_pairs", [False, True])
def test_a_board_at_a_time_gives_the_document_of_all_boards_at_once(store_of_boards, all_pairs):
    with Store.open(store_of_boards, create=False) as store, store.snapshot():
        first = store.latest_campaign_of_board("board-a")
        ids = board_campaign_ids(store, first)
        assert len(ids) == len(SPEEDS)
        seen: list = []
        streamed = compare_boards(_one_at_a_time(store, ids, seen), all_pairs=all_pairs)
        assert len(seen) == len(SPEEDS) and seen[-1]() is None
        whole = compare_boards([analyze(store, cid) for cid in ids], all_pairs=all_pairs)
    assert json.dumps(plain(streamed), sort_keys=True) == json.dumps(plain(whole), sort_keys=True)
    pairs = {(p["a"], p["b"]) for p in streamed["pairs"]}
    n = len(SPEEDS)
    assert len(pairs) == (n * (n - 1) // 2 if all_pairs else n - 1)
    assert all(a == "board-a" for a, _ in pairs) or all_pairs
    for p in streamed["pairs"]:  # board-b runs twice as fast as board-a, board-d half as fast
        want = SPEEDS[p["a"]] / SPEEDS[p["b"]]
        costs = [c.cost_ratio for c in p["cells"] if c.cost_ratio is not None]
        assert costs and all(c == pytest.approx(want, rel=0.05) for c in costs), (p["a"], p["b"], costs)


def test_the_same_board_twice_is_refused(store_of_boards):
    with Store.open(store_of_boards, create=False) as store, store.snapshot():
        cid = store.latest_campaign_of_board("board-a")
        with pytest.raises(ValueError, match="board-a twice"):
            compare_boards(analyze(store, c) for c in (cid, cid))
