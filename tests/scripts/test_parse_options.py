"""utils/parse_options.sh: the Kaldi option rules, exercised through a real bash script."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

SCRIPT = """#!/usr/bin/env bash
set -euo pipefail
# Demo script header.
# Second header line.
stage=0
nj=4
use_gpu=false
out_dir=exp/x
. {parse_options}
echo "stage=$stage nj=$nj use_gpu=$use_gpu out_dir=$out_dir rest=$*"
"""


@pytest.fixture
def script(tmp_path: Path, repo_root: Path) -> Path:
    path = tmp_path / "demo.sh"
    path.write_text(SCRIPT.format(parse_options=repo_root / "utils/parse_options.sh"))
    path.chmod(0o755)
    return path


def run(script: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(script), *args], capture_output=True, text=True)


def test_options_set_variables_and_dashes_become_underscores(script):
    out = run(script, "--stage", "3", "--use-gpu", "true", "--out-dir", "exp/my dir", "a", "b")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "stage=3 nj=4 use_gpu=true out_dir=exp/my dir rest=a b"


def test_equals_form_and_double_dash(script):
    out = run(script, "--nj=7", "--", "--stage", "x")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "stage=0 nj=7 use_gpu=false out_dir=exp/x rest=--stage x"


def test_unknown_option_fails_with_its_name(script):
    out = run(script, "--stgae", "3")
    assert out.returncode != 0
    assert "unknown option --stgae" in out.stderr


def test_boolean_option_rejects_other_values(script):
    out = run(script, "--use-gpu", "yes")
    assert out.returncode != 0
    assert "true or false" in out.stderr


def test_missing_value_is_an_error(script):
    out = run(script, "--nj")
    assert out.returncode != 0
    assert "needs a value" in out.stderr


def test_config_file_is_sourced_and_later_options_win(script, tmp_path):
    conf = tmp_path / "my.conf"
    conf.write_text("nj=9\nstage=5\n")
    out = run(script, "--config", str(conf), "--stage", "6")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("stage=6 nj=9 ")
    missing = run(script, "--config", str(tmp_path / "nope.conf"))
    assert missing.returncode != 0 and "nope.conf" in missing.stderr


def test_help_prints_header_without_help_message(script):
    out = run(script, "--help")
    assert out.returncode == 0
    assert "Demo script header." in out.stdout and "Second header line." in out.stdout
    assert "stage=" not in out.stdout


def configuration_section(script: Path, repo_root: Path) -> str:
    """The lines between the section markers of ``script``; a ``. utils/X.sh`` line there (options shared by several
    scripts) stands for X.sh's own section."""
    text = script.read_text()
    section = text.split("# Begin configuration section.")[1].split("# End configuration section.")[0]
    return re.sub(
        r"^\. (utils/\S+\.sh).*$",
        lambda m: configuration_section(repo_root / m.group(1), repo_root),
        section,
        flags=re.M,
    )


def test_help_of_a_step_lists_its_options_with_defaults(repo_root):
    scripts = sorted((repo_root / "steps").glob("*.sh")) + sorted(repo_root.glob("egs/*/local/*.sh"))
    checked = 0
    for script in scripts:
        text = script.read_text()
        if "# Begin configuration section." not in text or "utils/parse_options.sh" not in text:
            continue
        section = configuration_section(script, repo_root)
        out = subprocess.run(["bash", str(script), "--help"], capture_output=True, text=True, cwd=repo_root)
        assert out.returncode == 0, (script, out.stderr)
        for name, value in re.findall(r"^([a-z_]+)=(\S*)", section, flags=re.M):
            assert f"  --{name.replace('_', '-')} {value}" in out.stdout, f"{script.name} --help lacks --{name}"
        checked += 1
    assert checked > 10


def test_training_steps_share_one_block_of_options(repo_root):
    """utils/train_options.sh holds the options the network trainings share; each step sources it, sets none of them
    itself, and its --help lists them with their defaults."""
    shared = re.findall(
        r"^([a-z_]+)=(\S*)", configuration_section(repo_root / "utils/train_options.sh", repo_root), re.M
    )
    assert {name for name, _ in shared} == {
        "cmd",
        "device",
        "nproc",
        "torchrun_opts",
        "amp",
        "seed",
        "resume",
        "overwrite",
    }
    for step in ("steps/train_bert.sh", "steps/train_tdnn.sh", "egs/parczech/local/train_mm.sh"):
        text = (repo_root / step).read_text()
        own = text.split("# Begin configuration section.")[1].split("# End configuration section.")[0]
        assert re.search(r"^\. utils/train_options\.sh", own, re.M), step
        assert not {name for name, _ in shared} & set(re.findall(r"^([a-z_]+)=", own, re.M)), step
        out = subprocess.run(["bash", step, "--help"], capture_output=True, text=True, cwd=repo_root)
        for name, value in shared:
            assert f"  --{name.replace('_', '-')} {value}" in out.stdout, (step, name)
        usage = subprocess.run(["bash", step], capture_output=True, text=True, cwd=repo_root)
        assert usage.returncode == 1 and "--nproc N (torchrun ranks)" in usage.stdout, (step, usage.stdout)


def test_value_with_shell_characters_is_not_evaluated(script, tmp_path):
    marker = tmp_path / "pwned"
    out = run(script, "--out-dir", f"$(touch {marker})")
    assert out.returncode == 0, out.stderr
    assert not marker.exists()
    assert f"out_dir=$(touch {marker})" in out.stdout
