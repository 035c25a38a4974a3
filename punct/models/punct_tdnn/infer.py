"""Per-word TDNN posteriors of a split, fully convolutionally (one conv pass per utterance)."""

from __future__ import annotations

from typing import Iterator, Optional, Sequence, Tuple

import numpy as np
import torch

from punct.models.punct_tdnn.dataset import FusionCorpus
from punct.models.punct_tdnn.tdnn import PunctTdnn, head_softmax


@torch.no_grad()
def utterance_posteriors(
    model: PunctTdnn, corpus: FusionCorpus, device: torch.device, utterances: Optional[Sequence[int]] = None,
    progress: bool = False,
) -> Iterator[Tuple[str, np.ndarray]]:
    """Yields (cut id, (W, num_outputs) posteriors) for each utterance (eval mode): the softmax of each
    head's block (``punct.models.punct_tdnn.tdnn.split_heads``), concatenated; one head: (W, num_classes)."""
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
            yield corpus.utterances[utt].key, head_softmax(logits, model.config).cpu().numpy()
    finally:
        model.train(was_training)


def corpus_predictions(model: PunctTdnn, corpus: FusionCorpus, device: torch.device) -> Tuple[np.ndarray, np.ndarray]:
    """(punctuation reference labels (N,), posteriors (N, num_outputs)) over all words of the corpus, in corpus order."""
    posts = [p for _, p in utterance_posteriors(model, corpus, device)]
    return corpus.labels, np.concatenate(posts, axis=0)
