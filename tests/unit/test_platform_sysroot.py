"""SysRoot: the single door to /proc and /sys. Absent means None; malformed means InputError naming the
file."""

from __future__ import annotations

import pytest

from boardlab.errors import InputError, MeasurementError
from boardlab.platform.sysroot import SysRoot, format_cpulist, parse_bracketed, parse_cpulist


@pytest.mark.parametrize(
    ("text", "cpus"),
    [
        ("0-3,5", (0, 1, 2, 3, 5)),
        ("7", (7,)),
        ("", ()),
        ("\n", ()),
        ("(null)", ()),
        ("0 1 2 3 ", (0, 1, 2, 3)),  # cpufreq affected_cpus / related_cpus
        ("0-7:2/4", (0, 1, 4, 5)),  # used/group syntax of kernel parameters
        ("1,1,0", (0, 1)),
    ],
)
def test_cpulists_parse_as_the_kernel_writes_them(text, cpus):
    assert parse_cpulist(text) == cpus


def test_n_means_the_last_cpu_when_the_cpu_count_is_known():
    assert parse_cpulist("2-N", last_cpu=5) == (2, 3, 4, 5)
    with pytest.raises(ValueError):
        parse_cpulist("N")


@pytest.mark.parametrize("text", ["a", "3-1", "0-3:5/4", "1--2"])
def test_malformed_cpulists_are_rejected(text):
    with pytest.raises(ValueError):
        parse_cpulist(text)


def test_format_cpulist_is_the_inverse():
    assert format_cpulist((0, 1, 2, 3, 5, 7, 8)) == "0-3,5,7-8"
    assert parse_cpulist(format_cpulist((4, 5, 6, 9))) == (4, 5, 6, 9)


def test_bracketed_choice_lists():
    assert parse_bracketed("always [madvise] never") == ("madvise", ("always", "madvise", "never"))
    assert parse_bracketed("performance powersave") == (None, ("performance", "powersave"))


def test_absent_files_read_as_none(tmp_path):
    sr = SysRoot(tmp_path)
    assert sr.read_text("proc/nothing") is None
    assert sr.read_int("sys/nothing") is None
    assert sr.read_cpulist("sys/devices/system/cpu/isolated") is None
    assert sr.listdir("sys/class/thermal") == []


def test_a_non_integer_raises_input_error_naming_the_file_and_the_expectation(tmp_path):
    (tmp_path / "scaling_max_freq").write_text("fast\n")
    with pytest.raises(InputError) as err:
        SysRoot(tmp_path).read_int("scaling_max_freq", "a frequency in kHz")
    assert str(tmp_path / "scaling_max_freq") in str(err.value)
    assert "a frequency in kHz" in str(err.value) and "'fast'" in str(err.value)


def test_device_tree_strings_lose_their_nul(tmp_path):
    (tmp_path / "model").write_bytes(b"TI AM335x BeagleBone Black\0")
    assert SysRoot(tmp_path).read_str("model") == "TI AM335x BeagleBone Black"


def test_listdir_sorts_naturally_and_filters_whole_names(tmp_path):
    for name in ("policy10", "policy2", "policy0", "policyX", "boost"):
        (tmp_path / name).mkdir()
    assert SysRoot(tmp_path).listdir(".", r"policy\d+") == ["policy0", "policy2", "policy10"]


def test_root_must_exist_and_look_like_a_board(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        SysRoot(tmp_path / "missing").require_board_tree()
    with pytest.raises(InputError, match="not a board tree") as err:
        SysRoot(tmp_path).require_board_tree()
    assert "proc/cpuinfo" in str(err.value) and "sys/devices/system/cpu" in str(err.value)
    (tmp_path / "sys/devices/system/cpu").mkdir(parents=True)
    SysRoot(tmp_path).require_board_tree()


def test_live_means_the_running_system(tmp_path):
    assert SysRoot("/").live
    assert not SysRoot(tmp_path).live


def test_write_text_replaces_the_value(tmp_path):
    (tmp_path / "scaling_governor").write_text("ondemand\n")
    SysRoot(tmp_path).write_text("scaling_governor", "performance")
    assert (tmp_path / "scaling_governor").read_text() == "performance"


def test_a_refused_write_is_a_measurement_error_naming_the_path(tmp_path):
    with pytest.raises(MeasurementError, match="scaling_governor"):
        SysRoot(tmp_path).write_text("missing/scaling_governor", "performance")
