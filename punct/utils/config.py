"""Dataclass configs loaded from YAML, with command-line flags that override them.

A component declares a frozen dataclass; ``--config conf/x.yaml`` supplies values and
``--some-field value`` overrides one.  Unknown YAML keys are an error naming the file, so a
typo in a config never silently keeps a default; so is a value of the wrong type, named by file,
key path, expected type and the value received (``conf/am.yaml: model.dim: expected int, got '256'
(str)``).
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml

C = TypeVar("C")


def read_yaml(path: Path) -> dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        try:
            data = yaml.safe_load(f) or {}
        except yaml.YAMLError as e:
            raise ValueError(f"{path}: not valid YAML: {e}") from e
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of option: value at the top level")
    return data


def config_from_dict(config_type: type[C], values: dict[str, Any], source: str = "config") -> C:
    """Builds ``config_type`` from a dict; nested dataclass fields take nested dicts.

    Every value is checked against its field's type hint (see :func:`convert_value`); a mismatch or an
    unknown key is a ValueError naming ``source`` and the key's path (``conf/am.yaml: model.dim``).
    """
    return config_type(**_field_values(config_type, values, source))


def load_config(config_type: type[C], path: Path | None = None, **overrides: Any) -> C:
    """YAML file (optional) first, then ``overrides`` (None values are ignored)."""
    values: dict[str, Any] = _field_values(config_type, read_yaml(Path(path)), str(path)) if path else {}
    given = {k: v for k, v in overrides.items() if v is not None}
    values.update(_field_values(config_type, given, "overrides"))
    return config_type(**values)


def _field_values(config_type: type, values: dict[str, Any], source: str, prefix: str = "") -> dict[str, Any]:
    """``values`` checked and converted field by field (not yet passed to the constructor)."""
    fields = {f.name for f in dataclasses.fields(config_type)}
    unknown = sorted(set(values) - fields)
    if unknown:
        where = f"{source}: {prefix}" if prefix else source
        raise ValueError(f"{where}: unknown option(s) {unknown} for {config_type.__name__}; known: {sorted(fields)}")
    hints = typing.get_type_hints(config_type)
    return {
        name: convert_value(value, hints.get(name, Any), source, _join(prefix, name)) for name, value in values.items()
    }


def convert_value(value: Any, hint: Any, source: str, key: str) -> Any:
    """``value`` if it fits ``hint``, converted where a YAML user expects it; ValueError otherwise.

    Conversions: list -> tuple for tuple fields; int -> float and numeric strings -> float for float
    fields (PyYAML reads ``2e-3``, a YAML 1.1 string, as '2e-3'); dict -> nested dataclass.  Never
    accepted: bool for int/float, a float for an int (even 3.0), a non-numeric string for a float.
    """
    if hint is Any or hint is object:
        return value
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        return _convert_union(value, hint, source, key)
    if origin is typing.Literal:
        return _convert_literal(value, hint, source, key)
    if dataclasses.is_dataclass(hint):
        return _convert_dataclass(value, hint, source, key)
    if hint is tuple or origin is tuple:
        return _convert_tuple(value, hint, source, key)
    if hint is list or origin is list:
        return _convert_list(value, hint, source, key)
    if hint is dict or origin is dict:
        return _convert_dict(value, hint, source, key)
    if hint in _SCALARS:
        return _SCALARS[hint](value, source, key)
    if hint is Path:
        if isinstance(value, (str, Path)):
            return Path(value)
        raise _mismatch(source, key, hint, value)
    if isinstance(hint, type) and not isinstance(value, hint):
        raise _mismatch(source, key, hint, value)
    return value  # a typing construct not handled above (TypeVar, Callable ...): not checked


class _TypeMismatch(ValueError):
    """A value that does not fit the hint at ``key`` (a Union tries its next member on this)."""

    def __init__(self, message: str, key: str) -> None:
        super().__init__(message)
        self.key = key


def _mismatch(source: str, key: str, hint: Any, value: Any, note: str = "") -> _TypeMismatch:
    where = f"{source}: {key}" if key else source
    message = f"{where}: expected {_type_name(hint)}, got {_show(value)} ({type(value).__name__})"
    return _TypeMismatch(message + (f"; {note}" if note else ""), key)


def _type_name(hint: Any) -> str:
    if hint is Any:
        return "Any"
    if isinstance(hint, type) and not typing.get_args(hint):
        return hint.__name__
    return str(_typing_spelling(hint)).replace("typing.", "")


_TYPING_GENERICS = {tuple: typing.Tuple, list: typing.List, dict: typing.Dict}  # noqa: UP006


def _typing_spelling(hint: Any) -> Any:
    """``hint`` spelled with typing's names, so that ``float | None`` and ``tuple[int, ...]`` read in a
    message as ``Optional[float]`` and ``Tuple[int, ...]`` do, whichever way the field was annotated."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if not args or origin is typing.Literal:
        return hint
    args = tuple(_typing_spelling(a) for a in args)
    if origin is typing.Union or origin is types.UnionType:
        return typing.Union[args]  # noqa: UP007
    if origin in _TYPING_GENERICS:
        return _TYPING_GENERICS[origin][args]
    return hint


def _show(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _convert_bool(value: Any, source: str, key: str) -> bool:
    if isinstance(value, bool):
        return value
    raise _mismatch(source, key, bool, value, "write true or false")


def _convert_int(value: Any, source: str, key: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        raise _mismatch(source, key, int, value, f"an int field takes no decimal point: write {int(value)}")
    raise _mismatch(source, key, int, value)


def _convert_float(value: Any, source: str, key: str) -> float:
    if isinstance(value, bool):
        raise _mismatch(source, key, float, value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            raise _mismatch(source, key, float, value, "not a number") from None
    raise _mismatch(source, key, float, value)


def _convert_str(value: Any, source: str, key: str) -> str:
    if isinstance(value, str):
        return value
    # YAML 1.1 reads yes/no/on/off as booleans and bare numbers as numbers
    raise _mismatch(source, key, str, value, "quote the value to keep it a string")


_SCALARS: dict[type, Callable[[Any, str, str], Any]] = {
    bool: _convert_bool,
    int: _convert_int,
    float: _convert_float,
    str: _convert_str,
}


def _convert_union(value: Any, hint: Any, source: str, key: str) -> Any:
    members = typing.get_args(hint)
    if value is None and type(None) in members:
        return None
    for member in (m for m in members if m is not type(None)):
        try:
            return convert_value(value, member, source, key)
        except _TypeMismatch as e:
            if e.key != key:  # the value fits the member's shape but an element is wrong: report that
                raise
    raise _mismatch(source, key, hint, value)


def _convert_literal(value: Any, hint: Any, source: str, key: str) -> Any:
    # type equality too: True == 1 must not satisfy Literal[1]
    if any(value == allowed and type(value) is type(allowed) for allowed in typing.get_args(hint)):
        return value
    raise _mismatch(source, key, hint, value)


def _convert_dataclass(value: Any, hint: type, source: str, key: str) -> Any:
    if isinstance(value, hint):
        return value
    if isinstance(value, dict):
        return hint(**_field_values(hint, value, source, key))
    raise _mismatch(source, key, hint, value, f"write a mapping of {hint.__name__} options")


def _sequence_items(value: Any, hint: Any, source: str, key: str) -> Sequence[Any]:
    if isinstance(value, (list, tuple)):
        return value
    raise _mismatch(source, key, hint, value, "write a list, e.g. [1, 2]")


def _convert_tuple(value: Any, hint: Any, source: str, key: str) -> tuple[Any, ...]:
    items = _sequence_items(value, hint, source, key)
    args = typing.get_args(hint)
    if not args:
        return tuple(items)
    if len(args) == 2 and args[1] is Ellipsis:
        item_hints: Sequence[Any] = [args[0]] * len(items)
    elif len(args) == len(items):
        item_hints = args
    else:
        raise _mismatch(source, key, hint, value, f"{len(args)} items, not {len(items)}")
    return tuple(convert_value(v, h, source, f"{key}[{i}]") for i, (v, h) in enumerate(zip(items, item_hints)))


def _convert_list(value: Any, hint: Any, source: str, key: str) -> list[Any]:
    items = _sequence_items(value, hint, source, key)
    args = typing.get_args(hint)
    item_hint = args[0] if args else Any
    return [convert_value(v, item_hint, source, f"{key}[{i}]") for i, v in enumerate(items)]


def _convert_dict(value: Any, hint: Any, source: str, key: str) -> dict[Any, Any]:
    if not isinstance(value, dict):
        raise _mismatch(source, key, hint, value, "write a mapping, e.g. {name: value}")
    key_hint, value_hint = typing.get_args(hint) or (Any, Any)
    converted = {}
    for k, v in value.items():
        item_key = _join(key, k) if isinstance(k, str) else f"{key}[{k!r}]"
        converted[convert_value(k, key_hint, source, item_key)] = convert_value(v, value_hint, source, item_key)
    return converted


def _flag_type(hint: Any):
    if hint is bool:
        return lambda s: {"true": True, "false": False, "1": True, "0": False}[s.lower()]
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:  # Optional[X] or X | None
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return _flag_type(args[0]) if args else str
    if origin in (tuple, list):
        inner = typing.get_args(hint)[0] if typing.get_args(hint) else str
        return lambda s: tuple(_flag_type(inner)(x) for x in s.split(","))
    return hint if hint in (int, float, str) else str


def add_config_arguments(parser: argparse.ArgumentParser, config_type: type, prefix: str = "") -> None:
    """Adds one ``--field-name`` flag per scalar field (default None = take the config's value)."""
    hints = typing.get_type_hints(config_type)
    group = parser.add_argument_group(f"{config_type.__name__} (override values of --config)")
    for f in dataclasses.fields(config_type):
        hint = hints[f.name]
        if dataclasses.is_dataclass(hint):
            continue
        default = (
            f.default
            if f.default is not dataclasses.MISSING
            else (
                f.default_factory() if f.default_factory is not dataclasses.MISSING else None  # type: ignore[misc]
            )
        )
        group.add_argument(
            f"--{prefix}{f.name.replace('_', '-')}",
            dest=f"{prefix.replace('-', '_')}{f.name}",
            type=_flag_type(hint),
            default=None,
            help=f"(config default: {default})",
        )


def config_from_args(config_type: type[C], args: argparse.Namespace, config_path: Path | None, prefix: str = "") -> C:
    """The config of ``config_path`` with every flag the user gave on top."""
    overrides = {
        f.name: getattr(args, f"{prefix.replace('-', '_')}{f.name}", None) for f in dataclasses.fields(config_type)
    }
    return load_config(config_type, config_path, **overrides)


def options_as(record_type: type[C], args: argparse.Namespace) -> C:
    """A dataclass of ``record_type`` from the parsed options of its fields' names (an entry point's paths and
    settings handed to its concept as one record); no YAML, no conversion."""
    return record_type(**{f.name: getattr(args, f.name) for f in dataclasses.fields(record_type)})


def save_config(config: Any, path: Path) -> None:
    """Writes the resolved config next to the outputs it produced (exp/<x>/config.yaml)."""
    from punct.utils.atomic import atomic_write_text

    atomic_write_text(Path(path), yaml.safe_dump(_plain(dataclasses.asdict(config)), sort_keys=True))


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value
