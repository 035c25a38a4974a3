"""Per-word TDNN posteriors, fully convolutionally (one conv pass per utterance).

:func:`word_posteriors` is the one function from an utterance's acoustic frames, word vectors and word
frames to its per-word posteriors: stage 8 (:func:`utterance_posteriors` over a split's shards), the dev
scores of training and ``punctuate`` (``punct.inference.pipeline``) all call it.  It runs the TDNN
word-factored (:class:`~punct.models.punct_tdnn.tdnn.WordFactoredTdnn`: the text part of the fusion layer
once per word), equal to the 301-frame windows in eval mode.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from punct.models.punct_tdnn.dataset import FusionCorpus
from punct.models.punct_tdnn.frames import frame_word_index, window_centres
from punct.models.punct_tdnn.tdnn import PunctTdnn, WordFactoredTdnn, head_softmax
from punct.utils.progress import progress as progress_bar


@dataclass
class TdnnInput:
    """One utterance's TDNN input in word-factored form (``WordFactoredTdnn.utterance_logits``'s arguments)."""

    acoustic: torch.Tensor  # (T, Da) layer-12 frames
    word_vectors: torch.Tensor  # (W, Dt) BERT vectors
    word_index: torch.Tensor  # (T,) word of each frame, -1 before the first
    centres: torch.Tensor  # (W,) window centre frames

    def tensors(self, device: torch.device) -> tuple[torch.Tensor, ...]:
        """(acoustic, word_vectors, word_index, centres) on ``device``."""
        return tuple(x.to(device) for x in (self.acoustic, self.word_vectors, self.word_index, self.centres))


def tdnn_input(
    acoustic: np.ndarray, word_vectors: np.ndarray, word_starts: np.ndarray, word_ends: np.ndarray, window_centre: str
) -> TdnnInput:
    """An utterance's TDNN input from its (T, Da) acoustic frames, (W, Dt) word vectors and word frames
    (start, exclusive end; relative to the utterance)."""
    num_frames = acoustic.shape[0]
    centres = window_centres(word_starts, word_ends, num_frames, window_centre).astype(np.int64)
    return TdnnInput(
        torch.from_numpy(np.require(acoustic, np.float32, ["C", "W"])),
        torch.from_numpy(np.require(word_vectors, np.float32, ["C", "W"])),
        torch.from_numpy(frame_word_index(word_starts, num_frames)),
        torch.from_numpy(centres),
    )


@torch.no_grad()
def word_posteriors(
    factored: WordFactoredTdnn, x: TdnnInput, device: torch.device, conv_stack=None, block_frames: int = 0
) -> np.ndarray:
    """(W, num_outputs) posteriors of one utterance: the softmax of each head's block
    (``punct.models.punct_tdnn.tdnn.split_heads``), concatenated.  ``conv_stack`` replaces the PyTorch conv
    stack (an ONNX Runtime session with the same signature).

    ``block_frames`` > 0 bounds the memory of a long input (a whole recording): the words are taken in blocks
    whose window centres span at most that many frames, and each block's conv pass reads only the frames its
    windows cover (``context`` more on each side), so the result equals the single pass (every window sees
    the same frames; zero padding only where the input itself ends)."""
    if block_frames <= 0 or x.acoustic.shape[0] <= block_frames:
        logits = factored.utterance_logits(*x.tensors(device), conv_stack=conv_stack)
        return head_softmax(logits.float(), factored.config).cpu().numpy()
    return np.concatenate(
        [
            word_posteriors(factored, part, device, conv_stack)
            for part in _blocks(x, block_frames, factored.config.context)
        ],
        axis=0,
    )


def _blocks(x: TdnnInput, block_frames: int, context: int) -> Iterator[TdnnInput]:
    """``x`` cut into consecutive runs of words whose centres lie within ``block_frames`` (:func:`word_block`)."""
    centres = x.centres.numpy()
    first = 0
    while first < len(centres):
        last = first + 1
        while last < len(centres) and centres[last] < centres[first] + block_frames:
            last += 1
        yield word_block(x, first, last, context)
        first = last


def word_block(x: TdnnInput, first: int, last: int, context: int) -> TdnnInput:
    """The input of words ``[first, last)`` alone: the frames ``[first centre - context, last centre + context]``
    (clipped to the input) and only the word vectors they use.  Its posteriors equal those words' rows of the
    whole input's: every window sees the same frames, zero padding only where the input itself ends."""
    num_frames = x.acoustic.shape[0]
    centres = x.centres[first:last]
    lo = max(int(centres.min()) - context, 0)
    hi = min(int(centres.max()) + context + 1, num_frames)
    index = x.word_index[lo:hi]
    used = index[index >= 0]
    w0 = int(used.min()) if used.numel() else 0
    w1 = int(used.max()) + 1 if used.numel() else 0
    return TdnnInput(x.acoustic[lo:hi], x.word_vectors[w0:w1], torch.where(index >= 0, index - w0, index), centres - lo)


@torch.no_grad()
def utterance_posteriors(
    model: PunctTdnn,
    corpus: FusionCorpus,
    device: torch.device,
    utterances: Sequence[int] | None = None,
    progress: bool = False,
) -> Iterator[tuple[str, np.ndarray]]:
    """Yields (cut id, (W, num_outputs) posteriors) for each utterance of ``corpus`` (eval mode)."""
    was_training = model.training
    model.eval()
    factored = WordFactoredTdnn(model, corpus.text_dim).to(device).eval()
    indices = range(len(corpus.utterances)) if utterances is None else utterances
    indices = progress_bar(indices, enabled=progress, desc="tdnn posteriors", unit="utt")
    try:
        for utt in indices:
            acoustic, table, _ = corpus.matrices(utt)
            info = corpus.utterances[utt]
            x = tdnn_input(acoustic, table[:-1], info.word_starts, info.word_ends, corpus.window_centre)
            yield info.key, word_posteriors(factored, x, device)
    finally:
        model.train(was_training)


def corpus_predictions(model: PunctTdnn, corpus: FusionCorpus, device: torch.device) -> tuple[np.ndarray, np.ndarray]:
    """(punctuation reference labels (N,), posteriors (N, num_outputs)) over all words of the corpus, in corpus
    order."""
    posts = [p for _, p in utterance_posteriors(model, corpus, device)]
    return corpus.labels, np.concatenate(posts, axis=0)
