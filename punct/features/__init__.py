"""Acoustic features: kaldi-native-fbank extractors for lhotse, per-speaker CMVN, stage-1 computation."""

from dataclasses import dataclass, field
from typing import Any

from punct.features.extractor import KnfFbank, KnfFbankConfig, KnfMfcc, KnfMfccConfig, make_extractor  # noqa: F401
from punct.features.vectorised import VectorisedExtractor, supports


@dataclass(frozen=True)
class FeatureConfig:
    """conf/mfcc.yaml: which extractor, its options, and the CMVN mode."""

    kind: str = "mfcc"  # mfcc or fbank
    norm_vars: bool = False  # per-speaker CMVN: also divide by the standard deviation
    options: dict[str, Any] = field(default_factory=dict)  # KnfMfccConfig / KnfFbankConfig fields

    def extractor(self, vectorised: bool = False):
        """The lhotse extractor; ``vectorised``: NumPy over all frames at once when the options allow
        (same values to float tolerance, about twice as fast; see :mod:`punct.features.vectorised`)."""
        extractor = make_extractor(self.kind, **self.options)
        if vectorised and supports(extractor.config):
            return VectorisedExtractor(extractor.config)
        return extractor
