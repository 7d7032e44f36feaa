"""External meters driven by the same traces: a UM25C simulator on a pty read through pyserial, and a meter
command speaking the "<unix_time_s> <watts>" line protocol. Both run in real time for about a second."""

from __future__ import annotations

import time

import pytest
from energy_sim import UM25CSimulator, meter_command, square

from boardlab.energy import um25c
from boardlab.energy.sampler import EnergySampler
from boardlab.energy.sources import MeterConfig, discover

pytestmark = pytest.mark.spawns  # starts processes: not in make test-unit

FIXTURE_VM = __import__("pathlib").Path(__file__).parent.parent / "fixtures/sysfs/vm"


def test_um25c_meter_on_a_pty_is_sampled_and_every_record_parses_byte_exact():
    pytest.importorskip("serial", reason="pyserial (the meter extra) is not installed")
    trace = square(2.02, 5.03, 0.3, 0.3)
    with UM25CSimulator(trace, volts=5.1) as sim:
        d = discover(FIXTURE_VM, meters=MeterConfig(serial=sim.port, serial_interval_s=0.05))
        [meter] = [s for s in d.sources if s.spec.name == "meter-serial"]
        assert (meter.spec.kind, meter.spec.scope, meter.spec.resolution) == ("power-reading", "board", 0.001)
        sampler = EnergySampler([meter], min_interval_s=0.05)
        sampler.start()
        time.sleep(1.2)
        sampler.stop()
        got = [v for _, v in sampler.samples["meter-serial"]]
        assert len(got) >= 10 and sim.requests >= len(got)
        # each reading is the meter's rounding of 2.02 W or 5.03 W at 5.1 V: mW of (mV x 0.1 mA)
        levels = {round(5.1 * round(w / 5.1 * 10000) / 10000 * 1000) / 1000 for w in (2.02, 5.03)}
        assert set(got) <= levels and len(set(got)) == 2
        for raw in sim.sent:
            assert um25c.encode(um25c.decode(raw)) == raw


def test_a_meter_command_printing_timestamped_watts_is_read_and_stopped():
    trace = square(2.02, 5.03, 0.25, 0.25)
    argv = meter_command(trace, 0.05, time.time())
    d = discover(FIXTURE_VM, meters=MeterConfig(command=tuple(argv), command_interval_s=0.05))
    [meter] = [s for s in d.sources if s.spec.name == "meter-cmd"]
    assert meter.spec.scope == "wall" and meter.push
    sampler = EnergySampler([meter], min_interval_s=0.05)
    sampler.start()
    time.sleep(1.5)
    sampler.stop()
    pts = sampler.samples["meter-cmd"]
    assert len(pts) >= 10
    assert {round(w, 2) for _, w in pts} == {2.02, 5.03}
    assert all(b[0] > a[0] for a, b in zip(pts, pts[1:], strict=False))  # meter time mapped monotonic
    assert meter.proc.poll() is not None  # stopped by its PID with the sampler
