"""A private copy of a recipe directory, as a user makes one to adapt a recipe (and as the tests run it), and the
tiny-corpus run of a recipe that the end-to-end tests share (tests/conftest.py: one per recipe and session)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

LINKED = ("steps", "utils", "path.sh", "cmd.sh")
OWN = ("conf", "local")  # the recipe's own folders, copied


def copy_recipe(repo: Path, recipe: str, destination: Path) -> Path:
    """``destination`` gets run.sh, conf/ and local/ copied, and links to the repository's shared parts."""
    source = repo / "egs" / recipe
    destination.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source / "run.sh", destination / "run.sh")
    for name in OWN:
        shutil.copytree(source / name, destination / name, dirs_exist_ok=True)
    for name in LINKED:
        link = destination / name
        if not link.exists():
            link.symlink_to(repo / name)
    return destination


def run_recipe(recipe_dir: Path, *args: str, env_extra=None, timeout=1800) -> subprocess.CompletedProcess:
    """``./run.sh --corpus-size tiny --nj 2 ARGS`` in ``recipe_dir``; its output also goes to run<args>.log there."""
    env = dict(os.environ, **(env_extra or {}))
    out = subprocess.run(
        ["./run.sh", "--corpus-size", "tiny", "--nj", "2", *args],
        cwd=recipe_dir,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    (recipe_dir / f"run{''.join(args).replace('-', '_')}.log").write_text(out.stdout + out.stderr)
    return out


def trained_tiny_recipe(repo: Path, recipe: str, destination: Path) -> Path:
    """A copy of egs/<recipe> at ``destination`` after its default run on the tiny corpus (every stage)."""
    recipe_dir = copy_recipe(repo, recipe, destination)
    start = time.time()
    out = run_recipe(recipe_dir)
    assert out.returncode == 0, f"{recipe}/run.sh failed:\n{out.stdout[-4000:]}\n{out.stderr[-6000:]}"
    stage_times = re.findall(r"(\d\d:\d\d:\d\d) INFO \[run\.sh:\d+\] Stage (\d+)", out.stderr)
    print(f"\n[e2e] tiny {recipe} recipe took {time.time() - start:.0f} s; stage starts: {stage_times}")
    return recipe_dir
