"""Scoring: reference and predicted labels -> confusion counts -> precision, recall and F1, with intervals.

One confusion-count core (:mod:`~punct.scoring.confusion`: per-class P/R/F1, micro, macro, detection) and its
bootstrap and paired intervals (:mod:`~punct.scoring.intervals`), used by both recipes: the word-level scores
and what they cover (:mod:`~punct.scoring.punct_scores`, egs/mustc and every training loop's dev score), the
segment scores of the punctuation + case models (:mod:`~punct.scoring.itn`, egs/parczech), the
EfficientPunct ensemble with its alpha rules, chosen by score (:mod:`~punct.scoring.ensemble`), and the systems of
egs/mustc's scoring stage scored on dev and test (:mod:`~punct.scoring.systems`).
"""
