"""cross/mirror.sh: the cross sysroot and the root filesystems fetch from the mirror this machine's apt uses,
so the repository names no mirror and a lab behind its own mirror needs nothing more."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.spawns  # starts processes: not in make test-unit

MIRROR_SH = Path(__file__).resolve().parents[2] / "cross" / "mirror.sh"


def mirror(etc: Path, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k != "DEBIAN_MIRROR"}
    return subprocess.run(
        [str(MIRROR_SH)], env={**environ, "APT_ETC": str(etc), **env}, capture_output=True, text=True
    )


def apt_etc(tmp_path: Path, sources_list: str = "", **parts: str) -> Path:
    etc = tmp_path / "apt etc"
    (etc / "sources.list.d").mkdir(parents=True)
    (etc / "sources.list").write_text(sources_list)
    for name, text in parts.items():
        (etc / "sources.list.d" / name.replace("_", ".")).write_text(text)
    return etc


def test_one_line_sources_give_the_main_archive_not_the_security_one(tmp_path):
    etc = apt_etc(
        tmp_path,
        "# a comment\n"
        "deb http://security.example.test/deb-security bookworm-security main\n"
        "deb [arch=amd64 signed-by=/k.gpg] http://mirror.example.test/deb/ bookworm main contrib\n",
    )
    out = mirror(etc)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "http://mirror.example.test/deb\n"


def test_deb822_sources_skip_disabled_and_source_only_stanzas(tmp_path):
    etc = apt_etc(
        tmp_path,
        local_sources=(
            "Types: deb-src\nURIs: http://src.example.test/deb\nSuites: bookworm\n\n"
            "Types: deb\nEnabled: no\nURIs: http://off.example.test/deb\nSuites: bookworm\n\n"
            "Types: deb\nURIs: http://sec.example.test/deb-security\nSuites: bookworm-security\n\n"
            "Types: deb deb-src\nURIs: https://lab.example.test/deb/\nSuites: bookworm bookworm-updates\n"
            "Components: main\n"
        ),
    )
    out = mirror(etc)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "https://lab.example.test/deb\n"


def test_debian_mirror_overrides_the_apt_sources(tmp_path):
    etc = apt_etc(tmp_path, "deb http://mirror.example.test/deb bookworm main\n")
    assert mirror(etc, DEBIAN_MIRROR="http://override.example.test/deb").stdout.strip() == (
        "http://override.example.test/deb"
    )


def test_no_source_is_an_error_that_names_the_fix(tmp_path):
    out = mirror(apt_etc(tmp_path))
    assert out.returncode == 1 and out.stdout == ""
    assert "set DEBIAN_MIRROR" in out.stderr
