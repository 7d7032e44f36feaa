"""Energy: sources declared from real board layouts, counters across wraps, trapezoids clipped to a run,
idle subtraction, efficiency from units, aliasing, and the UM25C record format.

Sensors are scripted: a fake clock's wait rewrites the fixture tree's sensor files from a power trace,
quantized to the sensor's update interval and wrapping at the counter's range (tests/energy_sim.py).
"""

from __future__ import annotations

import errno
import math
from pathlib import Path

import pytest
from energy_sim import CounterFile, PowerFile, Trace, TraceClock, VIFiles, copy_tree, square

from boardlab.energy import integrate, um25c
from boardlab.energy.efficiency import IdleWindow, classify_unit, efficiency_kind, idle_power_at, run_figures
from boardlab.energy.sampler import EnergySampler
from boardlab.energy.sources import discover
from boardlab.platform import power

FIXTURES = Path(__file__).parent.parent / "fixtures"
HWMON = "sys/class/hwmon"
RAPL = "sys/class/powercap"


def _ns(clock: TraceClock, t_s: float) -> int:
    return clock.start_ns + round(t_s * 1e9)


def _run(sampler: EnergySampler, clock: TraceClock, until_s: float) -> None:
    sampler.run(until_ns=_ns(clock, until_s))


# ---- sources from real layouts ----------------------------------------------------------------------------


def test_odroid_xu3_four_ina231_rails_sum_into_one_declared_source():
    d = discover(FIXTURES / "sysfs/odroid-xu3")
    [src] = d.sources
    s = src.spec
    assert (s.name, s.kind, s.scope, s.unit, s.measured) == (
        "hwmon:rails",
        "power-reading",
        "rail",
        "uW",
        True,
    )
    assert s.rails == ("A15 cluster (VDD_ARM)", "memory (VDD_MEM)", "GPU (VDD_G3D)", "A7 cluster (VDD_KFC)")
    assert s.update_interval_s == pytest.approx(0.002)
    # INA231: shunt LSB 2.5 uV over 10 mOhm = 0.25 mA per bit, times each rail's bus voltage
    assert s.resolution == pytest.approx(0.25e-3 * (0.903 + 1.208 + 0.900 + 0.913))
    assert src.read() == pytest.approx((77500 + 142500 + 10750 + 35000) / 1e6)
    assert "rest of the board is not measured" in s.note


def test_jetson_ina3221_has_no_power_file_so_volts_times_amps_and_vdd_in_is_the_board_total():
    d = discover(FIXTURES / "sysfs/jetson-orin")
    by = {s.spec.name: s for s in d.sources}
    board, rails = by["hwmon:VDD_IN"], by["hwmon:rails"]
    assert (board.spec.scope, board.spec.unit) == ("board", "mV*mA")
    assert board.read() == pytest.approx(5.072 * 1.096)
    # channel 7 ("sum of shunt voltages") and curr4 (sum of currents) are not rails
    assert rails.spec.rails == ("VDD_CPU_GPU_CV", "VDD_SOC")
    assert rails.read() == pytest.approx(5.072 * 0.232 + 5.064 * 0.312)
    assert d.primary().spec.name == "hwmon:VDD_IN"
    assert board.spec.resolution == pytest.approx(40e-6 / 5e-3 * 5.072)  # 40 uV shunt LSB / 5 mOhm x bus V


def test_rapl_zones_are_counters_with_their_wrap_and_psys_is_the_board():
    d = discover(FIXTURES / "sysfs/intel-rapl")
    by = {s.spec.name: s.spec for s in d.sources}
    assert by["rapl:package-0"].kind == "energy-counter"
    assert by["rapl:package-0"].scope == "package"
    assert by["rapl:package-0"].max_range == 262143328850
    assert by["rapl:core@intel-rapl:0:0"].scope == "rail"
    assert d.primary().spec.name == "rapl:psys"


def test_rapl_eacces_is_unsupported_needs_root_with_the_reason(monkeypatch):
    real = power._open_read

    def deny(path):
        if path.endswith("energy_uj"):
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return real(path)

    monkeypatch.setattr(power, "_open_read", deny)  # root ignores modes: the seam stands for a 0400 file
    d = discover(FIXTURES / "sysfs/intel-rapl")
    assert not [s for s in d.sources if s.spec.name.startswith("rapl")]
    reasons = {u.name: u.reason for u in d.unavailable}
    assert reasons["rapl:intel-rapl:0"].startswith("unsupported: needs root")
    assert "since Linux 5.10" in reasons["rapl:intel-rapl:0"]


def test_rpi5_pmic_recorded_output_rails_summed_and_flagged_as_excluding_5v():
    text = (FIXTURES / "power/rpi5-pmic_read_adc.txt").read_text()
    rails = power.parse_pmic_adc(text)
    assert rails["VDD_CORE"] == {"A": 5.03652, "V": 0.8936988}
    assert "A" not in rails["EXT5V"]  # the 5 V input has a voltage, no current
    watts = power.pmic_rails_power_w(rails)
    assert len(watts) == 12 and "EXT5V" not in watts and "BATT" not in watts
    d = discover(FIXTURES / "sysfs/vm", pmic_reader=lambda: text)
    [pmic] = [s for s in d.sources if s.spec.name == "rpi-pmic"]
    assert pmic.read() == pytest.approx(
        sum(v["A"] * v["V"] for r, v in rails.items() if "A" in v and "V" in v)
    )
    assert pmic.spec.scope == "rail" and "excludes the 5 V input" in pmic.spec.note


def test_this_vm_has_no_source_and_says_why():
    d = discover(FIXTURES / "sysfs/vm")
    assert d.sources == []
    assert d.reason.startswith("unsupported: no power source")
    assert "powercap" in d.reason and "hwmon" in d.reason


# ---- counters across wraps ---------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "max_range_uj, offset_uj",
    [(3_000_000, 0), (262143328850, 262143328850 - 10_000_000)],  # many small wraps; the real range's top
)
def test_rapl_counter_exact_to_1uj_across_wraps(tmp_path, max_range_uj, offset_uj):
    root = copy_tree("intel-rapl", tmp_path)
    zone = root / RAPL / "intel-rapl:0"
    (zone / "max_energy_range_uj").write_text(f"{max_range_uj}\n")
    trace = square(2.02, 5.03, 1.0, 1.0)
    counter = CounterFile(zone / "energy_uj", trace, 0.001, max_range_uj, offset_uj)
    clock = TraceClock([counter])
    d = discover(root)
    [pkg] = [s for s in d.sources if s.spec.name == "rapl:package-0"]
    sampler = EnergySampler([pkg], clock=clock, min_interval_s=0.01)
    _run(sampler, clock, 13.0)
    w, pts, _ = sampler.window(pkg, _ns(clock, 2.0), _ns(clock, 12.0))
    raw = [v for _, v in pts]
    assert any(b < a for a, b in zip(raw, raw[1:], strict=False)), "the window must contain a wrap"
    expected_uj = counter.true_uj(12.0) - counter.true_uj(2.0)
    assert abs(w.energy_j * 1e6 - expected_uj) <= 1
    assert w.energy_j == pytest.approx(trace.energy(12.0) - trace.energy(2.0), abs=2e-6)
    # 2 edges x 1/2 interval x peak power; the sampler reads every 10 ms, slower than RAPL's 1 ms update
    assert w.quantization_j == pytest.approx(0.01 * 5.03, rel=0.01)


def test_unwrap_counter_without_a_range_refuses_a_reset():
    assert integrate.unwrap_counter([5, 9, 2], 10) == [5, 9, 12]
    with pytest.raises(ValueError, match="went back"):
        integrate.unwrap_counter([5, 9, 2], None)


# ---- power readings: trapezoid, idle, efficiency -----------------------------------------------------------


def _odroid_trace_root(tmp_path, trace: Trace, interval_s: float):
    """The Odroid-XU3 copy with the A15 rail following `trace` and the three other rails at 0 W."""
    root = copy_tree("odroid-xu3", tmp_path)
    files = []
    for h in ("hwmon0", "hwmon1", "hwmon2", "hwmon3"):
        t = trace if h == "hwmon0" else Trace(((1.0, 0.0),))
        files.append(PowerFile(root / HWMON / h / "power1_input", t, interval_s))
    return root, files


@pytest.mark.slow
def test_square_wave_2_02_5_03_w_sampled_at_10_hz_integrates_within_1_percent(tmp_path):
    trace = square(2.02, 5.03, 2.0, 2.0)
    root, files = _odroid_trace_root(tmp_path, trace, 0.002)
    clock = TraceClock(files)
    [src] = discover(root).sources
    sampler = EnergySampler([src], clock=clock, min_interval_s=0.1, seed=3)
    _run(sampler, clock, 63.0)
    w, _, _ = sampler.window(src, _ns(clock, 1.3), _ns(clock, 61.3))
    true_j = trace.energy(61.3) - trace.energy(1.3)
    assert w.energy_j == pytest.approx(true_j, rel=0.01)
    assert 550 <= w.samples <= 650  # 10 Hz with jitter over 60 s
    assert not [x for x in w.warnings if "aliased" in x]  # a 4 s square wave is followed, not aliased


@pytest.mark.slow
def test_idle_subtraction_gives_3_01_w_dynamic_and_0_80_gflops_per_w(tmp_path):
    # idle 2.02 W, a 10 s run of a 2.40 GFLOPS kernel at 5.03 W, idle again (RAPL-style counter)
    root = copy_tree("intel-rapl", tmp_path)
    trace = Trace(((5.0, 2.02), (10.0, 5.03), (5.0, 2.02)))
    counter = CounterFile(root / RAPL / "intel-rapl:0/energy_uj", trace, 0.001, 262143328850)
    clock = TraceClock([counter])
    [pkg] = [s for s in discover(root).sources if s.spec.name == "rapl:package-0"]
    sampler = EnergySampler([pkg], clock=clock, min_interval_s=0.01)
    _run(sampler, clock, 20.0)
    before, _, _ = sampler.window(pkg, _ns(clock, 1.0), _ns(clock, 4.0))
    run, _, _ = sampler.window(pkg, _ns(clock, 5.0), _ns(clock, 15.0))
    after, _, _ = sampler.window(pkg, _ns(clock, 16.0), _ns(clock, 19.0))
    idle = idle_power_at(
        [IdleWindow(1.0, 3.0, before.power_avg_w), IdleWindow(16.0, 3.0, after.power_avg_w)], 10.0
    )
    fig = run_figures(
        energy_j=run.energy_j,
        duration_s=run.duration_s,
        power_idle_w=idle,
        value=2400.0,  # MFLOPS, as SciMark reports
        unit="MFLOPS",
        higher_is_better=True,
    )
    assert fig.power_idle_w == pytest.approx(2.02, abs=1e-3)
    assert fig.power_avg_w == pytest.approx(5.03, abs=2e-3)
    assert fig.power_dynamic_w == pytest.approx(3.01, abs=3e-3)
    assert round(fig.efficiency_dynamic, 2) == 0.80  # GFLOPS/W with dynamic watts
    assert round(fig.efficiency_total, 3) == round(2.40 / 5.03, 3)
    assert fig.edp_js == pytest.approx(fig.energy_j * 10.0)
    assert fig.ed2p_js2 == pytest.approx(fig.energy_j * 100.0)


def test_idle_power_is_interpolated_between_the_windows_around_a_run():
    ws = [IdleWindow(0.0, 2.0, 2.0), IdleWindow(10.0, 2.0, 3.0)]
    assert idle_power_at(ws, 6.0) == pytest.approx(2.5)
    assert idle_power_at(ws, -5.0) == 2.0 and idle_power_at(ws, 50.0) == 3.0
    assert idle_power_at([], 1.0) is None


@pytest.mark.parametrize(
    "unit, hib, eff_unit",
    [
        ("MFLOPS", True, "GFLOPS/W"),
        ("mflops", True, "GFLOPS/W"),
        ("GFLOPS", True, "GFLOPS/W"),
        ("MB/s", True, "nJ/bit"),
        ("MiB/s", True, "nJ/bit"),
        ("bit/s", True, "nJ/bit"),
        ("Gbit/s", True, "nJ/bit"),
        ("frames/s", True, "J/frame"),
        ("x", True, "x/W"),
        ("ns", False, "J/run"),
    ],
)
def test_efficiency_comes_from_the_metric_unit(unit, hib, eff_unit):
    assert efficiency_kind(unit, hib).unit == eff_unit


def test_nj_per_bit_and_j_per_op():
    f = run_figures(
        energy_j=20.0, duration_s=10.0, power_idle_w=1.0, value=100.0, unit="MB/s", higher_is_better=True
    )
    assert f.efficiency_total == pytest.approx(2.0 / (100e6 * 8) * 1e9)  # 2 W over 800 Mbit/s = 2.5 nJ/bit
    assert f.efficiency_dynamic == pytest.approx(1.0 / (100e6 * 8) * 1e9)
    g = run_figures(
        energy_j=20.0, duration_s=10.0, power_idle_w=None, value=50.0, unit="frames/s", higher_is_better=True
    )
    assert g.efficiency_total == pytest.approx(2.0 / 50.0) and g.efficiency_dynamic is None
    assert classify_unit("KiB/s").to_base == 8 * 1024


# ---- aliasing ----------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_50_ms_burst_every_500_ms_sampled_at_1_hz_is_flagged_aliased_while_its_counter_is_exact(tmp_path):
    burst = Trace(((0.05, 5.03), (0.45, 2.02)))
    root, files = _odroid_trace_root(tmp_path / "p", burst, 0.002)
    clock = TraceClock(files)
    [src] = discover(root).sources
    sampler = EnergySampler([src], clock=clock, min_interval_s=1.0, seed=1)
    _run(sampler, clock, 62.0)
    w, _, _ = sampler.window(src, _ns(clock, 1.0), _ns(clock, 61.0))
    assert [x for x in w.warnings if "aliased" in x], w.warnings
    assert integrate.nyquist_warning(1.0, 0.5, "x") and not integrate.nyquist_warning(0.1, 0.5, "x")

    rroot = copy_tree("intel-rapl", tmp_path / "c")
    counter = CounterFile(rroot / RAPL / "intel-rapl:0/energy_uj", burst, 0.001, 262143328850)
    cclock = TraceClock([counter])
    [pkg] = [s for s in discover(rroot).sources if s.spec.name == "rapl:package-0"]
    cs = EnergySampler([pkg], clock=cclock, min_interval_s=0.01)
    _run(cs, cclock, 62.0)
    cw, _, _ = cs.window(pkg, _ns(cclock, 1.0), _ns(cclock, 61.0))
    assert abs(cw.energy_j * 1e6 - (counter.true_uj(61.0) - counter.true_uj(1.0))) <= 1
    assert not [x for x in cw.warnings if "aliased" in x]


def test_a_short_run_is_warned_about():
    assert "100" in integrate.short_run_warning(0.5, 0.1, "s")
    assert integrate.short_run_warning(20.0, 0.1, "s") is None


def test_jetson_vi_channels_follow_a_trace(tmp_path):
    root = copy_tree("jetson-orin", tmp_path)
    h = root / HWMON / "hwmon1"
    trace = square(2.02, 5.03, 1.0, 1.0)
    vi = VIFiles(h / "in1_input", h / "curr1_input", trace, 0.026, bus_mv=5000)
    clock = TraceClock([vi])
    src = next(s for s in discover(root).sources if s.spec.name == "hwmon:VDD_IN")
    sampler = EnergySampler([src], clock=clock, min_interval_s=0.05, seed=2)
    _run(sampler, clock, 22.0)
    w, _, _ = sampler.window(src, _ns(clock, 1.0), _ns(clock, 21.0))
    assert w.energy_j == pytest.approx(trace.energy(21.0) - trace.energy(1.0), rel=0.01)


# ---- UM25C -------------------------------------------------------------------------------------------------


def test_um25c_records_parse_byte_exact():
    rec = um25c.um25c_record(
        5.123, 0.4567, temp_c=31, record_mwh=1234, groups=tuple((i, 10 * i) for i in range(10))
    )
    raw = um25c.encode(rec)
    assert len(raw) == 130 and raw[:2] == b"\x09\xc9" and raw[-2:] == b"\xff\xf1"
    back = um25c.decode(raw)
    assert back == rec and um25c.encode(back) == raw
    assert back.model == "UM25C"
    assert (back.voltage_v, back.current_a, back.power_w) == (5.123, 0.4567, round(5.123 * 0.4567, 3))
    assert back.groups[3] == (3, 30)
    # every byte position matters: flipping any one changes the decoded record (or is refused)
    for i in range(130):
        bad = bytearray(raw)
        bad[i] ^= 0x01
        try:
            assert um25c.decode(bytes(bad)) != rec
        except ValueError:
            assert i >= 128  # the end marker
    with pytest.raises(ValueError, match="130 bytes"):
        um25c.decode(raw[:-1])


def test_um24c_scales_volts_and_amps_one_decimal_less():
    rec = um25c.decode(um25c.encode(um25c.um25c_record(5.0, 1.0, start=0x0963, volts_raw=512, amps_raw=1000)))
    assert rec.model == "UM24C" and rec.voltage_v == 5.12 and rec.current_a == 1.0


def test_meter_line_protocol():
    from boardlab.energy.sources import parse_meter_line

    assert parse_meter_line("1700000000.25\t3.10\n") == (1700000000.25, 3.10)
    assert parse_meter_line("3.2") == (None, 3.2)
    assert parse_meter_line("time watts") is None and parse_meter_line("") is None


def test_math_sanity_of_the_trace_helper():
    t = square(2.0, 4.0, 1.0, 1.0)
    assert t.energy(3.5) == pytest.approx(2 + 4 + 2 + 2)
    assert math.isclose(t.power(1.5), 4.0)


def test_jetpack4_iio_ina3221x_power_in_mw_with_the_5v_input_as_the_board():
    d = discover(FIXTURES / "sysfs/jetson-nano")
    by = {s.spec.name: s for s in d.sources}
    board, rails = by["iio:POM_5V_IN"], by["iio:rails"]
    assert (board.spec.scope, board.spec.unit, board.read()) == ("board", "mW", pytest.approx(2.416))
    assert rails.spec.rails == ("POM_5V_GPU", "POM_5V_CPU") and rails.read() == pytest.approx(0.435)
    assert d.primary() is board
