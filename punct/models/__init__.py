"""Punctuation models: ``text`` (BERT branch), ``punct_tdnn`` (EfficientPunct fusion TDNN), ``cross_attention``
(multimodal audio-text model); their training loops share :mod:`punct.training`.  ``pause``: the pause-only
baseline, a small scikit-learn classifier on word times alone."""
