"""punct.utils.config: configs from YAML + flags."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

import pytest

from punct.utils.config import add_config_arguments, config_from_args, load_config, save_config


@dataclass(frozen=True)
class DemoConfig:
    hidden_dim: int = 1024
    learning_rate: float = 1e-5
    use_specaug: bool = False
    kernel_sizes: tuple[int, ...] = (9, 9, 5)
    name: str = "am"
    extra: dict = field(default_factory=dict)


def test_yaml_then_flags_override(tmp_path):
    conf = tmp_path / "am.yaml"
    conf.write_text("hidden_dim: 256\nkernel_sizes: [3, 3]\nuse_specaug: true\n")
    parser = argparse.ArgumentParser()
    add_config_arguments(parser, DemoConfig)
    args = parser.parse_args(["--learning-rate", "0.01", "--use-specaug", "false", "--kernel-sizes", "5,7"])
    config = config_from_args(DemoConfig, args, conf)
    assert config == DemoConfig(hidden_dim=256, learning_rate=0.01, use_specaug=False, kernel_sizes=(5, 7))
    assert load_config(DemoConfig, conf).kernel_sizes == (3, 3)


def test_unknown_yaml_key_names_the_file(tmp_path):
    conf = tmp_path / "typo.yaml"
    conf.write_text("hiden_dim: 3\n")
    with pytest.raises(ValueError, match=r"typo\.yaml.*hiden_dim"):
        load_config(DemoConfig, conf)


def test_save_config_round_trip(tmp_path):
    config = DemoConfig(hidden_dim=7, kernel_sizes=(1, 2))
    save_config(config, tmp_path / "config.yaml")
    assert load_config(DemoConfig, tmp_path / "config.yaml") == config


def test_options_as_takes_the_fields_options_only():
    from punct.utils.config import options_as

    args = argparse.Namespace(
        name="tdnn", hidden_dim=8, learning_rate=0.5, use_specaug=True, kernel_sizes=(3,), extra={}
    )
    args.out_dir = "exp"  # an option of the entry point, not of the record
    assert options_as(DemoConfig, args) == DemoConfig(8, 0.5, True, (3,), "tdnn", {})
    with pytest.raises(AttributeError, match="hidden_dim"):
        options_as(DemoConfig, argparse.Namespace(name="x"))
