"""The board side of `boardlab fleet run` (fleet.sh, run by the board's sh): `--label` reaches the board's
`boardlab run` whole (spaces, quotes, shell characters, a leading dash), read from the file the worker puts
beside the plan, and no label file (or an empty one) means no --label; a campaign whose boardlab has exited
but whose `done` is not written yet polls as running, not gone. A stand-in for the installed boardlab
records the arguments it was given."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from boardlab.fleet.board import BOARD_SH, SCRIPT_NAME, parse_poll

pytestmark = pytest.mark.spawns  # starts processes: not in make test-unit

STAND_IN = """#!/bin/sh
for a in "$@"; do printf '%s\\0' "$a"; done > "$(dirname "$0")/../../args"
echo '{"schema": 1}'
"""


def _campaign(place: Path, label: str | None, run_args: list[str] | None = None) -> list[str]:
    """Runs `fleet.sh start` in `place` and waits for `done`; the arguments the stand-in boardlab got."""
    (place / "venv" / "bin").mkdir(parents=True, exist_ok=True)
    bl = place / "venv" / "bin" / "boardlab"
    bl.write_text(STAND_IN)
    bl.chmod(0o755)
    (place / SCRIPT_NAME).write_text(BOARD_SH)
    (place / "plan.toml").write_text('name = "p"\n')
    if label is not None:
        (place / "label.txt").write_text(label)
    if run_args is not None:  # as fleet/place.py writes them
        (place / "run-args.txt").write_text("".join(f"{a}\n" for a in run_args))
    out = subprocess.run(
        ["sh", str(place / SCRIPT_NAME), "start"], capture_output=True, text=True, timeout=30
    )
    assert out.stdout.strip() == "started", out
    deadline = time.monotonic() + 30
    while True:
        state, code = _poll(place)
        if state == "done":
            break
        assert time.monotonic() < deadline, (state, code)
        time.sleep(0.1)
    assert code == "0"
    return (place / "args").read_bytes().decode().split("\0")[:-1]


@pytest.mark.skipif(shutil.which("setsid") is None, reason="fleet.sh needs setsid (util-linux)")
@pytest.mark.parametrize(
    "label",
    ["kernel 6.6 -> 6.12", "-O2 'and' \"quotes\" $(id) `id` ; & | \\ *", "two\nlines"],
)
def test_the_label_reaches_boardlab_run_whole(tmp_path, label):
    place = tmp_path / "a place"  # a path with a space, as a user's may be
    args = _campaign(place, label)
    assert args[:2] == ["run", str(place / "plan.toml")]
    assert args[-1] == f"--label={label}" and sum(a.startswith("--label") for a in args) == 1


@pytest.mark.skipif(shutil.which("setsid") is None, reason="fleet.sh needs setsid (util-linux)")
@pytest.mark.parametrize("label", [None, ""])
def test_no_label_file_or_an_empty_one_gives_no_label(tmp_path, label):
    args = _campaign(tmp_path / "p", label)
    assert not any(a.startswith("--label") for a in args) and args[-1] == "--json"


@pytest.mark.skipif(shutil.which("setsid") is None, reason="fleet.sh needs setsid (util-linux)")
def test_the_commit_and_branch_reach_boardlab_run_one_argument_a_line(tmp_path):
    from boardlab.model.campaign import CommitIdentity

    identity = CommitIdentity(
        "0123456789abcdef0123456789abcdef01234567", "v1.4-3-g0123456-dirty", "feature/x"
    )
    args = _campaign(tmp_path / "p", "kernel 6.12", identity.run_args())
    assert args[-4:] == [
        "--label=kernel 6.12",
        "--commit=0123456789abcdef0123456789abcdef01234567",
        "--commit-describe=v1.4-3-g0123456-dirty",
        "--branch=feature/x",
    ]


# Stops the `campaign` sh (its parent) and exits: boardlab gone (a zombie), `done` not yet written. On a
# loaded board the campaign sh can take that long to be scheduled after boardlab exits.
STOPS_ITS_CAMPAIGN = """#!/bin/sh
while [ ! -s "$(dirname "$0")/../../boardlab.pid" ]; do sleep 0.01; done
kill -STOP $PPID
echo '{"schema": 1}'
"""


def _poll(place: Path) -> tuple[str, str]:
    out = subprocess.run(["sh", str(place / SCRIPT_NAME), "poll"], capture_output=True, text=True, timeout=30)
    assert out.stderr == "", out
    return parse_poll(out.stdout.splitlines())


def _stat(pid: int) -> list[str]:
    """/proc/PID/stat after the command name: [state, ppid, ...]."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _process_group(place: Path) -> int:
    """The campaign sh's process group, read from its record (or its boardlab's, whose group is the same)."""
    for name in ("campaign.pid", "boardlab.pid"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            return int(_stat(int((place / name).read_text()))[2])
    raise AssertionError(f"no campaign was started in {place}")


@pytest.mark.skipif(shutil.which("setsid") is None, reason="fleet.sh needs setsid (util-linux)")
def test_a_campaign_between_boardlabs_exit_and_its_done_file_polls_running_not_gone(tmp_path):
    place = tmp_path / "p"
    (place / "venv" / "bin").mkdir(parents=True)
    bl = place / "venv" / "bin" / "boardlab"
    bl.write_text(STOPS_ITS_CAMPAIGN)
    bl.chmod(0o755)
    (place / SCRIPT_NAME).write_text(BOARD_SH)
    try:
        out = subprocess.run(
            ["sh", str(place / SCRIPT_NAME), "start"], capture_output=True, text=True, timeout=30
        )
        assert out.stdout.strip() == "started", out
        boardlab = int((place / "boardlab.pid").read_text())
        deadline = time.monotonic() + 30
        while _stat(boardlab)[0] != "Z":  # the stand-in has stopped its campaign sh and exited
            assert time.monotonic() < deadline, "the stand-in boardlab did not exit"
            time.sleep(0.05)
        assert not (place / "done").exists()
        assert _poll(place)[0] == "running"  # was "gone": the fleet then retried a finished campaign
    finally:
        # the campaign sh leads its own process group (setsid): continued whatever failed above
        os.killpg(_process_group(place), signal.SIGCONT)
    deadline = time.monotonic() + 30
    while (state := _poll(place))[0] != "done":
        assert state[0] == "running" and time.monotonic() < deadline, state
        time.sleep(0.05)
    assert state == ("done", "0")
    assert _poll(place) == ("done", "0")
