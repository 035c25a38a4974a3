"""Synthetic inputs of stages 7-8 in the data contract's formats (aligned cuts, emb.scp, vec.scp, post.scp).

Each utterance is cut from a longer recording (cut.start > 0, alignment times on the recording's axis).
Words last 5..20 frames; the pause after a word grows with its label (NP 0-2 frames, "," 8-12, "." and
"?" 16-22) and the acoustic vectors mark silence in dimension 0 and a "rise" before "?" in dimension 1,
so the acoustic side carries the label; the BERT vectors and posteriors carry it only weakly.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from punct.io.shards import write_shard
from punct.labels import PUNCT4
from punct.models.punct_tdnn.tdnn import TdnnConfig

PAUSES = {"NP": (0, 3), ",": (8, 13), ".": (16, 23), "?": (16, 23)}
LABEL_P = (0.6, 0.2, 0.15, 0.05)


def make_split(
    root: Path,
    split: str,
    num_utts: int = 12,
    text_dim: int = 6,
    am_dim: int = 5,
    seed: int = 0,
    text_signal: float = 0.3,
) -> dict[str, Path]:
    """Writes <root>/data/fbank/mustc_cuts_<split>_ali.jsonl.gz, <root>/exp/emb_am/<split>/emb.scp and
    <root>/exp/emb_bert/<split>/{vec,post}.scp; returns their paths."""
    from lhotse import CutSet, MonoCut, Recording, SupervisionSegment
    from lhotse.audio import AudioSource
    from lhotse.supervision import AlignmentItem

    rng = np.random.default_rng(seed)
    cuts: list = []
    am, vec, post = [], [], []
    for u in range(num_utts):
        key = f"ted_{split}{u}_0"
        offset = round(float(rng.uniform(1, 5)), 2)  # cut start inside its recording
        frame = int(rng.integers(0, 20))  # leading silence
        labels = [str(rng.choice(PUNCT4.classes, p=LABEL_P)) for _ in range(int(rng.integers(4, 10)))]
        items, spans = [], []
        for i, label in enumerate(labels):
            length = int(rng.integers(5, 21))
            items.append(AlignmentItem(f"w{i}", round(offset + frame / 100, 2), length / 100))
            spans.append((frame, frame + length))
            frame += length + int(rng.integers(*PAUSES[label]))
        num_frames = frame + int(rng.integers(0, 10))
        acoustic = rng.normal(0, 0.3, (num_frames, am_dim)).astype(np.float32)
        acoustic[:, 0] = 1.0  # silence everywhere ...
        for (s, e), label in zip(spans, labels):
            acoustic[s:e, 0] = 0.0  # ... except inside words
            if label == "?":
                acoustic[max(e - 4, s) : e, 1] += 2.0
        index = np.array([PUNCT4.classes.index(x) for x in labels])
        vectors = rng.normal(0, 1, (len(labels), text_dim)).astype(np.float32)
        vectors[np.arange(len(labels)), index % text_dim] += text_signal
        logits = rng.normal(0, 1, (len(labels), 4))
        logits[np.arange(len(labels)), index] += 1.0
        probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
        duration = num_frames / 100
        rec = Recording(
            id=key[:-2],
            sources=[AudioSource(type="file", channels=[0], source="/dev/null")],
            sampling_rate=16000,
            num_samples=int((offset + duration + 1) * 16000),
            duration=offset + duration + 1,
        )
        sup = SupervisionSegment(
            id=key,
            recording_id=rec.id,
            start=0.0,
            duration=duration,
            text=" ".join(f"w{i}" for i in range(len(labels))),
            custom={"words": [f"w{i}" for i in range(len(labels))], "punct": labels},
            alignment={"word": items},
        )
        cuts.append(MonoCut(id=key, start=offset, duration=duration, channel=0, recording=rec, supervisions=[sup]))
        am.append((key, acoustic))
        vec.append((key, vectors))
        post.append((key, probs.astype(np.float32)))
    paths = {
        "cuts": root / "data" / "fbank" / f"mustc_cuts_{split}_ali.jsonl.gz",
        "acoustic_scp": root / "exp" / "emb_am" / split / "emb.scp",
        "text_scp": root / "exp" / "emb_bert" / split / "vec.scp",
        "bert_post_scp": root / "exp" / "emb_bert" / split / "post.scp",
    }
    paths["cuts"].parent.mkdir(parents=True, exist_ok=True)
    CutSet.from_cuts(cuts).to_file(paths["cuts"])
    write_shard(root / "exp" / "emb_am" / split / "emb", am)
    write_shard(root / "exp" / "emb_bert" / split / "vec", vec)
    write_shard(root / "exp" / "emb_bert" / split / "post", post)
    return paths


def randomise_batch_norms(model: torch.nn.Module) -> None:
    """Non-trivial BatchNorm running statistics and affine values, so that eval-mode BatchNorm matters."""
    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm1d):
            module.running_mean.uniform_(0.0, 0.2)
            module.running_var.uniform_(0.05, 0.5)
            module.weight.data.uniform_(0.5, 1.5)
            module.bias.data.uniform_(-0.2, 0.2)


SMALL_TDNN = TdnnConfig(fusion_dim=8, channels=(6, 6, 5, 5, 4, 4), head_dim=5)


def small_training(unit: str = "window", **overrides):
    """The training config of the small-TDNN tests: Adam at 0.01, batches of 16 windows (or 3 utterances), two
    epochs of at most 48 batches, no loader workers, no logging; ``overrides`` replace any of it."""
    from punct.models.punct_tdnn.config import TrainTdnnConfig

    values = dict(
        model=SMALL_TDNN,
        example_unit=unit,
        optimizer="adam",
        lr=0.01,
        batch_size=16,
        utterances_per_batch=3,
        epochs=2,
        epoch_limit=48,
        loss_reduction="mean",
        num_workers=0,
        log_interval=0,
    )
    return TrainTdnnConfig(**{**values, **overrides})


def train_dev_splits(root: Path, seed: int, num_utts: int = 8) -> dict[str, object]:
    """Opened synthetic train and dev splits (3-dim text, 2-dim acoustic vectors) for the training tests."""
    from punct.models.punct_tdnn.dataset import open_split

    out = {}
    for i, split in enumerate(("train", "dev")):
        p = make_split(root, split, num_utts=num_utts, text_dim=3, am_dim=2, seed=seed + i)
        out[split] = open_split(p["cuts"], p["acoustic_scp"], p["text_scp"])
    return out
