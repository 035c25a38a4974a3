"""A tiny espeak-ng corpus in the stage-0 contract, built by the tests (no downloads).

``make_corpus(root)`` writes ``root/wav/talk<k>.wav`` (16 kHz mono: several sentences separated by
silence) and ``root/manifests/mustc_{recordings,supervisions}_{train,dev,test}.jsonl.gz`` with
``custom = {"words", "punct"}``; supervision ids are ``talk<k>_<i>``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import soundfile as sf

SENTENCES = [
    "The cat sat on the mat.",
    "A dog ran to the park, and it was happy.",
    "Where is the red book?",
    "She likes tea in the morning.",
    "We walked home in the rain.",
    "Is it time to go?",
    "The sun is bright today.",
    "He reads a long letter, slowly.",
    "My friend has two small birds.",
    "They sing songs at night.",
    "Open the door, please.",
    "The green tree is tall.",
    "Do you want some bread?",
    "I saw a ship on the sea.",
    "Her house is near the river.",
    "The children play in the garden.",
]
SPLITS = {"train": [0, 1, 2], "dev": [3], "test": [4]}
VOICES = ["en-us+m3", "en+f2", "en-us+m1", "en+m4", "en-us+f3"]


def espeak_available() -> bool:
    return shutil.which("espeak-ng") is not None and shutil.which("sox") is not None


def synth(text: str, voice: str, rate: int, pitch: int, out: Path) -> np.ndarray:
    raw = out.with_suffix(".raw.wav")
    subprocess.run(["espeak-ng", "-v", voice, "-s", str(rate), "-p", str(pitch), "-w", str(raw), text], check=True)
    subprocess.run(["sox", str(raw), "-r", "16000", "-c", "1", "-b", "16", str(out)], check=True)
    raw.unlink()
    audio, sr = sf.read(out, dtype="float32")
    assert sr == 16000
    return audio


def words_and_punct(text: str):
    words, punct = [], []
    for token in text.split():
        word = re.sub(r"[^a-z0-9']", "", token.lower())
        mark = token[-1] if token[-1] in ",.?" else "NP"
        words.append(word)
        punct.append(mark)
    return words, punct


def make_corpus(root: Path, sentences_per_talk: int = 3, seed: int = 0) -> dict[str, list[str]]:
    from lhotse import Recording, RecordingSet, SupervisionSegment, SupervisionSet

    rng = np.random.default_rng(seed)
    root = Path(root)
    (root / "wav").mkdir(parents=True, exist_ok=True)
    (root / "manifests").mkdir(parents=True, exist_ok=True)
    ids: dict[str, list[str]] = {}
    sentence = 0
    for split, talks in SPLITS.items():
        recordings, supervisions = [], []
        for k in talks:
            pieces, sups = [np.zeros(1600, dtype=np.float32)], []
            offset = 1600
            for i in range(sentences_per_talk):
                text = SENTENCES[sentence % len(SENTENCES)]
                sentence += 1
                audio = synth(
                    text,
                    VOICES[k % len(VOICES)],
                    int(rng.integers(150, 200)),
                    int(rng.integers(35, 65)),
                    root / "wav" / f"tmp{k}_{i}.wav",
                )
                (root / "wav" / f"tmp{k}_{i}.wav").unlink()
                words, punct = words_and_punct(text)
                sups.append(
                    SupervisionSegment(
                        id=f"talk{k}_{i}",
                        recording_id=f"talk{k}",
                        start=offset / 16000,
                        duration=len(audio) / 16000,
                        speaker=f"spk{k}",
                        language="English",
                        text=text,
                        custom={"words": words, "punct": punct},
                    )
                )
                pieces += [audio, np.zeros(4800, dtype=np.float32)]
                offset += len(audio) + 4800
            wav = root / "wav" / f"talk{k}.wav"
            sf.write(wav, np.concatenate(pieces), 16000, subtype="PCM_16")
            recordings.append(Recording.from_file(wav, recording_id=f"talk{k}"))
            supervisions += sups
        RecordingSet.from_recordings(recordings).to_file(root / "manifests" / f"mustc_recordings_{split}.jsonl.gz")
        SupervisionSet.from_segments(supervisions).to_file(root / "manifests" / f"mustc_supervisions_{split}.jsonl.gz")
        ids[split] = [s.id for s in supervisions]
    return ids


def cached_corpus() -> Path:
    """The corpus built once per machine (and fixture version) under the temp dir; shared by test modules."""
    import fcntl
    import hashlib
    import tempfile

    key = hashlib.sha1(("v2" + "|".join(SENTENCES) + repr(SPLITS) + repr(VOICES)).encode()).hexdigest()[:10]
    root = Path(tempfile.gettempdir()) / f"punct-acoustic-fixture-{key}"
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / ".corpus.done").exists():
            make_corpus(root)
            (root / ".corpus.done").write_text("")
        if not (root / "fbank" / ".done").exists():
            compute_fbank(root / "manifests", root / "fbank")
            (root / "fbank" / ".done").write_text("")
    return root


def compute_fbank(manifest_dir: Path, fbank_dir: Path, nj: int = 2) -> None:
    """Stage 1 in-process (the same functions the entry point calls)."""
    from punct.bin.compute_features import main

    for job in range(1, nj + 1):
        main(
            [
                "--manifest-dir",
                str(manifest_dir),
                "--fbank-dir",
                str(fbank_dir),
                "--prefix",
                "mustc",
                "--splits",
                "train",
                "dev",
                "test",
                "--job",
                str(job),
                "--nj",
                str(nj),
            ]
        )
    main(
        [
            "--manifest-dir",
            str(manifest_dir),
            "--fbank-dir",
            str(fbank_dir),
            "--prefix",
            "mustc",
            "--splits",
            "train",
            "dev",
            "test",
            "--nj",
            str(nj),
            "--merge",
        ]
    )
