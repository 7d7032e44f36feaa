"""`boardlab run --dry-run` lists what of a plan runs on this board and why not: the satellite-computer
preset's combined relay + dd-gzip condition, its crypto-engine driver condition (runnable on the BeagleBone
Black tree, unsupported with the reason on the Odroid-XU3's), its 7-Zip rating, and the governor study's
application workloads."""

from __future__ import annotations

import json
import shutil

from helpers import SYSFS, run_cli


def _listing(preset: str, board: str) -> dict:
    proc = run_cli("run", "--preset", preset, "--dry-run", "--json", "--root", str(SYSFS / board))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_the_satellite_preset_lists_combined_loads_the_driver_condition_and_the_7zip_rating():
    bbb = _listing("andesite", "bbb")
    conditions = {c["name"]: c for c in bbb["conditions"]}
    assert conditions["relay+dd-gzip"]["parts"] == ["burstynet", "ddgzip"]
    assert conditions["relay+dd-gzip"]["reason"] is None
    assert conditions["crypto-engine-off"]["reason"] is None  # omap-aes and omap-sham are bound there
    rating = next(w for w in bbb["workloads"] if w["name"] == "7zip.rating")
    assert rating["family"] == "program" and rating["summary"] == "7zz b"
    assert rating["reason"] == (
        None if shutil.which("7zz") else "7zz: not found on PATH (Debian: apt-get install 7zip)"
    )
    xu3 = {c["name"]: c for c in _listing("andesite", "odroid-xu3")["conditions"]}
    assert xu3["crypto-engine-off"]["reason"].startswith(
        "unsupported: no kernel driver 'omap-aes' on the platform bus"
    )


def test_the_text_says_unsupported_here_with_the_reason():
    proc = run_cli("run", "--preset", "andesite", "--dry-run", "--root", str(SYSFS / "odroid-xu3"))
    assert proc.returncode == 0, proc.stderr
    assert "condition relay+dd-gzip (burstynet + ddgzip): ok" in proc.stdout
    assert (
        "condition crypto-engine-off (driver): unsupported here: no kernel driver 'omap-aes'" in proc.stdout
    )
    assert "workload 7zip.rating (program): " in proc.stdout


def test_the_governor_study_lists_its_application_workloads_each_with_its_program():
    apps = {
        w["name"]: w for w in _listing("governor-eval", "odroid-xu3")["workloads"] if w["family"] == "program"
    }
    for name, program, package in (
        ("app.video_decode", "ffmpeg", "ffmpeg"),
        ("app.7zip", "7zz", "7zip"),
        ("app.page_load", "chromium", None),
    ):
        assert apps[name]["summary"].startswith(program)
        if shutil.which(program):
            assert apps[name]["reason"] is None
        else:
            hint = f" (Debian: apt-get install {package})" if package else ""
            assert apps[name]["reason"] == f"{program}: not found on PATH{hint}"
