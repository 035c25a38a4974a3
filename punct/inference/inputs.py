"""Inputs of ``punctuate``: utterances to punctuate, from Kaldi files, a lhotse cut manifest or one pair.

* Kaldi style: ``wav.scp`` (``<id> <path>`` or ``<id> <command> |``), ``text`` (``<utt> <transcript>``,
  the transcript may be empty), optionally ``segments`` (``<utt> <recording> <start> <end>``: then wav.scp
  lists recordings) and ``utt2spk`` (``<utt> <speaker>``; without it every utterance is its own speaker for CMVN).
  Read by ``punct.io.kaldi_data_dir``, the reader that the corpus and AM import use too: the same lines are
  accepted, and the same errors name ``file:line``.
* lhotse: a cut manifest (``*.jsonl.gz``); each cut's first supervision gives the transcript
  (``supervision.text``) and the speaker; the audio is the cut's.
* One pair: ``--wav a.wav`` with ``--text a.txt`` (the whole file is the transcript) or ``--transcript "..."``.

Nothing is loaded here except the file lists: audio is read per utterance by :func:`load_audio`,
so a missing or unreadable file fails that utterance only.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from lhotse.utils import Pathlike

from punct.io.kaldi_data_dir import pipe_command, read_segments, read_table, read_utt2spk, run_pipe
from punct.utils.jobs import job_share


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

    try:
        output = run_pipe(command)
    except RuntimeError as e:
        raise UtteranceError("unreadable audio", str(e)) from None
    try:
        samples, rate = sf.read(io.BytesIO(output), dtype="float32", always_2d=True)
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
    command = pipe_command(spec)
    if command is not None:
        return lambda: _read_pipe_audio(command)
    return lambda: _read_file_audio(spec)


def _segment_loader(
    recording: Callable[[], tuple], start: float, end: float | None, source: str
) -> Callable[[], tuple]:
    def load():
        samples, rate = recording()
        first = int(round(start * rate))
        last = len(samples) if end is None else int(round(end * rate))
        if first >= len(samples):
            raise UtteranceError(
                "segment outside audio",
                f"{source}: segment starts at {start:.2f} s but the audio lasts {len(samples) / rate:.2f} s",
            )
        return samples[first:last], rate

    return load


def from_kaldi(
    wav_scp: Pathlike, text: Pathlike | None, utt2spk: Pathlike | None = None, segments: Pathlike | None = None
) -> list[Request]:
    """Requests in wav.scp order (or ``segments`` order).  An utterance missing from ``text`` gets transcript
    ``""`` (it fails as an empty transcript); with ``text`` None every transcript comes from the AM."""
    wavs = read_table(wav_scp)
    texts = read_table(text, allow_empty=True) if text is not None else None
    speakers = read_utt2spk(utt2spk) if utt2spk is not None else {}

    def transcript(utt: str) -> str | None:
        return None if texts is None else texts[utt].value if utt in texts else ""

    def speaker(utt: str) -> str:
        return speakers[utt].value if utt in speakers else utt

    if segments is not None:
        requests = []
        for utt, seg in read_segments(segments, wavs).items():
            spec = wavs[seg.recording_id].value
            end = -1 if seg.end is None else seg.end
            requests.append(
                Request(
                    utt,
                    _segment_loader(wav_loader(spec), seg.start, seg.end, f"{spec} [{seg.start}, {end}]"),
                    transcript(utt),
                    speaker(utt),
                    f"{spec}:{seg.start}-{end}",
                )
            )
        return requests
    if texts is not None:
        extra = sorted(set(texts) - set(wavs))
        if extra:
            logging.warning(
                "%s: %d utterance(s) have no audio in %s and are ignored (e.g. %s)", text, len(extra), wav_scp, extra[0]
            )
    return [Request(utt, wav_loader(e.value), transcript(utt), speaker(utt), e.value) for utt, e in wavs.items()]


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


def speaker_share(requests: list, job: int, nj: int) -> list:
    """This job's share of the requests, whole speakers at a time (CMVN stats are per speaker)."""
    by_speaker: dict = {}
    for r in requests:
        by_speaker.setdefault(r.speaker, []).append(r)
    return [r for group in job_share(list(by_speaker.values()), job, nj) for r in group]
