"""A private copy of a recipe directory, as a user makes one to adapt a recipe (and as the tests run it)."""

from __future__ import annotations

import shutil
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
