"""The acoustic side of punctuating new audio: audio at the recipe's rate (:func:`resample`), CMVN stats of a
stage-1 stats file (:func:`merged_cmvn`), one pass of the acoustic model (:func:`am_forward`) and an utterance as
the acoustic side leaves it (:class:`Prepared`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from lhotse.utils import Pathlike

from punct.am.model import TdnnAcousticModel
from punct.am.viterbi import WordSpan
from punct.features.cmvn import CmvnStats, SpeakerCmvn
from punct.inference.inputs import Request


@dataclass
class Prepared:
    """An utterance after the acoustic part (features, AM, alignment): its text, words and their character spans
    in it, the layer-12 frames (none yet for a whole recording, whose frames come one stretch at a time), each
    word's frames, where the words came from (given, am, ctm) and the audio's duration in seconds."""

    request: Request
    text: str
    words: list[str]
    char_spans: list[tuple[int, int]]
    embedding: np.ndarray  # (T, Da) layer-12
    spans: list[WordSpan]
    transcript_from: str
    duration: float
    long_form: bool = False


@torch.inference_mode()
def am_forward(
    model: TdnnAcousticModel, feats: np.ndarray, layer: int, device: torch.device = torch.device("cpu")
) -> tuple[np.ndarray, np.ndarray]:
    """One pass of the acoustic model: (layer ``layer`` output (T, C), CTC log-posteriors (T, V)).

    Equal to ``model(x, layer=layer)`` and ``model(x).log_softmax(-1)`` (checked by the tests); layer must
    be one of the factorised layers tdnnf2..tdnnf13 (2..13).
    """
    if not 2 <= layer <= 1 + len(model.tdnnf):
        raise ValueError(f"layer must be a tdnnf layer (2..{1 + len(model.tdnnf)}), got {layer}")
    x = torch.from_numpy(np.ascontiguousarray(feats, dtype=np.float32)).unsqueeze(0).to(device)
    emb, logits = model.forward_with_tap(x, layer)
    return emb[0].float().cpu().numpy(), logits[0].log_softmax(dim=-1).float().cpu().numpy()


def resample(samples: np.ndarray, rate: int, target: int) -> np.ndarray:
    if rate == target:
        return samples
    from scipy.signal import resample_poly

    g = math.gcd(int(rate), int(target))
    return resample_poly(samples, target // g, rate // g).astype(np.float32)


def merged_cmvn(path: Pathlike, speaker: str | None = None) -> CmvnStats:
    """All speakers' stats of a stage-1 CMVN file (data/fbank/cmvn_train.json) merged into one, or ``speaker``'s
    alone (as stage 1 normalised that speaker's segments)."""
    table = SpeakerCmvn.load(path).stats
    if speaker is not None and speaker not in table:
        raise ValueError(f"{path}: no CMVN stats of speaker {speaker!r} (it has {len(table)}: {sorted(table)[:5]} ...)")
    merged = CmvnStats()
    for stats in table.values() if speaker is None else [table[speaker]]:
        merged.merge(stats)
    if merged.count == 0:
        raise ValueError(f"{path}: CMVN stats without frames")
    return merged
