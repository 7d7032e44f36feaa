"""svc.scenario rest/operating: power at rest and operating with their difference, read from the board's
power source through the energy package, on fixture trees of real layouts (a RAPL counter driven by a
thread that integrates a known power, an INA231 hwmon board, a Raspberry Pi 5 PMIC dump), and unsupported
with the reason on this VM's tree."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from energy_sim import copy_tree

from boardlab.workloads import services

pytestmark = pytest.mark.spawns  # starts processes: not in make test-unit

FIXTURES = Path(__file__).parent.parent / "fixtures"
PSYS = "sys/class/powercap/intel-rapl:1/energy_uj"  # the primary source of the intel-rapl tree


class DrivenCounter:
    """A RAPL energy counter integrating `watts[phase]`, rewritten every 2 ms as the kernel updates it."""

    def __init__(self, path: Path, watts: dict[str, float]):
        self.path, self.watts, self.phase = path, watts, "rest"
        self.uj = 1_000_000.0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        last = time.monotonic()
        while not self._stop.is_set():
            time.sleep(0.002)
            now = time.monotonic()
            self.uj += self.watts[self.phase] * (now - last) * 1e6
            last = now
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(f"{int(self.uj)}\n")
            os.replace(tmp, self.path)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()


def test_no_power_source_is_unsupported_with_the_reason():
    out = services.rest_operating({"scenario": "operating", "duration_s": 0.1}, FIXTURES / "sysfs/vm")
    assert out["supported"] is False and out["ok"] is False
    assert out["reason"].startswith("no power source (hwmon: ") and "powercap" in out["reason"]
    assert services.energy_reason(FIXTURES / "sysfs/vm").startswith("energy unsupported: no power source")


def test_rest_on_an_ina231_board_reads_the_summed_rails():
    root = FIXTURES / "sysfs/odroid-xu3"
    out = services.rest_operating({"scenario": "rest", "duration_s": 0.3}, root)
    assert out["ok"], out
    # the fixture's four INA231 rails hold constant readings: 77.5 + 142.5 + 10.75 + 35 mW
    assert out["metrics"]["power_rest_w"]["value"] == pytest.approx(0.26575, rel=1e-6)
    assert out["metrics"]["energy_rest_j"]["value"] == pytest.approx(0.26575 * 0.3, rel=0.05)
    assert out["info"]["power_source"]["name"] == "hwmon:rails"
    assert "measured by the rest and operating scenarios from hwmon:rails" in services.energy_reason(root)


def test_rest_on_a_raspberry_pi_5_pmic_dump():
    text = (FIXTURES / "power/rpi5-pmic_read_adc.txt").read_text()
    from boardlab.platform import power

    expected = sum(power.pmic_rails_power_w(power.parse_pmic_adc(text)).values())
    out = services.rest_operating(
        {"scenario": "rest", "duration_s": 0.3}, FIXTURES / "sysfs/vm", pmic_reader=lambda: text
    )
    assert out["ok"], out
    assert out["metrics"]["power_rest_w"]["value"] == pytest.approx(expected, rel=1e-6)


@pytest.mark.integration
def test_operating_is_rest_then_the_three_services_with_a_paired_difference(tmp_path, monkeypatch):
    root = copy_tree("intel-rapl", tmp_path)
    counter = DrivenCounter(root / PSYS, {"rest": 2.0, "operating": 3.5})
    real_three = services._three

    def three_with_load(svc, params, d):  # the board draws more while the services run
        counter.phase = "operating"
        try:
            return real_three(svc, params, d)
        finally:
            counter.phase = "rest"

    monkeypatch.setattr(services, "_three", three_with_load)
    with counter:
        time.sleep(0.05)
        out = services.rest_operating(
            {"scenario": "operating", "duration_s": 2.0, "msg_rate_hz": 1, "read_mode": "canonical"}, root
        )
    assert out["ok"], out
    m = {k: v["value"] for k, v in out["metrics"].items()}
    # the counter is read every 1-10 ms: each window's edges are off by at most a few ms of power
    assert m["power_rest_w"] == pytest.approx(2.0, rel=0.03)
    # the operating window includes the services' start and stop (still 3.5 W: the phase spans them)
    assert m["power_operating_w"] == pytest.approx(3.5, rel=0.03)
    assert m["power_delta_w"] == pytest.approx(m["power_operating_w"] - m["power_rest_w"])
    assert out["info"]["messages"] > 0
    op_s = out["info"]["operating"]["duration_s"]
    assert m["energy_per_message_j"] == pytest.approx(m["power_delta_w"] * op_s / out["info"]["messages"])
