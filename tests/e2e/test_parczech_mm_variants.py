"""egs/parczech/local/mm_variants.sh: one variant config per name with its values changed, one training per
variant and seed (a stand-in train_mm.sh here), the dev table of them all; an unknown key is refused."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import yaml

RECIPE = Path(__file__).resolve().parents[2] / "egs" / "parczech"

FAKE_TRAIN_MM = """#!/usr/bin/env bash
# stand-in: records its options, writes the two files punct.bin.mm_dev_table reads
config=$(sed -n 's/.*--model-config \\([^ ]*\\).*/\\1/p' <<< "$*"); dir=${@: -1}
mkdir -p $dir && echo "$*" > $dir/args
python3 -c '
import json, sys, yaml
weight = yaml.safe_load(open(sys.argv[1]))["punct_class_weight_power"]
history = [{"epoch": e, "dev_loss": 1.0 / e, "dev_macro_f1": weight / e, "dev_cap_f1": 0.1} for e in (1, 2)]
json.dump(history, open(sys.argv[2] + "/history.json", "w"))
best = {"averaged_epochs": [1, 2], "dev_punct": {"macro_f1": weight}, "dev_case": {"per_class": {"cap": {"f1": 0.2}}}}
json.dump(best, open(sys.argv[2] + "/best-valid-f1.json", "w"))' $config $dir
"""


def _recipe(tmp_path: Path) -> Path:
    recipe = tmp_path / "recipe"
    (recipe / "local").mkdir(parents=True)
    (recipe / "local" / "mm_variants.sh").symlink_to(RECIPE / "local" / "mm_variants.sh")
    (recipe / "local" / "train_mm.sh").write_text(FAKE_TRAIN_MM)
    (recipe / "local" / "train_mm.sh").chmod(0o755)
    for name in ("utils", "path.sh"):
        (recipe / name).symlink_to(RECIPE / name)
    (recipe / "conf").mkdir()
    (recipe / "conf" / "mm.yaml").write_text("punct_class_weight_power: 0.5\nam_frame_stride: 8\n")
    return recipe


def _run(recipe: Path, *args: str) -> subprocess.CompletedProcess:
    command = ["bash", "local/mm_variants.sh", "--model-config", "conf/mm.yaml", "--seeds", "1 2", *args]
    return subprocess.run(command, cwd=recipe, capture_output=True, text=True)


def test_variants_train_per_seed_and_make_the_dev_table(tmp_path):
    recipe = _recipe(tmp_path)
    proc = _run(recipe, "exp/var", "base:", "cw0:punct_class_weight_power=0")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    var = recipe / "exp" / "var"
    assert yaml.safe_load((var / "cw0.yaml").read_text()) == {
        "punct_class_weight_power": 0,
        "am_frame_stride": 8,
        "keep_last_epochs": 3,
        "average_epochs": 3,
    }
    assert sorted(p.name for p in var.iterdir() if p.is_dir()) == ["base_s1", "base_s2", "cw0_s1", "cw0_s2"]
    assert "--seed 2 " in (var / "cw0_s2" / "args").read_text()
    table = (var / "dev_table.md").read_text().splitlines()
    assert [row.split(" | ")[0] for row in table[2:]] == ["| base_s1", "| base_s2", "| cw0_s1", "| cw0_s2"]
    assert table[2].split(" | ")[9] == "50.0" and table[4].split(" | ")[9] == "0.0"  # each config's own value
    assert json.loads((var / "base_s1" / "history.json").read_text())[0]["epoch"] == 1


def test_an_unknown_key_is_refused(tmp_path):
    proc = _run(_recipe(tmp_path), "exp/var", "typo:punct_class_weight=0")
    assert proc.returncode != 0 and "no value 'punct_class_weight' to change" in proc.stderr
