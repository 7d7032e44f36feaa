"""A workload's knowledge stays in its module: its spec's hooks say how it is launched as a measured run,
as a continuous load and what to prepare; no other module tests its name."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from boardlab.campaign.plan import parse_plan
from boardlab.campaign.reach import count_comparisons
from boardlab.campaign.schedule import build_cells
from boardlab.conditions.workload import KIND as WORKLOAD_KIND
from boardlab.model.workload import LaunchOptions, MetricSpec, PythonWorkload, WorkloadSpec
from boardlab.workloads import PYTHON_WORKLOADS, all_workloads, find_workload

OPTIONS = LaunchOptions(iterations=7, warmup_max_iterations=3, warmup_max_ms=50, warmup_cv=0.02)


def test_every_workload_has_a_measured_launch():
    for spec in all_workloads():
        argv = spec.measured_argv({}, OPTIONS)
        assert spec.name in argv and "--json" in argv and "7" in argv, spec.name


def test_every_python_run_workload_module_follows_the_contract():
    import importlib

    for name, module_name in PYTHON_WORKLOADS.items():
        module = importlib.import_module(module_name)
        assert isinstance(module, PythonWorkload), module_name  # model/workload.py: SPEC and run
        assert module.SPEC.name == name and module.SPEC.runner == "python", module_name


def test_a_kernel_runs_in_boardlab_kern_with_the_plans_warmup_and_counters(kern):
    spec = find_workload("scimark.sor")
    argv = spec.measured_argv({"size": "large"}, LaunchOptions(5, 2, 100.0, 0.01, ("cycles", "instructions")))
    assert argv[:2] == [str(kern), "scimark.sor"]
    assert argv[2:] == ["--param", "size=large", "--counters", "cycles,instructions", "--iterations", "5",
                        "--warmup-max-iterations", "2", "--warmup-max-ms", "100", "--warmup-cv", "0.01",
                        "--json"]  # fmt: skip
    assert spec.load_argv({"size": "large"}) == [str(kern), "scimark.sor", "--param", "size=large",
                                                "--iterations", "100000",
                                                "--warmup-max-iterations", "0"]  # fmt: skip


def test_a_python_workload_runs_in_a_fresh_worker_unless_it_declares_otherwise():
    spec = find_workload("rt.cyclictest")
    argv = spec.measured_argv({"duration_s": 2}, OPTIONS)
    assert argv == [sys.executable, "-m", "boardlab.pyrun", "rt.cyclictest", "--param", "duration_s=2",
                    "--iterations", "7", "--json"]  # fmt: skip
    assert spec.load_argv is None and spec.tail_samples


def test_the_ai_workload_declares_its_load_its_preparation_and_its_tail():
    spec = find_workload("ai.inference")
    assert spec.tail_samples and spec.prepare is not None
    assert spec.load_argv({"model": "resnet18", "threads": 2}) == [
        sys.executable, "-m", "boardlab.ai.loop", "--model", "resnet18", "--threads", "2"]  # fmt: skip
    assert "frames" not in spec.load_params and "model" in spec.load_params


def test_the_workload_condition_asks_the_spec_which_workload_can_be_a_load():
    assert WORKLOAD_KIND.validate({"workload": "scimark.lu", "params": {"size": "large"}}) is None
    assert WORKLOAD_KIND.validate({"workload": "ai.inference", "params": {"model": "resnet18"}}) is None
    key, why = WORKLOAD_KIND.validate({"workload": "rt.cyclictest"})
    assert key == "workload" and "cannot run as a continuous load; kernels and ai.inference can" in why
    key, why = WORKLOAD_KIND.validate({"workload": "ai.inference", "params": {"frames": 10}})
    assert key == "params" and "no parameter 'frames'" in why and "model" in why
    key, why = WORKLOAD_KIND.validate({"workload": "scimark.lu", "params": {"size": "huge"}})
    assert key == "params" and "size" in why


def _catalog(tail: bool) -> dict[str, WorkloadSpec]:
    spec = WorkloadSpec("demo.lat", "demo", "a latency workload", "python",
                        metrics=(MetricSpec("latency_ms", "ms", False, kind="time"),),
                        tail_samples=tail)  # fmt: skip
    return {spec.name: spec}


@pytest.mark.parametrize(("tail", "comparisons"), [(False, 1), (True, 2)])
def test_a_tail_workload_adds_a_tail_comparison_to_the_plans_count(tail, comparisons):
    text = """name = "t"
[[workloads]]
name = "demo.lat"
[[conditions]]
name = "baseline"
kind = "baseline"
[[conditions]]
name = "hog"
kind = "stressor"
baseline = "baseline"
params = { stressor = "cpu" }
"""
    catalog = _catalog(tail)
    plan = parse_plan(text, "t.toml", catalog)
    assert count_comparisons(plan, build_cells(plan, catalog), catalog) == comparisons


def _name_comparisons(path: Path, names: set[str]) -> list[str]:
    """`x == "ai.inference"`, `x in ("rt.cyclictest", ...)` and the like: a module testing a workload's
    name."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Compare):
            continue
        for side in (node.left, *node.comparators):
            consts = side.elts if isinstance(side, ast.Tuple | ast.List | ast.Set) else [side]
            hit = [c.value for c in consts if isinstance(c, ast.Constant) and c.value in names]
            if hit:
                found.append(f"{path}:{node.lineno}: {', '.join(hit)}")
    return found
