"""Debian packages that hold the mini corpora's texts, fetched without root.

``apt-get download`` needs no root (only a current package list: ``apt-get update`` as root), and
``dpkg-deb -x`` unpacks without installing, so nothing the package depends on is pulled in.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

logger = logging.getLogger(__name__)


def default_cache_dir() -> Path:
    """``$PUNCT_CACHE``, else ``$XDG_CACHE_HOME/punct`` (``~/.cache/punct``)."""
    return Path(os.environ.get("PUNCT_CACHE", Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "punct"))


def download_deb(package: str, cache_dir: Path, missing_hint: str) -> Path:
    """The newest ``<package>_*.deb`` in ``cache_dir``, downloaded there first if there is none."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    debs = sorted(cache_dir.glob(f"{package}_*.deb"))
    if debs:
        return debs[-1]
    logger.info("fetching %s: (cd %s && apt-get download %s)", package, cache_dir, package)
    try:
        proc = subprocess.run(["apt-get", "download", package], cwd=cache_dir, capture_output=True, text=True)
    except FileNotFoundError:  # not a Debian system
        proc = subprocess.CompletedProcess([], 127, "", "apt-get: command not found")
    debs = sorted(cache_dir.glob(f"{package}_*.deb"))
    if proc.returncode != 0 or not debs:
        raise RuntimeError(
            f"could not download the Debian package {package} ({proc.stderr.strip()[-300:]}).\n"
            f"Run as root: apt-get update; then: (cd {cache_dir} && apt-get download {package}),\n"
            f"{missing_hint}"
        )
    return debs[-1]


def unpack_deb(deb: Path, target: Path) -> None:
    """Replaces ``target`` by the unpacked ``deb``; an interrupted unpack leaves no half-filled ``target``."""
    unpack = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        try:
            subprocess.run(["dpkg-deb", "-x", str(deb), str(unpack)], check=True, capture_output=True)
        except (OSError, subprocess.CalledProcessError) as e:
            raise RuntimeError(f"could not unpack {deb} with dpkg-deb -x: {e}") from None
        if target.exists():
            shutil.rmtree(target)
        os.replace(unpack, target)
    finally:
        if unpack.exists():
            shutil.rmtree(unpack)
