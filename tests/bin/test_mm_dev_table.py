"""punct.bin.mm_dev_table: the epoch each dev rule picks, and the average's scores where a training made one; the
tables of egs/parczech/RESULTS/{mm_small_dev,epoch_rule_*}/README.md are what it makes of the committed trainings
(a hand edit fails)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from punct.bin.mm_dev_table import markdown_table, model_rows, model_table, training_row


def _training(path, losses, f1s, averaged=None):
    path.mkdir()
    history = [
        {"epoch": i + 1, "dev_loss": loss, "dev_macro_f1": f1, "dev_cap_f1": 0.3, "dev_f1_,": f1, "dev_f1_?": 0.0}
        for i, (loss, f1) in enumerate(zip(losses, f1s))
    ]
    (path / "history.json").write_text(json.dumps(history))
    best = {"epoch": len(losses), "dev_punct": {"macro_f1": 0.5}, "dev_case": {"per_class": {"cap": {"f1": 0.25}}}}
    if averaged:
        best["averaged_epochs"] = averaged
    (path / "best-valid-f1.json").write_text(json.dumps(best))
    return path


def test_each_rule_picks_its_epoch(tmp_path):
    plain = _training(tmp_path / "plain", losses=[0.5, 0.3, 0.4], f1s=[0.10, 0.15, 0.20])
    row = training_row(plain)
    assert row[1:4] == ["2", "15.0", "30.0"]  # the lowest dev loss: epoch 2
    assert row[4] == "1"  # [,] > 0, ? = 0
    assert row[6:9] == ["3", "20.0", "20.0"]  # the best dev macro F1 and the last epoch: epoch 3
    assert row[9:] == ["-", "-"]  # no average
    averaged = _training(tmp_path / "avg", losses=[0.5, 0.3, 0.4], f1s=[0.1, 0.2, 0.1], averaged=[2, 3])
    assert training_row(averaged)[9:] == ["50.0", "25.0"]
    table = markdown_table([plain, averaged]).splitlines()
    assert len(table) == 4 and table[2].startswith("| plain | 2 |") and table[3].startswith("| avg | 2 |")


def test_by_model_groups_the_seeds_and_reads_each_rule(tmp_path):
    a = _training(tmp_path / "mm_s1", losses=[0.5, 0.3, 0.4], f1s=[0.10, 0.15, 0.20])
    b = _training(tmp_path / "mm_s2", losses=[0.2, 0.3, 0.4], f1s=[0.10, 0.15, 0.30])
    c = _training(tmp_path / "text_s1", losses=[0.5, 0.3, 0.4], f1s=[0.30, 0.15, 0.10])
    rows = model_rows([a, c, b])
    assert [row[:2] for row in rows] == [["mm", "2"], ["text", "1"]]
    # mm: dev-loss epochs 2 and 1 (15.0, 10.0), last epochs 20.0 and 30.0, gains +5 and +20
    assert rows[0][2] == "12.5 ± 3.5" and rows[0][4] == "25.0 ± 7.1" and rows[0][6] == "+12.5 ± 10.6"
    assert rows[1][2] == "15.0" and rows[1][4] == "10.0" and rows[1][6] == "-5.0" and rows[1][7] == "30.0"


RESULTS = Path(__file__).resolve().parents[2] / "egs" / "parczech" / "RESULTS"
FOLDERS = sorted(p.name for p in RESULTS.iterdir() if p.name == "mm_small_dev" or p.name.startswith("epoch_rule_"))


@pytest.mark.parametrize("folder", FOLDERS)
def test_the_committed_dev_tables_are_generated_from_the_committed_trainings(folder):
    readme = (RESULTS / folder / "README.md").read_text()
    region = re.search(r"<!-- mm_dev_table:begin -->\n(.*?)<!-- mm_dev_table:end -->", readme, re.S)
    assert region, "no mm_dev_table region"
    names = [line.split(" | ")[0].removeprefix("| ") for line in region.group(1).splitlines()[2:]]
    assert sorted(names) == sorted(p.name for p in (RESULTS / folder).iterdir() if p.is_dir())  # every training, once
    exp_dirs = [RESULTS / folder / name for name in names]
    assert region.group(1) == markdown_table(exp_dirs)
    models = re.search(r"<!-- mm_dev_models:begin -->\n(.*?)<!-- mm_dev_models:end -->", readme, re.S)
    assert models, "no mm_dev_models region"
    assert models.group(1) == model_table(exp_dirs)
