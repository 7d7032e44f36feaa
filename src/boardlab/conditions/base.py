"""The contract every condition kind follows.

A kind validates its parameters twice: `validate(params)` when the plan is read (shape and types, with
the plan's file and line), and `check(params, ctx)` against the board before anything starts (CPUs that
exist, governors a policy offers, tools that are installed). `apply(params, ctx)` is a context manager
around one run: it changes what it must through `ctx.journal` (so every change can be undone, even after a
crash), yields a dict that is stored with the run, may add to that dict on exit (e.g. a stressor's achieved
rate), and undoes everything on every exit path.

A kind declares each parameter once, as a field of a frozen dataclass whose `param(...)` carries the
`ParamSpec` data (type, default, range or choices, unit, help): `declared_params` turns that class into the
kind's `params` (what `validate_params` checks a plan's table against and `boardlab list` shows), and
`params_of` turns a plan's table into an instance of it (`resolve_params`: defaults filled in, numbers typed,
sizes in bytes), the typed object `check` and `apply` read. No kind repeats a parameter or a default.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, Generic, Protocol, TypeVar, get_args

from boardlab.conditions.journal import RestoreJournal
from boardlab.errors import InputError
from boardlab.model.board import BoardInfo
from boardlab.model.units import parse_size, size_text
from boardlab.model.workload import ParamSpec, ParamType
from boardlab.platform.sysroot import SysRoot

P = TypeVar("P")
_SPEC = "boardlab.param"  # the metadata key of a declared field's ParamSpec


@dataclass
class ApplyContext:
    root: SysRoot
    journal: RestoreJournal
    info: BoardInfo
    worker_cpu: int | None  # the CPU the workload is pinned to (None: not pinned)
    online_cpus: tuple[int, ...]
    warmup_s: float = 1.0  # how long a load runs before the workload starts
    extra: dict[str, Any] = field(default_factory=dict)
    # (workload, its params as JSON) of what this campaign prepared (`workloads.params.prepare_once`: its
    # cells' workloads and its conditions' loads): one preparation each, however many cells or loads ask
    prepared: set[tuple[str, str]] = field(default_factory=set)
    _temp_dir: Path | None = None
    _temp_token: str = ""

    @property
    def temp_dir(self) -> Path:
        """A private directory for the condition's files (stress-ng --temp-path, loads), made on first use."""
        if self._temp_dir is None:
            self._temp_dir = Path(tempfile.mkdtemp(prefix="boardlab-"))
            # journaled, so that a SIGKILLed campaign's scratch files are removed by the next start
            self._temp_token = self.journal.made_dir(self._temp_dir, what="scratch directory", in_unit=False)
        return self._temp_dir

    def cleanup(self) -> None:
        if self._temp_dir is not None:
            self.journal.undo(self._temp_token)
            shutil.rmtree(self._temp_dir, ignore_errors=True)
            self._temp_dir = None

    @property
    def other_cpus(self) -> tuple[int, ...]:
        return tuple(c for c in self.online_cpus if c != self.worker_cpu)

    def not_writable(self, rel: str) -> str:
        """Why the condition cannot apply when `rel`, a file below the root it writes, refuses this user: the
        one wording, with its fix, that every kind's `check` gives (after any prefix of its own)."""
        return f"{self.root.show(rel)} is not writable by this user: run boardlab as root"


class ConditionKind(Protocol):
    name: str
    summary: str
    params: tuple[ParamSpec, ...]  # what the plan's `params` table may hold (`boardlab list --conditions`)

    def validate(self, params: dict) -> tuple[str | None, str] | None:
        """(key, message) when `params` are malformed; None when they are fine. `DeclaredKind` implements
        it as `validate_params(self.params, params)` followed by the kind's own cross-field checks."""

    def check(self, params: dict, ctx: ApplyContext) -> str | None:
        """Why this condition cannot run on this board (the message names the valid choices); None if it
        can."""

    def apply(self, params: dict, ctx: ApplyContext) -> AbstractContextManager[dict]:
        """Applies the condition for one run; yields the state recorded with the run."""

    def prepare(self, params: dict, ctx: ApplyContext, note: Callable[[str], None]) -> None:
        """What the condition needs made once before a campaign's first run (a load's model built), once the
        board is known to support it; never by `check`, which `run --dry-run` makes and which writes
        nothing. `DeclaredKind`'s does nothing."""

    # Optional: `support(info) -> (reason, limits)`, whether this board can run the kind at all (reason
    # None: it can) and what it cannot do with some parameter values, for `boardlab list --conditions`.
    # Optional: `worker_cpus(params, ctx) -> set[int] | None`, the worker's affinity under this condition
    # (None keeps the runner's pin to runs.cpu). Only the isolation kind's "shared" mode uses it.


def validate_params(specs: tuple[ParamSpec, ...], params: dict) -> tuple[str | None, str] | None:
    """The shared shape check of every kind: known keys, each value of its declared type and range, every
    required key present. The message says what was expected and what was found, as a workload's does."""
    from boardlab.workloads.params import _type_name, check_param_value

    by_name = {s.name: s for s in specs}
    for key, value in params.items():
        spec = by_name.get(key)
        if spec is None:
            valid = f"valid: {', '.join(by_name)}" if by_name else "this kind takes no parameters"
            return key, f"unknown parameter; {valid}"
        if spec.type in ("int", "float") and isinstance(value, str) and value not in spec.words:
            # a size such as "16M" only where the unit is bytes (check_param_value allows it for kern)
            if spec.unit == "bytes" and spec.type == "int":
                reason = _size_reason(spec, value)
                if reason:
                    return key, reason
                continue
            what = "an integer" if spec.type == "int" else "a number"
            words = "".join(f" or {w!r}" for w in spec.words)
            return key, f"expected {what}{words}, found {_type_name(value)} {value!r}"
        reason = check_param_value(spec, value)
        if reason:
            return key, f"{reason}; {key}: {spec.help}" if spec.help else reason
    for spec in specs:
        if spec.required and spec.name not in params:
            valid = f"; valid: {', '.join(spec.choices)}" if spec.choices else ""
            return None, f"missing key {spec.name!r}: {spec.help}{valid}"
    return None


def _size_reason(spec: ParamSpec, text: str) -> str | None:
    """Why a size written as text ("16M") does not fit a parameter in bytes; None when it does."""
    size = parse_size(text)
    if size is not None and (spec.min is None or size >= spec.min) and (spec.max is None or size <= spec.max):
        return None
    lo = "0" if spec.min is None else size_text(int(spec.min))
    hi = "inf" if spec.max is None else size_text(int(spec.max))
    return f'expected bytes in [{lo}, {hi}] as an integer or like "16M", found {text!r}'


class DeclaresParams(Protocol):
    """What resolve_params needs of a kind: its name (for messages) and its declarations (read-only, as a
    kind's frozen dataclass fields are)."""

    @property
    def name(self) -> str: ...

    @property
    def params(self) -> tuple[ParamSpec, ...]: ...


def resolve_params(kind: DeclaresParams, params: Mapping[str, Any]) -> Mapping[str, Any]:
    """Every parameter `kind` declares, read-only: the plan's value, else the declared default; a float
    parameter as a float, a size in bytes as an int ("16M" -> 16777216), words ("max", "all") as they are.

    A plan's parameters were checked with its file and line when it was read; parameters that reach a kind
    another way and do not fit raise InputError (exit 2) naming the kind, the key and what it expects."""
    bad = validate_params(kind.params, dict(params))
    if bad:
        key, message = bad
        raise InputError(f"condition kind {kind.name!r}: params{'.' + key if key else ''}: {message}")
    given = {spec.name: params[spec.name] for spec in kind.params if spec.name in params}
    return MappingProxyType(
        {spec.name: _typed(spec, given.get(spec.name, spec.default)) for spec in kind.params}
    )


def _typed(spec: ParamSpec, value: Any) -> Any:
    if value is None:
        return {} if spec.type == "table" else None  # a table left out is an empty one
    if isinstance(value, str) and value in spec.words:
        return value
    if spec.type == "float":
        return float(value)
    if spec.type == "int" and spec.unit == "bytes":
        return parse_size(value)
    return value


def param(type: ParamType, default: Any = None, *, key: str = "", **spec: Any) -> Any:
    """One parameter, declared as a field of a kind's frozen parameters dataclass: `ParamSpec`'s type,
    default and keywords (min, max, choices, unit, help, words, required). The plan's key is the field's name,
    or `key` where the field's name carries a unit the plan's key does not (ddgzip's `size` read as
    `size_bytes`). The field has no dataclass default: `params_of` gives every field its resolved value."""
    return field(metadata={_SPEC: ParamSpec(key, type, default, **spec)})


def declared_params(declared: type) -> tuple[ParamSpec, ...]:
    """The `ParamSpec`s of a parameters dataclass, in field order except that a class's own parameters
    come before those it inherits (a background kind's own, then `placement` and `warmup_s`), the order
    `boardlab list` and the "valid: ..." of a message show."""
    inherited = {f.name for base in declared.__mro__[1:] for f in _declared_fields(base)}
    # sorted() is stable: own and inherited parameters each keep their declared order
    ordered = sorted(_declared_fields(declared), key=lambda f: f.name in inherited)
    return tuple(replace(f.metadata[_SPEC], name=f.metadata[_SPEC].name or f.name) for f in ordered)


def _declared_fields(cls: type) -> tuple:
    return tuple(f for f in fields(cls) if _SPEC in f.metadata) if "__dataclass_fields__" in vars(cls) else ()


def params_of(declared: type[P], kind: DeclaresParams, params: Mapping[str, Any]) -> P:
    """`params` as an instance of the kind's parameters dataclass: every field the plan's value, else the
    declared default, typed as `resolve_params` types it; a list as a tuple and a table as a read-only
    mapping, so the object is as frozen as its class."""
    v = resolve_params(kind, params)
    values = {}
    for f in _declared_fields(declared):
        spec = f.metadata[_SPEC]
        value = v[spec.name or f.name]
        if isinstance(value, list):
            value = tuple(value)
        elif isinstance(value, dict):
            value = MappingProxyType(dict(value))
        values[f.name] = value
    return declared(**values)


@dataclass(frozen=True)
class DeclaredKind(Generic[P]):
    """What a kind takes from its parameters dataclass, named once as the base's argument (`class
    Ddgzip(DeclaredKind[DdgzipParams])`): `params`, its declarations; `typed`, a plan's table as an instance
    of it; `validate`, the shared shape check followed by the kind's own `refuse`; and `apply`, the kind's
    `applied` around one run, given the typed parameters.

    A kind holds no state of its own: its `name` and `summary` are constants of its class, and its one
    instance (the module's `KIND`) is frozen like its base."""

    name: ClassVar[str]
    summary: ClassVar[str]
    declared: ClassVar[type]
    params: ClassVar[tuple[ParamSpec, ...]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for base in getattr(cls, "__orig_bases__", ()):
            if getattr(base, "__origin__", None) is DeclaredKind:
                (cls.declared,) = get_args(base)
                cls.params = declared_params(cls.declared)

    def typed(self, params: Mapping[str, Any]) -> P:
        return params_of(self.declared, self, params)

    def validate(self, params: dict) -> tuple[str | None, str] | None:
        return validate_params(self.params, params) or self.refuse(self.typed(params), params)

    def apply(self, params: dict, ctx: ApplyContext) -> AbstractContextManager[dict]:
        return self.applied(self.typed(params), ctx)

    def applied(self, p: P, ctx: ApplyContext) -> AbstractContextManager[dict]:
        """`apply` of typed parameters: the kind's context manager around one run (a kind whose `apply`
        reads more than its typed parameters defines `apply` instead)."""
        raise NotImplementedError(f"condition kind {self.name!r} defines neither apply nor applied")

    def prepare(self, params: dict, ctx: ApplyContext, note: Callable[[str], None]) -> None:
        """Nothing to make before a campaign (a kind that has something defines it: ConditionKind.prepare)."""

    def refuse(self, p: P, params: dict) -> tuple[str | None, str] | None:
        """(key, message) when parameters that each fit their declaration do not fit together (or a check
        their declarations cannot state); None when they do. `params` is the plan's table, for a message
        that quotes a value as the plan wrote it."""
        return None
