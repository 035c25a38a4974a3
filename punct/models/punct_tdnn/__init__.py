"""Fusion of BERT word vectors and layer-12 acoustic frames: the EfficientPunct punctuation TDNN (stage 7 of the
EfficientPunct recipe; stage 5 of the speech-informed ITN recipe, with a case head).

* ``frames``   word alignments -> frame spans; text vector per frame (previous word in gaps, zeros before the first)
* ``dataset``  windows cut at load time from per-utterance shards (and whole utterances for fully conv training)
* ``sampling`` class balance (oversampling, weighted draws) and rank sharding of each epoch
* ``tdnn``     the network (authors' exact topology) with windowed and fully convolutional evaluation
* ``config``   the training config (conf/tdnn*.yaml)
* ``checkpoint``  what a checkpoint holds: save, load the model, its training config and inputs
* ``train``    training loop, dev selection, DDP
* ``infer``    per-word posteriors of a split
* ``segment_ensemble``  segments with punct9 + case labels: the two-head ensemble with the text-only model, decode jsonl
"""
