"""Kaldi data directories, read line by line with ``file:line`` in every error: the one reader of the project.

A Kaldi data directory (https://kaldi-asr.org/doc/data_prep.html) is a folder of text tables, one
``<key> <value>`` line each:

  ``wav.scp``   ``<recording-id> <audio file>`` or ``<recording-id> <command> |``  required
  ``text``      ``<utterance-id> <transcript>``                  required (a transcript may be empty)
  ``segments``  ``<utterance-id> <recording-id> <start> <end>``  optional; seconds, ``end`` -1: to the end
  ``utt2spk``   ``<utterance-id> <speaker-id>``                  optional

Without ``segments`` every ``wav.scp`` entry is one utterance with the recording's id (Kaldi's convention).
Relative audio paths are relative to the current directory, as in Kaldi.  A value ending in ``|`` is a shell
command that writes the audio to its standard output (Kaldi's "extended filename", lhotse's ``command`` audio
source): :func:`pipe_command` finds it, :func:`run_pipe` runs it.  Other files (``spk2utt``, ``reco2dur``,
``feats.scp`` ...) are not read: durations come from the audio itself.

Both readers of Kaldi tables use this module: acoustic-model and corpus import (:func:`read_kaldi_data_dir`,
``punct.am_data.utterances``) and ``punctuate`` (its own ``--wav-scp``/``--text``/``--utt2spk``/``--segments``
files: :func:`read_table`, :func:`read_segments`, :func:`read_utt2spk`, ``punct.inference.inputs``).

What is a structural error here (ValueError naming ``file:line``): a line without a value where one is
required, a key given twice, a segment that is not ``<utt> <rec> <start> <end>`` with ``0 <= start < end``
(or ``end`` -1), a segment on a recording ``wav.scp`` lacks, an ``utt2spk`` value of more than one field.
Whether an utterance has a transcript and audio is the caller's decision (see
``punct.am_data.utterances``): every entry keeps the location of its line.

Why not lhotse's ``lhotse.kaldi.load_kaldi_data_dir`` (1.33): it gives every recording the one sampling rate it
is told (a 24 kHz wav imported as 16 kHz fails to load, mixed rates cannot be imported), no supervisions without
``segments`` and ``utt2spk``, the last of a repeated key, and errors without file or line ("not enough values to
unpack", a bare ``KeyError``) for a short ``segments`` line or a segment without a transcript; a pipe needs
``kaldi_native_io`` (not a dependency of ours), and a recording it cannot read is dropped with a warning (an
error only when more than 20% are).  lhotse serves where it is used: the import's recordings are lhotse
``Recording`` objects, a pipe one with a ``command`` audio source that lhotse runs when the audio is loaded.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from lhotse.utils import Pathlike


@dataclass(frozen=True)
class Entry:
    """The value of one table line and where it is (``path:line``)."""

    value: str
    where: str


@dataclass(frozen=True)
class KaldiSegment:
    """One utterance's span of a recording; ``end`` None: to the end of the recording."""

    utterance_id: str
    recording_id: str
    start: float
    end: float | None
    where: str


@dataclass(frozen=True)
class KaldiDataDir:
    path: Path
    wav: dict[str, Entry]
    text: dict[str, Entry]
    segments: dict[str, KaldiSegment]  # from ``segments``, or one whole-recording segment per wav.scp entry
    utt2spk: dict[str, Entry] | None
    has_segments: bool


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of the non-blank lines of a UTF-8 file."""
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ValueError(f"{path}:{number}: not UTF-8 ({e.reason} at byte {e.start})") from None
            if line.strip():
                yield number, line


def read_table(path: Pathlike, allow_empty: bool = False) -> dict[str, Entry]:
    """``<key> <value>`` lines -> {key: Entry}; a repeated key or (unless ``allow_empty``) a missing value
    is an error naming the line."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    entries: dict[str, Entry] = {}
    for number, line in _lines(path):
        fields = line.strip().split(maxsplit=1)
        key, value = fields[0], fields[1].strip() if len(fields) > 1 else ""
        where = f"{path}:{number}"
        if key in entries:
            raise ValueError(f"{where}: {key!r} again (first at {entries[key].where}): ids must be unique")
        if not value and not allow_empty:
            raise ValueError(f"{where}: {key!r} has no value")
        entries[key] = Entry(value, where)
    return entries


def _parse_segment(key: str, entry: Entry, recordings: Mapping[str, Entry] | None) -> KaldiSegment:
    fields = entry.value.split()
    if len(fields) != 3:
        raise ValueError(
            f"{entry.where}: expected '<utterance-id> <recording-id> <start> <end>', got {key} {entry.value!r}"
        )
    rec_id = fields[0]
    try:
        start, end = float(fields[1]), float(fields[2])
    except ValueError:
        raise ValueError(f"{entry.where}: start and end must be seconds, got {fields[1]!r} {fields[2]!r}") from None
    if start < 0 or (end != -1 and end <= start):
        raise ValueError(f"{entry.where}: segment {key} from {start} to {end} s: need 0 <= start < end (or end -1)")
    if recordings is not None and rec_id not in recordings:
        raise ValueError(f"{entry.where}: segment {key} is on recording {rec_id!r}, which wav.scp does not list")
    return KaldiSegment(key, rec_id, start, None if end == -1 else end, entry.where)


def read_segments(path: Pathlike, recordings: Mapping[str, Entry] | None = None) -> dict[str, KaldiSegment]:
    """A ``segments`` file on the recordings of a ``wav.scp`` (:func:`read_table`; None: any recording) ->
    {utterance: segment}."""
    return {k: _parse_segment(k, e, recordings) for k, e in read_table(path).items()}


def read_utt2spk(path: Pathlike) -> dict[str, Entry]:
    """An ``utt2spk`` file -> {utterance: speaker entry}; a speaker of more than one field is an error."""
    utt2spk = read_table(path)
    for entry in utt2spk.values():
        if len(entry.value.split()) != 1:
            raise ValueError(
                f"{entry.where}: expected '<utterance-id> <speaker-id>', got {entry.value!r} as the speaker"
            )
    return utt2spk


def pipe_command(value: str) -> str | None:
    """The shell command of a ``wav.scp`` value ``<command> |``; None for a file name."""
    value = value.strip()
    return value[:-1].strip() if value.endswith("|") else None


def run_pipe(command: str) -> bytes:
    """The standard output of a ``wav.scp`` command (the audio); a non-zero exit is a RuntimeError with the end of
    its standard error.  (lhotse's ``command`` source, which loads the audio later, does not check the exit.)"""
    proc = subprocess.run(command, shell=True, capture_output=True)
    if proc.returncode != 0:
        stderr = proc.stderr.decode(errors="replace").strip()[-300:]
        raise RuntimeError(f"command {command!r} exited with {proc.returncode}: {stderr}")
    return proc.stdout


def read_kaldi_data_dir(path: Pathlike) -> KaldiDataDir:
    """The tables of a Kaldi data directory, checked for structure (see the module doc)."""
    path = Path(path)
    for name in ("wav.scp", "text"):
        if not (path / name).is_file():
            raise FileNotFoundError(f"{path / name}: no such file; a Kaldi data directory needs wav.scp and text")
    wav = read_table(path / "wav.scp")
    text = read_table(path / "text", allow_empty=True)
    has_segments = (path / "segments").is_file()
    if has_segments:
        segments = read_segments(path / "segments", wav)
    else:
        segments = {k: KaldiSegment(k, k, 0.0, None, e.where) for k, e in wav.items()}
    utt2spk = read_utt2spk(path / "utt2spk") if (path / "utt2spk").is_file() else None
    return KaldiDataDir(path, wav, text, segments, utt2spk, has_segments)
