"""Per-word vectors and posteriors of a trained text-only (punct9 + case) model (``exp/text``).

The EfficientPunct TDNN on segments (stage 5 of the speech-informed ITN recipe) takes its text half from the
text-only model of stage 4 (:class:`punct.models.cross_attention.model.TextOnlyModel`, a PunctBert with the punctuation
and case heads): for every word the final hidden state at its last sub-token (the vector fused into
the TDNN's frames) and the softmax of both heads (the text side of the ensemble).  The segments are
encoded exactly as in training and decoding (:class:`punct.models.cross_attention.data.ItnDataset`), so the posteriors'
argmax is the text-only row's prediction.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import numpy as np
import torch
from lhotse.utils import Pathlike

from punct.models.cross_attention.checkpoint import load_model
from punct.models.cross_attention.config import MmConfig
from punct.models.cross_attention.data import ItnDataset, loader, to_device
from punct.models.cross_attention.model import CASE_HEAD, PUNCT_HEAD, TextOnlyModel

HEADS: tuple[str, ...] = (PUNCT_HEAD, CASE_HEAD)  # column blocks of the dumped posteriors


class SegmentOutputs(NamedTuple):
    id: str
    vectors: np.ndarray  # (W, hidden)
    posteriors: np.ndarray  # (W, 9 + 2): punctuation softmax, then case softmax


def load_text_model(checkpoint: Pathlike, device: torch.device = torch.device("cpu")) -> tuple[TextOnlyModel, MmConfig]:
    """The text-only model of ``punct.bin.train_mm`` (``exp/text/best-valid-f1.pt``), in eval mode."""
    model, cfg, _ = load_model(checkpoint, device, "text", "the EfficientPunct text side (the text-only model)")
    return model, cfg


@torch.no_grad()
def word_outputs(
    model: TextOnlyModel, dataset: ItnDataset, batch_size: int, device: torch.device
) -> Iterator[SegmentOutputs]:
    """Vectors and two-head posteriors of every segment of ``dataset``, in dataset order."""
    model.eval()
    pad_id = model.text.tokenizer.pad_token_id or 0
    for batch in loader(dataset, batch_size, False, 0, pad_id):
        batch = to_device(batch, device)
        vectors, logits = model.text(batch["input_ids"], batch["attention_mask"], batch["word_positions"])
        posts = torch.cat([torch.softmax(logits[h], dim=-1) for h in HEADS], dim=-1)
        for r, i in enumerate(batch["index"].tolist()):
            seg = dataset.segments[i]
            n = len(seg.words)
            yield SegmentOutputs(seg.id, vectors[r, :n].float().cpu().numpy(), posts[r, :n].float().cpu().numpy())
