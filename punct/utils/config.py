"""Dataclass configs loaded from YAML, with command-line flags that override them.

A component declares a frozen dataclass; ``--config conf/x.yaml`` supplies values and
``--some-field value`` overrides one.  Unknown YAML keys are an error naming the file, so a
typo in a config never silently keeps a default.
"""

from __future__ import annotations

import argparse
import dataclasses
import typing
from pathlib import Path
from typing import Any, Dict, Optional, Type, TypeVar

import yaml

C = TypeVar("C")


def read_yaml(path: Path) -> Dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        try:
            data = yaml.safe_load(f) or {}
        except yaml.YAMLError as e:
            raise ValueError(f"{path}: not valid YAML: {e}") from e
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of option: value at the top level")
    return data


def config_from_dict(config_type: Type[C], values: Dict[str, Any], source: str = "config") -> C:
    """Builds ``config_type`` from a dict; nested dataclass fields take nested dicts."""
    fields = {f.name: f for f in dataclasses.fields(config_type)}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise ValueError(f"{source}: unknown option(s) {unknown} for {config_type.__name__}; known: {sorted(fields)}")
    hints = typing.get_type_hints(config_type)
    kwargs = {}
    for name, value in values.items():
        hint = hints.get(name)
        if dataclasses.is_dataclass(hint) and isinstance(value, dict):
            value = config_from_dict(hint, value, f"{source}:{name}")
        elif typing.get_origin(hint) is tuple and isinstance(value, list):
            value = tuple(value)
        kwargs[name] = value
    return config_type(**kwargs)


def load_config(config_type: Type[C], path: Optional[Path] = None, **overrides: Any) -> C:
    """YAML file (optional) first, then ``overrides`` (None values are ignored)."""
    values: Dict[str, Any] = read_yaml(Path(path)) if path else {}
    values.update({k: v for k, v in overrides.items() if v is not None})
    return config_from_dict(config_type, values, str(path) if path else "overrides")


def _flag_type(hint: Any):
    if hint is bool:
        return lambda s: {"true": True, "false": False, "1": True, "0": False}[s.lower()]
    origin = typing.get_origin(hint)
    if origin is typing.Union:  # Optional[X]
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return _flag_type(args[0]) if args else str
    if origin in (tuple, list):
        inner = typing.get_args(hint)[0] if typing.get_args(hint) else str
        return lambda s: tuple(_flag_type(inner)(x) for x in s.split(","))
    return hint if hint in (int, float, str) else str


def add_config_arguments(parser: argparse.ArgumentParser, config_type: Type, prefix: str = "") -> None:
    """Adds one ``--field-name`` flag per scalar field (default None = take the config's value)."""
    hints = typing.get_type_hints(config_type)
    group = parser.add_argument_group(f"{config_type.__name__} (override values of --config)")
    for f in dataclasses.fields(config_type):
        hint = hints[f.name]
        if dataclasses.is_dataclass(hint):
            continue
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else None  # type: ignore[misc]
        )
        group.add_argument(
            f"--{prefix}{f.name.replace('_', '-')}",
            dest=f"{prefix.replace('-', '_')}{f.name}",
            type=_flag_type(hint),
            default=None,
            help=f"(config default: {default})",
        )


def config_from_args(config_type: Type[C], args: argparse.Namespace, config_path: Optional[Path], prefix: str = "") -> C:
    """The config of ``config_path`` with every flag the user gave on top."""
    overrides = {
        f.name: getattr(args, f"{prefix.replace('-', '_')}{f.name}", None)
        for f in dataclasses.fields(config_type)
    }
    return load_config(config_type, config_path, **overrides)


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
