"""The runner stores runs shorter than WRITE_EVERY_S together (one commit cost a 0.5 ms program as much as its
own run), keeps each cell's valid values as they settle (the precision rule reads no store), and stores the
runs still held before the campaign is closed."""

from __future__ import annotations

import time

from boardlab.campaign import runner as runner_module
from boardlab.campaign.runner import _Campaign
from boardlab.model.run import GateResult, RunResult


class _Store:
    def __init__(self) -> None:
        self.writes: list[list[tuple[int, RunResult]]] = []

    def record_runs(self, campaign_id: int, runs) -> list[int]:
        self.writes.append(list(runs))
        return list(range(len(runs)))


def _run(value: float | None, valid: bool = True) -> RunResult:
    return RunResult(
        cell_key="", repetition=1, attempt=1, seq=1, started_unix_s=0.0, wall_ns=1, cpu=None, exit_code=0,
        ok=True, valid=valid, invalid_reason=None, value=value, metrics=(), iterations_ns=(),
        warmup_iterations=None, warmup_capped=None, rusage={}, gate=GateResult(0.0, False, ""),
        condition_state={}, monitor={},
    )  # fmt: skip


def _campaign() -> _Campaign:
    return _Campaign(None, 1, {"a": 10, "b": 20}, False, {})  # type: ignore[arg-type]  # no session is read


def test_runs_within_write_every_s_share_one_store_and_the_values_are_kept_per_cell():
    store = _Store()
    c = _campaign()
    c.written_at_s = time.monotonic()  # just stored: the next runs wait for WRITE_EVERY_S
    for key, value, valid in (("a", 1.0, True), ("b", 2.0, True), ("a", 3.0, False), ("a", 4.0, True)):
        c.keep(store, key, _run(value, valid))
    assert store.writes == []
    assert c.values == {"a": [1.0, 4.0], "b": [2.0]}  # the invalid run's value is not one
    c.written_at_s -= runner_module.WRITE_EVERY_S  # as if that much time had passed
    c.keep(store, "b", _run(5.0))
    assert [[(cell_id, r.value) for cell_id, r in w] for w in store.writes] == [
        [(10, 1.0), (20, 2.0), (10, 3.0), (10, 4.0), (20, 5.0)]
    ]
    assert c.unwritten == []


def test_a_run_as_long_as_write_every_s_is_stored_as_it_ends_and_the_rest_at_the_close():
    store = _Store()
    c = _campaign()  # never stored yet: the first run is stored at once
    c.keep(store, "a", _run(1.0))
    c.keep(store, "a", _run(2.0))
    assert [len(w) for w in store.writes] == [1]
    c.write_runs(store)  # what _campaign does before closing, whatever ended it
    c.write_runs(store)  # nothing held: no empty transaction
    assert [len(w) for w in store.writes] == [1, 1]
