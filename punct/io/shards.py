"""Per-utterance matrices in kaldiio ``ark``/``scp`` shards, written atomically.

A shard is ``<prefix>.ark`` + ``<prefix>.scp`` + ``<prefix>.scp.done``.  The ark is written
under a temporary name; the scp (which points into the final ark name) and the done
marker are written only after the ark is complete and renamed, so an interrupted job
leaves no shard that looks finished, and ``is_shard_done`` tells a re-run what to skip.
"""

from __future__ import annotations

import argparse
import io
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import kaldiio
import numpy as np

from punct.utils.atomic import atomic_write_text, clear_done, is_done, mark_done
from punct.utils.cli import add_device_arguments
from punct.utils.jobs import add_job_arguments
from punct.utils.pathlike import Pathlike

if TYPE_CHECKING:
    import torch

# kaldiio compression methods by name (kaldi's CompressionMethod enum).
COMPRESSION = {"none": None, "speech_feature": 2, "two_byte": 3, "one_byte": 5}


def compression_method(name: str) -> int | None:
    if name not in COMPRESSION:
        raise ValueError(f"unknown compression '{name}'; choose one of {sorted(COMPRESSION)}")
    return COMPRESSION[name]


def stored_matrix(matrix: np.ndarray, compression: str) -> np.ndarray:
    """The float32 matrix that reading ``matrix`` back from a shard written with ``compression`` gives: what
    a model trained on the shards saw (``punctuate`` applies it to its own layer-12 output)."""
    array = np.ascontiguousarray(matrix, dtype=np.float32)
    method = compression_method(compression)
    if method is None:
        return array
    buffer = io.BytesIO()
    kaldiio.save_ark(buffer, {"m": array}, compression_method=method)
    buffer.seek(0)
    ((_, stored),) = kaldiio.load_ark(buffer)
    return np.asarray(stored, dtype=np.float32)


def shard_paths(prefix: Pathlike) -> tuple[Path, Path]:
    prefix = Path(prefix)
    return prefix.with_name(prefix.name + ".ark"), prefix.with_name(prefix.name + ".scp")


def is_shard_done(prefix: Pathlike, newer_than: Pathlike | None = None) -> bool:
    return is_done(shard_paths(prefix)[1], newer_than)


class ShardWriter:
    """Writes (key, matrix) pairs to one shard; use as a context manager.

    >>> with ShardWriter("exp/emb_am/dev/emb.1", compression="two_byte") as w:  # doctest: +SKIP
    ...     w.write("utt1", np.zeros((10, 4), dtype=np.float32))
    """

    def __init__(self, prefix: Pathlike, compression: str = "none") -> None:
        self.ark_path, self.scp_path = shard_paths(prefix)
        self.ark_path.parent.mkdir(parents=True, exist_ok=True)
        self.compression = compression_method(compression)
        self.tmp_ark = self.ark_path.with_name(f".{self.ark_path.name}.{os.getpid()}.tmp")
        self._ark = None
        self._scp_lines: list[str] = []
        self._keys: set = set()

    def __enter__(self) -> ShardWriter:
        clear_done(self.scp_path)
        remove_orphaned_temporaries(self.ark_path)
        self._ark = open(self.tmp_ark, "wb")
        return self

    def write(self, key: str, matrix: np.ndarray) -> None:
        if any(c.isspace() for c in key) or not key:
            raise ValueError(f"shard keys must be non-empty and without white space, got {key!r}")
        if key in self._keys:
            raise ValueError(f"duplicate key {key!r} in shard {self.ark_path}")
        self._keys.add(key)
        offset = self._ark.tell()
        array = np.ascontiguousarray(matrix, dtype=np.float32)
        kaldiio.save_ark(self._ark, {key: array}, compression_method=self.compression)
        # save_ark writes "key " before the data; the scp offset points just after it.
        self._scp_lines.append(f"{key} {self.ark_path}:{offset + len(key.encode()) + 1}\n")

    def __exit__(self, exc_type, exc, tb) -> None:
        self._ark.close()
        if exc_type is not None:
            self.tmp_ark.unlink(missing_ok=True)
            return
        os.replace(self.tmp_ark, self.ark_path)
        atomic_write_text(self.scp_path, "".join(self._scp_lines))
        mark_done(self.scp_path)


def remove_orphaned_temporaries(ark_path: Path) -> int:
    """Deletes the temporary arks ``.<name>.<pid>.tmp`` of ``ark_path`` whose writer process no longer runs
    on this host (a job killed with ``kill -9`` leaves its own); returns how many were deleted."""
    removed = 0
    for tmp in ark_path.parent.glob(f".{ark_path.name}.*.tmp"):
        pid = tmp.name[len(ark_path.name) + 2 : -len(".tmp")]
        if not pid.isdigit() or _process_exists(int(pid)):
            continue
        tmp.unlink(missing_ok=True)
        removed += 1
    if removed:
        logging.info("%s: removed %d temporary ark(s) of killed writers", ark_path, removed)
    return removed


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def write_shard(prefix: Pathlike, items: Iterable[tuple[str, np.ndarray]], compression: str = "none") -> int:
    """Writes all items to one shard; returns how many were written."""
    count = 0
    with ShardWriter(prefix, compression) as writer:
        for key, matrix in items:
            writer.write(key, matrix)
            count += 1
    return count


def word_shard_prefixes(out_dir: Path, job: int) -> tuple[Path, Path]:
    """``<out_dir>/vec.JOB`` and ``<out_dir>/post.JOB``: one dump job's word vectors and word posteriors."""
    return out_dir / f"vec.{job}", out_dir / f"post.{job}"


def shards_to_skip(prefixes: Sequence[Path], overwrite: bool) -> bool:
    """True (and logged) when every shard is finished and ``overwrite`` is off, so the job has nothing to do."""
    if overwrite or not all(is_shard_done(prefix) for prefix in prefixes):
        return False
    logging.info("%s are done; skipping (use --overwrite to redo)", " and ".join(map(str, prefixes)))
    return True


def write_word_shards(
    vec_prefix: Path, post_prefix: Path, items: Iterable[tuple[str, np.ndarray, np.ndarray]], compression: str = "none"
) -> None:
    """Writes (key, word vectors, word posteriors) to a vector shard (compressed) and a posterior shard (not)."""
    with ShardWriter(vec_prefix, compression) as vec_writer, ShardWriter(post_prefix, "none") as post_writer:
        for key, vectors, posteriors in items:
            vec_writer.write(key, vectors)
            post_writer.write(key, posteriors)
    logging.info("wrote %s.scp and %s.scp", vec_prefix, post_prefix)


def merge_scps(parts: Iterable[Pathlike], output: Pathlike) -> int:
    """Concatenates shard scps into one (like Kaldi's ``cat emb.*.scp > emb.scp``); checks keys are unique."""
    lines: list[str] = []
    seen: dict[str, Path] = {}
    for part in parts:
        part = Path(part)
        for line_number, line in enumerate(part.read_text(encoding="utf-8").splitlines(), 1):
            key = line.split(maxsplit=1)[0]
            if key in seen:
                raise ValueError(f"{part}:{line_number}: key {key} already in {seen[key]}")
            seen[key] = part
            lines.append(line + "\n")
    output, text = Path(output), "".join(lines)
    # An unchanged index keeps its time stamp: later stages compare it with their outputs' to see
    # whether they must be redone (redone shards show in their own .done markers).
    if not (output.exists() and output.read_text(encoding="utf-8") == text):
        atomic_write_text(output, text)
    return len(lines)


class MatrixReader:
    """Random access to matrices by key from one scp (or several), loaded lazily."""

    def __init__(self, *scp_files: Pathlike) -> None:
        self._index: dict[str, str] = {}
        for scp in scp_files:
            for line_number, line in enumerate(Path(scp).read_text(encoding="utf-8").splitlines(), 1):
                fields = line.split(maxsplit=1)
                if len(fields) != 2:
                    raise ValueError(f"{scp}:{line_number}: expected '<key> <ark>:<offset>', got {line!r}")
                self._index[fields[0]] = fields[1]

    def __contains__(self, key: str) -> bool:
        return key in self._index

    def __len__(self) -> int:
        return len(self._index)

    def keys(self) -> list[str]:
        return list(self._index)

    def __getitem__(self, key: str) -> np.ndarray:
        return np.asarray(kaldiio.load_mat(self._index[key]))

    def items(self) -> Iterator[tuple[str, np.ndarray]]:
        for key in self._index:
            yield key, self[key]


# ---- the per-job dump of word vectors and posteriors (dump_bert, dump_itn_text) ----------------------------

WordItems = Iterable[tuple[str, np.ndarray, np.ndarray]]  # (key, word vectors, word posteriors)


def add_word_dump_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of a per-job dump of word vectors and posteriors (``vec.JOB`` and ``post.JOB`` shards)."""
    parser.add_argument("--compression", default="none", help="kaldiio compression of the vectors: none, two_byte, ...")
    add_device_arguments(parser, threads_help="torch CPU threads per job")
    parser.add_argument("--overwrite", action="store_true", help="rewrite shards that are already done")
    add_job_arguments(parser)


def run_word_dump(args: argparse.Namespace, word_items: Callable[[torch.device], WordItems]) -> None:
    """Writes ``word_items(device)`` to this job's ``vec``/``post`` shards, unless both are done already.

    ``word_items`` loads its model before it returns, so a model that fails to load leaves finished shards as they are.
    """
    vec_prefix, post_prefix = word_shard_prefixes(args.out_dir, args.job)
    if shards_to_skip([vec_prefix, post_prefix], args.overwrite):
        return
    from punct.utils.device import threaded_device  # torch: only for a dump, not for a merge

    items = word_items(threaded_device(args.device, args.num_threads))
    write_word_shards(vec_prefix, post_prefix, items, args.compression)
