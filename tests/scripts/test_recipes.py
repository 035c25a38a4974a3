"""The recipes' run.sh: --help lists every stage and every option of the configuration section; steps/ has no
corpus defaults."""

from __future__ import annotations

import os
import re
import subprocess

import pytest
import yaml


@pytest.mark.parametrize("recipe", ["mustc", "parczech"])
def test_help_lists_every_configuration_variable(repo_root, recipe):
    run_sh = repo_root / "egs" / recipe / "run.sh"
    text = run_sh.read_text()
    section = text.split("# Begin configuration section.")[1].split("# End configuration section.")[0]
    variables = re.findall(r"^([a-z_]+)=", section, flags=re.M)
    assert variables
    out = subprocess.run(["./run.sh", "--help"], capture_output=True, text=True, cwd=run_sh.parent)
    assert out.returncode == 0, out.stderr
    for name in variables:
        assert f"--{name.replace('_', '-')} " in out.stdout, f"--help of {run_sh} does not list --{name}"
    assert re.search(r"^\s+0\s", out.stdout, flags=re.M), "stages are not listed"


@pytest.mark.parametrize("recipe", ["mustc", "parczech"])
def test_recipe_links_point_to_the_top_level(repo_root, recipe):
    for name in ("steps", "utils", "path.sh", "cmd.sh"):
        link = repo_root / "egs" / recipe / name
        assert link.is_symlink() and link.resolve() == (repo_root / name).resolve()


@pytest.mark.parametrize("recipe", ["mustc", "parczech"])
def test_each_recipe_owns_its_local_scripts(repo_root, recipe):
    """egs/<recipe>/local/ is a folder of the recipe (as in Kaldi), not a link to shared scripts: it holds every
    local/X.sh that run.sh calls, and only scripts some stage of this recipe calls (directly or through another)."""
    local = repo_root / "egs" / recipe / "local"
    assert local.is_dir() and not local.is_symlink()
    assert not (repo_root / "local").exists()
    texts = [(repo_root / "egs" / recipe / "run.sh").read_text()]
    texts += [p.read_text() for p in sorted(local.glob("*.sh"))]
    called = set(re.findall(r"\blocal/([A-Za-z0-9_]+\.sh)\b", texts[0]))
    assert called and all((local / name).is_file() for name in called), called
    referenced = {name for text in texts for name in re.findall(r"\blocal/([A-Za-z0-9_]+\.sh)\b", text)}
    assert {p.name for p in local.glob("*.sh")} <= referenced, "a local/ script no stage of the recipe calls"


def test_unknown_option_fails(repo_root):
    out = subprocess.run(
        ["./run.sh", "--no-such-option", "1"], capture_output=True, text=True, cwd=repo_root / "egs/mustc"
    )
    assert out.returncode != 0 and "unknown option --no-such-option" in out.stderr


def _configuration_section(script):
    text = script.read_text()
    return text.split("# Begin configuration section.")[1].split("# End configuration section.")[0]


def test_steps_have_no_corpus_defaults(repo_root):
    """steps/ is corpus-independent: no default of a configuration variable names a corpus."""
    for script in sorted((repo_root / "steps").glob("*.sh")):
        for line in _configuration_section(script).splitlines():
            value = line.split("#")[0]
            assert "mustc" not in value and "parczech" not in value, f"{script.name}: {line}"


@pytest.mark.parametrize(
    "script,option",
    [
        ("align.sh", "--prefix"),
        ("compute_features.sh", "--prefix"),
        ("dump_am_embeddings.sh", "--prefix"),
        ("train_am.sh", "--prefix"),
        ("import_am_data.sh", "--prefix"),
        ("train_tdnn.sh", "--cuts-pattern"),
        ("decode_tdnn.sh", "--cuts-pattern"),
    ],
)
def test_a_missing_manifest_name_option_is_an_error_naming_it(repo_root, script, option, tmp_path):
    for name in ("steps", "utils", "path.sh"):
        (tmp_path / name).symlink_to(repo_root / name)
    nargs = int(re.search(r"if \[ \$# -ne (\d) \]", (repo_root / "steps" / script).read_text()).group(1))
    out = subprocess.run(
        ["bash", f"steps/{script}", *[f"d{i}" for i in range(nargs)]], cwd=tmp_path, capture_output=True, text=True
    )
    assert out.returncode != 0 and f"{option} is required" in out.stderr, out.stdout + out.stderr


@pytest.mark.parametrize(
    "options,warned",
    [
        (["--mustc-root", "/no/such/mustc"], True),
        (["--mustc-root", "/no/such/mustc", "--bert-model", "bert-base-uncased"], False),
        ([], False),  # the mini corpus: the offline MiniLM is its documented default
    ],
)
def test_mustc_paper_settings_warn_about_the_encoder(repo_root, options, warned):
    """--mustc-root without --bert-model says that stage 5's encoder is not the paper's (stage 10: nothing runs)."""
    out = subprocess.run(
        ["./run.sh", *options, "--stage", "10"], capture_output=True, text=True, cwd=repo_root / "egs/mustc"
    )
    assert out.returncode == 0, out.stderr
    assert ("WARNING" in out.stderr and "not the paper's encoder bert-base-uncased" in out.stderr) == warned, out.stderr


@pytest.mark.parametrize(
    "backend,options,jobs",
    [
        ("local", [], "stages 1, 3 and 4 run 7, the text branch's stage 6 1 (jobs share this machine"),
        ("local", ["--branch-threads", "3"], "stages 1, 3 and 4 run 5, the text branch's stage 6 3 (jobs share"),
        ("slurm", [], "stages 1, 3 and 4 run 8, the text branch's stage 6 8 (each job an allocation of its own"),
        ("slurm", ["--branch-threads", "3"], "stages 1, 3 and 4 run 8, the text branch's stage 6 8 (each job"),
    ],
)
def test_mustc_overlapping_branches_share_nj_on_one_machine_and_each_get_it_on_a_cluster(
    repo_root, backend, options, jobs
):
    """--overlap-branches: locally (utils/run.pl) the acoustic stages leave the text branch its threads out of
    --nj; under PUNCT_BACKEND=slurm every job is its own allocation and both branches run --nj jobs (stage 10:
    nothing runs, the plan is logged)."""
    env = dict(os.environ, PUNCT_BACKEND=backend, PUNCT_GPUS="0")
    out = subprocess.run(
        ["./run.sh", "--nj", "8", *options, "--stage", "10"],
        capture_output=True,
        text=True,
        cwd=repo_root / "egs/mustc",
        env=env,
    )
    assert out.returncode == 0, out.stderr
    assert f"Jobs of --nj 8: {jobs}" in out.stderr, out.stderr
    quiet = subprocess.run(
        ["./run.sh", "--overlap-branches", "false", "--stage", "10"],
        capture_output=True,
        text=True,
        cwd=repo_root / "egs/mustc",
        env=env,
    )
    assert quiet.returncode == 0 and "Jobs of" not in quiet.stderr, quiet.stderr


def test_mustc_paper_config_uses_the_papers_loss(repo_root):
    """conf/bert.yaml (MuST-C) fine-tunes with cross-entropy as EfficientPunct; SCL only when asked
    (--bert-loss scl)."""
    conf = repo_root / "egs/mustc/conf"
    assert yaml.safe_load((conf / "bert.yaml").read_text())["loss"] == "ce"
    assert '--loss "$bert_loss"' in (repo_root / "egs/mustc/run.sh").read_text()


@pytest.mark.parametrize(
    "readme,heading,rows",
    [
        (
            "egs/mustc/README.md",
            "## Differences from the paper",
            [
                "Text encoder",
                "BERT's fine-tuning loss",
                "Acoustic model",
                "Word vectors fused by the TDNN",
                "SCL temperature",
            ],
        ),
        (
            "egs/parczech/README.md",
            "## Differences from the thesis",
            [
                "Text encoder",
                "`min_char_duration`",
                "AM sound encoder, small corpus (not in the thesis)",
                "Aligned cross-attention, small corpus (not in the thesis)",
            ],
        ),
    ],
)
def test_readme_has_each_recipes_differences_from_the_paper(repo_root, readme, heading, rows):
    """One table per recipe: what, paper, here, why, how to get the paper's choice; one row per deviation."""
    text = (repo_root / readme).read_text()
    assert heading in text
    section = re.split(r"^#{2,4} ", text.split(heading, 1)[1], flags=re.M)[0]
    table = [line for line in section.splitlines() if line.startswith("|")]
    assert table[0] == "| What | Paper | Here | Why | To get the paper's choice |" or table[0].startswith(
        "| What | Thesis |"
    )
    names = [line.split(" | ")[0][2:] for line in table[2:]]
    for row in rows:
        assert row in names, f"{heading}: no row {row!r}"
    assert all(line.count("|") == 6 for line in table), "every row has five cells"
