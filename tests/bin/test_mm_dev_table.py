"""punct.bin.mm_dev_table: the epoch each dev rule picks, and the average's scores where a training made one; the
table of egs/parczech/RESULTS/mm_small_dev/README.md is what it makes of the committed trainings (a hand edit fails)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from punct.bin.mm_dev_table import markdown_table, training_row


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


FOLDER = Path(__file__).resolve().parents[2] / "egs" / "parczech" / "RESULTS" / "mm_small_dev"


def test_the_committed_dev_table_is_generated_from_the_committed_trainings():
    readme = (FOLDER / "README.md").read_text()
    region = re.search(r"<!-- mm_dev_table:begin -->\n(.*?)<!-- mm_dev_table:end -->", readme, re.S)
    assert region, "no mm_dev_table region"
    names = [line.split(" | ")[0].removeprefix("| ") for line in region.group(1).splitlines()[2:]]
    assert sorted(names) == sorted(p.name for p in FOLDER.iterdir() if p.is_dir())  # every training, once
    assert region.group(1) == markdown_table([FOLDER / name for name in names])
