"""The GPS receiver's pseudo-terminal link of the `position` (nmea) and `three` scenarios lives in a private
directory that is removed however the run ends: a service that fails to start raises out of the scenario,
and the directory went with it only on the way that returned."""

from __future__ import annotations

import tempfile

import pytest

from boardlab.workloads import services


class StartFails:
    """A `_Services` whose services start until `failing` does: that one raises, as a refused start does."""

    def __init__(self, failing: str):
        self.failing = failing
        self.links: list[str] = []
        self.addr = "127.0.0.1"

    def start(self, name: str, kernel: str, params: dict, account: bool = True) -> None:
        if "link" in params:
            self.links.append(params["link"])
        if name == self.failing:
            raise RuntimeError(f"{name} did not start")


@pytest.mark.parametrize(
    ("scenario", "failing", "params"),
    [
        (services._three, "orientation", {"msg_rate_hz": 1, "read_mode": "line"}),
        (services._position, "position", {"source": "nmea", "msg_rate_hz": 1, "read_mode": "line"}),
    ],
    ids=["three", "position-nmea"],
)
def test_a_failed_start_leaves_no_gps_directory(tmp_path, monkeypatch, scenario, failing, params):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    svc = StartFails(failing)
    with pytest.raises(RuntimeError, match="did not start"):
        scenario(svc, params, 1.0)
    (link,) = svc.links
    assert link.startswith(str(tmp_path)) and link.endswith("/gps")  # the scenario made it there
    assert list(tmp_path.iterdir()) == []


def test_a_position_run_from_the_synthetic_source_makes_no_directory(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    svc = StartFails("position")
    with pytest.raises(RuntimeError):
        services._position(svc, {"source": "synthetic", "msg_rate_hz": 1, "read_mode": "line"}, 1.0)
    assert svc.links == [] and list(tmp_path.iterdir()) == []
