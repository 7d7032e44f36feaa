"""When a background load's own counters say it did not load the run (conditions' `health` rules): the run
is then invalid (docs/method.md "Loads that did not run"). The loads themselves fail for real in
tests/integration/test_load_health.py; these are the rules on the counters they write."""

from __future__ import annotations

import pytest

from boardlab.conditions.ddgzip import ddgzip_health


@pytest.mark.parametrize(
    "cycles, errors, failed",
    [
        (0, 3, True),  # nothing fit
        (1, 9, True),  # one cycle fit, then the disk was full: the loop mostly slept
        (2, 3, True),
        (3, 3, False),  # as many finished as failed: it loaded the run half the time and more
        (40, 1, False),
        (0, 0, False),  # stopped before its first cycle ended: no sign either way
    ],
)
def test_ddgzip_did_not_load_the_run_when_most_of_its_cycles_failed(cycles, errors, failed):
    state = {"cycles": cycles, "errors": errors, "last_error": "gzip: No space left on device"}
    why = ddgzip_health(state)
    assert (why is not None) == failed
    if failed:
        assert why == (
            f"{cycles} cycles, {errors} failed ({errors} of {cycles + errors}): gzip: No space left on device"
        )


def test_ddgzip_counters_it_could_not_write_say_nothing():
    assert ddgzip_health({"status_error": "ddgzip wrote no counters"}) is None
