"""benchmarks/bench_scale.py's recipes: the configs each writes (egs/mustc's as before egs/parczech came, egs/parczech's
from its small ones), the epochs, and egs/parczech's training hours read from the segment dataset."""

from __future__ import annotations

import importlib
import json
import shutil
from argparse import Namespace
from pathlib import Path

import pytest
import yaml

from benchmarks.scale import growth
from punct.corpora.mini_czech import SCALED_HELD_OUT_SPEAKERS

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def bench_scale(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))  # bench_scale imports benchmarks/common.py as ``common``
    return importlib.import_module("benchmarks.bench_scale")


def _scaled(bench_scale, tmp_path: Path, recipe: str, epochs: tuple[int, int, int]) -> tuple[dict, Path]:
    copy = tmp_path / recipe
    shutil.copytree(REPO / "egs" / recipe / "conf", copy / "conf")
    return bench_scale.scale_configs(copy, recipe, epochs), copy / "conf"


def _read(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def test_mustc_configs_are_the_mini_ones_with_fewer_epochs_and_one_thread(bench_scale, tmp_path):
    changes, conf = _scaled(bench_scale, tmp_path, "mustc", (2, 3, 4))
    assert changes == {
        "am": {"num_epochs": 2, "average_epochs": 1, "extra_epochs": 0, "max_dev_wer": None},
        "bert": {"num_epochs": 3, "num_threads": 1, "amp": "none"},
        "tdnn": {"epochs": 4, "shuffle_buffer": 64, "cache_utterances": 128},
    }
    assert sorted(p.name for p in conf.glob("*_scale.yaml")) == ["am_scale.yaml", "bert_scale.yaml", "tdnn_scale.yaml"]
    for model, mini in {"am": "am_mini.yaml", "bert": "bert_mini.yaml", "tdnn": "tdnn_mini.yaml"}.items():
        assert _read(conf / f"{model}_scale.yaml") == {**_read(conf / mini), **changes[model]}


def test_parczech_configs_are_the_small_ones_with_fewer_epochs_and_the_scaled_split(bench_scale, tmp_path):
    changes, conf = _scaled(bench_scale, tmp_path, "parczech", (6, 1, 1))
    names = ["am", "decode", "segments", "mm", "tdnn"]  # every conf/<model><suffix>.yaml that run.sh reads
    assert sorted(p.name for p in conf.glob("*_scale.yaml")) == sorted(f"{name}_scale.yaml" for name in names)
    for name in names:
        assert _read(conf / f"{name}_scale.yaml") == {**_read(conf / f"{name}_small.yaml"), **changes[name]}
    am, mm, tdnn = (_read(conf / f"{name}_scale.yaml") for name in ("am", "mm", "tdnn"))
    assert (am["num_epochs"], am["extra_epochs"], am["max_dev_wer"]) == (6, 0, None)
    assert mm["num_epochs"] == 1 and tdnn["epochs"] == 1 and tdnn["shuffle_buffer"] == 64
    assert _read(conf / "decode_scale.yaml") == _read(conf / "decode_small.yaml")
    segments = _read(conf / "segments_scale.yaml")
    assert segments["num_dev_speakers"] == segments["num_test_speakers"] == SCALED_HELD_OUT_SPEAKERS
    assert segments["split_by"] == "speaker" and segments["dev_share"] is None  # the counts decide, not shares


def test_epochs_default_per_recipe(bench_scale):
    assert bench_scale.recipe_epochs(Namespace(recipe="mustc", epochs=None)) == {"am": 1, "bert": 1, "tdnn": 1}
    assert bench_scale.recipe_epochs(Namespace(recipe="parczech", epochs=None)) == {"am": 12, "mm": 1, "tdnn": 1}
    assert bench_scale.recipe_epochs(Namespace(recipe="parczech", epochs=[3, 2, 1])) == {"am": 3, "mm": 2, "tdnn": 1}


def test_every_measured_stage_has_a_name(bench_scale):
    for recipe, facts in bench_scale.RECIPES.items():
        assert sorted(growth.STAGE_NAMES[recipe]) == facts["stages"]


def test_parczech_training_hours_are_the_segment_datasets(bench_scale, tmp_path):
    copy = tmp_path / "parczech_1h"
    (copy / "data" / "segments").mkdir(parents=True)
    (copy / "data" / "corpus_1h_natural").mkdir()
    splits = {
        "train": {"segments": 300, "words": 6000, "seconds": 2700.0, "speakers": ["a"]},
        "dev": {"segments": 90, "words": 1800, "seconds": 900.0, "speakers": ["b"]},
        "test": {"segments": 80, "words": 1700, "seconds": 720.0, "speakers": ["c"]},
        "total": {"segments": 470, "words": 9500, "seconds": 4320.0, "speakers": ["a", "b", "c"]},
    }
    (copy / "data" / "segments" / "stats.json").write_text(json.dumps({"totals": {}, "filters": {}, "splits": splits}))
    build = {"hours": 1.7, "recordings": [{}] * 14}
    (copy / "data" / "corpus_1h_natural" / "build.json").write_text(json.dumps(build))
    facts = bench_scale.corpus_facts(copy, "parczech")
    assert facts["train"] == {"hours": 0.75, "segments": 300, "words": 6000}
    assert facts["test"]["hours"] == 0.2 and facts["audio"] == {"hours": 1.7, "recordings": 14}
    assert growth.train_hours({"corpus": facts}) == 0.75


def test_the_tables_name_each_recipes_models():
    data = {
        "command": "c",
        "commit": "x",
        "began": "now",
        "machine": {"cpu": "cpu", "cpu_kind": "avx2", "cores": 2},
        "nj": 2,
        "sizes": [{"corpus": {"train": {"hours": 1.0}}, "stages": []}],
        "fits": {},
    }
    mustc = {**data, "recipe": "mustc", "epochs": {"am": 1, "bert": 1, "tdnn": 1}}
    parczech = {**data, "recipe": "parczech", "epochs": {"am": 6, "mm": 1, "tdnn": 1}}
    first_line = {name: growth.render_tables(d).splitlines()[0] for name, d in (("m", mustc), ("p", parczech))}
    assert first_line["m"].endswith("epochs AM 1, BERT 1, TDNN 1 (mini models).")
    assert first_line["p"].endswith("epochs AM 6, stage-4 models 1, TDNN 1 (small models).")
