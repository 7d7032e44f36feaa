"""userfile: a file a user names is named back with the option that named it, once, whatever went wrong."""

from __future__ import annotations

import os

import pytest

from boardlab.errors import BoardlabError
from boardlab.userfile import open_user_file, read_user_file


def _problem(tmp_path, name: str) -> str:
    path = tmp_path / name
    if name == "loop":
        os.symlink(path, path)  # open() fails with ELOOP: errors.os_error's message
    elif name == "fifo":
        os.mkfifo(path)
    elif name == "big":
        path.write_bytes(b"x" * 65)
    with pytest.raises(BoardlabError) as caught:
        read_user_file(path, what="labgrid environment", give="YAML", max_bytes=64, option="--lg-env")
    return str(caught.value)


@pytest.mark.parametrize("name", ["missing", "loop", "fifo", "big"])
def test_the_option_and_path_start_every_message_once(tmp_path, name):
    text = _problem(tmp_path, name)
    assert text.startswith(f"--lg-env {tmp_path / name}: "), text
    assert text.count("--lg-env") == 1, text


def test_an_os_error_names_what_the_file_is_when_no_option_does(tmp_path):
    os.symlink(tmp_path / "loop", tmp_path / "loop")
    with pytest.raises(BoardlabError, match=r"^plan .*loop: "):
        open_user_file(tmp_path / "loop", what="plan", give="a TOML file")
    with pytest.raises(BoardlabError, match=r"^--plan .*loop: ") as caught:
        open_user_file(tmp_path / "loop", what="plan", give="a TOML file", option="--plan")
    assert "plan --plan" not in str(caught.value)
