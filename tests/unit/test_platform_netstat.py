"""UDP loss explained from /proc/net/snmp, read through the platform layer (fixture: this VM's file)."""

from __future__ import annotations

from boardlab.platform.netstat import read_snmp, udp_loss_between

from helpers import SYSFS


def test_udp_counters_are_read_by_name():
    udp = read_snmp(SYSFS / "vm")
    assert set(udp) >= {"InDatagrams", "RcvbufErrors", "SndbufErrors", "InErrors", "OutDatagrams"}
    assert all(isinstance(v, int) and v >= 0 for v in udp.values())


def test_a_missing_file_is_none(tmp_path):
    assert read_snmp(tmp_path) is None


def test_loss_is_explained_by_the_counters_that_moved():
    before = {"RcvbufErrors": 10, "SndbufErrors": 0, "InErrors": 10, "NoPorts": 0}
    after = {"RcvbufErrors": 35, "SndbufErrors": 0, "InErrors": 35, "NoPorts": 0}
    why = udp_loss_between(before, after)
    assert why.rcvbuf_errors == 25
    text = why.text(25)
    assert "RcvbufErrors +25" in text and "InErrors +25" in text and "sockbuf_bytes" in text
    assert "SndbufErrors" not in text


def test_loss_the_kernel_did_not_count_says_so():
    same = {"RcvbufErrors": 3, "InErrors": 3}
    assert "none counted by the kernel" in udp_loss_between(same, same).text(4)
    assert udp_loss_between(same, same).text(0) == "no loss"
    assert udp_loss_between(None, same) is None
