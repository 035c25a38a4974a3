"""Tiny corpora of real (espeak-ng) speech in the layouts a user brings: a LibriTTS tree as lhotse's
``prepare_libritts`` reads it, and Kaldi data directories with ``segments``.  Shared by tests/corpora and tests/e2e."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile as sf

from punct.synthesis.tts import Espeak, Voice, resample

LIBRITTS_PARTS = {"train": "train-clean-100", "dev": "dev-clean", "test": "test-clean"}

# Per part, per (speaker, book): the original (punctuated, cased) text of each utterance.  LibriTTS' normalized
# text (lhotse's supervision ``text``) differs where it spells an abbreviation out: "Mr." -> "Mister".
LIBRITTS_TEXT = {
    "train-clean-100": {
        ("14", "208"): ["Mr. Darcy came in, didn't he?", "She laughed; then she said: no.", "It was cold, very cold."],
        ("16", "122"): [
            "Where were you going?",
            "Well, I never saw such a thing!",
            "The fire was out, so we left.",
            # every letter in train: the acoustic model's alphabet is that of its training text
            "The quick brown fox jumps over the lazy dog.",
            "Pack my box with five dozen liquor jugs.",
        ],
    },
    "dev-clean": {("84", "121"): ["The room was dark, and quiet.", "Who is there, Mr. Bingley?"]},
    "test-clean": {("121", "127"): ["I paid 5 dollars, in 1811.", "Come here, Jane."]},
}


def libritts_normalized(text: str) -> str:
    return text.replace("Mr.", "Mister")


def speak(text: str, rate: int) -> np.ndarray:
    syn = Espeak.get().synthesize(text, Voice())
    return resample(syn.audio, syn.sample_rate, rate)


def write_fake_libritts(root: Path) -> Path:
    """``root/<part>/<speaker>/<book>/`` with ``<utt>.wav`` (24 kHz, as LibriTTS), ``<speaker>_<book>.trans.tsv``
    (id, original text, normalized text) and ``<speaker>_<book>.book.tsv`` (id ... SNR), as in the release."""
    for part, books in LIBRITTS_TEXT.items():
        for (speaker, book), lines in books.items():
            folder = root / part / speaker / book
            folder.mkdir(parents=True, exist_ok=True)
            trans, book_rows = [], []
            for i, text in enumerate(lines):
                utt = f"{speaker}_{book}_{i:06d}_000000"
                sf.write(folder / f"{utt}.wav", speak(text, 24000), 24000)
                trans.append(f"{utt}\t{text}\t{libritts_normalized(text)}")
                book_rows.append(f"{utt}\t{text}\t{libritts_normalized(text)}\ttrue\t0.0\t1.0\t21.5")
            (folder / f"{speaker}_{book}.trans.tsv").write_text("\n".join(trans) + "\n")
            (folder / f"{speaker}_{book}.book.tsv").write_text("\n".join(book_rows) + "\n")
    return root


def prepared_libritts(tmp: Path) -> Path:
    """The fake LibriTTS tree prepared by lhotse's own recipe: ``libritts_{recordings,supervisions}_<part>``."""
    from lhotse.recipes import prepare_libritts

    corpus = write_fake_libritts(tmp / "LibriTTS")
    prepare_libritts(corpus, list(LIBRITTS_PARTS.values()), output_dir=tmp / "libritts_manifests")
    return tmp / "libritts_manifests"


# Per split: talks (recording id, speaker, sampling rate, punctuated sentences); each talk is one long wav.
KALDI_TALKS = {
    "train": [
        ("talk1", "anna", 16000, ["Good morning, everyone.", "Today we talk about rivers.", "Are you ready?"]),
        # every letter of dev and test is said in train too ("q"), or stage 3 could not align them
        ("talk2", "ben", 22050, ["Rivers are long, and often wide.", "They flow to the sea.", "Quiet questions?"]),
    ],
    "dev": [("talk3", "cora", 16000, ["What is a delta?", "It is where a river, slowly, meets the sea."])],
    "test": [("talk4", "dan", 16000, ["Thank you, all of you.", "Any questions?"])],
}
PAUSE = 0.3  # seconds of silence before and between sentences


def write_kaldi_data_dirs(root: Path, skips: bool = True) -> Path:
    """``root/{train,dev,test}/{wav.scp,segments,text,utt2spk}`` over long talks (one wav each, 16 or 22.05 kHz);
    with ``skips`` train also has a transcript without a segment and a segment without a transcript."""
    for split, talks in KALDI_TALKS.items():
        folder = root / split
        (folder / "wav").mkdir(parents=True, exist_ok=True)
        tables = {"wav.scp": [], "segments": [], "text": [], "utt2spk": []}
        for rec_id, speaker, rate, sentences in talks:
            pieces, t = [np.zeros(int(PAUSE * rate), np.float32)], PAUSE
            for i, sentence in enumerate(sentences):
                audio = speak(sentence, rate)
                utt = f"{speaker}-{rec_id}-{i:03d}"
                tables["segments"].append(f"{utt} {rec_id} {t:.3f} {t + len(audio) / rate:.3f}")
                tables["text"].append(f"{utt} {sentence}")
                tables["utt2spk"].append(f"{utt} {speaker}")
                pieces += [audio, np.zeros(int(PAUSE * rate), np.float32)]
                t += len(audio) / rate + PAUSE
            sf.write(folder / "wav" / f"{rec_id}.wav", np.concatenate(pieces), rate)
            tables["wav.scp"].append(f"{rec_id} {(folder / 'wav' / f'{rec_id}.wav').resolve()}")
        if skips and split == "train":
            tables["text"].append("anna-talk1-009 This one has no audio.")
            tables["segments"].append("anna-talk1-010 talk1 0.000 0.250")
            tables["utt2spk"].append("anna-talk1-010 anna")
        for name, rows in tables.items():
            (folder / name).write_text("".join(f"{row}\n" for row in sorted(rows)))
    return root
