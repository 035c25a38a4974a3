"""A local transformers CTC model folder (e.g. a Czech wav2vec2) as a long-recording recogniser.

ParCzech users bring a pretrained Czech ASR model (the thesis used a wav2vec2 CTC model).  Any folder that
``AutoFeatureExtractor``, ``AutoTokenizer`` and ``AutoModelForCTC`` load (``save_pretrained`` of a processor
and a model; read with ``local_files_only=True``: nothing is downloaded) recognises the long recordings
through the same chunked recognition as the recipe's own AM (``punct.recognition.recogniser.recognise_recording``).

* Frames: the convolutional front end turns ``inputs_to_logits_ratio`` samples into one output frame
  (320 samples, 20 ms at 16 kHz, for wav2vec2); frame t of a chunk is at ``t * frame_shift`` seconds
  from the chunk start, the convention of the project's AM.
* Audio: loaded at the feature extractor's sampling rate (lhotse resamples), each chunk normalised by the
  feature extractor as in the model's training (wav2vec2: zero mean, unit variance per input).
* Vocabulary: the model's tokens are folded onto the recogniser symbols (``CtcVocabulary``): the
  tokenizer's pad token is the CTC blank (symbol 0), and the other special tokens (``<s>``, ``</s>``)
  join it; the word delimiter (``|``) is the separator ``SPACE``; ``<unk>`` becomes one placeholder
  character (a word with an unknown character then never matches an official word exactly); letters
  are lowercased, and an upper- and a lowercase token of one letter (both in some vocabularies) are summed.
* Decoding is the recognition's (``punct.recognition.recordings``): greedy, or with ``--lm`` the project's beam search
  with a word n-gram LM in ARPA form (``punct.recognition.beam_search``; egs/parczech estimates it from the official
  transcripts).  A folder made for ``Wav2Vec2ProcessorWithLM`` (``language_model/``) loads too, but its KenLM is not
  read: pyctcdecode, which reads it, needs numpy < 2, which this project's stack excludes; an ARPA version of that
  LM can be given with ``--lm``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from lhotse.utils import Pathlike

from punct.am.tokens import SPACE
from punct.recognition.recogniser import PosteriorFn

logger = logging.getLogger(__name__)

BLANK = "<blk>"
UNKNOWN = "\ufffd"  # the recognised form of the tokenizer's unknown token


@dataclass(frozen=True)
class CtcVocabulary:
    """The recogniser symbols (0: blank, then ``SPACE``, then lowercase characters) and, for each, the
    model's output columns whose probabilities it sums."""

    symbols: tuple[str, ...]
    groups: tuple[tuple[int, ...], ...]


def ctc_vocabulary(
    token_ids: dict[str, int],
    num_outputs: int,
    blank: str,
    delimiter: str,
    unknown: str | None = None,
    special: Collection[str] = (),
    where: str = "",
) -> CtcVocabulary:
    """Folds a CTC tokenizer's vocabulary (token -> output column) onto recogniser symbols.

    Args:
      token_ids: the tokenizer's vocabulary, added tokens included.
      num_outputs: columns of the model's logits; tokens beyond them are never emitted, columns without a
        token join the blank.
      blank, delimiter, unknown: the pad (CTC blank), word-delimiter and unknown tokens.
      special: the other special tokens (they join the blank).
      where: named in errors (the model folder).
    """
    for name, token in (("pad (CTC blank)", blank), ("word delimiter", delimiter)):
        if token_ids.get(token, num_outputs) >= num_outputs:
            raise ValueError(f"{where}: the {name} token {token!r} is not one of the model's {num_outputs} outputs")
    groups: dict[str, list[int]] = {BLANK: [], SPACE: []}
    named = set()
    for token, column in sorted(token_ids.items(), key=lambda item: item[1]):
        if column >= num_outputs or column in named:
            continue
        named.add(column)
        groups.setdefault(_symbol(token, blank, delimiter, unknown, special, where), []).append(column)
    unnamed = [c for c in range(num_outputs) if c not in named]
    if unnamed:
        logger.warning(
            "%s: %d of the model's %d outputs have no token; they count as blank", where, len(unnamed), num_outputs
        )
        groups[BLANK].extend(unnamed)
    return CtcVocabulary(tuple(groups), tuple(tuple(sorted(g)) for g in groups.values()))


def _symbol(token: str, blank: str, delimiter: str, unknown: str | None, special: Collection[str], where: str) -> str:
    if token == blank or (token in special and token not in (delimiter, unknown)):
        return BLANK
    if token == delimiter or token.isspace():
        return SPACE
    if token == unknown:
        return UNKNOWN
    if len(token) != 1:
        raise ValueError(
            f"{where}: token {token!r} is not one character; only character vocabularies "
            "(wav2vec2-style CTC) can be timed by CTC segmentation"
        )
    lower = token.lower()
    return lower if len(lower) == 1 else token


def fold_log_probs(log_probs: np.ndarray, groups: Sequence[Sequence[int]]) -> np.ndarray:
    """(T, V) log-posteriors over the model's columns -> (T, S) over the symbols (log of summed probabilities)."""
    lp = torch.from_numpy(np.asarray(log_probs, dtype=np.float32))
    out = torch.empty((lp.shape[0], len(groups)), dtype=torch.float32)
    for s, columns in enumerate(groups):
        out[:, s] = lp[:, columns[0]] if len(columns) == 1 else torch.logsumexp(lp[:, list(columns)], dim=1)
    return out.numpy()


def frame_shift_seconds(model_config, sampling_rate: int) -> float:
    """Seconds per output frame: input samples per logit frame (the product of the conv strides) / rate."""
    ratio = getattr(model_config, "inputs_to_logits_ratio", None)
    if ratio is None and getattr(model_config, "conv_stride", None):
        ratio = math.prod(model_config.conv_stride)
    if not ratio:
        raise ValueError(
            f"{type(model_config).__name__}: no inputs_to_logits_ratio or conv_stride; "
            "cannot tell the duration of an output frame"
        )
    return float(ratio) / float(sampling_rate)


def output_frames(num_samples: int, kernels: Sequence[int], strides: Sequence[int]) -> int:
    """Logit frames of ``num_samples`` input samples through valid (unpadded) strided convolutions."""
    length = num_samples
    for k, s in zip(kernels, strides):
        if length < k:
            return 0
        length = (length - k) // s + 1
    return length


class TransformersCtcRecogniser:
    """A transformers CTC model with its feature extractor and tokenizer, as a ``ChunkRecogniser``."""

    def __init__(
        self, model, feature_extractor, tokenizer, device: torch.device = torch.device("cpu"), where: str = ""
    ) -> None:
        self.model = model.eval().to(device)
        self.feature_extractor = feature_extractor
        self.device = device
        self.sample_rate = int(feature_extractor.sampling_rate)
        self.frame_shift = frame_shift_seconds(model.config, self.sample_rate)
        num_outputs = int(model.config.vocab_size)
        unknown = getattr(tokenizer, "unk_token", None)
        special = set(tokenizer.all_special_tokens) - {tokenizer.pad_token}
        self.vocabulary = ctc_vocabulary(
            tokenizer.get_vocab(),
            num_outputs,
            tokenizer.pad_token,
            tokenizer.word_delimiter_token,
            unknown,
            special,
            where,
        )
        self.symbols = self.vocabulary.symbols
        self.name = (
            f"transformers CTC model {where} ({type(model).__name__}, {num_outputs} outputs -> "
            f"{len(self.symbols)} symbols, {self.frame_shift * 1000:g} ms frames, "
            f"{self.sample_rate} Hz)"
        )

    def posteriors_for(self, recording_id: str, audio: np.ndarray) -> PosteriorFn:
        return self.chunk_posteriors  # each chunk is normalised on its own by the feature extractor

    @torch.no_grad()
    def chunk_posteriors(self, samples: np.ndarray) -> np.ndarray:
        config = self.model.config
        if (
            getattr(config, "conv_kernel", None)
            and output_frames(len(samples), config.conv_kernel, config.conv_stride) == 0
        ):
            return np.zeros((0, len(self.symbols)), dtype=np.float32)
        inputs = self.feature_extractor(samples, sampling_rate=self.sample_rate, return_tensors="pt")
        logits = self.model(inputs["input_values"].to(self.device)).logits[0]
        return fold_log_probs(logits.float().log_softmax(dim=-1).cpu().numpy(), self.vocabulary.groups)


def load_transformers_ctc(model_dir: Pathlike, device: torch.device = torch.device("cpu")) -> TransformersCtcRecogniser:
    """The recogniser of a local folder with a saved processor (feature extractor + CTC tokenizer) and CTC model."""
    from transformers import AutoFeatureExtractor, AutoModelForCTC, AutoTokenizer

    model_dir = Path(model_dir)
    if not (model_dir / "config.json").is_file():
        raise FileNotFoundError(
            f"{model_dir / 'config.json'}: no such file; --asr-model needs a transformers CTC "
            "folder (save_pretrained of the processor and the model)"
        )
    try:
        feature_extractor = AutoFeatureExtractor.from_pretrained(model_dir, local_files_only=True)
        tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
        model = AutoModelForCTC.from_pretrained(model_dir, local_files_only=True)
    except (OSError, ValueError, KeyError) as e:
        raise ValueError(f"{model_dir}: not a loadable transformers CTC folder (processor + model): {e}") from None
    for attribute in ("pad_token", "word_delimiter_token"):
        if not getattr(tokenizer, attribute, None):
            raise ValueError(
                f"{model_dir}: the tokenizer ({type(tokenizer).__name__}) has no {attribute}; "
                "a CTC tokenizer such as Wav2Vec2CTCTokenizer is needed"
            )
    if (model_dir / "language_model").is_dir():
        logger.warning(
            "%s: its language_model/ is not read (its ARPA form can be given to recognise_long --lm; "
            "see punct.recognition.transformers_ctc)",
            model_dir,
        )
    return TransformersCtcRecogniser(model, feature_extractor, tokenizer, device, where=str(model_dir))
