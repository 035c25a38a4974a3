"""The punctuation TDNN learns punctuation that only the acoustic frames carry.

Synthetic splits (tests/helpers/synthetic_splits.py): the pause after a word grows with its label and a
"rise" marks questions in the acoustic frames; here the pause frames also carry a class-specific
level in one more acoustic dimension (as a pitch contour would), while the BERT vectors are pure
noise.  A TDNN that reads the acoustic side must score well above chance on held-out utterances;
the same training on acoustic frames replaced by noise must not (so a broken acoustic path fails).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from punct.io.shards import MatrixReader, write_shard
from punct.models.punct_tdnn.config import TrainTdnnConfig
from punct.models.punct_tdnn.dataset import open_split
from punct.models.punct_tdnn.infer import corpus_predictions
from punct.models.punct_tdnn.tdnn import TdnnConfig
from punct.models.punct_tdnn.train import train_tdnn
from punct.scoring.punct_scores import score
from tests.helpers.synthetic_splits import make_split

EPOCHS = {"window": 10, "utterance": 20}
# a short window (61 frames) keeps the test fast; the layers are the paper's kind
SMALL = TdnnConfig(
    fusion_dim=16,
    channels=(12, 12, 8, 8, 8, 8),
    kernels=(3,) * 7,
    dilations=(1, 2, 1, 2, 1, 2, 1),
    window=61,
    head_dim=12,
    head_norm_per_channel=True,
)


MARK_LEVEL = {",": -1.0, ".": 1.0, "?": 2.0}


def mark_pauses(paths, root, split: str):
    """The split's acoustic shard with the pause after each marked word set to its mark's level in the
    last dimension; returns the new scp."""
    from lhotse import CutSet

    reader = MatrixReader(paths["acoustic_scp"])
    marked = []
    for cut in CutSet.from_file(paths["cuts"]):
        sup = cut.supervisions[0]
        acoustic = np.array(reader[cut.id])
        items = sup.alignment["word"]
        for i, (item, label) in enumerate(zip(items, sup.custom["punct"])):
            end = round((item.start + item.duration - cut.start) * 100)
            nxt = round((items[i + 1].start - cut.start) * 100) if i + 1 < len(items) else acoustic.shape[0]
            if label in MARK_LEVEL:
                acoustic[max(end - 2, 0) : max(nxt, end), -1] = MARK_LEVEL[label]
        marked.append((cut.id, acoustic))
    prefix = root / "exp" / "marked_am" / split / "emb"
    write_shard(prefix, marked)
    return prefix.with_suffix(".scp")


def noise_acoustics(paths, root, split: str, seed: int):
    """A copy of the split's acoustic shard with every matrix replaced by noise of the same shape."""
    rng = np.random.default_rng(seed)
    reader = MatrixReader(paths["acoustic_scp"])
    noisy = [(key, rng.normal(0, 1, reader[key].shape).astype(np.float32)) for key in list(reader.keys())]
    prefix = root / "exp" / "noise_am" / split / "emb"
    write_shard(prefix, noisy)
    return prefix.with_suffix(".scp")


@pytest.fixture(scope="module")
def splits(tmp_path_factory):
    root = tmp_path_factory.mktemp("learns")
    out = {}
    for i, (split, utts) in enumerate((("train", 48), ("dev", 16))):
        paths = make_split(root, split, num_utts=utts, text_dim=4, am_dim=3, seed=50 + i, text_signal=0.0)
        out[split] = (paths, mark_pauses(paths, root, split), noise_acoustics(paths, root, split, seed=60 + i))
    return out


def train_and_score(splits, tmp_path, unit: str, noisy: bool, seed: int = 3, **overrides) -> float:
    torch.set_num_threads(1)
    corpora = {}
    for split, (paths, marked_scp, noise_scp) in splits.items():
        corpora[split] = open_split(paths["cuts"], noise_scp if noisy else marked_scp, paths["text_scp"])
    cfg = TrainTdnnConfig(
        model=SMALL,
        example_unit=unit,
        optimizer="adam",
        lr=1e-2,
        batch_size=32,
        utterances_per_batch=4,
        epochs=EPOCHS[unit],
        class_weight_power=0.5,
        loss_reduction="mean",
        num_workers=0,
        log_interval=0,
        **overrides,
    )
    model = train_tdnn(cfg, corpora["train"], None, tmp_path, torch.device("cpu"), seed=seed, progress=False)
    ref, post = corpus_predictions(model, corpora["dev"], torch.device("cpu"))
    return score(ref, post.argmax(axis=1), corpora["dev"].classes).overall["f1"]


@pytest.mark.parametrize("unit", ["utterance", "window"])
def test_tdnn_learns_punctuation_from_the_acoustics(splits, tmp_path, unit):
    learned = train_and_score(splits, tmp_path / "real", unit, noisy=False)
    ablated = train_and_score(splits, tmp_path / "noise", unit, noisy=True)
    assert learned > 0.7, f"dev overall F1 {learned:.3f} with the acoustic cues"
    assert ablated < learned - 0.3, f"dev overall F1 {ablated:.3f} on noise vs {learned:.3f} with the cues"


@pytest.mark.parametrize("unit", ["utterance", "window"])
def test_tdnn_learns_with_right_truncation(splits, tmp_path, unit):
    """Half the training examples cut after a word's end (right_truncation): the marks are still learnt, from
    the pause after the word where it arrived and from the cut where it did not."""
    learned = train_and_score(splits, tmp_path, unit, noisy=False, right_truncation=0.5)
    assert learned > 0.7, f"dev overall F1 {learned:.3f} with the acoustic cues, half the examples cut"
