"""Randomly truncated right context: training examples of the punctuation TDNN that look like what live
captions show it (``punctuate --stream --latency L``, :mod:`punct.inference.streaming`).

A stream punctuates a word whose pause-delimited stretch is still open once ``L`` seconds of audio after its
end have arrived, from what has arrived: the stretch's audio up to now and the words a recogniser has
reported by then (those whose end the audio has reached), as if the recording ended there.  Offline
training never shows the TDNN such an ending, so at a short ``L`` every due word looks like an utterance's
last word.  With ``right_truncation: p`` (:class:`punct.models.punct_tdnn.config.TrainTdnnConfig`) a share
``p`` of the training examples is cut the same way: after the end of a word (a random one of the
utterance's, or the window's own word) plus ``0 .. right_truncation_frames`` frames, drawn uniformly.
The frames after the cut are dropped (the windows are zero-padded there, as at an utterance end), the words
not yet ended at the cut are unknown (their frames carry the last known word's vector, as silence after a
word does, and they are not trained on), and each known word's window is centred as in an utterance of the
known words (the last one's transition is the cut).

What stays offline: the layer-12 vectors and the word vectors were computed once over the whole utterance,
so the acoustic frames just before the cut have seen up to the AM's right context (0.28 s) of the future
and the BERT vectors the whole sentence, where a stream's are computed on the truncated audio and words.
Dev scores stay offline (the checkpoint is chosen on whole utterances).

The draws (:class:`punct.training.truncation.RightTruncation`) are seeded by (seed, epoch, example): a rerun
draws the same cuts, each epoch new ones, in any data-loader worker
(:class:`punct.models.punct_tdnn.sampling.WithEpoch` passes the epoch with each index).
"""

from __future__ import annotations

import numpy as np


def cut_after(word_ends: np.ndarray, num_frames: int, word: int, latency: int) -> tuple[int, int]:
    """``(cut, known)``: the utterance's frames ``[0, cut)`` have arrived ``latency`` frames after word ``word``
    ended (at most all ``num_frames``), and its first ``known`` words have ended by then (a recogniser has
    reported them).  ``known`` > ``word`` always: the cut follows the latest end among words ``0 .. word``."""
    ends = np.minimum(np.asarray(word_ends, dtype=np.int64), num_frames)
    cut = min(num_frames, int(ends[: word + 1].max()) + latency)
    late = np.flatnonzero(ends > cut)
    known = int(late[0]) if late.size else len(ends)
    return cut, known
