"""Inputs of ``punctuate``: utterances to punctuate, from Kaldi files, a lhotse cut manifest or one pair.

* Kaldi style: ``wav.scp`` (``<id> <path>`` or ``<id> <command> |``), ``text`` (``<utt> <transcript>``,
  the transcript may be empty), optionally ``segments`` (``<utt> <recording> <start> <end>``: then wav.scp
  lists recordings) and ``utt2spk`` (``<utt> <speaker>``; without it every utterance is its own speaker for CMVN).
* lhotse: a cut manifest (``*.jsonl.gz``); each cut's first supervision gives the transcript
  (``supervision.text``) and the speaker; the audio is the cut's.
* One pair: ``--wav a.wav`` with ``--text a.txt`` (the whole file is the transcript) or ``--transcript "..."``.

Nothing is loaded here except the file lists: audio is read per utterance by :func:`load_audio`,
so a missing or unreadable file fails that utterance only.
"""

from __future__ import annotations

import io
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from lhotse.utils import Pathlike


class UtteranceError(Exception):
    """One utterance cannot be punctuated; ``reason`` is a short category, the message says why."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


@dataclass
class Request:
    """One utterance to punctuate.

    ``transcript`` None means "no transcript": the acoustic model's greedy hypothesis is used.
    ``audio`` is a callable returning ``(samples (num_samples,) float32 in [-1, 1], sampling_rate)``.
    """

    id: str
    audio: Callable[[], tuple]
    transcript: str | None
    speaker: str
    source: str  # where the audio comes from (for messages)


def read_table(path: Pathlike, allow_empty_value: bool = False) -> dict[str, str]:
    """``<key> <value...>`` lines -> dict; a malformed or duplicate line is an error naming file:line."""
    table: dict[str, str] = {}
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    for line_number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        fields = line.strip().split(maxsplit=1)
        key = fields[0]
        value = fields[1] if len(fields) > 1 else ""
        if not value and not allow_empty_value:
            raise ValueError(f"{path}:{line_number}: expected '<utterance id> <value>', got {line!r}")
        if key in table:
            raise ValueError(f"{path}:{line_number}: duplicate utterance id {key!r}")
        table[key] = value
    return table


def _read_file_audio(path: str) -> tuple:
    import soundfile as sf

    if not Path(path).is_file():
        raise UtteranceError("missing audio", f"{path}: no such file")
    try:
        samples, rate = sf.read(path, dtype="float32", always_2d=True)
    except Exception as e:  # soundfile raises several types for unreadable files
        raise UtteranceError("unreadable audio", f"{path}: {e}") from e
    return _mono(samples, path), rate


def _read_pipe_audio(command: str) -> tuple:
    import soundfile as sf

    proc = subprocess.run(command, shell=True, capture_output=True)
    if proc.returncode != 0:
        raise UtteranceError(
            "unreadable audio",
            f"command {command!r} exited with {proc.returncode}: {proc.stderr.decode(errors='replace').strip()[-300:]}",
        )
    try:
        samples, rate = sf.read(io.BytesIO(proc.stdout), dtype="float32", always_2d=True)
    except Exception as e:
        raise UtteranceError("unreadable audio", f"output of {command!r}: {e}") from e
    return _mono(samples, command), rate


def _mono(samples: np.ndarray, source: str) -> np.ndarray:
    if samples.shape[1] != 1:
        # Several channels: their mean, as a speech front end would hear one microphone.
        samples = samples.mean(axis=1, keepdims=True)
    return np.ascontiguousarray(samples[:, 0], dtype=np.float32)


def wav_loader(spec: str) -> Callable[[], tuple]:
    """A wav.scp value (a path, or a shell command ending in ``|``) -> a loader."""
    spec = spec.strip()
    if spec.endswith("|"):
        command = spec[:-1].strip()
        return lambda: _read_pipe_audio(command)
    return lambda: _read_file_audio(spec)


def _segment_loader(recording: Callable[[], tuple], start: float, end: float, source: str) -> Callable[[], tuple]:
    def load():
        samples, rate = recording()
        first, last = int(round(start * rate)), int(round(end * rate)) if end > 0 else len(samples)
        if first >= len(samples):
            raise UtteranceError(
                "segment outside audio",
                f"{source}: segment starts at {start:.2f} s but the audio lasts {len(samples) / rate:.2f} s",
            )
        return samples[first:last], rate

    return load


def read_segments(path: Pathlike, wavs: dict[str, str]) -> dict[str, tuple]:
    """Kaldi ``segments`` (``<utt> <recording> <start> <end>``, end -1 = to the end) -> {utt: (rec, start, end)}."""
    out: dict[str, tuple] = {}
    for line_number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split()
        try:
            utt, rec, start, end = fields[0], fields[1], float(fields[2]), float(fields[3])
        except (IndexError, ValueError):
            raise ValueError(
                f"{path}:{line_number}: expected '<utt> <recording> <start> <end>', got {line!r}"
            ) from None
        if rec not in wavs:
            raise ValueError(f"{path}:{line_number}: recording {rec!r} is not in wav.scp")
        if utt in out:
            raise ValueError(f"{path}:{line_number}: duplicate utterance id {utt!r}")
        out[utt] = (rec, start, end)
    return out


def from_kaldi(
    wav_scp: Pathlike, text: Pathlike | None, utt2spk: Pathlike | None = None, segments: Pathlike | None = None
) -> list[Request]:
    """Requests in wav.scp order (or ``segments`` order).  An utterance missing from ``text`` gets transcript
    ``""`` (it fails as an empty transcript); with ``text`` None every transcript comes from the AM."""
    wavs = read_table(wav_scp)
    if segments is not None:
        segs = read_segments(segments, wavs)
        texts = read_table(text, allow_empty_value=True) if text is not None else None
        speakers = read_table(utt2spk) if utt2spk is not None else {}
        return [
            Request(
                utt,
                _segment_loader(wav_loader(wavs[rec]), start, end, f"{wavs[rec]} [{start}, {end}]"),
                None if texts is None else texts.get(utt, ""),
                speakers.get(utt, utt),
                f"{wavs[rec]}:{start}-{end}",
            )
            for utt, (rec, start, end) in segs.items()
        ]
    texts = read_table(text, allow_empty_value=True) if text is not None else None
    speakers = read_table(utt2spk) if utt2spk is not None else {}
    if texts is not None:
        extra = sorted(set(texts) - set(wavs))
        if extra:
            import logging

            logging.warning(
                "%s: %d utterance(s) have no audio in %s and are ignored (e.g. %s)", text, len(extra), wav_scp, extra[0]
            )
    return [
        Request(utt, wav_loader(spec), None if texts is None else texts.get(utt, ""), speakers.get(utt, utt), spec)
        for utt, spec in wavs.items()
    ]


def from_cuts(manifest: Pathlike, use_transcripts: bool = True) -> list[Request]:
    """Requests from a lhotse cut manifest (first supervision: text and speaker)."""
    from lhotse import load_manifest

    requests = []
    for cut in load_manifest(manifest):
        sup = cut.supervisions[0] if cut.supervisions else None
        text = (sup.text or "") if sup is not None else ""

        def load(cut=cut):
            try:
                return cut.load_audio()[0].astype(np.float32), cut.sampling_rate
            except Exception as e:
                raise UtteranceError("unreadable audio", f"cut {cut.id}: {e}") from e

        speaker = sup.speaker if sup is not None and sup.speaker else cut.id
        requests.append(Request(cut.id, load, text if use_transcripts else None, speaker, f"{manifest}:{cut.id}"))
    return requests


def from_pair(wav: Pathlike, transcript: str | None, utt_id: str | None = None) -> Request:
    utt_id = utt_id or Path(wav).stem
    return Request(utt_id, wav_loader(str(wav)), transcript, utt_id, str(wav))
