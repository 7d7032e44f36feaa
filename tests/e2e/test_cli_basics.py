"""The CLI surface every later command relies on: version, help, exit codes, lazy imports."""

from __future__ import annotations

import subprocess
import sys

import pytest

from boardlab.cli import COMMANDS

from helpers import run_cli

HEAVY = ("numpy", "scipy", "matplotlib", "onnxruntime", "sqlite3", "tomllib", "json", "starlette", "uvicorn")


def test_version():
    import boardlab

    proc = run_cli("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"boardlab {boardlab.__version__}"


def test_help_lists_the_commands():
    proc = run_cli("--help")
    assert proc.returncode == 0
    assert "info" in proc.stdout and "kern" in proc.stdout


def test_no_command_is_a_usage_error():
    assert run_cli().returncode == 2


def test_unknown_command_is_a_usage_error():
    proc = run_cli("frobnicate")
    assert proc.returncode == 2 and "invalid choice" in proc.stderr


@pytest.mark.parametrize(
    "args, prog, unknown",
    [
        (["--nope"], "boardlab", "--nope"),
        (["load", "--url", "x"], "boardlab load", "--url"),
        (["governor", "sweep", "--nope"], "boardlab governor sweep", "--nope"),
        (["models", "build", "--nope"], "boardlab models build", "--nope"),
    ],
)
def test_an_unknown_option_is_named_by_the_command_that_was_given_it(args, prog, unknown):
    """Before, argparse named boardlab and showed its usage for an option unknown to a subcommand."""
    proc = run_cli(*args)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"usage: {prog} ")
    assert proc.stderr.splitlines()[-1] == f"{prog}: error: unrecognized arguments: {unknown}"


def test_help_imports_nothing_heavy():
    code = (
        "import sys\n"
        "from boardlab.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        f"print('HEAVY:' + ','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0
    assert proc.stdout.strip().splitlines()[-1] == "HEAVY:"


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_shows_a_percent_sign_once(command):
    # argparse %-formats an argument's help but prints a description as written, so a "%%" meant for the
    # one becomes a literal "%%" in the other.
    proc = run_cli(command, "--help")
    assert proc.returncode == 0
    assert "%%" not in proc.stdout


@pytest.mark.parametrize(
    "args",
    [
        ("info", "--root", ""),
        ("report", "--db", "x.db", "-o", ""),
        ("ingest", "--db", "", "board.db"),
        ("models", "build", "--out", ""),
        ("governor", "sweep", "--root", ""),
        ("bundle", "--arch", "arm64", "--out", ""),
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_an_empty_path_is_refused_naming_its_option_not_taken_as_here_or_as_not_given(tmp_path, args):
    """`--root ''` took the current directory for the board's tree, `models build --out ''` built into the
    default cache (`args.out or default`), `report -o ''` printed to stdout: each exit 2 now, nothing made."""
    import os

    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    proc = run_cli(*args, cwd=tmp_path, env=env)
    option = args[args.index("") - 1]
    assert proc.returncode == 2 and "an empty path" in proc.stderr and option in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "cache" / "boardlab" / "models").exists()


@pytest.mark.parametrize("names", ["", ",", " , "])
def test_models_that_name_no_model_are_refused_not_read_as_all_six(tmp_path, names):
    import os

    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    proc = run_cli("models", "build", "--models", names, cwd=tmp_path, env=env)
    assert proc.returncode == 2 and "names no model" in proc.stderr, proc.stderr
    assert not (tmp_path / "cache" / "boardlab" / "models").exists()
