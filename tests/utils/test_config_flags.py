"""punct.utils: configs from YAML + flags, atomic outputs, job shares, devices."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field
from typing import Tuple

import pytest
import torch

from punct.utils.atomic import atomic_path, atomic_write_text, clear_done, is_done, mark_done
from punct.utils.config import add_config_arguments, config_from_args, load_config, save_config
from punct.utils.device import resolve_device
from punct.utils.jobs import job_share


@dataclass(frozen=True)
class DemoConfig:
    hidden_dim: int = 1024
    learning_rate: float = 1e-5
    use_specaug: bool = False
    kernel_sizes: Tuple[int, ...] = (9, 9, 5)
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


def test_atomic_path_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.txt"
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("interrupted")
    assert list(tmp_path.iterdir()) == []
    atomic_write_text(target, "whole")
    assert target.read_text() == "whole" and len(list(tmp_path.iterdir())) == 1


def test_done_markers(tmp_path):
    target = tmp_path / "x.ark"
    assert not is_done(target)
    mark_done(target)
    assert is_done(target) and (tmp_path / "x.ark.done").exists()
    clear_done(target)
    assert not is_done(target)


def test_outputs_of_an_older_model_are_not_done(tmp_path):
    target, model = tmp_path / "x.ark", tmp_path / "model.pt"
    model.write_text("old model")
    os.utime(model, (1000, 1000))
    mark_done(target)
    assert is_done(target, newer_than=model)
    os.utime(model, None)  # the model was retrained after the output was finished
    os.utime(target.with_name("x.ark.done"), (2000, 2000))
    assert is_done(target) and not is_done(target, newer_than=model)


@pytest.mark.parametrize("n,nj", [(10, 3), (3, 5), (0, 2), (7, 1)])
def test_job_shares_cover_everything_once(n, nj):
    items = list(range(n))
    shares = [job_share(items, j, nj) for j in range(1, nj + 1)]
    assert sum(shares, []) == items
    assert max(map(len, shares)) - min(map(len, shares)) <= 1


def test_job_share_rejects_bad_index():
    with pytest.raises(ValueError, match="--job"):
        job_share([1, 2], 3, 2)


def test_resolve_device():
    assert resolve_device("cpu").type == "cpu"
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA"):
            resolve_device("cuda")
