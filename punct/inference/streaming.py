"""Live punctuation: audio arrives in chunks with a recogniser's timed words, and each word gets its mark as soon
as it is final, or once ``latency`` seconds of audio after its end have arrived, whichever comes first.

Offline, a whole recording is punctuated one pause-delimited stretch at a time (``LongForm.stretches``): each
stretch gets its own features, the AM's layer 12, BERT over its words and the TDNN (``LongForm.tdnn_posteriors``);
the models see a word's context up to the end of its stretch and no further.  A stretch ends at a pause of
``pause_split`` seconds or more (one longer than ``max_stretch`` is cut again at its longest pauses), so a stream
knows that the run of words before such a pause is complete as soon as the first word after it has arrived.
Its stretches are then punctuated exactly as offline (**final** words).  A word whose stretch is still open
``latency`` seconds after its end is punctuated from what has arrived: the open stretch's words and audio so
far, as if the recording ended there (the missing right context is padded as at an utterance end).  With
``latency=math.inf`` (or one longer than any word waits for its stretch to close) every word is final and the
output equals offline ``punctuate`` with the same CTM and CMVN stats, word for word.

Two things differ from offline ``punctuate`` by necessity: CMVN needs statistics before the speech is over, so a
stream is normalised with fixed stats (``--cmvn``, e.g. the recipe's data/fbank/cmvn_train.json, or one speaker's
stats with ``--cmvn-speaker``), and words come from a CTM, each known once the audio has reached its end (a
recogniser reports a word after hearing it).

With ``segments`` (a recogniser's utterances, e.g. an endpointer's: start and end seconds) the stretches are those
segments instead of pause-delimited runs: each is cut from the audio at its own samples, as the recipe cuts its
segments, its words' frames counted from its start, and it is complete once a word of a later segment has
arrived.  Given the recipe's segments, their stage-3 word times as the CTM and the speaker's stage-1 stats, a
stream at ``latency=math.inf`` gives stage 8's posteriors (``tests/e2e/test_longform_recipe.py``).
"""

from __future__ import annotations

import logging
import math
import sys
import time
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import numpy as np

from punct.am.viterbi import WordSpan
from punct.inference.chain import Chain, Stretch
from punct.inference.live_audio import ArrivingAudio
from punct.inference.outputs import Result, render_text
from punct.inference.stretches import pause_segments
from punct.inference.words import ctm_token_words
from punct.labels import PUNCT4, TimedWord
from punct.models.punct_tdnn.frames import word_frame_spans


@dataclass
class StreamedWord:
    """One word as the stream punctuated it."""

    index: int  # position among the stream's words
    word: str
    span: tuple[int, int]  # [start, end) frames from the start of the audio, as offline's Result.spans
    label: str
    p_tdnn: np.ndarray  # (C,) posteriors
    p_bert: np.ndarray
    p_ensemble: np.ndarray
    emitted_at: float  # seconds of audio that had arrived when it was punctuated
    final: bool  # punctuated from its complete stretch (as offline)
    text: str | None = None  # on the last word of a recogniser token: the token with its mark ("Hello,")


@dataclass
class _Words:
    """The stream's words so far, in time order, with what offline ``ctm_words`` gives for them."""

    words: list[str] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)  # frames
    ends: list[int] = field(default_factory=list)  # frames, exclusive
    start_seconds: list[float] = field(default_factory=list)
    end_seconds: list[float] = field(default_factory=list)
    segment: list[int] = field(default_factory=list)  # with segments: the one each word is in (0 without)
    token: list[int] = field(default_factory=list)  # index of the token each word was said in
    token_texts: list[str] = field(default_factory=list)
    token_spans: list[list[tuple[int, int]]] = field(default_factory=list)  # character spans of its words


@dataclass(frozen=True)
class StreamSegment:
    """One of a recogniser's utterances in a stream: seconds from the start of the audio (``end`` math.inf: to the
    end of the audio), and the samples the recipe would cut for it."""

    start: float
    end: float
    first_sample: int
    end_sample: int | None  # None: to the end of the audio


def stream_segments(
    spans: Sequence[tuple[float, float | None]], rate: int, where: str = "segments"
) -> list[StreamSegment]:
    """(start, end) seconds (end None: to the end of the audio) in time order, not overlapping -> segments cut at
    ``round(seconds * rate)`` as ``punct.inference.inputs`` cuts a segment of a recording."""
    out: list[StreamSegment] = []
    for k, (start, end) in enumerate(spans):
        end = math.inf if end is None else float(end)
        if not 0 <= start < end:
            raise ValueError(f"{where}: segment {k} from {start} to {end} s: need 0 <= start < end")
        if out and start < out[-1].end:
            raise ValueError(
                f"{where}: segment {k} starts at {start} s, before segment {k - 1} ends ({out[-1].end} s); "
                "segments must be in time order and not overlap"
            )
        last = None if math.isinf(end) else int(round(end * rate))
        out.append(StreamSegment(float(start), end, int(round(start * rate)), last))
    return out


class StreamingPunctuator:
    """Feeds audio and timed words in, takes punctuated words out (see the module docstring).

    A driver: it decides which stretch is ready and which audio, features and layer-12 frames to keep, and computes
    with the steps of ``chain`` (the same steps as offline ``punctuate``).

    Args:
      chain: a recipe's models with fixed CMVN stats (``global_cmvn``): a ``Punctuator`` or any ``Chain``.
      latency: seconds of audio after a word's end after which it is punctuated even if its stretch is still
        open; ``math.inf``: only from complete stretches (the offline result).
      utt_id: names the stream's pieces in messages.
      segments: the recogniser's utterances (:func:`stream_segments`), each one stretch; None: stretches between
        pauses of ``long_form_config.pause_split`` seconds.
    """

    def __init__(
        self,
        chain: Chain,
        latency: float = math.inf,
        utt_id: str = "stream",
        segments: Sequence[StreamSegment] | None = None,
    ) -> None:
        if chain.global_cmvn is None:
            raise ValueError(
                "streaming needs fixed CMVN stats (the speech to come is unknown): give --cmvn with a stage-1 "
                "stats file, e.g. data/fbank/cmvn_train.json"
            )
        if not latency >= 0:
            raise ValueError(f"latency must be >= 0 seconds, got {latency}")
        if segments is not None and not segments:
            raise ValueError(f"{utt_id}: no segments given")
        self.chain = chain
        self.latency = latency
        self.utt_id = utt_id
        self.segments = None if segments is None else list(segments)
        self._segment_starts = [] if segments is None else [s.start for s in segments]
        self.rate = chain.sampling_rate
        self.hop = int(round(self.rate * chain.frame_shift))
        config = chain.long_form_config
        self.pause = int(round(config.pause_split / chain.frame_shift))
        self.max_frames = int(round(config.max_stretch / chain.frame_shift))
        self.audio = ArrivingAudio()
        self.known = _Words()
        self.run_word = 0  # first word of the open run (words after the last pause cut, or of the open segment)
        self.run_frame = 0  # its first frame (the middle of the pause before it)
        self.emitted = 0  # words punctuated so far
        self.labels: list[str] = []  # their labels
        self.dropped_tokens = 0  # tokens said as no word (a lone mark)
        self._last_token_start = 0.0
        self._cache_start, self._cache = -1, np.zeros((0, 0), dtype=np.float32)  # see _embedding
        self._raw: tuple[int, np.ndarray] = (-1, np.zeros((0, 0), dtype=np.float32))  # see _raw_features

    @property
    def num_samples(self) -> int:
        """Samples of audio that have arrived."""
        return self.audio.num_samples

    @property
    def seconds(self) -> float:
        """Seconds of audio that have arrived."""
        return self.num_samples / self.rate

    def accept(self, samples: np.ndarray, tokens: Sequence[TimedWord] = ()) -> list[StreamedWord]:
        """Adds audio (float32 at the recipe's rate) and the tokens recognised so far; returns the words that
        became ready, in order."""
        self.audio.append(np.asarray(samples, dtype=np.float32))
        for token in tokens:
            self._add_token(token)
        return self._complete_runs() + self._due_words()

    def finish(self) -> list[StreamedWord]:
        """The end of the input: the open run is complete, its last stretch ends with the audio."""
        out = self._complete_runs()
        end = len(self.known.words)
        if end > self.emitted:
            out += self._punctuate_open(end, final=True)
        return out

    # ---- words ------------------------------------------------------------------------------------

    def _add_token(self, token: TimedWord) -> None:
        known = self.known
        if token.start < self._last_token_start:
            raise ValueError(
                f"{self.utt_id}: token {token.word!r} starts at {token.start} s, before the previous token "
                f"({self._last_token_start} s); tokens must come in time order"
            )
        self._last_token_start = token.start
        text, words, spans, times = ctm_token_words(token, self.chain.normalize_config)
        if not words:
            self.dropped_tokens += 1
            return
        starts, ends = word_frame_spans([t.start for t in times], [t.end for t in times])
        k = len(known.token_texts)
        known.token_texts.append(text)
        known.token_spans.append(spans)
        known.words.extend(words)
        known.starts.extend(int(s) for s in starts)
        known.ends.extend(int(e) for e in ends)
        known.start_seconds.extend(t.start for t in times)
        known.end_seconds.extend(t.end for t in times)
        known.segment.extend(self._segment_of(t) for t in times)
        known.token.extend([k] * len(words))

    def _segment_of(self, time: TimedWord) -> int:
        """The segment a word is in: the last one starting at or before its middle (the first before any), never
        one before the previous word's."""
        if self.segments is None:
            return 0
        k = max(0, bisect_right(self._segment_starts, (time.start + time.end) / 2) - 1)
        return max(k, self.known.segment[-1]) if self.known.segment else k

    def _frames_of(self, num_samples: int) -> int:
        """Frames of the features of ``num_samples`` samples (Kaldi's snip_edges: whole windows only)."""
        window = int(round(self.rate * 0.025))
        return 0 if num_samples < window else 1 + (num_samples - window) // self.hop

    # ---- when words are ready ---------------------------------------------------------------------

    def _complete_runs(self) -> list[StreamedWord]:
        """Runs closed by a pause cut (the first word after the pause has arrived) or segments closed by a later
        segment's word, punctuated as offline."""
        if self.segments is not None:
            return self._complete_segments()
        out: list[StreamedWord] = []
        known = self.known
        b = self.run_word + 1
        while b < len(known.words):
            if known.starts[b] - known.ends[b - 1] >= self.pause:
                end_frame = (known.ends[b - 1] + known.starts[b]) // 2
                out += self._punctuate_run(self.run_word, b, self.run_frame, end_frame, final=True)
                self.run_word, self.run_frame = b, end_frame
                self.audio.keep_from(end_frame * self.hop)
            b += 1
        return out

    def _complete_segments(self) -> list[StreamedWord]:
        out: list[StreamedWord] = []
        segment_of = self.known.segment
        while self.run_word < len(segment_of) and segment_of[-1] > segment_of[self.run_word]:
            k = segment_of[self.run_word]
            end = bisect_right(segment_of, k, lo=self.run_word)
            out += self._punctuate_segment(k, self.run_word, end, final=True)
            self.run_word = end
            self.audio.keep_from(self.segments[segment_of[end]].first_sample)
        return out

    def _due_words(self) -> list[StreamedWord]:
        """Words of the open run ``latency`` seconds past their end: punctuated from the run so far."""
        known = self.known
        due = self.emitted
        while due < len(known.words) and known.end_seconds[due] + self.latency <= self.seconds + 1e-9:
            due += 1
        if due == self.emitted:
            return []
        return self._punctuate_open(len(known.words), final=False, until=due)

    def _punctuate_open(self, end: int, final: bool, until: int | None = None) -> list[StreamedWord]:
        """The open run's (or segment's) words up to ``end``, from the audio that has arrived."""
        if self.segments is not None:
            return self._punctuate_segment(self.known.segment[self.run_word], self.run_word, end, final, until)
        return self._punctuate_run(self.run_word, end, self.run_frame, None, final, until)

    # ---- punctuating ------------------------------------------------------------------------------

    def _punctuate_run(
        self, w_start: int, w_end: int, f_start: int, f_end: int | None, final: bool, until: int | None = None
    ) -> list[StreamedWord]:
        """Words ``[emitted, until)`` of the run of words ``[w_start, w_end)`` over frames ``[f_start, f_end)``
        (``f_end`` None: to the end of the audio so far, whose last stretch then takes all its samples, as offline's
        last stretch of a recording), cut into stretches as offline (``pause_segments``, in the run's frames)."""
        known = self.known
        until = w_end if until is None else until
        to_the_end = f_end is None
        f_end = self._frames_of(self.num_samples) if f_end is None else f_end
        # inside the audio and at least one frame long, as offline's word spans (a no-op before the end)
        starts = np.clip(np.array(known.starts[w_start:w_end], dtype=np.int64), 0, f_end - 1)
        ends = np.clip(np.array(known.ends[w_start:w_end], dtype=np.int64), starts + 1, f_end)
        spans = [WordSpan(w, int(a), int(b)) for w, a, b in zip(known.words[w_start:w_end], starts, ends)]
        out: list[StreamedWord] = []
        for f0, f1, w0, w1 in pause_segments(
            starts - f_start, ends - f_start, f_end - f_start, self.pause, self.max_frames
        ):
            first, last = w_start + w0, w_start + w1
            if last <= self.emitted:
                continue
            if first >= until:
                break
            f0, f1 = f_start + f0, f_start + f1
            end_sample = self.num_samples if to_the_end and f1 == f_end else f1 * self.hop
            samples = self.audio.between(f0 * self.hop, end_sample, self.utt_id)
            stretch = [WordSpan(s.word, s.start - f0, s.end - f0) for s in spans[w0:w1]]
            out += self._punctuate_stretch(f0 * self.hop, samples, first, stretch, spans[w0:w1], final, until)
        return out

    def _punctuate_segment(
        self, k: int, w_start: int, w_end: int, final: bool, until: int | None = None
    ) -> list[StreamedWord]:
        """Words ``[emitted, until)`` of segment ``k``'s words ``[w_start, w_end)`` from its samples so far, their
        frames counted from its start (``word_frame_spans`` with its start as the offset, as stage 3's)."""
        known = self.known
        until = w_end if until is None else until
        if w_end <= self.emitted or until <= self.emitted:
            return []  # all given out already, early
        segment = self.segments[k]
        end = self.num_samples if segment.end_sample is None else min(segment.end_sample, self.num_samples)
        samples = self.audio.between(segment.first_sample, end, self.utt_id)
        num_frames = max(1, self._frames_of(samples.size))
        starts, ends = word_frame_spans(
            known.start_seconds[w_start:w_end], known.end_seconds[w_start:w_end], offset=segment.start
        )
        starts = np.clip(starts, 0, num_frames - 1)
        ends = np.clip(ends, starts + 1, num_frames)
        words = known.words[w_start:w_end]
        stretch = [WordSpan(w, int(a), int(b)) for w, a, b in zip(words, starts, ends)]
        shown = [WordSpan(w, known.starts[i], known.ends[i]) for i, w in enumerate(words, start=w_start)]
        return self._punctuate_stretch(segment.first_sample, samples, w_start, stretch, shown, final, until)

    def _punctuate_stretch(
        self,
        first_sample: int,
        samples: np.ndarray,
        first: int,
        spans: list[WordSpan],
        shown: list[WordSpan],
        final: bool,
        until: int,
    ) -> list[StreamedWord]:
        """One stretch (its ``samples``, from ``first_sample`` of the audio on) as offline punctuates it
        (the chain's steps, as ``LongForm.tdnn_posteriors`` runs them); ``spans``: its words' frames from its start,
        ``shown``: the same words' frames from the start of the audio (the output's).  Its words from
        ``emitted`` to ``until`` are returned."""
        chain = self.chain
        last = first + len(spans)
        stretch = Stretch(f"{self.utt_id}#{first}", [s.word for s in spans], spans)
        stored = chain.as_stored(self._raw_features(first_sample, samples), samples.size, stretch.id)
        stretch.embedding = chain.stored_embedding(self._embedding(first_sample, chain.fixed_cmvn(stored)))
        with chain.timer("bert"):
            chain.read_stretches([stretch])
        rows = (max(first, self.emitted) - first, min(last, until) - first)  # the words to give out
        p_tdnn = chain.stretch_tdnn(stretch, rows)
        p_bert = stretch.text.posteriors[chain.head][rows[0] : rows[1]]
        p_ens, labels = chain.ensemble_labels(p_tdnn, p_bert)
        out = [
            self._word(first + rows[0] + k, shown[rows[0] + k], p_tdnn[k], p_bert[k], p_ens[k], labels[k], final)
            for k in range(rows[1] - rows[0])
        ]
        self.emitted = max(self.emitted, min(last, until))
        return out

    def _raw_features(self, first_sample: int, samples: np.ndarray) -> np.ndarray:
        """The extractor's frames of the stretch starting at sample ``first_sample`` (``samples``: what has arrived
        of it), extracting only the frames the last call on the same stretch did not have: a frame depends on its
        own 25 ms of samples alone (no dither, Kaldi's snip_edges), so extracting from a later frame's first
        sample gives the same values as extracting the whole."""
        have = self._raw[1] if self._raw[0] == first_sample else np.zeros((0, 0), dtype=np.float32)
        have = have[: self._frames_of(samples.size)]
        with self.chain.timer("features"):
            fresh = self.chain.extractor.extract(samples[have.shape[0] * self.hop :], self.rate)
        raw = np.concatenate([have, fresh]) if have.shape[0] else fresh
        self._raw = (first_sample, raw)
        return raw

    def _embedding(self, first_sample: int, feats: np.ndarray) -> np.ndarray:
        """The AM's layer-12 frames of the stretch starting at sample ``first_sample`` (``Chain.am_embedding``
        of its features), computed only where the last call on the same stretch could not know them: a frame whose
        context (``am.context()``) lay inside the features then and now is the same, since the features of a
        frame depend on its own samples and the CMVN stats are fixed."""
        left, right = self.chain.am.context()
        usable = 0
        if self._cache_start == first_sample:
            usable = min(self._cache.shape[0], max(0, feats.shape[0] - right))
        start = max(0, usable - left)  # from here, frames >= usable have all their left context
        fresh = self.chain.am_embedding(feats[start:])[usable - start :]
        embedding = np.concatenate([self._cache[:usable], fresh]) if usable else fresh
        self._cache_start, self._cache = first_sample, embedding[: max(0, feats.shape[0] - right)]
        return embedding

    def _word(
        self,
        i: int,
        span: WordSpan,
        p_tdnn: np.ndarray,
        p_bert: np.ndarray,
        p_ens: np.ndarray,
        label: str,
        final: bool,
    ) -> StreamedWord:
        known = self.known
        word = StreamedWord(
            i,
            known.words[i],
            (span.start, span.end),
            label,
            p_tdnn,
            p_bert,
            p_ens,
            self.seconds,
            final,
        )
        self.labels.append(label)
        k = known.token[i]
        if i + 1 == len(known.token) or known.token[i + 1] != k:  # the token's last word: render it
            n = len(known.token_spans[k])
            word.text = render_text(known.token_texts[k], known.token_spans[k], self.labels[-n:])
        return word


def stream_result(words: Sequence[StreamedWord], utt_id: str, alpha: float, seconds: float) -> Result:
    """The stream's words as one offline ``Result`` (for ``punct.jsonl``; the text joins the tokens' texts)."""

    def stack(name):
        return np.stack([getattr(w, name) for w in words]) if words else np.zeros((0, len(PUNCT4.classes)))

    return Result(
        utt_id,
        " ".join(w.text for w in words if w.text is not None),
        [w.word for w in words],
        [w.label for w in words],
        [w.span for w in words],
        stack("p_tdnn"),
        stack("p_bert"),
        stack("p_ensemble"),
        alpha,
        "ctm",
        seconds,
        True,
    )


def pcm_chunks(stream: BinaryIO, chunk_samples: int) -> Iterator[np.ndarray]:
    """Raw 16-bit signed little-endian mono PCM (``sox ... -t raw -b 16 -e signed -c 1 -``) in chunks of
    ``chunk_samples`` as float32 in [-1, 1); the last chunk may be shorter."""
    pending = b""
    while True:
        data = stream.read(2 * chunk_samples - len(pending))
        if not data:
            break
        pending += data
        if len(pending) >= 2 * chunk_samples:
            yield np.frombuffer(pending[: 2 * chunk_samples], dtype="<i2").astype(np.float32) / 32768.0
            pending = pending[2 * chunk_samples :]
    if len(pending) >= 2:
        yield np.frombuffer(pending[: len(pending) // 2 * 2], dtype="<i2").astype(np.float32) / 32768.0


def wav_chunks(path: Path, chunk_samples: int, rate: int) -> Iterator[np.ndarray]:
    """An audio file read ``chunk_samples`` at a time (mono: channels averaged); its rate must be ``rate``."""
    import soundfile as sf

    with sf.SoundFile(str(path)) as f:
        if f.samplerate != rate:
            raise ValueError(
                f"{path}: {f.samplerate} Hz; a stream must be at the recipe's {rate} Hz "
                f"(e.g. sox {path} -r {rate} out.wav)"
            )
        for block in f.blocks(blocksize=chunk_samples, dtype="float32", always_2d=True):
            yield block.mean(axis=1)


@dataclass
class StreamStats:
    """Compute time per chunk of audio: wall seconds, and CPU seconds of this process (one thread: its compute
    time even when other jobs share the machine)."""

    chunk_seconds: list[float] = field(default_factory=list)  # audio per chunk
    compute_seconds: list[float] = field(default_factory=list)  # wall time spent on it
    cpu_seconds: list[float] = field(default_factory=list)  # CPU time of this process spent on it

    def add(self, audio: float, wall: float, cpu: float) -> None:
        self.chunk_seconds.append(audio)
        self.compute_seconds.append(wall)
        self.cpu_seconds.append(cpu)

    def summary(self) -> dict[str, float]:
        audio = float(sum(self.chunk_seconds))
        out = {"audio_seconds": audio}
        for name, seconds in (("rtf", self.compute_seconds), ("rtf_cpu", self.cpu_seconds)):
            spent = np.asarray(seconds)
            per_chunk = spent[:-1] / np.maximum(np.asarray(self.chunk_seconds[:-1]), 1e-9)  # the last: end of input
            out[name] = float(spent.sum() / max(audio, 1e-9))
            out[f"{name}_chunk_p95"] = float(np.percentile(per_chunk, 95)) if per_chunk.size else 0.0
            out[f"{name}_chunk_max"] = float(per_chunk.max()) if per_chunk.size else 0.0
        return out


def run_stream(
    streamer: StreamingPunctuator,
    chunks: Iterator[np.ndarray],
    tokens: Sequence[TimedWord],
    on_words=None,
) -> tuple[list[StreamedWord], StreamStats]:
    """Drives a stream: each chunk of audio with the tokens that end within the audio so far; ``on_words``
    (if given) gets each batch of ready words as it comes."""
    words: list[StreamedWord] = []
    stats = StreamStats()
    next_token = 0
    for chunk in chunks:
        wall, cpu = time.perf_counter(), time.process_time()
        arrived = (streamer.num_samples + chunk.size) / streamer.rate
        first = next_token
        while next_token < len(tokens) and tokens[next_token].end <= arrived + 1e-9:
            next_token += 1
        ready = streamer.accept(chunk, tokens[first:next_token])
        stats.add(chunk.size / streamer.rate, time.perf_counter() - wall, time.process_time() - cpu)
        words += ready
        if on_words is not None and ready:
            on_words(ready)
    wall, cpu = time.perf_counter(), time.process_time()
    ready = streamer.accept(np.zeros(0, dtype=np.float32), tokens[next_token:]) + streamer.finish()
    stats.add(0.0, time.perf_counter() - wall, time.process_time() - cpu)
    words += ready
    if on_words is not None and ready:
        on_words(ready)
    if streamer.dropped_tokens:
        logging.info("%s: %d tokens said as no word (lone marks) left out", streamer.utt_id, streamer.dropped_tokens)
    return words, stats


class LinePrinter:
    """Prints the tokens of ready words as text, flushed per word; a line ends after a sentence end (a full stop
    or question mark), and :meth:`close` ends a partial last line."""

    def __init__(self, out=sys.stdout, sentence_ends: Sequence[str] = (".", "?")) -> None:
        self.out = out
        self.sentence_ends = tuple(sentence_ends)
        self.open_line = False

    def __call__(self, words: Sequence[StreamedWord]) -> None:
        for w in words:
            if w.text is None:
                continue
            sentence_end = w.label in self.sentence_ends
            self.out.write(("" if not self.open_line else " ") + w.text + ("\n" if sentence_end else ""))
            self.open_line = not sentence_end
            self.out.flush()

    def close(self) -> None:
        if self.open_line:
            self.out.write("\n")
            self.out.flush()
            self.open_line = False
