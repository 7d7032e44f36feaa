"""`boardlab bundle`: a tarball that installs boardlab without a compiler or a package index. The native
bundle is installed here for real; the armhf one is installed in a Debian armhf root filesystem by
tests/integration/test_arm_rootfs.py (make test-arm)."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

from helpers import run_cli


@pytest.fixture(scope="module")
def native_bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("bundle") / "boardlab-native.tar.gz"
    proc = run_cli("bundle", "--arch", "native", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return out, proc


def test_the_bundle_holds_wheel_binary_presets_installer_and_manifest(native_bundle, kern):
    out, proc = native_bundle
    assert f"wrote {out}" in proc.stdout and "install.sh" in proc.stdout
    with tarfile.open(out) as tar:
        names = set(tar.getnames())
        manifest = json.loads(tar.extractfile("boardlab-native/bundle.json").read())
        binary = tar.extractfile("boardlab-native/boardlab-kern").read()
        assert tar.getmember("boardlab-native/install.sh").mode & 0o111
        wheel_name = manifest["wheel"]
        wheel = zipfile.ZipFile(io.BytesIO(tar.extractfile(f"boardlab-native/{wheel_name}").read()))
    assert {"boardlab-native/install.sh", "boardlab-native/presets/quick.toml"} <= names
    assert manifest["schema"] == 1 and manifest["arch"] == "x86_64"
    assert (
        manifest["kern"]["sha256"]
        == hashlib.sha256(binary).hexdigest()
        == hashlib.sha256(kern.read_bytes()).hexdigest()
    )
    assert wheel_name.endswith("-py3-none-any.whl")
    # A valid wheel: every file is in RECORD with its hash; pure Python (no binary inside).
    members = set(wheel.namelist())
    assert "boardlab/cli/__init__.py" in members and "boardlab/campaign/presets/quick.toml" in members
    assert "boardlab/boardlab-kern" not in members and not any("__pycache__" in m for m in members)
    assert not any(m.endswith(".so") for m in members)  # this host's extension modules stay here
    assert "boardlab/stats/trimmed.py" in members  # ... their Python path goes
    record = wheel.read(next(m for m in members if m.endswith("/RECORD"))).decode()
    for line in record.splitlines():
        name, digest, size = line.rsplit(",", 2)
        if digest:
            data = wheel.read(name)
            want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert digest == f"sha256={want}" and int(size) == len(data)


def extract_data(tar: tarfile.TarFile, dest: Path) -> None:
    """tarfile's "data" filter where this Python has it (3.11.4 and later); Debian 12's 3.11.2 has no `filter`
    argument, so there the same refusals that matter for a bundle are made by hand first: a member outside
    dest, an absolute or escaping link, a device node."""
    if hasattr(tarfile, "data_filter"):
        tar.extractall(dest, filter="data")
        return
    root = dest.resolve()
    for member in tar.getmembers():
        target = (root / member.name).resolve()
        # a symlink's target is relative to its directory, a hard link's to the archive's root
        link = (target.parent if member.issym() else root) / member.linkname if member.linkname else root
        if not (target.is_relative_to(root) and link.resolve().is_relative_to(root)) or member.isdev():
            raise AssertionError(f"the bundle holds an unsafe member: {member.name}")
    tar.extractall(dest)


def test_the_native_bundle_installs_offline_and_finds_its_binary(native_bundle, tmp_path):
    out, _ = native_bundle
    with tarfile.open(out) as tar:
        extract_data(tar, tmp_path)
    prefix, bindir = tmp_path / "prefix dir", tmp_path / "bin"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BOARDLAB_KERN", "VIRTUAL_ENV"))}
    env["PIP_INDEX_URL"] = "http://127.0.0.1:9/"  # any attempt to reach an index fails at once
    proc = subprocess.run(
        [
            "sh",
            str(tmp_path / "boardlab-native" / "install.sh"),
            "--prefix",
            str(prefix),
            "--bin",
            str(bindir),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    if "python3-venv missing" in proc.stderr:
        pytest.skip("this machine's python3 has no venv/ensurepip (apt-get install python3-venv)")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (bindir / "boardlab").resolve() == (prefix / "bin" / "boardlab").resolve()
    info = subprocess.run(
        [str(bindir / "boardlab"), "info", "--json"], capture_output=True, text=True, env=env, timeout=120
    )
    assert info.returncode == 0, info.stderr
    kern = json.loads(info.stdout)["kern"]
    assert kern["path"] == str(prefix / "bin" / "boardlab-kern")
    assert kern["build"]["arch"] == "x86_64" and kern["kernels"] > 0


def test_out_over_a_device_an_input_or_a_directory_is_refused(native_bundle, kern, tmp_path):
    device = tmp_path / "null.tar.gz"
    device.symlink_to("/dev/null")
    directory = tmp_path / "dir.tar.gz"
    directory.mkdir()
    for out in (device, directory):
        proc = run_cli("bundle", "--arch", "native", "--out", str(out))
        assert proc.returncode == 2 and "not a regular file" in proc.stderr, proc.stderr
    proc = run_cli("bundle", "--arch", "native", "--out", str(tmp_path / "b.zip"))
    assert proc.returncode == 2 and ".tar.gz" in proc.stderr
    copy = tmp_path / "kern.tar.gz"
    copy.write_bytes(kern.read_bytes())
    proc = run_cli("bundle", "--arch", "native", "--kern", str(copy), "--out", str(copy))
    assert proc.returncode == 2 and "inputs" in proc.stderr
    assert copy.read_bytes() == kern.read_bytes()  # untouched
    proc = run_cli("bundle", "--arch", "native", "--out", str(tmp_path / "dev.tar.gz"), "--kern", "/dev/null")
    assert proc.returncode == 2 and "--kern /dev/null: not a regular file" in proc.stderr, proc.stderr
    proc = run_cli(
        "bundle", "--arch", "native", "--out", str(tmp_path / "b.tar.gz"), "--kern", str(tmp_path / "no")
    )
    assert proc.returncode == 2 and "no such file; give the boardlab-kern binary" in proc.stderr, proc.stderr


def test_a_binary_for_another_architecture_is_refused(kern, tmp_path):
    proc = run_cli("bundle", "--arch", "armhf", "--kern", str(kern), "--out", str(tmp_path / "b.tar.gz"))
    assert proc.returncode == 2
    assert "built for x86_64, not armhf" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "b.tar.gz").exists()


def test_the_manifest_records_the_sha256_of_every_file(native_bundle):
    out, _ = native_bundle
    with tarfile.open(out) as tar:
        manifest = json.loads(tar.extractfile("boardlab-native/bundle.json").read())
        members = {m.name.split("/", 1)[1]: m for m in tar.getmembers() if m.isfile()}
        digests = {name: hashlib.sha256(tar.extractfile(m).read()).hexdigest() for name, m in members.items()}
    del digests["bundle.json"]
    assert manifest["files"] == digests and "boardlab-kern" in digests and "install.sh" in digests


@pytest.mark.parametrize("damage", ["truncated", "altered", "missing", "manifest"])
def test_a_damaged_copy_is_refused_before_anything_is_installed(native_bundle, tmp_path, damage):
    """install.sh checks every file with `sha256sum -c` against bundle.json first: a truncated copy (an
    interrupted scp), a changed byte, a missing file or an unreadable manifest exits 2 naming the file, and
    neither the venv nor the link is created."""
    out, _ = native_bundle
    with tarfile.open(out) as tar:
        extract_data(tar, tmp_path)
    top = tmp_path / "boardlab-native"
    wheel = next((top / "wheels").glob("*.whl"))
    if damage == "truncated":
        data = (top / "boardlab-kern").read_bytes()
        (top / "boardlab-kern").write_bytes(data[: len(data) // 2])
        named = "boardlab-kern: FAILED"
    elif damage == "altered":
        data = bytearray(wheel.read_bytes())
        data[len(data) // 2] ^= 1
        wheel.write_bytes(bytes(data))
        named = f"wheels/{wheel.name}: FAILED"
    elif damage == "missing":
        (top / "presets" / "quick.toml").unlink()
        named = "presets/quick.toml"
    else:
        (top / "bundle.json").write_text('{"schema": 1, "fi')
        named = "bundle.json: no readable manifest"
    prefix, bindir = tmp_path / "prefix", tmp_path / "bin"
    proc = subprocess.run(
        ["sh", str(top / "install.sh"), "--prefix", str(prefix), "--bin", str(bindir)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert named in proc.stderr and "Traceback" not in proc.stderr
    assert not prefix.exists() and not bindir.exists()


def _extracted(native_bundle, tmp_path: Path) -> tuple[Path, dict]:
    out, _ = native_bundle
    with tarfile.open(out) as tar:
        extract_data(tar, tmp_path)
    top = tmp_path / "boardlab-native"
    return top, json.loads((top / "bundle.json").read_text())


def _newer_wheel(top: Path) -> Path:
    """A real, installable wheel of a higher version, as a copy of the bundle with an added file would
    hold."""
    from boardlab.bundle import build_wheel

    name, data = build_wheel("0.1.1", ())
    path = top / "wheels" / name
    path.write_bytes(data)
    return path


def _install(top: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BOARDLAB_KERN", "VIRTUAL_ENV"))}
    env["PIP_INDEX_URL"] = "http://127.0.0.1:9/"  # any attempt to reach an index fails at once
    return subprocess.run(
        ["sh", str(top / "install.sh"), "--prefix", str(tmp_path / "prefix"), "--bin", str(tmp_path / "bin")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


@pytest.mark.parametrize("extra", ["wheel", "preset", "symlink"])
def test_a_file_the_manifest_does_not_list_is_refused_before_anything_is_installed(
    native_bundle, tmp_path, extra
):
    """A copy of the bundle with a file added (a newer wheel beside the listed one, which pip would have
    preferred; any other file; a link) is not what `boardlab bundle` wrote: exit 2 naming it, nothing made."""
    top, _ = _extracted(native_bundle, tmp_path)
    if extra == "wheel":
        named = f"wheels/{_newer_wheel(top).name}"
    elif extra == "preset":
        (top / "presets" / "zz.toml").write_text('name = "zz"\n')
        named = "presets/zz.toml"
    else:
        (top / "presets" / "link.toml").symlink_to(top / "presets" / "quick.toml")
        named = "presets/link.toml (not a regular file)"
    proc = _install(top, tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "does not list" in proc.stderr and named in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "prefix").exists() and not (tmp_path / "bin").exists()


def test_the_manifest_s_wheel_is_installed_by_its_name_not_the_highest_version(native_bundle, tmp_path):
    """Even a newer wheel the manifest lists (with its sha256) is not installed unless the manifest names it
    as the bundle's wheel."""
    top, manifest = _extracted(native_bundle, tmp_path)
    newer = _newer_wheel(top)
    manifest["files"][f"wheels/{newer.name}"] = hashlib.sha256(newer.read_bytes()).hexdigest()
    (top / "bundle.json").write_text(json.dumps(manifest))
    proc = _install(top, tmp_path)
    if "python3-venv missing" in proc.stderr:
        pytest.skip("this machine's python3 has no venv/ensurepip (apt-get install python3-venv)")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    version = manifest["boardlab_version"]
    assert manifest["wheel"] == f"wheels/boardlab-{version}-py3-none-any.whl" and version != "0.1.1"
    installed = subprocess.run(
        [str(tmp_path / "prefix" / "bin" / "boardlab"), "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert installed.stdout.split() == ["boardlab", version], installed
