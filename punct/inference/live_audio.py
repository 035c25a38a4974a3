"""The audio of a live stream so far (:class:`ArrivingAudio`), as both live drivers keep it: live punctuation
(``punct.inference.streaming``) and live punctuation and case (``punct.inference.itn_stream``)."""

from __future__ import annotations

import numpy as np


class ArrivingAudio:
    """The samples that have arrived, numbered from the start of the stream; those before a closed stretch's end
    are dropped (:meth:`keep_from`), since nothing before it is read again."""

    def __init__(self) -> None:
        self._chunks: list[np.ndarray] = []  # samples from ``start`` on
        self.start = 0  # sample number of the first kept sample
        self.num_samples = 0  # samples that have arrived, kept or dropped

    def append(self, samples: np.ndarray) -> None:
        if samples.size:
            self._chunks.append(samples)
            self.num_samples += samples.size

    def between(self, first: int, end: int, utt_id: str = "stream") -> np.ndarray:
        """Samples [first, end) of the stream (to the end of what has arrived), as offline slices the recording."""
        if len(self._chunks) > 1:
            self._chunks = [np.concatenate(self._chunks)]
        audio = self._chunks[0] if self._chunks else np.zeros(0, dtype=np.float32)
        a = first - self.start
        if a < 0:
            raise RuntimeError(f"{utt_id}: samples before {first} were already dropped")
        return audio[a : max(a, end - self.start)]

    def keep_from(self, sample: int) -> None:
        """Drops the samples before ``sample`` (those that have arrived)."""
        if not self._chunks:
            return
        audio = np.concatenate(self._chunks)
        cut = max(0, min(sample - self.start, audio.size))
        self._chunks = [audio[cut:]]
        self.start += cut
