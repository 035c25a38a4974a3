"""CTC forced alignment of reference words: Viterbi, word spans, CTM, quality against reference times."""
