"""With the frozen acoustic model as its audio encoder (``sound_encoder: am``) the cross-attention model
learns punctuation that is only in the audio; with the audio permuted it cannot.

The synthetic task and corpus of tests/models/cross_attention/test_train_learns.py (every word is "je"; a comma
after a word is heard only as a 2 kHz tone in the word's last 0.2 s), trained and decoded by ``punct.bin.train_mm.main``
with ``--sound-encoder am --am-dir <a tiny random TDNN AM>`` (tests/helpers/tiny_am.py: 13 layers of
width 32, BatchNorm statistics calibrated so that layer 12 still depends on its input; the AM is not
trained, so the tone reaches the model only through random features of the MFCC):

* ``mm`` with the shared word-position embeddings must reach a high test comma F1, also on the words
  of multi-word segments, and record the AM folder (absolute) in its checkpoint's config;
* the same model with ``--random-audio true`` (the segment's samples permuted before the AM) sees no
  usable cue: at most the label-blind F1 2q / (1 + q) (~0.46) plus noise.

Frames: the AM's 100 frames/s averaged in groups of 4 (40 ms), each word's frames by
:class:`punct.models.cross_attention.geometry.AmFrameGeometry`.  Notes from tuning (one thread, ~40 s on an idle
2-core machine).  The task is learnt more slowly than with the conv encoder (whose 0.512 s latent frames give
about one frame per word; here a word has ~11 frames, the cue in ~5 of them), although the words' AM frames
separate comma from no comma linearly (a least-squares probe on word-mean frames: 100 % on held-out words).
With the conv test's one multimodal block and 18-30 epochs the test comma F1 stopped at 0.6-0.75 for
seeds 1-4 (train loss stuck near 0.14; frame strides 4 or 10 and layers 4 or 12 alike); two blocks and 40
epochs give 0.85-0.98 for seeds 0-4 (0.978, 0.893, 0.900, 0.970, 0.850), the random-audio control at most 0.36,
hence the threshold 0.8 (``PUNCT_TEST_LEARNS_SEED`` sets the seed, default 0).
"""

from __future__ import annotations

import json

import torch

from punct.bin import train_mm
from tests.helpers.tiny_am import write_am_dir
from tests.models.cross_attention.test_train_learns import BLIND_MAX_F1, MODEL, SEED, comma_f1, corpus  # noqa: F401  (corpus: a fixture)

TRAIN = [
    "--batch-size",
    "4",
    "--eval-batch-size",
    "32",
    "--num-epochs",
    "40",
    "--lr",
    "3e-4",
    "--lr-new",
    "2e-3",
    "--warmup-fraction",
    "0.1",
    "--num-threads",
    "1",
    "--log-interval",
    "1000",
    "--device",
    "cpu",
]
AM = ["--sound-encoder", "am", "--am-layer", "12", "--am-frame-stride", "4", "--mm-layers", "2"]
AM_MIN_F1 = 0.8  # the multimodal model with the AM encoder (label-blind ceiling ~0.46, see BLIND_MAX_F1)


def _train(corpus, am_dir, exp_dir, *options):  # noqa: F811
    data, bert, _ = corpus
    train_mm.main(
        [
            "--data-dir",
            str(data),
            "--prefix",
            "parczech",
            "--bert-model",
            str(bert),
            "--exp-dir",
            str(exp_dir),
            "--seed",
            str(SEED),
            "--model",
            "mm",
            "--positional",
            "true",
            "--am-dir",
            str(am_dir),
            *MODEL,
            *TRAIN,
            *AM,
            *options,
        ]
    )
    assert (exp_dir / ".done").is_file()
    return exp_dir, [h["dev_f1_,"] for h in json.loads((exp_dir / "history.json").read_text())]


def test_mm_with_the_am_encoder_learns_punctuation_that_is_only_in_the_audio(corpus, tmp_path):  # noqa: F811
    _, _, q = corpus
    am_dir = tmp_path / "am"
    write_am_dir(am_dir, seed=SEED)
    mm, mm_dev = _train(corpus, am_dir, tmp_path / "mm_pe_am")
    rand, rand_dev = _train(corpus, am_dir, tmp_path / "mm_pe_random_am", "--random-audio", "true")
    f1 = {"mm+PE am": comma_f1(mm), "mm+PE am multi-word": comma_f1(mm, 2), "random audio am": comma_f1(rand)}
    print(
        f"seed {SEED}: test comma rate {q:.3f} (label-blind F1 {2 * q / (1 + q):.3f}); test comma F1: "
        + ", ".join(f"{k} {v:.3f}" for k, v in f1.items())
        + "; dev comma F1 by epoch: "
        + "; ".join(
            f"{k} " + " ".join(f"{x:.2f}" for x in v) for k, v in (("mm+PE am", mm_dev), ("random audio am", rand_dev))
        )
    )
    assert f1["mm+PE am"] > AM_MIN_F1 and f1["mm+PE am multi-word"] > AM_MIN_F1, f1
    assert f1["random audio am"] < BLIND_MAX_F1 and max(rand_dev) < BLIND_MAX_F1, (f1, rand_dev)
    saved = torch.load(mm / "best-valid-f1.pt", map_location="cpu", weights_only=False)
    assert saved["config"]["sound_encoder"] == "am" and saved["config"]["am_dir"] == str(am_dir.resolve())


ALIGNED_EPOCHS = 12


def test_aligned_attention_learns_the_audio_cue_without_learning_the_alignment(corpus, tmp_path):  # noqa: F811
    """``mm_attention: aligned`` (each word's tokens read only its own frames and the pause after it): one
    multimodal block, no positional embeddings and 12 epochs suffice, where full attention needs two blocks,
    the embeddings and 40 epochs (above).  Measured: aligned, test comma F1 1.00 / 1.00 / 0.97 for seeds 0-2
    (dev 1.00 from epoch 3 / 3 / 2); the same run with full attention 0.59 / 0.65 (seeds 0-1)."""
    am_dir = tmp_path / "am"
    write_am_dir(am_dir, seed=SEED)
    aligned, dev = _train(
        corpus,
        am_dir,
        tmp_path / "mm_aligned_am",
        "--positional",
        "false",
        "--mm-layers",
        "1",
        "--mm-attention",
        "aligned",
        "--mm-attention-context",
        "0",
        "--num-epochs",
        str(ALIGNED_EPOCHS),
    )
    f1 = {"aligned": comma_f1(aligned), "aligned multi-word": comma_f1(aligned, 2)}
    print(f"seed {SEED}: test comma F1 {f1}; dev comma F1 by epoch: " + " ".join(f"{x:.2f}" for x in dev))
    assert f1["aligned"] > AM_MIN_F1 and f1["aligned multi-word"] > AM_MIN_F1, f1
