"""stream.knee on the pipeline's real sources: the knee a downlink's rate cap puts where arithmetic says.

With codec=none every record is the same size on the downlink (16 B record header + block + 16 B AES-GCM
tag), so the rate above which the transmit's token bucket must drop is known exactly; a search over fresh
runs has to land on it whatever the machine's load, which moves only how far below it the search may stop.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from boardlab.workloads.stream_knee import BAUDS, WIRE_HEADER_BYTES, offered_payload_bit_s

pytestmark = pytest.mark.spawns  # starts processes: not in make test-unit

RECORD_HEADER_BYTES = 16  # stream.pipeline's rec_hdr ahead of each record on the downlink
TAG_BYTES = 16


def knee(*params: str) -> dict:
    args = [a for p in params for a in ("-p", p)]
    proc = subprocess.run(
        [sys.executable, "-m", "boardlab.pyrun", "stream.knee", "--json", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    doc = json.loads(proc.stdout)
    if doc.get("supported") is False:
        pytest.skip(f"unsupported here: {doc['reason']}")
    assert proc.returncode == 0 and doc["ok"], doc.get("errors")
    return doc


def assert_failures_are_the_caps(doc, knee_rate):
    """Every trial above the knee failed, and by the downlink's drops: the knee is the cap's, not a loss
    elsewhere; every trial at or below it passed without a drop."""
    trials = doc["info"]["trials"]
    assert any(t["rate_bit_s"] > knee_rate for t in trials)
    for t in trials:
        drops = t["info"]["drops_by_stage"]
        if t["rate_bit_s"] > knee_rate:
            assert not t["sustained"] and t["lost_percent"] > 0
            assert drops["transmit"] > 0 and drops["receive"] == drops["filter"] == drops["encrypt"] == 0
        else:
            assert t["sustained"] and t["lost_percent"] == 0 and sum(drops.values()) == 0
            # Sustained: the goodput carried the offered payload rate (shortfall within the 10% default).
            assert t["info"]["shortfall_percent"] <= 10


# a feeder descheduled beside a busy suite fails a trial below the knee, then a later one passes
@pytest.mark.quiet
@pytest.mark.parametrize("source", ["udp", "tcp"])
def test_feeder_knee_sits_at_the_downlink_cap(source):
    block, cap = 16384, 2e6
    doc = knee(
        f"source={source}",
        "lo_bit_s=4e5",
        "hi_bit_s=8e6",
        f"block_bytes={block}",
        "codec=none",
        "cipher=aes-256-gcm",
        f"cap_bit_s={cap:g}",
    )
    found = doc["metrics"]["knee_bit_s"]["value"]
    # The feeder's rate counts its 16 B frame header per record; the downlink carries 32 B of overhead.
    exact = cap * (block + WIRE_HEADER_BYTES) / (block + RECORD_HEADER_BYTES + TAG_BYTES)
    # Above `exact` records arrive, on average, faster than the link frees: some must drop, so no trial
    # above it can pass, whatever the load. Below it a trial passes while successive records' lateness
    # differs by less than the slack (1 - rate/exact) x 66 ms per record: quiet, the search stops within
    # its 5% resolution of `exact`; a feeder descheduled for 33 ms (seen at load 4.6 on 2 cores) fails the
    # trial at half of it. A quarter tolerates 49 ms.
    assert 0.25 * exact <= found <= exact
    assert doc["info"]["source"] == source and doc["info"]["at_least"] is False
    assert_failures_are_the_caps(doc, found)


@pytest.mark.quiet  # 75 ms of slack at the knee: a busy machine's late reader found 38400 (seen at load 5-7)
def test_pty_knee_is_the_fastest_baud_the_downlink_carries():
    block, cap = 1024, 80e3
    doc = knee(
        "source=pty",
        "lo_bit_s=38400",
        "hi_bit_s=921600",
        f"block_bytes={block}",
        "codec=none",
        "cipher=aes-256-gcm",
        f"cap_bit_s={cap:g}",
    )
    wire_s = (block + RECORD_HEADER_BYTES + TAG_BYTES) * 8 / cap  # one record's time on the downlink
    arrival_s = {b: (block + WIRE_HEADER_BYTES) * 10 / b for b in BAUDS}  # 8N1: 10 bits a byte
    expected = max(b for b in BAUDS if arrival_s[b] >= wire_s)
    # 57600 baud: a record every 181 ms against 106 ms on the link (75 ms of slack for jitter); 115200:
    # every 90 ms, so the link must drop. The ladder has no rate between.
    assert expected == 57600
    assert doc["metrics"]["knee_bit_s"]["value"] == expected
    assert doc["info"]["rates"] == "standard bauds"
    assert_failures_are_the_caps(doc, expected)
    (at_knee,) = [t for t in doc["info"]["trials"] if t["rate_bit_s"] == expected]
    assert at_knee["info"]["offered_payload_bit_s"] == pytest.approx(
        offered_payload_bit_s("pty", expected, block)
    )


def test_a_pty_range_without_a_standard_baud_says_so():
    proc = subprocess.run(
        [sys.executable, "-m", "boardlab.pyrun", "stream.knee", "--json"]
        + ["-p", "source=pty", "-p", "lo_bit_s=1300", "-p", "hi_bit_s=2000"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1 and not doc["ok"] and "no standard baud" in doc["errors"][0]
