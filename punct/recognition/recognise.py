"""Recognition of a long recording with word times (thesis 3.3.1, "Speech Recognition and
Timestamp Extraction" and "Merging Partial Transcripts with Timestamps").

The recording is cut into ~30 s chunks with 5 s overlap (``punct.recognition.chunks.plan_chunks``);
each chunk goes through the acoustic model (any callable returning frame log-posteriors:
the recipe's CTC TDNN or a transformers CTC model, ``punct.recognition.recogniser``), is decoded
(greedily, or by beam search with a word n-gram LM as in the thesis: ``punct.recognition.beam_search``),
gets word times by CTC segmentation of its own transcript (``ctc_word_times``), and the chunk
transcripts are merged at the overlap midpoints (``merge_chunk_words``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from punct.labels import TimedWord
from punct.recognition.chunks import AudioChunk, ChunkConfig, chunked_words, ctc_word_times

# The acoustic model's word separator (punct.am.tokens.SPACE).
DEFAULT_SPACE = "|"


def greedy_words(log_probs: np.ndarray, vocab: Sequence[str], space: str | None = DEFAULT_SPACE) -> list[str]:
    """Best path: argmax per frame, repeats collapsed, blanks (index 0) dropped, split at ``space``."""
    best = np.asarray(log_probs).argmax(axis=1)
    keep = np.ones(len(best), dtype=bool)
    keep[1:] = best[1:] != best[:-1]
    text = "".join(vocab[i] if vocab[i] != space else " " for i in best[keep] if i != 0)
    return text.split()


def recognise_long(
    audio: np.ndarray,
    sample_rate: int,
    posterior_fn: Callable[[np.ndarray], np.ndarray],
    vocab: Sequence[str],
    frame_shift: float = 0.01,
    config: ChunkConfig = ChunkConfig(),
    space: str | None = DEFAULT_SPACE,
    counts: dict[str, int] | None = None,
    decode: Callable[[np.ndarray], list[str]] | None = None,
) -> list[TimedWord]:
    """Words with times (seconds from the recording start) of a long recording.

    Args:
      audio: the samples (1-D).
      sample_rate: samples per second.
      posterior_fn: chunk samples -> (T, V) log-posteriors, frame t at ``t * frame_shift`` s
        from the chunk start.
      vocab: the V symbols; index 0 is the CTC blank, ``space`` the word separator.
      counts: updated with the merge cases ("matched", "discarded", "concatenated").
      decode: a chunk's log-posteriors -> its words; default greedy (``greedy_words``).
    """

    return recognise_chunks(
        len(audio),
        sample_rate,
        lambda c: posterior_fn(audio[c.start : c.end]),
        vocab,
        frame_shift,
        config,
        space,
        counts,
        decode,
    )


def recognise_chunks(
    num_samples: int,
    sample_rate: int,
    log_probs_of: Callable[[AudioChunk], np.ndarray],
    vocab: Sequence[str],
    frame_shift: float = 0.01,
    config: ChunkConfig = ChunkConfig(),
    space: str | None = DEFAULT_SPACE,
    counts: dict[str, int] | None = None,
    decode: Callable[[np.ndarray], list[str]] | None = None,
) -> list[TimedWord]:
    """``recognise_long`` with the posteriors given per chunk (``log_probs_of``: a chunk -> its (T, V)
    log-posteriors), for callers that compute a chunk's frames themselves (``punctuate`` on whole recordings)."""

    def words_of_chunk(c: AudioChunk) -> list[TimedWord]:
        lp = log_probs_of(c)
        words = decode(lp) if decode is not None else greedy_words(lp, vocab, space)
        return ctc_word_times(lp, vocab, words, frame_shift, offset=c.start / sample_rate, space=space) if words else []

    return chunked_words(num_samples, sample_rate, words_of_chunk, config, counts)
