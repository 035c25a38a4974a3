"""Utterance-level AM training data from Czech espeak-ng speech, in the input forms of ``--am-data``.

``speak_utterances()`` synthesises 4 speakers x 3 sentences (each sentence said by 3 speakers, so that the
dev part drawn by speaker never has a character the training part lacks).  ``kaldi_dir_with_segments``
writes two 16 kHz "sittings" (each two speakers' utterances separated by silence) with ``segments``;
``kaldi_dir_per_utterance`` one 22.05 kHz wav per utterance (espeak's rate: resampled by the import).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest
import soundfile as sf

SENTENCES = [
    "Dobrý den, vážení poslanci.",
    "Zákon o státním rozpočtu byl dnes schválen!",
    "Ministr financí odpoví na otázky; děkuji.",
    "Přejdeme k dalšímu bodu programu?",
]
NORMALISED = [
    "dobrý den vážení poslanci",
    "zákon o státním rozpočtu byl dnes schválen",
    "ministr financí odpoví na otázky děkuji",
    "přejdeme k dalšímu bodu programu",
]
SPEAKERS = {
    "NovakJan": ("m1", 40, 165),
    "MalaEva": ("f2", 60, 180),
    "DvorakPetr": ("m3", 35, 150),
    "CernaJana": ("f1", 55, 170),
}
SAMPLE_RATE = 16000
GAP = 0.6  # seconds of silence between the utterances of a sitting


class Spoken(NamedTuple):
    id: str
    speaker: str
    sentence: int  # index into SENTENCES
    audio: np.ndarray  # espeak's rate
    rate: int


def speak_utterances() -> list[Spoken]:
    from punct.synthesis.tts import Espeak, Voice

    try:
        engine = Espeak.get()
    except RuntimeError as e:
        pytest.skip(str(e))
    out = []
    for k, (speaker, (variant, pitch, rate)) in enumerate(SPEAKERS.items()):
        for j in range(3):
            sentence = (k + j) % len(SENTENCES)
            synth = engine.synthesize(SENTENCES[sentence], Voice("cs", variant=variant, pitch=pitch, rate=rate))
            out.append(Spoken(f"{speaker}-{j:02d}", speaker, sentence, synth.audio, synth.sample_rate))
    return out


def write_lines(path: Path, lines: list[str]) -> None:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def kaldi_dir_with_segments(root: Path, spoken: list[Spoken]) -> dict[str, tuple]:
    """Two sittings (speakers 1-2 and 3-4) in ``root/wav``; returns {utt id: (recording, start, end)}."""
    from punct.synthesis.tts import resample

    (root / "wav").mkdir(parents=True, exist_ok=True)
    speakers = list(SPEAKERS)
    times, wav, segments, text, utt2spk = {}, [], [], [], []
    for s, pair in enumerate((speakers[:2], speakers[2:])):
        rec_id = f"sitting{s + 1}"
        pieces, t = [np.zeros(int(GAP * SAMPLE_RATE), np.float32)], GAP
        for utt in (u for u in spoken if u.speaker in pair):
            audio = resample(utt.audio, utt.rate, SAMPLE_RATE)
            times[utt.id] = (rec_id, round(t, 3), round(t + len(audio) / SAMPLE_RATE, 3))
            pieces += [audio, np.zeros(int(GAP * SAMPLE_RATE), np.float32)]
            t += len(audio) / SAMPLE_RATE + GAP
            segments.append(f"{utt.id} {rec_id} {times[utt.id][1]:.3f} {times[utt.id][2]:.3f}")
            text.append(f"{utt.id} {SENTENCES[utt.sentence]}")
            utt2spk.append(f"{utt.id} {utt.speaker}")
        sf.write(root / "wav" / f"{rec_id}.wav", np.concatenate(pieces), SAMPLE_RATE)
        wav.append(f"{rec_id} {root / 'wav' / f'{rec_id}.wav'}")
    for name, lines in (("wav.scp", wav), ("segments", segments), ("text", text), ("utt2spk", utt2spk)):
        write_lines(root / name, lines)
    return times


def kaldi_dir_per_utterance(root: Path, spoken: list[Spoken], prefix: str = "") -> None:
    """One wav per utterance at espeak's own rate; no segments file; ids (and speakers) start with ``prefix``."""
    (root / "wav").mkdir(parents=True, exist_ok=True)
    for utt in spoken:
        sf.write(root / "wav" / f"{prefix}{utt.id}.wav", utt.audio, utt.rate)
    write_lines(root / "wav.scp", [f"{prefix}{u.id} {root / 'wav' / f'{prefix}{u.id}.wav'}" for u in spoken])
    write_lines(root / "text", [f"{prefix}{u.id} {SENTENCES[u.sentence]}" for u in spoken])
    write_lines(root / "utt2spk", [f"{prefix}{u.id} {prefix}{u.speaker}" for u in spoken])
