"""How a name from outside (a labgrid place, a board's file list, `--remote-dir`) becomes a path: one
function, `fleet/names.py`. A name that would lead out of its directory is refused, a plain one is kept,
any other keeps its readable part and gains a hash of the whole name, so distinct names stay distinct. The
fleet run itself is tested on a loopback labgrid lab in tests/integration/test_fleet.py."""

from __future__ import annotations

import shlex

import pytest

from boardlab.errors import InputError
from boardlab.fleet.board import BOARD_SH, RESULT_FILES
from boardlab.fleet.names import UnsafeName, path_name, remote_place_dir, remote_root
from boardlab.fleet.place import AttemptFailed, result_files


@pytest.mark.parametrize("name", ["board1", "bbb-01", "rpi4_2", "odroid.xu3", "x" * 64])
def test_a_plain_name_is_kept(name):
    assert path_name(name, "place") == name


@pytest.mark.parametrize(
    "name", ["", ".", "..", "../../x", "/abs", "a/b", "a/", "a\0b", "a\nb", "a\x1b[2Jb", "a\x7f", "a\x85"]
)
def test_a_name_that_would_leave_its_directory_is_refused_with_the_fix(name):
    with pytest.raises(UnsafeName) as err:
        path_name(name, "place")
    assert str(err.value).startswith(f"place {name!r}: ") and "rename it" in str(err.value)
    assert err.value.exit_code == 2


def test_names_that_used_to_collide_stay_distinct_and_readable():
    """`a b`, `a;b` and `a_b` were one directory on the board (every odd character became `_`)."""
    names = ["a b", "a;b", "a_b", "a$(id)b", "a`b", "a'b", "-a_b", ".a_b", "á_b", "a_b" * 30]
    mapped = [path_name(n, "place") for n in names]
    assert len(set(mapped)) == len(names)
    assert mapped[2] == "a_b" and all(m.startswith("a_b+") for m in mapped[:2])
    for name in mapped:
        assert shlex.quote(name) == name and len(name) <= 64 and not name.startswith((".", "-"))


def test_a_mapped_name_never_meets_a_plain_one():
    """A place may be named like another's mapped directory: the `+` it would need is not plain."""
    mapped = path_name("a b", "place")
    assert path_name(mapped, "place") != mapped


@pytest.mark.parametrize("raw", ["/tmp/x;id", "/tmp/$(id)", "/tmp/`id`", "/tmp/a\nb", "/tmp/a b",
                                 "/tmp/../etc", "/tmp/./x", "tmp/x", "", "/tmp/*", " /tmp/x"])  # fmt: skip
def test_a_remote_dir_the_board_shell_would_read_is_refused(raw):
    with pytest.raises(InputError) as err:
        remote_root(raw)
    assert str(err.value).startswith(f"--remote-dir {raw!r}: ") and "absolute path" in str(err.value)


def test_a_remote_place_dir_is_the_checked_root_and_the_place_s_name():
    assert remote_place_dir("/var/tmp/boardlab-fleet/", "bbb-01") == "/var/tmp/boardlab-fleet/bbb-01"
    odd = remote_place_dir("/var/tmp/.fleet", "bbb 1;rm")
    assert odd.startswith("/var/tmp/.fleet/bbb_1_rm+") and shlex.quote(odd) == odd
    with pytest.raises(UnsafeName):
        remote_place_dir("/var/tmp/boardlab-fleet", "..")


def test_a_board_listing_a_file_outside_the_protocol_is_not_trusted():
    assert result_files(["results.db-wal", "results.db"]) == ["results.db", "results.db-wal"]
    assert result_files([]) == []
    for hostile in ("../../etc/x", "/etc/passwd", "results.db/../../x", "results.db "):
        with pytest.raises(AttemptFailed) as err:
            result_files(["results.db", hostile])
        assert err.value.final and repr(hostile) in str(err.value)


def test_the_board_script_lists_the_protocol_s_files():
    assert f"for f in {' '.join(RESULT_FILES)}; do" in BOARD_SH
