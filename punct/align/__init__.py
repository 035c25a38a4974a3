"""Word-sequence alignment of recognised with official words (Needleman-Wunsch) and the segment dataset built on it."""
