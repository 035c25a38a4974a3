"""egs/parczech/run.sh: every option of the configuration section is documented in --help."""

import re
import subprocess
from pathlib import Path

RUN = Path(__file__).resolve().parents[2] / "egs" / "parczech" / "run.sh"


def test_help_lists_every_option():
    text = RUN.read_text()
    section = text.split("# Begin configuration section.")[1].split("# End configuration section.")[0]
    names = re.findall(r"^([a-z_]+)=", section, flags=re.M)
    assert "words_from" in names and "stage" in names
    proc = subprocess.run(["bash", str(RUN), "--help"], cwd=RUN.parent, capture_output=True, text=True)
    help_text = proc.stdout + proc.stderr
    for name in names:
        assert f"--{name.replace('_', '-')}" in help_text, name
    assert "segments" in help_text


def test_every_corpus_size_is_in_help_and_has_its_configs():
    """--corpus-size SIZE picks conf/{am,segments,mm,tdnn}_SIZE.yaml: each size of the builder needs all four."""
    from punct.corpora.mini_czech import SIZES

    proc = subprocess.run(["bash", str(RUN), "--help"], cwd=RUN.parent, capture_output=True, text=True)
    line = next(ln for ln in (proc.stdout + proc.stderr).splitlines() if "--corpus-size" in ln)
    assert "small" in SIZES
    for size in SIZES:
        assert size in line, size
        for model in ("am", "segments", "mm", "tdnn"):
            assert (RUN.parent / "conf" / f"{model}_{size}.yaml").is_file(), (model, size)


def test_am_training_step_leaves_mixed_precision_to_the_config(tmp_path):
    """local/parczech/train_am.sh passes --amp only when given: conf/am_small.yaml's ``amp: auto`` must reach
    the trainer (a default of none overrode it)."""
    repo = RUN.parents[2]
    (tmp_path / "steps").mkdir()
    (tmp_path / "steps" / "train_am.sh").write_text('#!/usr/bin/env bash\necho "ARGS: $*"\n')
    (tmp_path / "steps" / "train_am.sh").chmod(0o755)
    for name in ("utils", "path.sh", "local"):
        (tmp_path / name).symlink_to(repo / name)
    fbank = tmp_path / "fbank"
    fbank.mkdir()
    for f in ("parczech_cuts_train.jsonl.gz", "parczech_cuts_dev.jsonl.gz"):
        (fbank / f).write_text("")
    (tmp_path / "am.yaml").write_text("amp: auto\n")
    (tmp_path / "mfcc.yaml").write_text("")

    def run(*opts):
        proc = subprocess.run(["bash", "local/parczech/train_am.sh", "--am-config", "am.yaml", "--feat-config", "mfcc.yaml",
                               *opts, "fbank", "exp/am"], cwd=tmp_path, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return next(ln for ln in proc.stdout.splitlines() if ln.startswith("ARGS: "))

    assert re.search(r"--amp\s+fbank exp/am$", run())  # empty: steps/train_am.sh uses the config's
    assert "--amp bf16 fbank exp/am" in run("--amp", "bf16")
