"""punct.utils.config: values are checked against the config dataclass' type hints."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest

from punct.utils.config import config_from_dict, load_config

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Optim:
    lr: float = 1e-3
    betas: tuple[float, float] = (0.9, 0.999)


@dataclass(frozen=True)
class Typed:
    optim: Optim = field(default_factory=Optim)
    epochs: int = 10
    name: str = "am"
    augment: bool = False
    dropout: float | None = None
    kernels: tuple[int, ...] = (3, 3)
    layers: list[int] = field(default_factory=list)
    options: dict[str, int] = field(default_factory=dict)
    anything: Any = None
    mode: Literal["sum", "mean"] = "sum"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "am.yaml"
    path.write_text(text)
    return path


def error_of(config_type: type, path: Path, **overrides: Any) -> str:
    with pytest.raises(ValueError) as info:
        load_config(config_type, path, **overrides)
    return str(info.value)


def test_wrong_type_names_file_key_expected_type_and_value(tmp_path):
    conf = write(tmp_path, "epochs: many\n")
    message = error_of(Typed, conf)
    assert message.startswith(f"{conf}: epochs: expected int, got 'many' (str)")


def test_nested_key_path_in_message(tmp_path):
    conf = write(tmp_path, "optim:\n  lr: fast\n")
    assert f"{conf}: optim.lr: expected float, got 'fast' (str)" in error_of(Typed, conf)
    conf = write(tmp_path, "optim:\n  betas: [0.9, x]\n")
    assert f"{conf}: optim.betas[1]: expected float, got 'x' (str)" in error_of(Typed, conf)
    conf = write(tmp_path, "optim:\n  lrr: 0.1\n")
    assert re.search(r"am\.yaml: optim: unknown option\(s\) \['lrr'\] for Optim", error_of(Typed, conf))


def test_yaml_exponent_without_dot_is_a_float(tmp_path):
    # YAML 1.1 (PyYAML) reads 2e-3 and 1e5 as strings
    conf = write(tmp_path, "optim:\n  lr: 2e-3\n  betas: [1e5, 0.5]\n")
    config = load_config(Typed, conf)
    assert config.optim.lr == 0.002 and type(config.optim.lr) is float
    assert config.optim.betas == (100000.0, 0.5)


def test_int_is_a_float_but_bool_and_float_are_not_ints(tmp_path):
    conf = write(tmp_path, "optim:\n  lr: 1\n")
    lr = load_config(Typed, conf).optim.lr
    assert lr == 1.0 and type(lr) is float
    assert "epochs: expected int, got True (bool)" in error_of(Typed, write(tmp_path, "epochs: true\n"))
    assert "optim.lr: expected float, got False (bool)" in error_of(Typed, write(tmp_path, "optim: {lr: no}\n"))
    message = error_of(Typed, write(tmp_path, "epochs: 10.0\n"))
    assert "epochs: expected int, got 10.0 (float)" in message and "write 10" in message
    assert "epochs: expected int, got 2.5 (float)" in error_of(Typed, write(tmp_path, "epochs: 2.5\n"))


def test_optional_none_and_value(tmp_path):
    assert load_config(Typed, write(tmp_path, "dropout: null\n")).dropout is None
    assert load_config(Typed, write(tmp_path, "dropout: 1e-1\n")).dropout == 0.1
    message = error_of(Typed, write(tmp_path, "dropout: high\n"))
    assert "dropout: expected Optional[float], got 'high' (str)" in message


def test_tuple_from_list_and_wrong_shapes(tmp_path):
    config = load_config(Typed, write(tmp_path, "kernels: [5, 7]\nlayers: [1, 2]\noptim: {betas: [0.8, 0.9]}\n"))
    assert config.kernels == (5, 7) and isinstance(config.kernels, tuple)
    assert config.layers == [1, 2] and config.optim.betas == (0.8, 0.9)
    assert "kernels: expected Tuple[int, ...], got '5,7' (str)" in error_of(Typed, write(tmp_path, "kernels: '5,7'\n"))
    assert "kernels[1]: expected int, got 7.5 (float)" in error_of(Typed, write(tmp_path, "kernels: [5, 7.5]\n"))
    assert "optim.betas: expected Tuple[float, float]" in error_of(Typed, write(tmp_path, "optim: {betas: [1.0]}\n"))


def test_str_bool_dict_literal_and_any(tmp_path):
    assert "name: expected str, got 5 (int)" in error_of(Typed, write(tmp_path, "name: 5\n"))
    assert "augment: expected bool, got 'yes please' (str)" in error_of(Typed, write(tmp_path, "augment: yes please\n"))
    assert load_config(Typed, write(tmp_path, "options: {a: 1}\n")).options == {"a": 1}
    assert "options.a: expected int, got 'x' (str)" in error_of(Typed, write(tmp_path, "options: {a: x}\n"))
    assert "options: expected Dict[str, int], got [1] (list)" in error_of(Typed, write(tmp_path, "options: [1]\n"))
    assert load_config(Typed, write(tmp_path, "mode: mean\n")).mode == "mean"
    assert "mode: expected Literal['sum', 'mean'], got 'max' (str)" in error_of(Typed, write(tmp_path, "mode: max\n"))
    assert load_config(Typed, write(tmp_path, "anything: [1, {a: b}]\n")).anything == [1, {"a": "b"}]


def test_overrides_are_checked_and_named_as_overrides(tmp_path):
    conf = write(tmp_path, "epochs: 3\n")
    assert load_config(Typed, conf, epochs=4, dropout="5e-1").dropout == 0.5
    assert error_of(Typed, conf, epochs="4").startswith("overrides: epochs: expected int, got '4' (str)")


def test_config_from_dict_names_its_source():
    with pytest.raises(ValueError, match=r"^exp/am/epoch-3\.pt: optim\.lr: expected float"):
        config_from_dict(Typed, {"optim": {"lr": [1]}}, "exp/am/epoch-3.pt")
    assert config_from_dict(Typed, {"optim": Optim(lr=0.5)}).optim.lr == 0.5


def recipe_config_classes() -> dict[str, type]:
    """conf/<name>[_variant].yaml -> the class its stage loads it with (steps/*.sh, egs/*/local/*.sh ->
    punct/bin/*.py)."""
    from punct.align.dataset import ItnDatasetConfig
    from punct.am.config import AmConfig
    from punct.am_data.utterances import UtteranceImportConfig
    from punct.features import FeatureConfig
    from punct.models.cross_attention.config import MmConfig
    from punct.models.punct_tdnn.config import TrainTdnnConfig
    from punct.models.text.config import BertTrainConfig
    from punct.recognition.beam_search import BeamSearchConfig
    from punct.synthesis.prosody import PauseModel
    from punct.text.normalize import NormalizeConfig

    return {
        "am": AmConfig,
        "bert": BertTrainConfig,
        "tdnn": TrainTdnnConfig,
        "mfcc": FeatureConfig,
        "normalize": NormalizeConfig,
        "mm": MmConfig,
        "segments": ItnDatasetConfig,
        "utterances": UtteranceImportConfig,
        "decode": BeamSearchConfig,
        "prosody": PauseModel,
    }


RECIPE_CONFIGS = sorted(REPO.glob("egs/*/conf/*.yaml"))


def test_recipe_configs_exist():
    assert {p.parent.parent.name for p in RECIPE_CONFIGS} >= {"mustc", "parczech"}


@pytest.mark.parametrize("path", RECIPE_CONFIGS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_recipe_config_loads_with_its_class(path):
    classes = recipe_config_classes()
    kind = path.stem.split("_")[0]
    assert kind in classes, f"{path}: no config class known for conf/{kind}*.yaml; add it to recipe_config_classes"
    load_config(classes[kind], path)
