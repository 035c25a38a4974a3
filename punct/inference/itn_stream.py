"""Live punctuation (9 marks) and case of a speech-informed ITN model (egs/parczech stage 4) on a recording that is
still arriving: audio in chunks with a recogniser's timed words (a word is known once the audio has reached its end).

The models were trained on segments of at most ~15 s, so a stream is cut into segments too: a new one starts at the
first word after a pause of ``pause_split`` seconds or more, or at a word that would make the open segment longer
than ``max_segment`` seconds, at the middle of the gap before that word.  When a segment closes its words are labelled
from the whole segment (**final**), as offline.  A word of the open segment that has waited ``latency`` seconds of audio
since its end is labelled from the segment so far (its audio up to now, the words known), as if the segment ended
there -- the input :func:`benchmarks.itn_streaming.segments.cut_segment` gives a segment of the dataset.  With
``latency=math.inf`` every word is final and the output is the model on the stream's segments, each as a whole.

Inputs go through the dataset code of training and decoding (:class:`punct.models.cross_attention.data.ItnDataset`,
with the stream's audio in place of a recording, and :func:`punct.models.cross_attention.predictions.predict`).  The
models do not learn the first word of a segment under ``first_word: exclude`` (the thesis), so a first word gets no
mark, and a capital when it opens the stream or follows a sentence end (``. ! ?``).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from punct.inference.live_audio import ArrivingAudio
from punct.labels import CAP, CASE, PUNCT9, TimedWord
from punct.models.cross_attention.config import MmConfig
from punct.models.cross_attention.data import ItnDataset, ItnSegment
from punct.models.cross_attention.predictions import predict

SENTENCE_ENDS = (".", "!", "?")
_EPS = 1e-6


@dataclass(frozen=True)
class SegmentRule:
    """Where a stream is cut into segments for the model."""

    # seconds of silence between two words that start a new segment: chosen on the dev speeches of the three small
    # runs at latency inf (egs/parczech README, "Live on whole speeches": 0.5 s scored 46.9, 0.3 s 44.5, 0.75 s 44.1
    # and 1 s 41.9, the mean of punctuation overall and [cap] F1 over three models and seeds)
    pause_split: float = 0.5
    max_segment: float = 15.0  # seconds: the thesis' longest segment (3.3.3)

    def starts_segment(self, segment_start: float, last: TimedWord | None, word: TimedWord) -> bool:
        if last is None:
            return False
        return word.start - last.end >= self.pause_split - _EPS or word.end - segment_start > self.max_segment


@dataclass
class ItnWord:
    """One word as the stream labelled it."""

    index: int  # position among the stream's words
    word: str
    start: float  # seconds from the start of the stream
    end: float
    label: str  # PUNCT9 class: the mark after the word
    case: str  # CASE class
    emitted_at: float  # seconds of audio that had arrived when it was labelled
    final: bool  # labelled from its whole segment
    first: bool  # the first word of its segment (labels by the rule of the module docstring)
    text: str = ""  # the word as printed: capitalised and followed by its mark

    def render(self) -> str:
        word = self.word[:1].upper() + self.word[1:] if self.case == CAP else self.word
        if self.label == PUNCT9.none:
            return word
        return f"{word} -" if self.label == "-" else word + self.label


class ItnStreamer:
    """Feeds audio and timed words in, takes labelled words out (see the module docstring).

    Args:
      model: a stage-4 model (text-only or multimodal) in eval mode.
      cfg: its config (sample rate, mel or AM frames).
      latency: seconds of audio after a word's end after which it is labelled from the open segment;
        ``math.inf``: only from closed segments.
      rule: where segments are cut.
      utt_id: names the stream in messages.
    """

    def __init__(
        self,
        model: torch.nn.Module,
        cfg: MmConfig,
        latency: float = math.inf,
        rule: SegmentRule = SegmentRule(),
        utt_id: str = "stream",
        device: torch.device = torch.device("cpu"),
    ) -> None:
        if not latency >= 0:
            raise ValueError(f"latency must be >= 0 seconds, got {latency}")
        self.model, self.latency, self.rule, self.utt_id, self.device = model, latency, rule, utt_id, device
        self.first_word_learnt = cfg.first_word != "exclude"
        self.cfg = dataclasses.replace(cfg, first_word="include")  # every word's own prediction (no reference)
        self.rate = cfg.sample_rate
        self.pad_id = model.text.tokenizer.pad_token_id or 0
        self.audio = ArrivingAudio()
        self.segment_start = 0.0
        self.words: list[TimedWord] = []  # of the open segment
        self.labelled = 0  # of the open segment's words
        self.count = 0  # words of the stream before the open segment
        self.sentence_open = False  # the last labelled word did not end a sentence
        self.dropped_tokens = 0  # tokens with no letter (a lone mark)
        self.segments = 0

    @property
    def num_samples(self) -> int:
        """Samples of audio that have arrived."""
        return self.audio.num_samples

    @property
    def seconds(self) -> float:
        return self.num_samples / self.rate

    def accept(self, samples: np.ndarray, tokens: Sequence[TimedWord] = ()) -> list[ItnWord]:
        """Adds audio (float32 at the model's rate) and the tokens recognised in it; returns the words that became
        ready, in order."""
        self.audio.append(np.asarray(samples, dtype=np.float32))
        ready: list[ItnWord] = []
        for token in tokens:
            word = re.sub(r"[^\w]", "", token.word.lower())
            if not any(c.isalpha() for c in word):
                self.dropped_tokens += 1
                continue
            word_token = TimedWord(word, token.start, token.end)
            last = self.words[-1] if self.words else None
            if self.rule.starts_segment(self.segment_start, last, word_token):
                ready += self._close((last.end + word_token.start) / 2)
            self.words.append(word_token)
        due = self.labelled
        while due < len(self.words) and self.words[due].end + self.latency <= self.seconds + _EPS:
            due += 1
        if due > self.labelled:
            ready += self._label(self.seconds, due, final=False)
        return ready

    def finish(self) -> list[ItnWord]:
        """The end of the input: the open segment closes at the end of the audio."""
        return self._close(self.seconds)

    def _close(self, boundary: float) -> list[ItnWord]:
        ready = self._label(boundary, len(self.words), final=True) if self.labelled < len(self.words) else []
        self.count += len(self.words)
        self.words, self.labelled, self.segment_start = [], 0, boundary
        self.segments += 1
        self.audio.keep_from(int(round(boundary * self.rate)))
        return ready

    def _segment(self, until: float) -> ItnSegment:
        """The open segment from its start to ``until`` seconds with the words known: a dataset segment."""
        words = self.words
        n = len(words)
        return ItnSegment(
            f"{self.utt_id}-{self.segments}@{until:.2f}",
            self.utt_id,
            self.segment_start,
            until - self.segment_start,
            [w.word for w in words],
            [0] * n,
            [0] * n,
            [w.start - self.segment_start for w in words],
            [w.end - self.segment_start for w in words],
        )

    def _audio_of(self, segment: ItnSegment) -> np.ndarray:
        first = int(round(segment.start * self.rate))
        end = min(first + int(round(segment.duration * self.rate)), self.num_samples)
        return self.audio.between(first, end, self.utt_id)

    def _label(self, until: float, end: int, final: bool) -> list[ItnWord]:
        """Labels the open segment's words [labelled, end) from the segment up to ``until`` seconds."""
        segment = self._segment(until)
        tokenizer, audio = self.model.text.tokenizer, self.model.uses_audio
        data = ItnDataset([segment], None, tokenizer, self.cfg, audio, self.utt_id, self._audio_of, log_counts=False)
        if not len(data):
            raise ValueError(f"{self.utt_id}: the segment at {self.segment_start:.2f} s does not fit the model")
        predictions = predict(self.model, data, self.cfg, self.device, self.pad_id)
        ready = []
        for i in range(self.labelled, end):
            w = self.words[i]
            label, case = predictions.punct_hyp[0][i], predictions.case_hyp[0][i]
            if i == 0 and not self.first_word_learnt:  # no mark, a capital at a sentence start
                label, case = PUNCT9.none, (CASE.none if self.sentence_open else CAP)
            word = ItnWord(self.count + i, w.word, w.start, w.end, label, case, self.seconds, final, i == 0)
            word.text = word.render()
            self.sentence_open = label not in SENTENCE_ENDS
            ready.append(word)
        self.labelled = end
        logging.debug("%s: %d word(s) labelled at %.2f s (final %s)", self.utt_id, len(ready), self.seconds, final)
        return ready
