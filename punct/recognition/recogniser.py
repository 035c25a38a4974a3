"""Long-recording recognition (stage 2 of the speech-informed ITN recipe): the recogniser interface and
the recipe's own CTC acoustic model behind it.

``recognise_recording`` is the one chunked recognition of a recording
(``punct.recognition.recognise.recognise_long``: ~30 s chunks, greedy CTC or beam search with a word LM, CTC
segmentation, merge at the overlap midpoints) for any ``ChunkRecogniser``: ``TdnnRecogniser`` here, or
``punct.recognition.transformers_ctc.TransformersCtcRecogniser`` (a local transformers CTC folder, e.g. a Czech
wav2vec2).

An AM folder (``exp/am`` of ``steps/train_am.sh``, or a pre-trained one in the same format) holds
``best-valid-loss.pt`` (model, config and token table) and ``mfcc.yaml`` (the feature config the
model was trained with; the recipe copies it there).

CMVN convention: the recogniser does not know who speaks when inside a long recording, so the
features are normalised with the stats of the *whole recording* (every frame, pauses included).
The AM training data of ``punct.am_data.long_audio`` matches this: its supervisions' speaker is the
recording id, so stage-1 CMVN stats are per recording (over the utterances' frames).

Each ~30 s chunk gets its own MFCC (frame t at ``t * 10 ms`` from the chunk start, the frame
convention of ``punct.features``) normalised with the recording's stats, and goes through the
network alone (``punct.am.infer.run_model``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import torch
from lhotse import Recording
from lhotse.utils import Pathlike

from punct.am.checkpoint import load_am
from punct.am.decode import WerStats
from punct.am.infer import run_model
from punct.am.model import TdnnAcousticModel
from punct.am.tokens import SPACE, TokenTable
from punct.features import FeatureConfig
from punct.features.cmvn import SpeakerCmvn
from punct.labels import TimedWord
from punct.recognition.chunks import ChunkConfig, plan_chunks
from punct.recognition.recognise import recognise_long

# chunk samples -> (T, V) log-posteriors over ``ChunkRecogniser.symbols``
PosteriorFn = Callable[[np.ndarray], np.ndarray]


class ChunkRecogniser(Protocol):
    """What chunked long-recording recognition needs of a CTC acoustic model.

    ``symbols[0]`` is the CTC blank and ``SPACE`` ("|") the word separator; the other symbols are single
    lowercase characters, so that recognised words are lowercase, as the official words are compared.
    Output frame t of a chunk is at ``t * frame_shift`` seconds from the chunk start.
    """

    name: str  # for the logs: which recogniser ran
    symbols: Sequence[str]
    sample_rate: int  # the rate the audio is loaded (resampled) at
    frame_shift: float  # seconds per output frame

    def posteriors_for(self, recording_id: str, audio: np.ndarray) -> PosteriorFn:
        """The chunk -> log-posteriors function for one recording (it may use the whole recording, e.g. its CMVN)."""
        ...


class ChunkPosteriors:
    """chunk samples -> (T, V) log-posteriors: MFCC, the recording's CMVN, the AM."""

    def __init__(
        self,
        model: TdnnAcousticModel,
        feat_config: FeatureConfig,
        cmvn: SpeakerCmvn,
        key: str,
        device: torch.device = torch.device("cpu"),
    ) -> None:
        self.model = model
        self.extractor = feat_config.extractor()
        self.sample_rate = int(feat_config.options.get("sampling_rate", 16000))
        self.cmvn = cmvn
        self.key = key
        self.device = device
        self.num_tokens = model.config.num_tokens

    def __call__(self, samples: np.ndarray) -> np.ndarray:
        feats = self.extractor.extract(samples, self.sample_rate)
        if feats.shape[0] == 0:  # a chunk shorter than one window
            return np.zeros((0, self.num_tokens), dtype=np.float32)
        return run_model(self.model, self.cmvn.apply(self.key, feats), device=self.device)


def recording_cmvn(feats: np.ndarray, key: str, norm_vars: bool) -> SpeakerCmvn:
    return SpeakerCmvn.accumulate([(key, feats)], norm_vars=norm_vars)


class TdnnRecogniser:
    """The recipe's own TDNN CTC acoustic model (an ``exp/am`` folder) as a ``ChunkRecogniser``."""

    def __init__(
        self,
        model: TdnnAcousticModel,
        tokens: TokenTable,
        feat_config: FeatureConfig,
        device: torch.device = torch.device("cpu"),
        name: str = "TDNN CTC acoustic model",
    ) -> None:
        self.model = model
        self.feat_config = feat_config
        self.device = device
        self.name = name
        self.symbols = tokens.symbols
        self.sample_rate = int(feat_config.options.get("sampling_rate", 16000))
        self.frame_shift = feat_config.extractor().frame_shift

    @classmethod
    def from_dir(
        cls, am_dir: Pathlike, checkpoint: str = "best-valid-loss.pt", device: torch.device = torch.device("cpu")
    ) -> TdnnRecogniser:
        model, tokens, feat_config = load_am(am_dir, checkpoint, device)
        return cls(model, tokens, feat_config, device, name=f"TDNN CTC acoustic model {Path(am_dir) / checkpoint}")

    def posteriors_for(self, recording_id: str, audio: np.ndarray) -> PosteriorFn:
        posteriors = ChunkPosteriors(self.model, self.feat_config, SpeakerCmvn({}), recording_id, self.device)
        feats = posteriors.extractor.extract(audio, self.sample_rate)
        if feats.shape[0] == 0:
            raise ValueError(f"recording {recording_id}: {len(audio)} samples, too short for one feature frame")
        posteriors.cmvn = recording_cmvn(feats, recording_id, self.feat_config.norm_vars)
        return posteriors


def load_audio(recording: Recording, sample_rate: int) -> np.ndarray:
    """Mono samples at the recogniser's rate (resampled by lhotse; first channel of a multi-channel recording)."""
    if recording.sampling_rate != sample_rate:
        recording = recording.resample(sample_rate)
    audio = recording.load_audio()
    return np.asarray(audio[0] if audio.ndim == 2 else audio, dtype=np.float32)


def recognise_recording(
    recording: Recording,
    recogniser: ChunkRecogniser,
    chunk_config: ChunkConfig = ChunkConfig(),
    decode: Callable[[np.ndarray], list[str]] | None = None,
) -> tuple[list[TimedWord], dict[str, float]]:
    """Words with times of one long recording, and counts (chunks, merge cases, CPU seconds).
    ``decode``: a chunk's log-posteriors -> words (default greedy;
    ``punct.recognition.beam_search.CtcBeamSearch.decode``)."""
    start = time.process_time()
    audio = load_audio(recording, recogniser.sample_rate)
    posterior_fn = recogniser.posteriors_for(recording.id, audio)
    counts: dict[str, float] = {"matched": 0, "discarded": 0, "concatenated": 0}
    words = recognise_long(
        audio,
        recogniser.sample_rate,
        posterior_fn,
        recogniser.symbols,
        frame_shift=recogniser.frame_shift,
        config=chunk_config,
        space=SPACE,
        counts=counts,
        decode=decode,
    )
    counts["chunks"] = len(plan_chunks(len(audio), recogniser.sample_rate, chunk_config))
    counts["words"] = len(words)
    counts["duration"] = round(len(audio) / recogniser.sample_rate, 3)
    counts["cpu_seconds"] = round(time.process_time() - start, 2)
    return words, counts


def word_errors(ref: list[str], hyp: list[str]) -> dict[str, int]:
    """Edit counts of a whole recording's recognised words against the reference words."""
    stats = WerStats()
    stats.add([w.lower() for w in ref], [w.lower() for w in hyp])
    return {"words": stats.words, "sub": stats.sub, "dele": stats.dele, "ins": stats.ins}


def total_wer(per_recording: list[dict[str, int]]) -> WerStats | None:
    if not per_recording:
        return None
    total = WerStats()
    for e in per_recording:
        total.words += e["words"]
        total.sub += e["sub"]
        total.dele += e["dele"]
        total.ins += e["ins"]
        total.sentences += 1
        total.sentence_errors += int(e["sub"] + e["dele"] + e["ins"] > 0)
    return total
