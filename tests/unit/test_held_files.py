"""The monitor's counter files held open between reads (sampling.HeldFiles): each read is the file now, a
fixture's file is never held (a test may replace it by a rename), and a closed set opens them again."""

from __future__ import annotations

import os
import time

from boardlab.platform.sampling import HeldFiles


def test_a_held_proc_file_reads_what_it_says_now_not_what_it_said_when_opened():
    files = HeldFiles()
    first = files.read("/proc/uptime")
    assert first is not None and len(files._fds) == 1
    time.sleep(0.02)  # /proc/uptime counts in hundredths of a second
    second = files.read("/proc/uptime")
    assert second is not None and float(second.split()[0]) > float(first.split()[0])
    assert len(files._fds) == 1  # the same descriptor, read again
    files.close()
    assert files._fds == {}
    assert files.read("/proc/uptime") is not None and len(files._fds) == 1  # opened again
    files.close()


def test_a_file_outside_proc_is_opened_at_each_read_so_a_rename_over_it_is_seen(tmp_path):
    path = tmp_path / "stat"
    path.write_bytes(b"cpu0 1 2 3 4 5 6 7 8\n")
    files = HeldFiles()
    assert files.read(str(path)) == b"cpu0 1 2 3 4 5 6 7 8\n"
    replacement = tmp_path / "stat.new"
    replacement.write_bytes(b"cpu0 9 9 9 9 9 9 9 9\n")
    os.replace(replacement, path)
    assert files.read(str(path)) == b"cpu0 9 9 9 9 9 9 9 9\n" and files._fds == {}
    assert files.read("/proc/no-such-file") is None and files._fds == {}
