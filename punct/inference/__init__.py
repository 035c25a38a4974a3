"""Punctuation of new audio with a trained recipe (``punct.bin.punctuate``, ``steps/punctuate.sh``).

* ``inputs``         utterances to punctuate: Kaldi wav.scp/text/segments/utt2spk, a lhotse cut manifest, or one pair
* ``chain``          the steps, written once: features -> AM layer 12 + CTC -> forced alignment -> BERT -> TDNN ->
                     ensemble (``Chain``)
* ``pipeline``       offline ``punctuate``: the chain over utterances, a group at a time (``Punctuator``)
* ``words``          a transcript's or a recogniser's words as the pipeline reads them, and as the AM aligns them
* ``acoustic``       audio at the recipe's rate, CMVN stats of a stats file, one pass of the acoustic model
* ``outputs``        a punctuated utterance (``Result``) or a ``Failure``, its punctuated text, files of them
* ``stretches``      whole recordings: when an utterance is one, and its cut into stretches between pauses
* ``long_form``      a whole recording punctuated in bounded memory: aligned in chunks, then stretch by stretch
                     (``LongForm``, a driver of the chain)
* ``timing``         wall and CPU seconds per pipeline stage
* ``streaming``      live captions: audio and timed words in, each word out once final or ``latency`` old
                     (``StreamingPunctuator``, a driver of the chain)
"""
