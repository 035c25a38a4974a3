"""Recognition of long recordings: ~30 s chunks with CTC segmentation and merging at the overlap midpoints
(``chunks``, ``recognise``), the recogniser interface with the recipe's acoustic model or a transformers CTC
model behind it (``recogniser``, ``transformers_ctc``), beam search with a word n-gram LM (``word_lm``,
``beam_search``), and a manifest's recordings recognised per job into words files and summed up
(``recordings``)."""
