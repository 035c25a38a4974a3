"""A trained punctuator as one folder: what ``punctuate --model DIR`` (or ``punctuate_itn --model DIR``) reads, and
nothing else, written by ``punct-export`` (:mod:`punct.bin.export_model`) at the end of a recipe.

An EfficientPunct folder (egs/mustc) holds::

    punct_export.json       written last: format version, kind, versions of punct and torch, the ensemble alpha,
                            what the TDNN fuses, every file with its size and sha256
    README.md               the model card (punct.results.model_card)
    conf/mfcc.yaml          the feature config (+ conf/normalize.yaml, the text normalisation, where the recipe has one)
    cmvn_train.json         stage 1's per-speaker CMVN stats of train (for --cmvn on single utterances and streams)
    am/best-valid-loss.pt   the acoustic model (the selected or epoch-averaged weights, no optimizer)
    bert/                   the fine-tuned text model in transformers' layout, with its heads (PunctBert)
    bert_base/              only when the TDNN fuses the pretrained encoder's vectors: that encoder
    tdnn/best-valid-f1.pt   the punctuation TDNN (weights and its record of its inputs, no optimizer)
    onnx/                   optional: punct.bin.export_onnx's graphs of these checkpoints

The AM and BERT are copied byte for byte (the TDNN's checkpoint records their sha256, and ``punctuate`` checks
them), the TDNN's checkpoint without its optimizer (only a resumed training reads it), and a copied ONNX export is
re-pointed at that checkpoint, so a folder computes exactly what the recipe computed.  An ITN folder (egs/parczech)
holds ``models/<name>.pt`` (stage 4's text-only and cross-attention models) and, for a ``sound_encoder: am`` model,
the AM under ``am/``.

Reading checks the format version (a newer one is refused: upgrade punct), the kind, and that every listed file is
there with its size (a missing or truncated file is an error naming it).
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import torch

import punct
from punct.io.sources import file_sha256
from punct.training.checkpoint import load_checkpoint
from punct.utils.atomic import atomic_path, atomic_write_text
from punct.utils.pathlike import Pathlike

FORMAT_VERSION = 1
MANIFEST = "punct_export.json"
CARD = "README.md"
KINDS = ("efficientpunct", "itn")

# An EfficientPunct folder's files, by the keys of punct.inference.recipe.recipe_paths.
EFFICIENTPUNCT_LAYOUT = {
    "feat_config": "conf/mfcc.yaml",
    "normalize_config": "conf/normalize.yaml",
    "am_checkpoint": "am/best-valid-loss.pt",
    "bert_dir": "bert",
    "tdnn_checkpoint": "tdnn/best-valid-f1.pt",
}
CMVN_FILE = "cmvn_train.json"
BASE_ENCODER_DIR = "bert_base"
ONNX_DIR = "onnx"
ITN_AM_DIR = "am"


@dataclass
class ModelFolder:
    """A folder's manifest (``punct_export.json``) as read, with the folder it describes."""

    folder: Path
    kind: str
    format_version: int
    punct_version: str
    torch_version: str
    files: dict[str, dict] = field(default_factory=dict)  # relative path -> {"bytes", "sha256"}
    info: dict = field(default_factory=dict)  # the kind's own values (alpha, word_vectors, systems, ...)

    def path(self, relative: str) -> Path:
        return self.folder / relative

    def has(self, relative: str) -> bool:
        """Whether the folder lists ``relative`` (a file, or a folder some of whose files are listed)."""
        return relative in self.files or any(name.startswith(relative.rstrip("/") + "/") for name in self.files)

    def to_json(self) -> dict:
        return {
            "format_version": self.format_version,
            "kind": self.kind,
            "punct_version": self.punct_version,
            "torch_version": self.torch_version,
            "info": self.info,
            "files": self.files,
        }


def copy_into(source: Path, folder: Path, relative: str) -> None:
    """``source`` (a file or a folder, links followed) copied to ``folder/relative``."""
    target = folder / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(source, target, ignore=shutil.ignore_patterns(".done", ".*.tmp*"))
    else:
        shutil.copy2(source, target)


def list_files(folder: Path) -> dict[str, dict]:
    """Every file under ``folder`` but the manifest and the card (which is written once the folder is measured),
    with its size and sha256, by relative path."""
    return {
        p.relative_to(folder).as_posix(): {"bytes": p.stat().st_size, "sha256": file_sha256(p)}
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.relative_to(folder).as_posix() not in (MANIFEST, CARD)
    }


@contextlib.contextmanager
def staging_folder(out: Path) -> Iterator[Path]:
    """An empty folder beside ``out`` to build the export in, removed if the export fails (an export killed midway
    leaves only this, which has no manifest and so is never read as a model; the next export starts it anew)."""
    staging = out.with_name(f".{out.name}.partial")
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def finish(staging: Path, out: Path, kind: str, info: dict) -> ModelFolder:
    """Writes the manifest (listing every file of ``staging``), then puts ``staging`` in place of ``out``."""
    model = ModelFolder(
        folder=out,
        kind=kind,
        format_version=FORMAT_VERSION,
        punct_version=punct.__version__,
        torch_version=torch.__version__,
        files=list_files(staging),
        info=info,
    )
    atomic_write_text(staging / MANIFEST, json.dumps(model.to_json(), indent=2, ensure_ascii=False) + "\n")
    if out.exists():
        old = out.with_name(f".{out.name}.old")
        if old.exists():
            shutil.rmtree(old)
        out.rename(old)
        staging.rename(out)
        shutil.rmtree(old)
    else:
        staging.rename(out)
    return model


def write_card(model: ModelFolder, text: str) -> Path:
    atomic_write_text(model.path(CARD), text)
    return model.path(CARD)


def folder_bytes(model: ModelFolder) -> int:
    return sum(entry["bytes"] for entry in model.files.values())


def read_model_folder(folder: Pathlike, kind: str | None = None) -> ModelFolder:
    """The manifest of an exported folder, after checking its version, its kind and that every file it lists is
    there with its size; FileNotFoundError / ValueError naming the file otherwise."""
    folder = Path(folder)
    manifest = folder / MANIFEST
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: no such model folder")
    if not manifest.is_file():
        raise FileNotFoundError(
            f"{manifest}: no such file: {folder} is not an exported model folder (make one with punct-export; "
            "a recipe directory is read with --recipe-dir)"
        )
    try:
        saved = json.loads(manifest.read_text(encoding="utf-8"))
        version = int(saved["format_version"])
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{manifest}: not a readable model manifest ({e})") from e
    if version > FORMAT_VERSION:
        raise ValueError(
            f"{manifest}: format_version {version}, written by punct {saved.get('punct_version', '?')}; this is punct "
            f"{punct.__version__}, which reads format_version {FORMAT_VERSION} at most: upgrade punct"
        )
    if version < 1:
        raise ValueError(f"{manifest}: format_version {version} is not a version punct ever wrote")
    if kind is not None and saved.get("kind") != kind:
        raise ValueError(f"{manifest}: a {saved.get('kind')!r} model folder; this needs a {kind!r} one")
    model = ModelFolder(
        folder=folder,
        kind=saved["kind"],
        format_version=version,
        punct_version=str(saved.get("punct_version", "")),
        torch_version=str(saved.get("torch_version", "")),
        files=dict(saved.get("files", {})),
        info=dict(saved.get("info", {})),
    )
    for relative, entry in model.files.items():
        path = folder / relative
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such file ({manifest} lists it; the folder is incomplete)")
        if path.stat().st_size != entry["bytes"]:
            raise ValueError(
                f"{path}: {path.stat().st_size} bytes, {manifest} says {entry['bytes']} (truncated or changed copy)"
            )
    if model.torch_version.split(".")[:1] != torch.__version__.split(".")[:1]:
        logging.warning("%s: exported with torch %s, running torch %s", folder, model.torch_version, torch.__version__)
    return model


# ---- EfficientPunct (egs/mustc) -------------------------------------------------------------------------------


def export_efficientpunct(
    paths: dict[str, Path],
    out: Pathlike,
    *,
    alpha: float,
    word_vectors: str,
    base_encoder: Pathlike | None = None,
    cmvn: Pathlike | None = None,
    onnx_dir: Pathlike | None = None,
    info: dict | None = None,
) -> ModelFolder:
    """Copies a trained recipe's models (``paths``: :func:`punct.inference.recipe.recipe_paths`) into ``out``.

    ``base_encoder``: the pretrained encoder folder, needed when ``word_vectors`` is "pretrained" (the TDNN fuses
    that encoder's vectors); ``onnx_dir``: an ONNX export of the same checkpoints. The card is written after
    (:func:`write_card`), once the folder has been measured."""
    out = Path(out)
    values = {"alpha": float(alpha), "word_vectors": word_vectors, **(info or {})}
    with staging_folder(out) as staging:
        for key, relative in EFFICIENTPUNCT_LAYOUT.items():
            if key == "normalize_config" and not paths[key].exists():
                continue
            if key == "tdnn_checkpoint":
                model_only_checkpoint(paths[key], staging / relative)
            else:
                copy_into(paths[key], staging, relative)
        if word_vectors == "pretrained":
            save_base_encoder(base_encoder, staging / BASE_ENCODER_DIR)
        if cmvn is not None:
            copy_into(Path(cmvn), staging, CMVN_FILE)
        if onnx_dir is not None:
            copy_onnx(Path(onnx_dir), paths, staging)
        return finish(staging, out, "efficientpunct", values)


def save_base_encoder(base_encoder: Pathlike | None, target: Path) -> None:
    """The encoder BERT was fine-tuned from (a folder, copied; or a hub name, saved by transformers) at ``target``:
    the TDNN of a folder with pretrained word vectors fuses that encoder's vectors."""
    if not base_encoder:
        raise ValueError(
            "the TDNN fuses the pretrained encoder's word vectors, but BERT's folder does not record that encoder "
            "(no base_encoder in its punct_model.json); train stage 5 again"
        )
    if Path(base_encoder).is_dir():
        copy_into(Path(base_encoder), target.parent, target.name)
        return
    from transformers import AutoModel

    AutoModel.from_pretrained(str(base_encoder)).save_pretrained(target)


def model_only_checkpoint(source: Path, target: Path) -> None:
    """``source`` (a checkpoint of :mod:`punct.training.checkpoint`) without its optimizer and RNG states, which
    only a resumed training reads."""
    saved = load_checkpoint(source)
    saved["optimizer"] = None
    saved.pop("rng", None)
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(target, suffix=".pt") as tmp:
        torch.save(saved, tmp)


def copy_onnx(source: Path, paths: dict[str, Path], staging: Path) -> None:
    """An ONNX export (``punct.bin.export_onnx``) of the recipe's AM and TDNN, re-pointed at the folder's model-only
    TDNN checkpoint; ValueError if it was made from other checkpoints."""
    from dataclasses import replace

    from punct.inference.onnx_runtime import read_export_info, write_export_info

    exported = read_export_info(source)
    if (exported.am_sha256, exported.tdnn_sha256) != (
        file_sha256(paths["am_checkpoint"]),
        file_sha256(paths["tdnn_checkpoint"]),
    ):
        raise ValueError(
            f"{source}: exported from other checkpoints than {paths['am_checkpoint']} and "
            f"{paths['tdnn_checkpoint']} (retrained since?); re-run python -m punct.bin.export_onnx"
        )
    copy_into(source, staging, ONNX_DIR)
    tdnn = staging / EFFICIENTPUNCT_LAYOUT["tdnn_checkpoint"]
    write_export_info(staging / ONNX_DIR, replace(exported, tdnn_sha256=file_sha256(tdnn)))


def efficientpunct_paths(model: ModelFolder) -> dict[str, Path]:
    """The folder's files under the keys of :func:`punct.inference.recipe.recipe_paths` (but results.json: the
    alpha is the manifest's)."""
    return {key: model.path(relative) for key, relative in EFFICIENTPUNCT_LAYOUT.items()}


def base_encoder_dir(model: ModelFolder) -> Path | None:
    """The pretrained encoder the TDNN's word vectors come from, when the folder holds one."""
    return model.path(BASE_ENCODER_DIR) if model.has(BASE_ENCODER_DIR) else None


def onnx_dir(model: ModelFolder) -> Path | None:
    return model.path(ONNX_DIR) if model.has(ONNX_DIR) else None


def cmvn_file(model: ModelFolder) -> Path | None:
    return model.path(CMVN_FILE) if model.has(CMVN_FILE) else None


# ---- speech-informed ITN (egs/parczech) ---------------------------------------------------------------------


def itn_model_file(system: str) -> str:
    return f"models/{system}.pt"


def export_itn(
    checkpoints: dict[str, Path],
    out: Pathlike,
    *,
    default_system: str,
    am_dir: Pathlike | None = None,
    info: dict | None = None,
) -> ModelFolder:
    """Copies stage 4's model files (``checkpoints``: system name -> ``exp/<name>/best-valid-f1.pt``, model-only
    already) into ``out``, with the AM folder's model and feature config when a model reads AM frames
    (``am_dir``); ``default_system`` is what ``punctuate_itn --model`` runs unless told otherwise."""
    from punct.am.checkpoint import BEST_CHECKPOINT, FEATURE_CONFIG_NAME

    if default_system not in checkpoints:
        raise ValueError(f"default system {default_system!r} is not one of the exported {sorted(checkpoints)}")
    out = Path(out)
    values = {"systems": sorted(checkpoints), "default_system": default_system, **(info or {})}
    with staging_folder(out) as staging:
        for system, checkpoint in checkpoints.items():
            copy_into(checkpoint, staging, itn_model_file(system))
        if am_dir is not None:
            for name in (BEST_CHECKPOINT, FEATURE_CONFIG_NAME):
                copy_into(Path(am_dir) / name, staging, f"{ITN_AM_DIR}/{name}")
        return finish(staging, out, "itn", values)


def itn_model(model: ModelFolder, system: str | None = None) -> tuple[Path, Path | None]:
    """The model file of ``system`` (default: the folder's default system) and the folder's AM (None: none)."""
    system = system or model.info["default_system"]
    if system not in model.info["systems"]:
        raise ValueError(f"{model.folder}: no system {system!r}; it holds {', '.join(model.info['systems'])}")
    return model.path(itn_model_file(system)), model.path(ITN_AM_DIR) if model.has(ITN_AM_DIR) else None
