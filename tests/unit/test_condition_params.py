"""Parameters declared once: every condition kind resolves its plan's `params` through
`conditions.base.resolve_params` from its own declarations (defaults, types, sizes in bytes, checks), and
sizes and plain numbers are read and written by `model.units` alone."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from boardlab.conditions import background, condition_kinds
from boardlab.conditions.base import declared_params, params_of, resolve_params
from boardlab.conditions.command import CommandParams
from boardlab.conditions.ddgzip import DdgzipParams
from boardlab.errors import EXIT_USAGE, InputError
from boardlab.model.units import parse_size, plain_number, size_text

KINDS = condition_kinds()
# a value for each required parameter (the resolver checks shape, not the board)
REQUIRED = {
    "stressor": {"stressor": "cpu"},
    "command": {"argv": ["true"]},
    "workload": {"workload": "mem.copy"},
    "governor": {"governor": "performance"},
    "governor-daemon": {"policy": "ondemand"},
    "devfreq": {"device": "dmc"},
    "driver": {"drivers": ["omap-aes"]},
}


CONDITIONS_SRC = Path(__file__).parents[2] / "src" / "boardlab" / "conditions"


def _declaring_class(kind) -> type:
    """The one frozen dataclass of the kind's module whose fields declare the kind's parameters."""
    module = sys.modules[type(kind).__module__]
    found = [
        c
        for c in vars(module).values()
        if isinstance(c, type) and dataclasses.is_dataclass(c) and c.__module__ == module.__name__
        and c is not type(kind) and declared_params(c) == kind.params
    ]  # fmt: skip
    assert len(found) == 1, f"{kind.name}: {found}"
    return found[0]


@pytest.mark.parametrize("name", sorted(set(KINDS) - {"baseline"}))
def test_each_kind_declares_its_parameters_once_as_the_typed_object_its_code_reads(name):
    kind = KINDS[name]
    declared = _declaring_class(kind)
    assert declared.__dataclass_params__.frozen  # type: ignore[attr-defined]
    p = params_of(declared, kind, REQUIRED.get(name, {}))
    v = resolve_params(kind, REQUIRED.get(name, {}))
    fields = {f.name for f in dataclasses.fields(declared)}
    assert len(fields) == len(kind.params)
    for spec in kind.params:
        # the plan's key, or the key with its unit where the plan's key has none (ddgzip's size_bytes)
        field = spec.name if spec.name in fields else f"{spec.name}_{spec.unit}"
        value = v[spec.name]
        assert getattr(p, field) == (tuple(value) if isinstance(value, list) else value), spec.name


def test_no_kind_writes_a_parameter_spec_or_reads_an_untyped_mapping_of_its_parameters():
    offenders = {
        path.name: [call for call in ("ParamSpec(", "resolve_params(") if call in path.read_text()]
        for path in sorted(CONDITIONS_SRC.glob("*.py"))
        if path.name != "base.py"
    }
    assert not {name: calls for name, calls in offenders.items() if calls}


@pytest.mark.parametrize("name", sorted(KINDS))
def test_a_parameter_left_out_takes_its_declared_default_typed(name):
    kind = KINDS[name]
    v = resolve_params(kind, REQUIRED.get(name, {}))
    assert set(v) == {spec.name for spec in kind.params}
    for spec in kind.params:
        if spec.name in REQUIRED.get(name, {}):
            continue
        if spec.default is None:
            assert v[spec.name] == ({} if spec.type == "table" else None), spec.name
        elif spec.type == "float" and spec.default not in spec.words:
            assert type(v[spec.name]) is float and v[spec.name] == spec.default, spec.name
        elif spec.unit == "bytes" and spec.type == "int":
            assert v[spec.name] == parse_size(spec.default), spec.name
        else:
            assert v[spec.name] == spec.default, spec.name


def test_given_values_win_typed_and_the_record_is_read_only():
    v = resolve_params(KINDS["burstynet"], {"cpu_share": 1, "burst_ms": 20, "protocol": "udp"})
    assert (v["cpu_share"], type(v["cpu_share"]), v["burst_ms"], v["protocol"]) == (1.0, float, 20.0, "udp")
    assert v["message_bytes"] == 514 and v["placement"] == background.DEFAULT_PLACEMENT
    with pytest.raises(TypeError):
        v["protocol"] = "tcp"  # type: ignore[index]


@pytest.mark.parametrize(
    ("given", "size_bytes"),
    [({}, 16 << 20), ({"size": "512K"}, 512 << 10), ({"size": "1.5M"}, 3 << 19), ({"size": 8192}, 8192)],
)
def test_a_size_in_bytes_is_read_from_its_text_and_the_default_is_the_declarations(given, size_bytes):
    assert params_of(DdgzipParams, KINDS["ddgzip"], given).size_bytes == size_bytes


@pytest.mark.parametrize("size", ["16X", "1K", "5G", "-1M"])
def test_a_size_out_of_range_or_malformed_names_the_range_as_written(size):
    assert KINDS["ddgzip"].validate({"size": size}) == (
        "size",
        f'expected bytes in [4K, 4G] as an integer or like "16M", found {size!r}',
    )


def test_bad_parameters_raise_an_input_error_naming_the_kind_the_key_and_the_fix():
    with pytest.raises(InputError) as err:
        resolve_params(KINDS["stressor"], {"stressor": "cpu", "worker": 2})
    assert err.value.exit_code == EXIT_USAGE
    assert str(err.value).startswith("condition kind 'stressor': params.worker: unknown parameter; valid: ")
    assert "workers" in str(err.value)
    with pytest.raises(
        InputError, match=r"condition kind 'stressor': params.workers: expected an integer in"
    ):
        resolve_params(KINDS["stressor"], {"stressor": "cpu", "workers": 0})
    with pytest.raises(InputError, match=r"condition kind 'command': params: missing key 'argv'"):
        resolve_params(KINDS["command"], {})


def test_the_warm_up_left_out_is_the_campaigns():
    p = params_of(CommandParams, KINDS["command"], {"argv": ["true"]})
    assert p.warmup_s is None and background.warmup_of(p, SimpleNamespace(warmup_s=2.5)) == 2.5
    p = params_of(CommandParams, KINDS["command"], {"argv": ["true"], "warmup_s": 0})
    assert background.warmup_of(p, SimpleNamespace(warmup_s=2.5)) == 0.0


def test_a_command_restarts_by_default_as_its_declaration_and_its_documentation_say():
    spec = next(s for s in KINDS["command"].params if s.name == "restart")
    assert spec.default is True
    assert params_of(CommandParams, KINDS["command"], {"argv": ["true"]}).restart is True


def test_sizes_and_plain_numbers_have_one_reader_and_one_writer():
    assert [parse_size(t) for t in ("4096", "4K", "4k", "16M", "1G", "0.5K", 7, "4 K", "M", True)] == [
        4096, 4096, 4096, 16 << 20, 1 << 30, 512, 7, None, None, None,
    ]  # fmt: skip
    assert [size_text(n) for n in (4096, 4 << 30, 3 << 19, 1000, 0)] == ["4K", "4G", "1536K", "1000", "0"]
    assert [plain_number(x) for x in (120.0, 4096, 0.25, 2.068912345)] == [
        "120",
        "4096",
        "0.25",
        "2.068912345",
    ]


@pytest.mark.parametrize(
    ("params", "key", "said"),
    [
        ({"policy": "ondemand", "t1": 1.5}, "t1", 'goes with policy = "anti-snoop"'),
        ({"policy": "conservative", "tree": "tree.json"}, "tree", 'goes with policy = "anti-snoop"'),
        ({"policy": "anti-snoop", "t2": float("nan")}, "t2", "a finite threshold of 0 or more"),
        ({"policy": "anti-snoop", "t1": -1.0}, "t1", "a finite threshold of 0 or more"),
    ],
)
def test_the_governor_daemon_takes_its_rule_s_keys_as_governor_run_takes_its_options(params, key, said):
    """`governor run` refuses these options (exit 2); the condition that starts it refuses the same keys when
    the plan is read, not as a failure of every run inside the campaign."""
    found = KINDS["governor-daemon"].validate(params)
    assert found is not None and found[0] == key and said in found[1]
    assert KINDS["governor-daemon"].validate({"policy": "anti-snoop", "t1": 1.5, "t2": 0.0}) is None
