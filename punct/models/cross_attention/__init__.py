"""Punctuation + case models: cross-attention audio-text model and the text-only baseline (thesis ch. 5)."""
