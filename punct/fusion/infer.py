"""Per-word TDNN posteriors of a split, fully convolutionally (one conv pass per utterance)."""

from __future__ import annotations

from typing import Iterator, Optional, Sequence, Tuple

import numpy as np
import torch

from punct.fusion.dataset import FusionCorpus
from punct.fusion.tdnn import PunctTdnn


@torch.no_grad()
def utterance_posteriors(
    model: PunctTdnn, corpus: FusionCorpus, device: torch.device, utterances: Optional[Sequence[int]] = None,
    progress: bool = False,
) -> Iterator[Tuple[str, np.ndarray]]:
    """Yields (cut id, (W, num_classes) softmax posteriors) for each utterance (eval mode)."""
    was_training = model.training
    model.eval()
    indices = range(len(corpus.utterances)) if utterances is None else utterances
    if progress:
        from tqdm import tqdm

        indices = tqdm(indices, desc="tdnn posteriors", unit="utt")
    try:
        for utt in indices:
            frames, centres = corpus.utterance_frames(utt)
            logits = model.utterance_logits(torch.from_numpy(frames).to(device), torch.from_numpy(centres).to(device))
            yield corpus.utterances[utt].key, torch.softmax(logits, dim=-1).cpu().numpy()
    finally:
        model.train(was_training)


def corpus_predictions(model: PunctTdnn, corpus: FusionCorpus, device: torch.device) -> Tuple[np.ndarray, np.ndarray]:
    """(reference labels (N,), posteriors (N, C)) over all words of the corpus, in corpus order."""
    posts = [p for _, p in utterance_posteriors(model, corpus, device)]
    return corpus.labels, np.concatenate(posts, axis=0)
