"""Running a trained acoustic model on one utterance at a time (decoding, alignment, embedding dump).

Utterances go through the network one by one, never padded into a batch: the replicate
padding at the edges then depends only on the utterance itself, so every output (logits,
layer-k embeddings) has exactly the feature frame count, frame t aligned with feature frame t.
"""

from __future__ import annotations

import numpy as np
import torch

from punct.am.model import TdnnAcousticModel


@torch.no_grad()
def run_model(
    model: TdnnAcousticModel, feats: np.ndarray, layer: int | None = None, device: torch.device = torch.device("cpu")
) -> np.ndarray:
    """(T, F) CMVN-normalised features -> (T, C): layer ``layer``'s output, or the log-posteriors when None."""
    model.eval()
    x = torch.from_numpy(np.ascontiguousarray(feats, dtype=np.float32)).unsqueeze(0).to(device)
    y = model(x, layer=layer)[0]
    if layer is None:
        y = y.log_softmax(dim=-1)
    return y.float().cpu().numpy()
