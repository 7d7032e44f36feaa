"""svc.scenario orientation: the Orientation service from synthetic values and from its sensor, an INS feed
over UDP (the sensor-vs-synthetic pair of the vehicle-services study), run by the worker on loopback."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


def worker(*params: str) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "boardlab.pyrun", "svc.scenario", "--json"]
    for p in ("scenario=orientation", "duration_s=2", *params):
        argv += ["--param", p]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("source", ["synthetic", "ins"])
def test_the_orientation_service_publishes_from_its_source(source):
    p = worker(f"source={source}")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["ok"], doc["errors"]
    pub, sub = doc["info"]["services"]["orientation"], doc["info"]["services"]["sub"]
    assert pub["message_kind"] == "Orientation" and pub["sent"] >= 15  # 10 Hz for 2 s
    assert sub["received"] == pub["sent"] and doc["metrics"]["lost"]["value"] == 0
    accounting = doc["info"]["accounting"]["per_service"]["orientation"]  # its CPU, for the sensor's share
    # involuntary switches too, as for every monitored process: a service the others preempt
    assert {"cpu_pct_one_cpu", "ctxsw_vol_per_s", "ctxsw_invol_per_s"} <= set(accounting)
    assert accounting["ctxsw_invol_per_s"]["max"] >= accounting["ctxsw_invol_per_s"]["min"] >= 0
    reader = pub.get("reader")
    if source == "ins":  # the service read the INS datagrams the feed sent over UDP
        assert reader["source"] == "ins" and reader["ins_datagrams"] >= 10
    else:
        assert reader is None or reader.get("ins_datagrams", 0) == 0


def test_a_source_the_service_has_no_sensor_for_is_refused():
    p = worker("source=nmea")
    assert p.returncode == 2 and p.stdout == ""
    assert "source=nmea: the orientation scenario takes source synthetic or ins" in p.stderr
