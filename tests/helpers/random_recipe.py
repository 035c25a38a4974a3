"""A tiny randomly initialised EfficientPunct recipe on disk (``benchmarks.random_models.save_recipe``) with a
talk to punctuate and the CMVN stats file a stream needs (a recipe's data/fbank/cmvn_train.json)."""

from __future__ import annotations

from pathlib import Path

import soundfile as sf


def random_recipe(root: Path, talk_seconds: float, seed: int = 7) -> Path:
    """``root``/recipe (models), ``root``/talk.wav and ``root``/cmvn_train.json (stats of another recording)."""
    from benchmarks.random_models import save_recipe
    from punct.features import FeatureConfig
    from punct.features.cmvn import CmvnStats, SpeakerCmvn
    from tests.inference.test_pipeline import ALPHA, tiny_models, write_wav

    save_recipe(root / "recipe", tiny_models(root), alpha=ALPHA)
    write_wav(root / "talk.wav", talk_seconds, seed=seed)
    other = write_wav(root / "other.wav", 5.0, seed=seed + 1)
    samples, rate = sf.read(other, dtype="float32")
    stats = CmvnStats()
    stats.accumulate(FeatureConfig().extractor().extract(samples, rate))
    SpeakerCmvn({"spk1": stats}).save(root / "cmvn_train.json")
    return root


def stream_punctuator(root: Path, **kwargs):
    """The recipe's Punctuator with the fixed CMVN stats, on one CPU thread."""
    import torch

    from punct.inference.acoustic import merged_cmvn
    from punct.inference.pipeline import Punctuator

    torch.set_num_threads(1)
    return Punctuator.from_recipe(root / "recipe", global_cmvn=merged_cmvn(root / "cmvn_train.json"), **kwargs)
