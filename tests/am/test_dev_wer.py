"""An AM that learned nothing stops the recipe (punct.am.dev_wer, punct.bin.check_am_wer, steps/train_am.sh)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from punct.am.config import AmConfig
from punct.am.dev_wer import AmLearnedNothing, check_dev_wer, epochs_to_train_on, read_wer
from punct.bin import check_am_wer
from punct.utils.config import load_config

REPO = Path(__file__).resolve().parents[2]
ISSUE_38 = "%WER 101.50 [ 4060 / 4000, 300 ins, 3500 del, 260 sub ] %SER 100.00 [ 83 / 83 ]\n"
LEARNED = "%WER 53.54 [ 2387 / 4458, 202 ins, 315 del, 1870 sub ] %SER 100.00 [ 174 / 174 ]\n"


def test_a_wer_above_the_limit_stops_with_what_helps(tmp_path):
    wer = tmp_path / "wer_dev.txt"
    wer.write_text(ISSUE_38)
    with pytest.raises(AmLearnedNothing) as stop:
        check_dev_wer(wer, 90.0, "conf/am.yaml", hint="more hours: --am-data DIR")
    message = str(stop.value)
    assert f"{wer}: the acoustic model's dev WER is 101.50 %, above max_dev_wer 90 % (conf/am.yaml)" in message
    for option in ("more hours: --am-data DIR", "num_epochs in conf/am.yaml", "--max-dev-wer"):
        assert option in message, option
    with pytest.raises(AmLearnedNothing) as stop:
        check_dev_wer(wer, 90.0, "conf/am.yaml")
    assert "egs/" not in str(stop.value) and "--am-" not in str(stop.value)  # the recipes name their own options
    assert check_dev_wer(wer, None) == 101.5  # no check
    assert check_dev_wer(wer, 102.0) == 101.5
    wer.write_text(LEARNED)
    assert check_dev_wer(wer, 90.0) == 53.54


def test_unreadable_wer_file_names_the_file(tmp_path):
    wer = tmp_path / "wer_dev.txt"
    wer.write_text("nothing here\n")
    with pytest.raises(ValueError, match=r"wer_dev.txt:1: no '%WER"):
        read_wer(wer)


def test_the_cli_takes_the_config_limit_or_the_flag(tmp_path, capsys):
    wer = tmp_path / "wer_dev.txt"
    wer.write_text(ISSUE_38)
    config = tmp_path / "am.yaml"
    config.write_text("num_epochs: 2\n")  # the default max_dev_wer: 90
    assert check_am_wer.main(["--config", str(config), "--wer-file", str(wer)]) == 1
    assert "ERROR: " in capsys.readouterr().err
    assert check_am_wer.main(["--config", str(config), "--wer-file", str(wer), "--max-dev-wer", "none"]) == 0
    assert check_am_wer.main(["--config", str(config), "--wer-file", str(wer), "--max-dev-wer", "110"]) == 0
    config.write_text("max_dev_wer: null\n")
    assert check_am_wer.main(["--config", str(config), "--wer-file", str(wer)]) == 0
    wer.write_text(LEARNED)
    assert (
        check_am_wer.main(["--config", str(tmp_path / "am.yaml"), "--wer-file", str(wer), "--max-dev-wer", "50"]) == 1
    )


def test_extra_epochs_while_the_wer_is_above_the_limit():
    assert epochs_to_train_on(101.1, 90.0, 6, 2, 12) == 8
    assert epochs_to_train_on(101.1, 90.0, 11, 2, 12) == 12  # never past max_epochs
    assert epochs_to_train_on(101.1, 90.0, 12, 2, 12) == 0  # none left: the check stops the recipe
    assert epochs_to_train_on(89.0, 90.0, 6, 2, 12) == 0  # learned
    assert epochs_to_train_on(101.1, None, 6, 2, 12) == 0  # no check
    assert epochs_to_train_on(101.1, 90.0, 6, 0, 12) == 0  # no extra epochs configured
    with pytest.raises(ValueError, match="extra_epochs and max_epochs must be >= 0"):
        AmConfig(extra_epochs=-1)


def test_the_cli_says_how_far_to_train_on(tmp_path, capsys):
    """With --exp-dir, a WER above the limit prints ``train-to N`` from the epochs of the AM's best-valid-loss.pt,
    until max_epochs; then it stops as without it."""
    import torch

    wer = tmp_path / "wer_dev.txt"
    wer.write_text(ISSUE_38)
    config = tmp_path / "am.yaml"
    config.write_text("num_epochs: 6\nextra_epochs: 2\nmax_epochs: 9\n")
    args = ["--config", str(config), "--wer-file", str(wer), "--exp-dir", str(tmp_path)]
    for trained, verdict in ((6, "train-to 8"), (8, "train-to 9")):
        torch.save({"state": {"epoch": trained}}, tmp_path / "best-valid-loss.pt")
        assert check_am_wer.main(args) == 0
        assert capsys.readouterr().out.strip() == verdict
    torch.save({"state": {"epoch": 9}}, tmp_path / "best-valid-loss.pt")
    assert check_am_wer.main(args) == 1
    out = capsys.readouterr()
    assert out.out == "" and "ERROR: " in out.err
    wer.write_text(LEARNED)
    assert check_am_wer.main(args) == 0 and capsys.readouterr().out == ""


@pytest.mark.parametrize("recipe", ["mustc", "parczech"])
def test_recipe_configs(recipe):
    """The tiny corpora's toy AMs (dev WER 98-100 %) have no limit; every other AM config stops above 90 %."""
    for path in sorted((REPO / "egs" / recipe / "conf").glob("am*.yaml")):
        limit = load_config(AmConfig, path).max_dev_wer
        assert limit == (None if path.stem == "am_tiny" else 90.0), path


def test_steps_train_am_stops_after_the_decode(tmp_path):
    """The step's check runs after the (here: already finished) WER decode and exits 1 with the message (one run:
    each starts torch)."""
    script = (REPO / "steps" / "train_am.sh").read_text()
    check = script[script.index('if [[ " $decode_splits " == *" dev "* ]]') :]
    check = check[: check.index("\nfi\n") + 4]
    (tmp_path / "wer_dev.txt").write_text(ISSUE_38)
    (tmp_path / "am.yaml").write_text("num_epochs: 1\n")
    run = subprocess.run(
        [
            "bash",
            "-c",
            f"set -euo pipefail; decode_splits='dev test'; am_config=am.yaml; dir=.; "
            f"max_dev_wer=; hint='more talks: --am-extra-size mini_am'\n{check}\necho went-on",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1 and "went-on" not in run.stdout
    assert "above max_dev_wer 90 % (am.yaml)" in run.stderr and "stopped" in run.stderr
    assert "In this recipe: more talks: --am-extra-size mini_am." in run.stderr
