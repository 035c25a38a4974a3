"""The acoustic model: the TDNN CTC model over characters (``model``, ``folded``, with its BatchNorms folded by
``bn_folding``), its token table, its checkpoints (``checkpoint``: what training saves and every later stage loads),
training (``dataset``, ``train``, ``init_from``), greedy decoding and WER (``decode``), running it on one utterance
(``infer``), CTC forced alignment of reference words (``viterbi``, ``align``, ``ctm``, ``align_quality``) and
layer-k embedding dumps (``dump``)."""
