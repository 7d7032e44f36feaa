"""Where PyPI has no wheel (armv7 boards), a missing AI runtime or numpy names a fix that works there."""

from __future__ import annotations

import pytest

from boardlab.ai.runtime import install_hint


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_wheel_machines_are_told_to_pip_install(machine):
    assert install_hint("onnxruntime", machine) == "pip install onnxruntime"
    assert install_hint("numpy", machine).startswith("pip install numpy")


@pytest.mark.parametrize("machine", ["armv7l", "armv8l"])
def test_armv7_boards_get_debian_numpy_and_no_pip_for_runtimes(machine):
    numpy = install_hint("numpy", machine)
    assert "apt-get install python3-numpy" in numpy and "--system-site-packages" in numpy
    for runtime in ("onnxruntime", "litert"):
        hint = install_hint(runtime, machine)
        assert f"no wheel for {machine}" in hint and "pip install" not in hint
    assert "tflite_runtime" in install_hint("litert", machine)
