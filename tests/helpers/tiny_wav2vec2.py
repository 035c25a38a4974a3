"""A tiny randomly initialised wav2vec2 CTC model saved as a transformers folder (processor + model), the form
``--asr-model`` takes: hidden size 32, 2 transformer layers, a 16-channel conv stack with wav2vec2's strides
(320 samples, 20 ms, per output frame at 16 kHz), and a Czech lowercase character vocabulary."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import torch

CZECH_LETTERS = "aábcčdďeéěfghiíjklmnňoópqrřsštťuúůvwxyýzž"
TOKENS = ["<pad>", "<unk>", "|", *CZECH_LETTERS]


def save_wav2vec2_ctc(
    folder: Path, seed: int = 0, tokens: Sequence[str] = TOKENS, sampling_rate: int = 16000, sharpness: float = 1.0
) -> Path:
    """Writes vocab.json, the tokenizer, the feature extractor and a random ``Wav2Vec2ForCTC`` to ``folder``.

    ``sharpness`` scales the output layer: the same greedy transcript, but peaked posteriors (a random
    model's are nearly flat, so that any alignment of its transcript is about as likely as another)."""
    from transformers import (
        Wav2Vec2Config,
        Wav2Vec2CTCTokenizer,
        Wav2Vec2FeatureExtractor,
        Wav2Vec2ForCTC,
        Wav2Vec2Processor,
    )

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.json").write_text(
        json.dumps({t: i for i, t in enumerate(tokens)}, ensure_ascii=False), encoding="utf-8"
    )
    tokenizer = Wav2Vec2CTCTokenizer(
        str(folder / "vocab.json"),
        unk_token="<unk>",
        pad_token="<pad>",
        word_delimiter_token="|",
        bos_token=None,
        eos_token=None,
    )
    feature_extractor = Wav2Vec2FeatureExtractor(
        feature_size=1, sampling_rate=sampling_rate, padding_value=0.0, do_normalize=True, return_attention_mask=False
    )
    config = Wav2Vec2Config(
        vocab_size=len(tokens),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        conv_dim=(16,) * 7,
        conv_kernel=(10, 3, 3, 3, 3, 2, 2),
        conv_stride=(5, 2, 2, 2, 2, 2, 2),
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=2,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    Wav2Vec2Processor(feature_extractor=feature_extractor, tokenizer=tokenizer).save_pretrained(folder)
    model = Wav2Vec2ForCTC(config).eval()
    with torch.no_grad():
        model.lm_head.weight *= sharpness
        model.lm_head.bias *= sharpness
    model.save_pretrained(folder)
    return folder
