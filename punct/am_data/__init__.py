"""Acoustic-model training data imported from other sources: utterances cut from long recordings with the words
really spoken (``long_audio``) and corpora with utterance-level transcripts, as Kaldi data dirs or lhotse
manifests (``utterances``)."""
