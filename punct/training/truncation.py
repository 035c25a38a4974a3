"""The seeded draws of randomly truncated right context, shared by the models that train for live captions
(``punctuate --stream --latency L``, :mod:`punct.inference.streaming`): the punctuation TDNN
(:mod:`punct.models.punct_tdnn.truncation`: frames) and BERT (:mod:`punct.models.text.truncation`: words).

A share of the training examples is cut after a random word (plus, for audio, a number of frames), as a stream
shows a word whose pause-delimited stretch is still open.  The draws are seeded by (seed, epoch, example): a
rerun draws the same cuts, each epoch new ones, whatever process or data-loader worker makes the example.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RightTruncation:
    share: float  # of the training examples that are cut
    max_frames: int = 0  # a cut lies 0 .. max_frames frames after the chosen word's end (0 for text)

    def __post_init__(self) -> None:
        if not 0.0 <= self.share <= 1.0:
            raise ValueError(f"right_truncation must be in [0, 1], got {self.share}")
        if self.max_frames < 0:
            raise ValueError(f"right_truncation_frames must be >= 0, got {self.max_frames}")

    def draw(self, seed: int, epoch: int, example: int) -> int | None:
        """Frames of right context after the chosen word's end for this example in this epoch, or None:
        not cut."""
        rng = self.generator(seed, epoch, example)
        if self.share <= 0 or rng.random() >= self.share:
            return None
        return int(rng.integers(self.max_frames + 1))

    def draw_word(self, seed: int, epoch: int, example: int, num_words: int) -> tuple[int, int] | None:
        """(word, frames after its end) at which this example is cut in this epoch, or None: not cut."""
        latency = self.draw(seed, epoch, example)
        if latency is None:
            return None
        return int(self.generator(seed, epoch, example, 1).integers(num_words)), latency

    @staticmethod
    def generator(seed: int, epoch: int, example: int, stream: int = 0) -> np.random.Generator:
        return np.random.default_rng([seed, epoch, example, stream])
