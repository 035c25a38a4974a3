"""A whole recording punctuated as one utterance (``punctuate --long-form``), in bounded memory.

The acoustic model runs once per chunk of ``punct.recognition.chunks.plan_chunks`` (~30 s, 5 s overlap) on the
whole recording's CMVN-normalised features, and the words get their times from those chunks (:meth:`LongForm.prepare`).
BERT and the TDNN then read one pause-delimited stretch at a time (:meth:`LongForm.stretches`), each stretch made
into an utterance as the recipe's segments are (:meth:`LongForm.tdnn_posteriors`).

:class:`LongForm` is a driver: it decides the chunks and the stretches of a recording and what is held, and computes
with the steps of the chain it is given (:class:`punct.inference.chain.Chain`), the same steps as offline
``punctuate`` and the live stream.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from punct.am.alignable import FoldedWords, place_unaligned
from punct.am.tokens import SPACE
from punct.am.viterbi import AlignmentError, WordSpan
from punct.inference.acoustic import Prepared, resample
from punct.inference.chain import Chain, Stretch
from punct.inference.inputs import Request, UtteranceError
from punct.inference.outputs import spaced_text
from punct.inference.stretches import LongFormConfig, pause_segments
from punct.inference.words import ctm_words, folded_words, transcript_words
from punct.labels import TimedWord
from punct.models.punct_tdnn.frames import word_frame_spans
from punct.models.text.infer import WordOutputs
from punct.recognition.chunks import AudioChunk, plan_chunks
from punct.recognition.long_align import align_transcript
from punct.recognition.recognise import recognise_chunks

Bounds = tuple[int, int, int, int]  # a stretch's (first frame, end frame, first word, end word)


class LongForm:
    """Punctuates whole recordings with ``chain``'s models and settings (its ``long_form_config``)."""

    def __init__(self, chain: Chain) -> None:
        self.chain = chain

    @property
    def config(self) -> LongFormConfig:
        return self.chain.long_form_config

    def prepare(
        self,
        req: Request,
        feats: np.ndarray,
        duration: float | None = None,
        word_times: Sequence[TimedWord] | None = None,
    ) -> Prepared:
        """Words and word spans of a whole recording (its layer-12 frames come later, per stretch).

        The words get their times from the AM's chunks: the transcript's by
        ``punct.recognition.long_align.align_transcript`` (CTC segmentation of each chunk's slice, merged at the
        overlap midpoints), the AM's own words by ``recognise_chunks`` (egs/parczech stage 2's recognition), or
        ``word_times`` as given (a CTM: no alignment, no AM pass here)."""
        chain = self.chain
        num_frames = feats.shape[0]
        if duration is None:
            duration = num_frames * chain.frame_shift
        num_samples = int(round(duration * chain.sampling_rate))
        transcript_from = "given" if req.transcript is not None else "am"
        if word_times is not None:
            text, words, char_spans, times = ctm_words(req.id, word_times, chain.normalize_config)
            transcript_from = "ctm"
        elif req.transcript is not None:
            text, words, char_spans = transcript_words(req.transcript, chain.normalize_config)
            folded = folded_words(req.id, words, chain.char_ids)  # refused before the AM runs
        counts: dict[str, int] = {}
        num_chunks = len(plan_chunks(num_samples, chain.sampling_rate, self.config.chunk_config))
        log_probs_of = self._chunk_log_probs(feats, num_samples)
        if word_times is None and req.transcript is not None:
            times = self.align_in_chunks(folded, log_probs_of, num_samples, duration, counts)
        elif word_times is None:
            text, words, char_spans, times = self._recognise_in_chunks(log_probs_of, num_samples, duration, counts)
        with chain.timer.outer("align", "am"):
            spans = _word_frame_spans(words, times, num_frames)
        logging.info(
            "%s: %.1f s in %d chunks, %d words (%s)",
            req.id,
            duration,
            num_chunks,
            len(words),
            ", ".join(f"{k} {v}" for k, v in counts.items()) or f"times from {transcript_from}",
        )
        empty = np.zeros((num_frames, 0), dtype=np.float32)
        return Prepared(req, text, words, char_spans, empty, spans, transcript_from, duration, long_form=True)

    def _chunk_log_probs(self, feats: np.ndarray, num_samples: int) -> Callable[[AudioChunk], np.ndarray]:
        """A chunk of a whole recording -> the AM's CTC log-posteriors (T, V) over its slice of ``feats``
        (one AM pass per chunk; the last chunk takes the frames up to the end)."""
        num_frames = feats.shape[0]
        hop = self.chain.sampling_rate * self.chain.frame_shift

        def log_probs_of(chunk: AudioChunk) -> np.ndarray:
            first = min(int(round(chunk.start / hop)), num_frames - 1)
            last = num_frames if chunk.end >= num_samples else min(int(round(chunk.end / hop)), num_frames)
            return self.chain.am_pass(feats[first:last])[1]

        return log_probs_of

    @contextmanager
    def _chunked_alignment(self, duration: float) -> Iterator[None]:
        """Charges the chunked alignment to ``align`` (less the AM passes it makes) and reports its failure as
        the utterance's."""
        with self.chain.timer.outer("align", "am"):
            try:
                yield
            except (AlignmentError, ValueError) as e:
                raise UtteranceError(
                    "alignment failed", f"chunked alignment with {duration:.1f} s of audio failed: {e}"
                ) from e

    def align_in_chunks(
        self,
        folded: FoldedWords,
        log_probs_of: Callable[[AudioChunk], np.ndarray],
        num_samples: int,
        duration: float,
        counts: dict[str, int],
    ) -> list[TimedWord]:
        """The times of a whole recording's transcript words (``align_transcript`` of the folded words that have
        characters, the others placed between them: ``punct.am.alignable``); ``counts`` gets its tallies."""
        chain = self.chain
        kept = [i for i, s in enumerate(folded.said) if s]
        with self._chunked_alignment(duration):
            times = align_transcript(
                [folded.said[i] for i in kept],
                num_samples,
                chain.sampling_rate,
                log_probs_of,
                chain.tokens.symbols,
                SPACE,
                chain.frame_shift,
                self.config.chunk_config,
                counts,
            )
        if len(kept) == len(folded.words):
            return times
        spans = place_unaligned([(t.start, t.end) for t in times], kept, len(folded.words), duration, chain.frame_shift)
        return [TimedWord(w, a, b) for w, (a, b) in zip(folded.words, spans)]

    def _recognise_in_chunks(
        self,
        log_probs_of: Callable[[AudioChunk], np.ndarray],
        num_samples: int,
        duration: float,
        counts: dict[str, int],
    ) -> tuple[str, list[str], list[tuple[int, int]], list[TimedWord]]:
        """(text, words, their character spans, their times) of the AM's own words over a whole recording, as
        egs/parczech stage 2 recognises long audio (``recognise_chunks``); ``counts`` gets its tallies."""
        chain = self.chain
        with self._chunked_alignment(duration):
            times = recognise_chunks(
                num_samples,
                chain.sampling_rate,
                log_probs_of,
                chain.tokens.symbols,
                chain.frame_shift,
                self.config.chunk_config,
                SPACE,
                counts,
            )
            words = [t.word for t in times]
            if not words:
                raise UtteranceError("empty hypothesis", "the acoustic model recognised no word")
        text, char_spans = spaced_text(words)
        return text, words, char_spans, times

    def stretches(self, p: Prepared) -> list[Bounds]:
        """The pause-delimited stretches of a whole recording (``pause_segments``)."""
        frame_shift = self.chain.frame_shift
        return pause_segments(
            np.array([s.start for s in p.spans], dtype=np.int64),
            np.array([s.end for s in p.spans], dtype=np.int64),
            p.embedding.shape[0],
            int(round(self.config.pause_split / frame_shift)),
            int(round(self.config.max_stretch / frame_shift)),
        )

    def tdnn_posteriors(self, p: Prepared, out: WordOutputs) -> np.ndarray:
        """The TDNN over a whole recording, one stretch between pauses at a time, each stretch made into an
        utterance as the recipe's segments are: its own features, CMVN over all the stretches (the recording's
        speaker's speech, as stage 1 computes a speaker's stats over its segments), then the AM to layer 12,
        quantised as stage 4 stores an utterance's, and the TDNN.  Only one stretch's layer-12 frames are held
        at a time."""
        chain = self.chain
        parts = self.stretches(p)
        with chain.timer("audio"):
            samples, rate = p.request.audio()
        samples = resample(np.asarray(samples, dtype=np.float32), int(rate), chain.sampling_rate)
        hop = int(round(chain.sampling_rate * chain.frame_shift))
        pieces = [  # the last stretch ends with the recording (its last samples make no whole frame otherwise)
            self._piece_request(
                p.request, samples[f0 * hop : f1 * hop if k + 1 < len(parts) else None], f"{p.request.id}#{k}"
            )
            for k, (f0, f1, _, _) in enumerate(parts)
        ]
        feats = chain.features(pieces)
        posteriors = []
        for k, (piece, bounds) in enumerate(zip(pieces, parts)):
            piece_feats = feats[piece.id]
            if isinstance(piece_feats, UtteranceError):
                raise piece_feats
            _, _, w0, w1 = bounds
            stretch = self._stretch(p, k, bounds)  # one at a time: its layer-12 frames go with it
            stretch.embedding = chain.stored_embedding(chain.am_embedding(piece_feats))
            stretch.text = WordOutputs(stretch.id, out.vectors[w0:w1], {h: v[w0:w1] for h, v in out.posteriors.items()})
            posteriors.append(chain.stretch_tdnn(stretch))
        return np.concatenate(posteriors, axis=0)

    def text_outputs(self, p: Prepared) -> WordOutputs:
        """BERT's posteriors and the word vectors of a whole recording: read one stretch at a time (``long_text``
        "stretch", as BERT read the recipe's segments), or as one text."""
        if self.config.long_text != "stretch":
            whole = Stretch(p.request.id, p.words, p.spans)
            self.chain.read_stretches([whole])
            return whole.text
        stretches = [self._stretch(p, k, bounds) for k, bounds in enumerate(self.stretches(p))]
        self.chain.read_stretches(stretches)
        parts = [s.text for s in stretches]
        return WordOutputs(
            p.request.id,
            np.concatenate([o.vectors for o in parts]),
            {h: np.concatenate([o.posteriors[h] for o in parts]) for h in parts[0].posteriors},
        )

    def _stretch(self, p: Prepared, k: int, bounds: Bounds) -> Stretch:
        """Stretch ``k`` of a whole recording, its words' frames counted from its first frame."""
        f0, _, w0, w1 = bounds
        spans = [WordSpan(s.word, s.start - f0, s.end - f0) for s in p.spans[w0:w1]]
        return Stretch(f"{p.request.id}#{k}", p.words[w0:w1], spans)

    def _piece_request(self, request: Request, piece: np.ndarray, piece_id: str) -> Request:
        """Samples of a recording (at the recipe's rate) as an utterance of the recording's speaker."""
        rate = self.chain.sampling_rate
        return Request(piece_id, lambda: (piece, rate), None, request.speaker, request.source)


def _word_frame_spans(words: Sequence[str], times: Sequence[TimedWord], num_frames: int) -> list[WordSpan]:
    """Each word's [start, end) frames from its times, inside the recording and at least one frame long."""
    starts, ends = word_frame_spans([t.start for t in times], [t.end for t in times])
    starts = np.clip(starts, 0, num_frames - 1)
    ends = np.clip(ends, starts + 1, num_frames)
    return [WordSpan(w, int(a), int(b)) for w, a, b in zip(words, starts, ends)]
