"""The recipes' run.sh: --help lists every stage and every option of the configuration section."""

from __future__ import annotations

import re
import subprocess

import pytest


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
    for name in ("steps", "utils", "local", "path.sh", "cmd.sh"):
        link = repo_root / "egs" / recipe / name
        assert link.is_symlink() and link.resolve() == (repo_root / name).resolve()


def test_unknown_option_fails(repo_root):
    out = subprocess.run(["./run.sh", "--no-such-option", "1"], capture_output=True, text=True, cwd=repo_root / "egs/mustc")
    assert out.returncode != 0 and "unknown option --no-such-option" in out.stderr
