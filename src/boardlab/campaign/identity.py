"""A campaign's commit and branch (`run --commit auto|SHA --branch NAME`): what a CI job measured, stored with
the campaign and shown by `history` (and its JUnit and annotation outputs) and `serve`.

`--commit auto` asks git in the directory the user names (`--source-dir`, default the current one): the
commit hash (`git rev-parse HEAD`), its `git describe --always --dirty` name, and the branch checked out
when no `--branch` is given (none on a detached HEAD, as a CI checkout often is)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

from boardlab.errors import InputError
from boardlab.model.campaign import CommitIdentity

SHA_RE = re.compile(r"[0-9a-f]{7,64}")  # abbreviated to full, SHA-1 or SHA-256 object names
NAME_MAX = 200
GIT_TIMEOUT_S = 30


def _name(value: str | None, flag: str, example: str) -> str | None:
    """A branch or describe name: printable, no whitespace, not an option, at most NAME_MAX characters."""
    if value is None:
        return None
    if (
        not value
        or len(value) > NAME_MAX
        or value.startswith("-")
        or not value.isprintable()
        or any(c.isspace() for c in value)
    ):
        raise InputError(
            f"{flag} {value!r}: expected a name of 1 to {NAME_MAX} printable characters without spaces, "
            f"e.g. {example}"
        )
    return value


def resolve(
    commit: str | None,
    branch: str | None = None,
    source_dir: str | None = None,
    describe: str | None = None,
) -> CommitIdentity | None:
    """The identity the flags give, or None when none was given. InputError naming the flag and the fix."""
    branch = _name(branch, "--branch", "main or release/1.4")
    describe = _name(describe, "--commit-describe", "v1.4-3-gabc1234-dirty")
    if commit is None:
        if source_dir is not None:
            raise InputError("--source-dir names where --commit auto asks git: give --commit auto with it")
        if describe is not None:
            raise InputError(
                "--commit-describe names the commit --commit SHA gives: give --commit SHA with it"
            )
        return CommitIdentity(None, None, branch) if branch else None
    if commit == "auto":
        if describe is not None:
            raise InputError("--commit-describe: --commit auto asks git for it; give --commit SHA instead")
        return _from_git(source_dir or ".", branch)
    if source_dir is not None:
        raise InputError(f"--source-dir is for --commit auto; --commit {commit} names the commit itself")
    sha = commit.lower()
    if not SHA_RE.fullmatch(sha):
        raise InputError(
            f"--commit {commit!r}: expected auto or a commit hash (7 to 64 hex digits, e.g. the output of "
            "`git rev-parse HEAD`)"
        )
    return CommitIdentity(sha, describe, branch)


def _git(directory: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", "-C", directory, *args], capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=False
    )


def _from_git(directory: str, branch: str | None) -> CommitIdentity:
    """`--commit auto`: the checkout's HEAD, its describe name, and its branch unless one was given."""
    if not os.path.isdir(directory):
        raise InputError(f"--source-dir {directory}: no such directory; give the directory of a git checkout")
    if shutil.which("git") is None:
        raise InputError("--commit auto asks git, which is not installed (Debian: apt-get install git); "
                         "or give --commit SHA")  # fmt: skip
    head = _git(directory, "rev-parse", "--verify", "HEAD")
    if head.returncode != 0:
        why = " ".join(head.stderr.split())[:300] or f"git exited {head.returncode}"
        raise InputError(
            f"--commit auto: {os.path.abspath(directory)} is not a git checkout with a commit ({why}); give "
            "--source-dir DIR of the checkout that was built, or --commit SHA"
        )
    described = _git(directory, "describe", "--always", "--dirty")
    name = described.stdout.strip() if described.returncode == 0 else None
    if branch is None:
        ref = _git(directory, "symbolic-ref", "--short", "-q", "HEAD")  # exit 1 on a detached HEAD
        branch = ref.stdout.strip() or None if ref.returncode == 0 else None
    return CommitIdentity(head.stdout.strip(), name or None, branch)
