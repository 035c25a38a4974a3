"""Tiny fixtures for the ParCzech model tests: a WordPiece vocabulary, a random 2-layer BERT,
a tiny MmConfig and a two-word-per-second synthetic recording with its segment manifests."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from punct.models.cross_attention.config import MmConfig
from tests.helpers import tiny_bert

VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "pes",
    "kočka",
    "dům",
    "je",
    "a",
    "to",
    "ne",
    "ano",
    "##ka",
    "##y",
    "pr",
    "##ah",
    "##a",
    "v",
    "na",
]

WORDS = ["pes", "je", "kočka", "a", "to", "praha", "ne", "ano"]


def cli_options(**values) -> list[str]:
    """``--name value`` options of ``punct.bin.train_mm`` from keyword arguments (``_`` as ``-``)."""
    return [x for name, value in values.items() for x in (f"--{name.replace('_', '-')}", str(value))]


# the smallest cross-attention model of the command-line tests: one block of each kind, 16-word segments
TINY_MODEL = {
    "head_hidden": 8,
    "conv_channels": "8,8,8,16,16,16,16",
    "audio_layers": 1,
    "audio_heads": 2,
    "audio_ffn": 16,
    "mm_layers": 1,
    "mm_heads": 2,
    "mm_ffn": 16,
    "max_words": 16,
}
# their training: one CPU thread, small dev batches, 64-token texts
TINY_TRAINING = {"eval_batch_size": 4, "lr": "1e-3", "num_threads": 1, "max_length": 64, "device": "cpu"}
NO_DROPOUT = {"head_dropout": 0, "conv_dropout": 0, "audio_dropout": 0, "mm_dropout": 0}


def tiny_config(**kw) -> MmConfig:
    values = dict(
        head_hidden=8,
        max_length=64,
        conv_channels=(8, 8, 8, 16, 16, 16, 16),
        audio_layers=1,
        audio_heads=2,
        audio_ffn=16,
        mm_layers=1,
        mm_heads=2,
        mm_ffn=16,
        max_words=16,
        batch_size=2,
        num_epochs=1,
        eval_batch_size=4,
        lr=1e-3,
        num_threads=1,
        log_interval=1,
    )
    values.update(kw)
    return MmConfig(**values)


def make_tokenizer(tmp_path):
    return tiny_bert.make_tokenizer(tmp_path, VOCAB, strip_accents=False)


def make_encoder(seed: int = 0):
    return tiny_bert.make_encoder(len(VOCAB), hidden_size=16, seed=seed)


@pytest.fixture
def tokenizer(tmp_path):
    return make_tokenizer(tmp_path)


def write_corpus(root, num_segments: int = 6, seed: int = 0):
    """One 16 kHz recording of tones (one per word, 0.4 s each, 0.1 s pauses) and stage-3 style
    manifests for splits train/dev/test that all use it; returns the data folder."""
    import soundfile as sf

    rng = np.random.default_rng(seed)
    sr, word_s, pause_s = 16000, 0.4, 0.1
    segs, t, audio = [], 0.0, []
    for s in range(num_segments):
        n = 5 + s % 3
        words = [WORDS[(s + i) % len(WORDS)] for i in range(n)]
        punct = ["blank"] * n
        punct[-1] = "." if s % 2 else "?"
        if n > 5:
            punct[1] = ","
        case = ["cap"] + ["blank"] * (n - 1)
        items, start = [], t
        for i, w in enumerate(words):
            freq = 200 + 60 * WORDS.index(w) + (300 if punct[i] != "blank" else 0)
            tt = np.arange(int(word_s * sr)) / sr
            audio.append(0.3 * np.sin(2 * np.pi * freq * tt) + 0.01 * rng.standard_normal(len(tt)))
            audio.append(np.zeros(int(pause_s * sr)))
            items.append({"symbol": w, "start": round(t, 4), "duration": word_s})
            t += word_s + pause_s
        segs.append(
            {
                "id": f"rec_{s}",
                "recording_id": "rec",
                "start": round(start, 4),
                "duration": round(t - start, 4),
                "channel": 0,
                "text": " ".join(words),
                "language": "Czech",
                "speaker": "spk",
                "custom": {"words": words, "punct": punct, "case": case},
                "alignment": {"word": items},
            }
        )
    wav = root / "rec.wav"
    sf.write(wav, np.concatenate(audio).astype(np.float32), sr)
    from lhotse import Recording

    rec = Recording.from_file(wav).to_dict()
    data = root / "segments"
    data.mkdir(parents=True, exist_ok=True)
    for split in ("train", "dev", "test"):
        with gzip.open(data / f"parczech_supervisions_{split}.jsonl.gz", "wt", encoding="utf-8") as f:
            for d in segs:
                f.write(json.dumps(d) + "\n")
        with gzip.open(data / f"parczech_recordings_{split}.jsonl.gz", "wt", encoding="utf-8") as f:
            f.write(json.dumps(rec) + "\n")
    return data


def random_live_model(root, num_segments: int):
    """The tiny corpus under ``root/corpus`` and a random multimodal model saved as ``root/mm.pt`` (first_word
    exclude, no dropout, random heads that do not all say blank): what the live-caption tests stream through.
    Returns (model in eval mode, its config, the corpus' data folder)."""
    import torch

    from punct.models.cross_attention.checkpoint import save_model
    from punct.models.cross_attention.model import build_model

    (root / "corpus").mkdir()
    data = write_corpus(root / "corpus", num_segments=num_segments)
    bert = root / "bert"
    make_encoder().save_pretrained(bert)
    make_tokenizer(root).save_pretrained(bert)
    cfg = tiny_config(bert_model=str(bert), first_word="exclude", head_dropout=0.0, conv_dropout=0.0,
                      audio_dropout=0.0, mm_dropout=0.0)  # fmt: skip
    torch.manual_seed(0)
    model = build_model("mm", cfg).eval()
    with torch.no_grad():
        for p in model.text.heads.parameters():
            p.normal_(0, 2.0)
    save_model(root / "mm.pt", model, "mm", cfg)
    return model, cfg, data
