"""When a background load's own counters say it did not load the run (conditions' `health` rules): the run
is then invalid (docs/method.md "Loads that did not run"). The loads themselves fail for real in
tests/integration/test_load_health.py; these are the rules on the counters they write."""

from __future__ import annotations

import pytest

from boardlab.conditions import background, programs
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


def test_counters_the_program_never_wrote_over_its_start_are_a_status_error(tmp_path):
    status = tmp_path / "status.json"
    programs._started(str(status))
    assert status.stat().st_size == programs.STATUS_RESERVED_BYTES
    assert background._final_counters(status, "ddgzip") == {
        "status_error": "ddgzip wrote no counters (it was killed, or it failed)"
    }
    assert not status.exists()
    programs._started(str(status))
    programs._write_status(str(status), {"cycles": 0, "errors": 4})
    assert status.stat().st_size == programs.STATUS_RESERVED_BYTES  # written over the room, not beside it
    assert background._final_counters(status, "ddgzip") == {"cycles": 0, "errors": 4}
