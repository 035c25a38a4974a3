"""Text: normalisation of transcripts into words and per-word punctuation labels, and the BERT branch."""
