"""`run --commit auto|SHA --branch NAME`: the commit a campaign measured, from git in the directory the user
names, stored with the campaign and carried by `boardlab ingest`; a clear error where it cannot be known, and
no resume of a campaign under another commit."""

from __future__ import annotations

import subprocess

import pytest

from boardlab.store import Store

from helpers import run_cli

NOOP = """
name = "noop-commit"
[runs]
repetitions = 2
iterations = 2
warmup_max_ms = 0
[gates]
idle = false
temperature = false
[[workloads]]
name = "noop"
"""


def _git(repo, *args: str) -> str:
    cmd = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org", *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def checkout(tmp_path):
    pytest.importorskip("shutil").which("git") or pytest.skip("git is not installed")
    repo = tmp_path / "src tree"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "feature/fast")
    (repo / "a.c").write_text("int main(void) { return 0; }\n")
    _git(repo, "add", "a.c")
    _git(repo, "commit", "-q", "-m", "one")
    _git(repo, "tag", "-a", "v1.0", "-m", "v1.0")  # annotated: what git describe names
    (repo / "a.c").write_text("int main(void) { return 1; }\n")  # a dirty tree
    return repo


def _identity(db):
    with Store.open(db, create=False) as store:
        ids = [c["id"] for c in store.campaigns()]
        return store.campaign_identities(ids)


def test_commit_auto_stores_the_checkouts_hash_describe_and_branch_and_ingest_carries_them(
    tmp_path, checkout
):
    plan, db = tmp_path / "noop.toml", tmp_path / "noop.db"
    plan.write_text(NOOP)
    p = run_cli(
        "run", str(plan), "--db", str(db), "--commit", "auto", "--source-dir", str(checkout), "--quiet"
    )
    assert p.returncode == 0, p.stderr
    sha = _git(checkout, "rev-parse", "HEAD")
    assert _identity(db) == {1: (sha, "v1.0-dirty", "feature/fast")}
    shared = tmp_path / "shared.db"
    assert run_cli("ingest", str(db), "--db", str(shared)).returncode == 0
    assert list(_identity(shared).values()) == [(sha, "v1.0-dirty", "feature/fast")]
    history = run_cli("history", "--db", str(shared), "--plan", "noop-commit")
    assert "v1.0-dirty (feature/fast)" in history.stdout


def test_a_resume_under_another_commit_is_refused(tmp_path):
    plan, db = tmp_path / "noop.toml", tmp_path / "noop.db"
    plan.write_text(NOOP)
    first = run_cli("run", str(plan), "--db", str(db), "--commit", "a" * 40, "--quiet")
    assert first.returncode == 0, first.stderr
    with Store.open(db) as store:  # as if it had been stopped: a run of the same plan resumes it
        store.set_campaign_status(1, "interrupted")
    p = run_cli("run", str(plan), "--db", str(db), "--commit", "b" * 40)
    assert p.returncode == 2
    assert "campaign 1" in p.stderr and "measured commit aaaaaaaaaaaa, not bbbbbbbbbbbb" in p.stderr
    assert "--fresh" in p.stderr and "Traceback" not in p.stderr
    p = run_cli("run", str(plan), "--db", str(db), "--commit", "b" * 40, "--fresh", "--quiet")
    assert p.returncode == 0 and _identity(db)[2] == ("b" * 40, None, None)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--commit", "auto", "--source-dir", "{tmp}"), "is not a git checkout with a commit"),
        (("--commit", "auto", "--source-dir", "{tmp}/nowhere"), "no such directory"),
        (("--commit", "xyz"), "expected auto or a commit hash"),
        (("--commit", "a" * 40, "--branch", "two words"), "--branch 'two words': expected a name"),
        (("--source-dir", "{tmp}"), "give --commit auto with it"),
    ],
)
def test_a_commit_that_cannot_be_known_is_exit_2_naming_the_flag(tmp_path, args, said):
    plan = tmp_path / "noop.toml"
    plan.write_text(NOOP)
    args = tuple(a.replace("{tmp}", str(tmp_path)) for a in args)
    p = run_cli("run", str(plan), "--db", str(tmp_path / "x.db"), *args)
    assert p.returncode == 2 and said in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert not (tmp_path / "x.db").exists()
