"""The record a mini-corpus build leaves (``build.json``'s ``config``) against the config asked for, and the
options every mini-corpus builder takes (:func:`add_mini_corpus_arguments`).

A built corpus is kept between runs; it is reused only if it was built from the same config, so that a
change of a size's splits (more dev talks, say) is not hidden behind a folder that looks complete.
The builders also record each wav file's md5 (``wav_md5``, :func:`wav_md5s`): :func:`audio_digest` condenses them,
so that runs on two data folders can be checked to have heard the same audio.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from punct.synthesis.debian import default_cache_dir
from punct.synthesis.prosody import PROSODIES, PauseModel
from punct.utils.atomic import is_done
from punct.utils.cli import add_rerun_arguments
from punct.utils.config import config_from_dict, read_yaml


def _as_json(value: Any) -> Any:
    """``value`` as it reads back from JSON (tuples become lists, other objects strings)."""
    return json.loads(json.dumps(value, default=str))


def config_changes(corpus_dir: Path, cfg: Any) -> list[str]:
    """The fields of dataclass ``cfg`` whose values differ from those recorded in ``corpus_dir/build.json``,
    each as ``"name: built X, asked Y"``; an empty list when the corpus was built from ``cfg``."""
    record = Path(corpus_dir) / "build.json"
    try:
        built = json.loads(record.read_text(encoding="utf-8"))["config"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{record}: no readable build config ({err}); --overwrite rebuilds the corpus") from err
    asked = _as_json(asdict(cfg))
    # A field that the record lacks was added after the build: the build did what its default does.
    defaults = {f.name: _as_json(_default_of(f)) for f in dataclasses.fields(cfg)}
    return [
        f"{name}: built {built.get(name, defaults[name])!r}, asked {value!r}"
        for name, value in asked.items()
        if built.get(name, defaults[name]) != value
    ]


def _default_of(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return asdict(f.default) if dataclasses.is_dataclass(f.default) else f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None


def reuse_built_corpus(corpus_dir: Path, cfg: Any, overwrite: bool) -> bool:
    """Whether a complete corpus in ``corpus_dir`` is to be kept (built from ``cfg``, no ``overwrite``).

    Raises ``ValueError`` naming the changed fields when it was built from another config.
    """
    if overwrite or not is_done(corpus_dir):
        return False
    changes = config_changes(corpus_dir, cfg)
    if changes:
        raise ValueError(f"{corpus_dir} was built with another config ({'; '.join(changes)}); --overwrite rebuilds it")
    return True


def wav_md5s(corpus_dir: Path) -> dict[str, str]:
    """The md5 of every wav file under ``corpus_dir``, by path relative to it (a builder records it in build.json)."""
    root = Path(corpus_dir)
    return {str(p.relative_to(root)): hashlib.md5(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*.wav"))}


def digest_of(md5s: dict[str, str]) -> str:
    """12 hex digits of sha256 over a ``wav_md5s`` table: equal digests, equal audio."""
    return hashlib.sha256("\n".join(f"{path} {md5}" for path, md5 in sorted(md5s.items())).encode()).hexdigest()[:12]


def audio_digest(corpus_dir: Path) -> str | None:
    """The digest of the audio that ``corpus_dir/build.json`` records (``wav_md5``); None when there is no
    build.json or it records none (built before they were recorded)."""
    record = Path(corpus_dir) / "build.json"
    if not record.is_file():
        return None
    md5s = json.loads(record.read_text(encoding="utf-8")).get("wav_md5")
    return digest_of(md5s) if md5s else None


def corpora_digest(corpus_dirs: Iterable[Path]) -> str:
    """``"<folder>:<digest> ..."`` of the folders whose build.json records md5s (:func:`audio_digest`); empty
    when none does (a real corpus, or mini corpora built before)."""
    digests = ((Path(d).name, audio_digest(Path(d))) for d in sorted(map(str, corpus_dirs)))
    return " ".join(f"{name}:{digest}" for name, digest in digests if digest)


HOURS_SIZE = re.compile(r"(\d+(?:\.\d+)?)h")


def hours_of_size(size: str) -> float | None:
    """H of a size named ``<H>h`` (``8h``: a corpus of about 8 hours of training speech, built by
    ``benchmarks/bench_scale.py`` to measure how the recipes grow); None for a named size."""
    match = HOURS_SIZE.fullmatch(size)
    if match is None:
        return None
    hours = float(match.group(1))
    if hours <= 0:
        raise ValueError(f"corpus size {size!r}: the hours must be positive")
    return hours


def size_type(sizes: Iterable[str]):
    """An argparse ``type`` accepting one of ``sizes`` or ``<H>h``."""
    known = sorted(sizes)

    def parse(size: str) -> str:
        if size in known or hours_of_size(size) is not None:
            return size
        raise argparse.ArgumentTypeError(f"unknown size {size!r}: one of {', '.join(known)}, or <H>h (e.g. 8h)")

    return parse


def add_mini_corpus_arguments(
    parser: argparse.ArgumentParser, sizes: Iterable[str], size_help: str, text_package: str, layout: str
) -> None:
    """The options of an embedded mini-corpus builder: output folder, size, seed, text cache, overwrite, log file."""
    parser.add_argument("out_dir", type=Path, help=f"corpus folder to create ({layout})")
    parser.add_argument(
        "--size", type=size_type(sizes), default="mini", help=f"{size_help}; <H>h: about H hours of training speech"
    )
    parser.add_argument("--seed", type=int, default=42, help="seed of every random choice")
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=default_cache_dir(),
        help=f"where the {text_package} .deb is downloaded and unpacked ($PUNCT_CACHE)",
    )
    parser.add_argument(
        "--prosody",
        choices=PROSODIES,
        default="marks",
        help="what espeak-ng is told about the marks: marks (the punctuated text), none (the words alone), "
        "natural (the words, with pauses and question rises drawn from --prosody-config); punct.synthesis.prosody",
    )
    parser.add_argument(
        "--prosody-config",
        type=Path,
        default=None,
        help="YAML of the natural prosody's pause model (PauseModel); empty: its defaults",
    )
    add_rerun_arguments(parser, "rebuild an existing corpus")


def pause_model_from_args(args: argparse.Namespace) -> PauseModel | None:
    """The natural prosody's model of a builder's options (None for the other prosodies)."""
    if args.prosody != "natural":
        if args.prosody_config is not None:
            raise ValueError(f"--prosody-config is read by --prosody natural only, not {args.prosody}")
        return None
    if args.prosody_config is None:
        return PauseModel()
    return config_from_dict(PauseModel, read_yaml(args.prosody_config), str(args.prosody_config))
