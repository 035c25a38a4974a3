"""Punctuation of new audio with a trained recipe (``punct.bin.punctuate``, ``steps/punctuate.sh``).

* ``inputs``         utterances to punctuate: Kaldi wav.scp/text/segments/utt2spk, a lhotse cut manifest, or one pair
* ``pipeline``       features -> AM layer 12 + CTC -> forced alignment -> BERT -> TDNN -> ensemble (``Punctuator``)
* ``random_models``  randomly initialised models of any size in the recipe's formats (tests, benchmarks)
"""
