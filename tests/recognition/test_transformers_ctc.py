"""Long-recording recognition with a local transformers CTC folder (``--asr-model``): a tiny random
``Wav2Vec2ForCTC`` saved with its processor recognises Czech espeak-ng speech (22.05 kHz, resampled) through
punct.bin.recognise_long; its words are checked against the model's own greedy transcript (transformers'
tokenizer decoding), its times against the conv stack's frame rate."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from lhotse import Recording, RecordingSet

from punct.bin import recognise_long
from punct.labels import read_recognised_words
from punct.recognition.chunks import ChunkConfig, plan_chunks
from punct.recognition.recogniser import load_audio
from punct.recognition.transformers_ctc import (
    UNKNOWN,
    ctc_vocabulary,
    fold_log_probs,
    frame_shift_seconds,
    load_transformers_ctc,
    output_frames,
)
from tests.helpers.tiny_wav2vec2 import save_wav2vec2_ctc

SENTENCES = [
    "Dobrý den, vážení poslanci.",
    "Zákon o státním rozpočtu byl dnes schválen.",
    "Ministr financí odpoví na otázky.",
    "Přejdeme k dalšímu bodu programu.",
]
REPO = Path(__file__).resolve().parents[2]
DURATIONS = {"long": 40.0, "short": 6.0}  # at least: "long" gets two 30 s chunks, "short" one


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return save_wav2vec2_ctc(tmp_path_factory.mktemp("w2v") / "model", sharpness=10.0)


def speak(seconds: float, seed: int) -> tuple:
    """Czech espeak-ng sentences with 0.5 s pauses, at least ``seconds`` long, at espeak's own rate."""
    from punct.synthesis.tts import Espeak, Voice

    try:
        engine = Espeak.get()
    except RuntimeError as e:
        pytest.skip(str(e))
    rng = np.random.default_rng(seed)
    parts, total, rate = [], 0.0, engine.sample_rate
    while total < seconds:
        voice = Voice("cs", variant=f"m{rng.integers(1, 5)}", rate=int(rng.integers(150, 190)))
        audio = engine.synthesize(SENTENCES[int(rng.integers(len(SENTENCES)))], voice).audio
        parts += [audio, np.zeros(rate // 2, np.float32)]
        total += len(audio) / rate + 0.5
    return np.concatenate(parts), rate


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    speak(0.1, seed=0)  # skips the module here when espeak-ng is missing
    recs = []
    for k, (rec_id, seconds) in enumerate(DURATIONS.items()):
        # espeak-ng keeps state between syntheses (tts.py), so what earlier tests spoke in this process would
        # change the audio: each recording is spoken by a fresh process, the same whatever ran before
        script = (
            "import sys, soundfile as sf; from tests.recognition.test_transformers_ctc import speak; "
            f"audio, rate = speak({seconds!r}, seed={k}); sf.write(sys.argv[1], audio, rate)"
        )
        subprocess.run([sys.executable, "-c", script, str(root / f"{rec_id}.wav")], check=True, cwd=REPO)
        recs.append(Recording.from_file(root / f"{rec_id}.wav", recording_id=rec_id))
    (root / "manifests").mkdir()
    RecordingSet.from_recordings(recs).to_file(root / "manifests" / "parczech_recordings_all.jsonl.gz")
    return root


def args(corpus, model, out, *extra):
    return [
        "--prefix",
        "parczech",
        "--manifest-dir",
        str(corpus / "manifests"),
        "--asr-model",
        str(model),
        "--out-dir",
        str(out),
        *extra,
    ]


def model_greedy(model_dir, audio: np.ndarray):
    """The model's own greedy transcript (transformers' CTC tokenizer decoding) and word times in seconds."""
    from transformers import AutoModelForCTC, AutoProcessor

    processor = AutoProcessor.from_pretrained(model_dir, local_files_only=True)
    model = AutoModelForCTC.from_pretrained(model_dir, local_files_only=True).eval()
    inputs = processor(audio, sampling_rate=16000, return_tensors="pt")
    with torch.no_grad():
        ids = model(inputs.input_values).logits[0].argmax(-1)
    out = processor.tokenizer.decode(ids, output_word_offsets=True)
    words = [w.replace("<unk>", UNKNOWN) for w in out.text.split()]
    return words, [(o["start_offset"] * 0.02, o["end_offset"] * 0.02) for o in out.word_offsets]


def test_frame_shift_and_output_frames(model_dir, corpus):
    from transformers import AutoModelForCTC, Wav2Vec2Config

    assert frame_shift_seconds(Wav2Vec2Config(), 16000) == pytest.approx(0.02)  # 5*2*2*2*2*2*2 = 320 samples
    assert frame_shift_seconds(Wav2Vec2Config(), 8000) == pytest.approx(0.04)
    small = Wav2Vec2Config(conv_dim=(8, 8, 8), conv_kernel=(10, 8, 4), conv_stride=(5, 4, 4))
    assert frame_shift_seconds(small, 16000) == pytest.approx(0.005)
    with pytest.raises(ValueError, match="cannot tell the duration of an output frame"):
        frame_shift_seconds(SimpleNamespace(), 16000)
    model = AutoModelForCTC.from_pretrained(model_dir, local_files_only=True).eval()
    kernels, strides = model.config.conv_kernel, model.config.conv_stride
    rng = np.random.default_rng(0)
    for n in (400, 719, 720, 16000, 16321, 48000):
        with torch.no_grad():
            frames = model(torch.from_numpy(rng.normal(size=(1, n)).astype(np.float32))).logits.shape[1]
        assert output_frames(n, kernels, strides) == frames, n
        assert abs(frames * 0.02 - n / 16000) < 0.025  # the frames cover the audio but its last 25 ms window
    assert output_frames(399, kernels, strides) == 0
    recogniser = load_transformers_ctc(model_dir)
    assert recogniser.frame_shift == pytest.approx(0.02) and recogniser.sample_rate == 16000
    assert recogniser.chunk_posteriors(np.zeros(399, np.float32)).shape == (0, len(recogniser.symbols))
    # a model at 8 kHz: the 22.05 kHz recording is resampled to it, and a frame is 40 ms
    slow = load_transformers_ctc(save_wav2vec2_ctc(corpus / "w2v_8k", sampling_rate=8000))
    rec = Recording.from_file(corpus / "short.wav")
    audio = load_audio(rec, slow.sample_rate)
    assert rec.sampling_rate == 22050 and len(audio) == pytest.approx(rec.duration * 8000, abs=1)
    assert slow.frame_shift == pytest.approx(0.04)
    assert slow.chunk_posteriors(audio).shape[0] == output_frames(len(audio), kernels, strides)
    assert abs(output_frames(len(audio), kernels, strides) * 0.04 - rec.duration) < 0.05


def test_vocabulary_folds_specials_case_and_unnamed_outputs():
    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3, "|": 4, "A": 5, "B": 6, "a": 7, "Č": 8, "<extra>": 12}
    specials = {"<s>", "</s>", "<unk>", "|", "<extra>"}
    v = ctc_vocabulary(vocab, 10, "<pad>", "|", "<unk>", specials, where="m")
    assert v.symbols == ("<blk>", "|", UNKNOWN, "a", "b", "č")
    # column 9 has no token: blank; <extra> (12) is beyond the outputs: never emitted
    assert v.groups == ((0, 1, 2, 9), (4,), (3,), (5, 7), (6,), (8,))
    lp = np.log(np.random.default_rng(0).dirichlet(np.ones(10), size=7))
    folded = fold_log_probs(lp, v.groups)
    assert folded.shape == (7, 6) and np.allclose(np.exp(folded).sum(1), 1, atol=1e-5)
    assert np.allclose(np.exp(folded[:, 0]), np.exp(lp[:, [0, 1, 2, 9]]).sum(1), atol=1e-6)
    assert np.allclose(np.exp(folded[:, 3]), np.exp(lp[:, 5]) + np.exp(lp[:, 7]), atol=1e-6)
    assert np.array_equal(folded[:, 4], lp[:, 6].astype(np.float32))
    with pytest.raises(ValueError, match=r"^m: token 'ch' is not one character"):
        ctc_vocabulary({**vocab, "ch": 9}, 10, "<pad>", "|", "<unk>", specials, where="m")
    with pytest.raises(ValueError, match=r"^m: the word delimiter token '\|' is not one of the model's 4 outputs"):
        ctc_vocabulary(vocab, 4, "<pad>", "|", "<unk>", specials, where="m")


def test_one_chunk_gives_the_models_greedy_transcript(model_dir, corpus, tmp_path):
    out = tmp_path / "words"
    assert recognise_long.main(args(corpus, model_dir, out, "--chunk-seconds", "100")) == 0
    for rec_id in DURATIONS:
        rec = Recording.from_file(corpus / f"{rec_id}.wav")
        expected, times = model_greedy(model_dir, load_audio(rec, 16000))
        words = read_recognised_words(out / f"{rec_id}.words.tsv")
        assert len(words) > 2 and [w.word for w in words] == expected
        assert all(w.word == w.word.lower() for w in words)
        assert all(0 <= w.start < w.end <= rec.duration + 0.02 for w in words)
        assert all(a.end <= b.start for a, b in zip(words, words[1:]))
        # CTC segmentation of the greedy transcript puts each word where greedy decoding found it (within two
        # 20 ms frames: the model's output layer is sharpened, so that one alignment clearly wins)
        assert max(abs(w.start - t[0]) for w, t in zip(words, times)) <= 0.041
        stats = json.loads((out / f"{rec_id}.stats.json").read_text())
        assert stats["chunks"] == 1 and stats["words"] == len(expected) and stats["model"] == str(model_dir.resolve())


def test_chunked_recognition_jobs_and_model_change(model_dir, corpus, tmp_path):
    other = save_wav2vec2_ctc(tmp_path / "other", seed=1)  # made before the first run: its files are older
    out = tmp_path / "words"
    for job in (1, 2):
        assert recognise_long.main(args(corpus, model_dir, out, "--job", str(job), "--nj", "2")) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(
        f"{r}.{kind}" for r in DURATIONS for kind in ("words.tsv", "stats.json")
    )
    for rec_id in DURATIONS:
        rec = Recording.from_file(corpus / f"{rec_id}.wav")
        audio = load_audio(rec, 16000)
        chunks = plan_chunks(len(audio), 16000, ChunkConfig())
        stats = json.loads((out / f"{rec_id}.stats.json").read_text())
        assert stats["chunks"] == len(chunks) and len(chunks) == (2 if rec_id == "long" else 1)
        assert stats["matched"] + stats["discarded"] + stats["concatenated"] == len(chunks) - 1
        words = read_recognised_words(out / f"{rec_id}.words.tsv")
        assert stats["words"] == len(words) > 0
        assert all(0 <= w.start < w.end <= rec.duration + 0.02 for w in words)
        assert all(a.end <= b.start for a, b in zip(words, words[1:]))
        # every merged word is a word of the greedy transcript of a chunk that covers it
        chunk_words = [set(model_greedy(model_dir, audio[c.start : c.end])[0]) for c in chunks]
        for w in words:
            assert any(
                w.word in found
                for c, found in zip(chunks, chunk_words)
                if c.start / 16000 <= w.start and w.end <= c.end / 16000 + 0.02
            ), w
    mtimes = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    recognise_long.main(args(corpus, model_dir, out))
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == mtimes  # all done: nothing rewritten
    # another model into the same folder: its files are older than the words, but the stats name the first model
    recognise_long.main(args(corpus, other, out))
    assert all(p.stat().st_mtime_ns != mtimes[p.name] for p in out.iterdir())
    recognise_long.main(args(corpus, other, out, "--summary", str(tmp_path / "summary.txt")))
    summary = (tmp_path / "summary.txt").read_text()
    assert "recordings 2," in summary and f"recognised with {other.resolve()}\n" in summary


def test_not_a_model_folder(corpus, tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="empty: no such folder, or it is empty"):
        recognise_long.main(args(corpus, tmp_path / "empty", tmp_path / "words"))
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "README").write_text("no model here\n")
    with pytest.raises(FileNotFoundError, match=r"notes/config\.json: no such file; --asr-model needs"):
        recognise_long.main(args(corpus, tmp_path / "notes", tmp_path / "words"))


def test_folder_made_for_a_language_model_decodes_greedily(model_dir, tmp_path, caplog):
    """A Wav2Vec2ProcessorWithLM folder: AutoProcessor would need pyctcdecode; the recogniser loads the parts."""
    folder = tmp_path / "with_lm"
    shutil.copytree(model_dir, folder)
    (folder / "language_model").mkdir()
    for name in ("processor_config.json", "tokenizer_config.json"):
        config = json.loads((folder / name).read_text())
        config["processor_class"] = "Wav2Vec2ProcessorWithLM"
        (folder / name).write_text(json.dumps(config))
    with caplog.at_level(logging.WARNING):
        recogniser = load_transformers_ctc(folder)
    assert "language_model/ is not read (its ARPA form can be given to recognise_long --lm" in caplog.text
    assert recogniser.symbols == load_transformers_ctc(model_dir).symbols and "Hz)" in recogniser.name
