"""The pause-only baseline: punctuation from word times alone (the forced alignment of egs/mustc's stage 3, the
segments' word times of egs/parczech's stage 3), so that a speech model's gain can be told from what the pauses
already give (the mini corpora speak every mark as a pause).

* ``features``  per-word features from word times: silence after and before the word, its duration, last word or not
* ``model``     a small scikit-learn classifier: a grid of candidates fit on train, chosen on dev by overall (micro)
  F1, posteriors over every class, saved and loaded
* ``decode``    the outputs: per-utterance posteriors in kaldiio shards (egs/mustc), decode jsonl (egs/parczech)
"""
