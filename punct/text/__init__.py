"""Written text -> words and labels, per corpus style: the two labelers behind :class:`punct.labels.WordLabels`.

:mod:`~punct.text.normalize`: running text (MuST-C transcripts, the English mini corpus) -> lowercased words and
punct4 labels; :mod:`~punct.text.token_labels`: UDPipe-tokenised official transcripts (ParCzech, the Czech mini
corpus) -> words with punct9 and case labels.  Corpora (:mod:`punct.corpora`) call them and store the result on
the supervisions; every later stage reads the stored labels.  (The BERT text model is :mod:`punct.models.text`.)
"""
