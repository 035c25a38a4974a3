"""What a folder of dumped matrices was made from: ``<dump-dir>/<split>/source.json``.

Stage 4 (layer-k acoustic embeddings) and stage 6 (BERT word vectors) write one beside their shards;
the punctuation TDNN records the two sources of its training split in its checkpoint (``inputs``), and
whatever later feeds that TDNN (stage 8's posteriors, ``punctuate``, the ONNX export, the benchmarks)
must compute its inputs the same way or refuse.  Models are identified by the SHA-256 of their weight
files, so a copied or moved recipe still matches and a retrained one does not.

* :class:`AcousticSource`: the AM checkpoint, the layer tapped, the kaldiio compression of the shards
  (which the TDNN saw, so ``punctuate`` applies it too), and the CMVN mode of the stage-1 features.
* :class:`WordVectorSource`: the fine-tuned BERT folder, and which encoder gave the vectors (its own,
  ``fine-tuned``, or the one it was fine-tuned from, ``pretrained``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from lhotse.utils import Pathlike

from punct.utils.atomic import atomic_write_text

SOURCE_FILE = "source.json"
WORD_VECTORS = ("fine-tuned", "pretrained")


def file_sha256(path: Pathlike) -> str:
    return files_sha256([path])


def files_sha256(paths: Iterable[Pathlike]) -> str:
    """One digest of the contents of ``paths`` in the order given."""
    digest = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class AcousticSource:
    """Where a folder of acoustic embeddings (stage 4) came from."""

    am_checkpoint: str  # as given to the dump (relative to the recipe)
    am_sha256: str
    layer: int
    compression: str  # kaldiio compression of the shards: none, two_byte, ...
    norm_vars: bool  # per-speaker CMVN of the features: variance normalised too
    # the AM's model.frame_subsample, for the reader (the checkpoint's digest covers it): its strided layers on
    # every k-th frame, interpolated (records made before it existed: 1, every frame computed)
    frame_subsample: int = 1

    def identity(self) -> tuple:
        """What makes two dumps the same (the checkpoint's path may be spelled differently)."""
        return self.am_sha256, self.layer, self.compression, self.norm_vars, self.frame_subsample

    def check_model(self, checkpoint: Pathlike, recorded_in: Pathlike) -> None:
        """Raises ValueError unless ``checkpoint`` is the AM these embeddings were made with (its config, and
        with it the frame_subsample, is inside the file the digest covers)."""
        if file_sha256(checkpoint) != self.am_sha256:
            raise ValueError(
                f"{recorded_in} was made from the acoustic model {self.am_checkpoint} "
                f"(sha256 {self.am_sha256[:12]}), but {checkpoint} is another model: "
                "retrain the TDNN (stages 4 and 7) or point to the AM it was trained with"
            )


@dataclass(frozen=True)
class WordVectorSource:
    """Where a folder of per-word BERT vectors (stage 6) came from."""

    model_dir: str  # the fine-tuned PunctBert folder (relative to the recipe)
    model_sha256: str  # of its weight files (punct.models.text.model.weight_files)
    word_vectors: str  # fine-tuned (the model's encoder) or pretrained (the encoder it started from)

    def __post_init__(self) -> None:
        if self.word_vectors not in WORD_VECTORS:
            raise ValueError(f"word_vectors must be one of {WORD_VECTORS}, got {self.word_vectors!r}")

    def identity(self) -> tuple:
        return self.model_sha256, self.word_vectors

    def check_model(self, model_sha256: str, model_dir: Pathlike, recorded_in: Pathlike) -> None:
        """Raises ValueError unless ``model_dir`` (digest ``model_sha256``) is the BERT these vectors came from."""
        if model_sha256 != self.model_sha256:
            raise ValueError(
                f"{recorded_in} was made from the BERT folder {self.model_dir} "
                f"(sha256 {self.model_sha256[:12]}), but {model_dir} is another model: "
                "retrain the TDNN (stages 6 and 7) or point to the BERT it was trained with"
            )


Source = AcousticSource | WordVectorSource
S = TypeVar("S", AcousticSource, WordVectorSource)


def write_source(folder: Pathlike, source: Source) -> Path:
    path = Path(folder) / SOURCE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(dataclasses.asdict(source), indent=2, sort_keys=True) + "\n")
    return path


def read_source(folder: Pathlike, kind: type[S]) -> S | None:
    """The source recorded in ``folder``, or None (dumped before sources were recorded)."""
    path = Path(folder) / SOURCE_FILE
    if not path.is_file():
        return None
    try:
        return kind(**json.loads(path.read_text(encoding="utf-8")))
    except (TypeError, ValueError) as e:
        raise ValueError(f"{path}: not a {kind.__name__} record ({e})") from e


def split_sources(am_dir: Pathlike, text_dir: Pathlike, splits: Iterable[str]) -> dict[str, dict | None]:
    """The acoustic and word-vector sources shared by ``splits`` of two dump folders, as a checkpoint records
    them (``{"acoustic": {...} or None, "word_vectors": {...} or None}``).

    Raises ValueError naming the two files when two splits were dumped differently (e.g. train with the
    pretrained encoder's vectors, dev with the fine-tuned one's)."""
    inputs: dict[str, dict | None] = {}
    for name, root, kind in (("acoustic", am_dir, AcousticSource), ("word_vectors", text_dir, WordVectorSource)):
        first: Source | None = None
        first_path: Path | None = None
        for split in splits:
            folder = Path(root) / split
            source = read_source(folder, kind)
            if source is None:
                logging.warning(
                    "%s: no %s (dumped before sources were recorded): the TDNN cannot check what "
                    "its inputs are made from",
                    folder,
                    SOURCE_FILE,
                )
                first = None
                break
            if first is not None and source.identity() != first.identity():
                raise ValueError(
                    f"{first_path} and {folder / SOURCE_FILE} differ: the splits were dumped with "
                    f"other models or options ({first} vs {source}); dump them again"
                )
            if first is None:
                first, first_path = source, folder / SOURCE_FILE
        inputs[name] = None if first is None else dataclasses.asdict(first)
    return inputs


def check_split_sources(
    recorded: dict[str, dict | None] | None, am_dir: Pathlike, text_dir: Pathlike, split: str, checkpoint: Pathlike
) -> None:
    """Raises ValueError when ``split``'s dumps were made otherwise than the training inputs a checkpoint
    recorded (``recorded``: the checkpoint's ``inputs``; None or a missing part is not checked)."""
    now = split_sources(am_dir, text_dir, [split])
    for name, folder, kind in (("acoustic", am_dir, AcousticSource), ("word_vectors", text_dir, WordVectorSource)):
        want, have = (recorded or {}).get(name), now[name]
        if want is not None and have is not None and kind(**want).identity() != kind(**have).identity():
            raise ValueError(
                f"{checkpoint} was trained on inputs made from {want}, but "
                f"{Path(folder) / split / SOURCE_FILE} says {have}: dump the split again or retrain"
            )
