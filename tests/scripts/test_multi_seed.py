"""utils/multi_seed.sh on a stub recipe: one fresh copy per seed whose links resolve, the options
passed on to run.sh, finished copies kept, and a summary whose mean and sd are those of the runs."""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path

import pytest

# A stand-in for egs/<recipe>/run.sh: fails unless the shared parts resolve from its folder and
# nothing of the source recipe's data/exp came along; writes a results.json whose TDNN F1 depends
# on the seed, and records its arguments and (as a mini corpus does) its audio's md5s.
STUB_RUN = r"""#!/usr/bin/env bash
set -euo pipefail
[ -f steps/train_tdnn.sh ] && [ -f utils/parse_options.sh ] && [ -f path.sh ] \
  || { echo "links do not resolve" >&2; exit 1; }
[ -x local/prepare.sh ] || { echo "no local/prepare.sh of the recipe" >&2; exit 1; }
[ ! -e exp/from_source ] && [ ! -e data ] || { echo "not a fresh copy" >&2; exit 1; }
seed=
args=()
while [ $# -gt 0 ]; do
  case "$1" in --seed) seed=$2; shift 2 ;; *) args+=("$1"); shift ;; esac
done
mkdir -p exp/results
echo "${args[*]}" > exp/args.txt
echo run >> exp/count.txt
python3 - "$seed" <<'PY'
import json, os, sys
seed = int(sys.argv[1])
test = {
    "BERT only": {"overall": {"f1": 0.4}, "macro_f1": 0.3, "per_class": {}},
    "TDNN": {"overall": {"f1": 0.6 + 0.01 * seed}, "macro_f1": 0.5 - 0.02 * seed, "per_class": {}},
    "Ensemble (alpha=0.7, chosen on dev)": {"overall": {"f1": 0.7}, "macro_f1": 0.5, "per_class": {}},
}
results = {"seed": seed, "classes": ["NP", ",", ".", "?"], "chosen_alpha": 0.7, "systems": {"dev": {}, "test": test}}
open("exp/results/results.json", "w").write(json.dumps(results))
open("exp/results/RESULTS.md", "w").write("# stub\n")
# a mini corpus' record of its audio: seed 4's copy heard other audio
os.makedirs("data/corpus_mini")
wav_md5 = {"data/dev/wav/ted_1.wav": ("b" if seed == 4 else "a") * 32}
open("data/corpus_mini/build.json", "w").write(json.dumps({"wav_md5": wav_md5}))
PY
"""

SEEDS = (1, 2, 4)


def make_recipe(repo_root: Path, root: Path) -> Path:
    """<root>/egs/stub with the repository's layout of links (egs/stub/steps -> ../../steps etc.) and a local/ of its
    own."""
    for name in ("steps", "utils", "path.sh", "cmd.sh"):
        (root / name).symlink_to(repo_root / name)
    recipe = root / "egs" / "stub"
    (recipe / "conf").mkdir(parents=True)
    (recipe / "conf" / "x.yaml").write_text("a: 1\n")
    (recipe / "run.sh").write_text(STUB_RUN)
    (recipe / "run.sh").chmod(0o755)
    for name in ("steps", "utils", "path.sh", "cmd.sh"):
        (recipe / name).symlink_to(Path("..") / ".." / name)
    (recipe / "local").mkdir()
    (recipe / "local" / "prepare.sh").write_text("#!/usr/bin/env bash\n")
    (recipe / "local" / "prepare.sh").chmod(0o755)
    (recipe / "exp").mkdir()
    (recipe / "exp" / "from_source").write_text("an earlier run's output\n")
    return recipe


def multi_seed(repo_root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(repo_root / "utils" / "multi_seed.sh"), *args],
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ),
    )


@pytest.fixture(scope="module")
def runs(repo_root, tmp_path_factory):
    root = tmp_path_factory.mktemp("multi_seed")
    recipe = make_recipe(repo_root, root)
    out = multi_seed(
        repo_root,
        "--seeds",
        " ".join(map(str, SEEDS)),
        str(recipe),
        str(root / "summary"),
        "--stop-stage",
        "8",
        "--nj",
        "1",
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return root


def test_each_seed_runs_in_a_fresh_sibling_copy(runs):
    for seed in SEEDS:
        copy = runs / "egs" / f"stub_seed{seed}"
        assert os.readlink(copy / "steps") == "../../steps"  # a sibling: the relative links still resolve
        assert (copy / "conf" / "x.yaml").read_text() == "a: 1\n"
        assert (copy / "local").is_dir() and not (copy / "local").is_symlink()  # the recipe's own, copied
        assert (copy / "exp" / "args.txt").read_text().split() == ["--stop-stage", "8", "--nj", "1"]
        run = json.loads((runs / "summary" / f"seed{seed}" / "run.json").read_text())
        assert run["seed"] == seed and run["wall_seconds"] >= 0 and f"--seed {seed}" in run["command"]
        speed = run["machine_speed"]  # the host's speed probed before and after the run
        assert set(speed) == {"before", "after"} and all(speed[k]["seconds"] > 0 for k in speed)


def test_summary_is_mean_and_sample_sd_of_the_runs(runs):
    summary = json.loads((runs / "summary" / "summary.json").read_text())
    tdnn = [0.6 + 0.01 * s for s in SEEDS]
    mean = sum(tdnn) / len(tdnn)
    got = summary["models"]["TDNN"]["overall_f1"]
    assert got["values"] == pytest.approx(tdnn)
    assert got["mean"] == pytest.approx(mean)
    assert got["sd"] == pytest.approx(math.sqrt(sum((v - mean) ** 2 for v in tdnn) / (len(tdnn) - 1)))
    macro = [0.5 - 0.02 * s for s in SEEDS]
    assert summary["models"]["TDNN"]["macro_f1"]["mean"] == pytest.approx(sum(macro) / 3)
    table = (runs / "summary" / "summary.md").read_text()
    assert table.startswith("| Model | F1 | seed 1 | seed 2 | seed 4 | mean ± sd |")
    assert "| TDNN | overall | 61.0 | 62.0 | 64.0 | 62.3 ± 1.5 |" in table


def test_run_json_records_the_corpus_audio_and_the_table_shows_a_difference(runs):
    audio = {
        seed: json.loads((runs / "summary" / f"seed{seed}" / "run.json").read_text())["corpus_audio"] for seed in SEEDS
    }
    assert audio[1] == audio[2] and audio[1].startswith("corpus_mini:") and audio[4] != audio[1]
    row = next(line for line in (runs / "summary" / "summary.md").read_text().splitlines() if "corpus audio" in line)
    assert row.endswith(f"| {audio[4]} | **differ** |")


def test_finished_copies_are_kept_and_other_work_dirs_get_working_links(runs, repo_root):
    recipe = runs / "egs" / "stub"
    out = multi_seed(repo_root, "--seeds", "1", str(recipe), str(runs / "summary1"))
    assert out.returncode == 0, out.stderr
    assert (runs / "egs" / "stub_seed1" / "exp" / "count.txt").read_text() == "run\n"  # not run again
    elsewhere = runs / "scratch" / "deeper"
    out = multi_seed(repo_root, "--seeds", "3", "--work-dir", str(elsewhere), str(recipe), str(runs / "summary3"))
    assert out.returncode == 0, out.stdout + out.stderr
    copy = elsewhere / "stub_seed3"
    assert Path(os.readlink(copy / "steps")).is_absolute() and (copy / "steps" / "train_tdnn.sh").is_file()
    assert json.loads((runs / "summary3" / "seed3" / "run.json").read_text())["seed"] == 3


def test_seed_among_run_options_is_refused(runs, repo_root):
    out = multi_seed(repo_root, "--seeds", "5", str(runs / "egs" / "stub"), str(runs / "summary5"), "--seed", "9")
    assert out.returncode != 0 and "--seed is set per run" in out.stderr
    assert not (runs / "egs" / "stub_seed5").exists()
