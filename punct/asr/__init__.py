"""Speech recognition: the TDNN CTC acoustic model, its training, decoding, CTC forced alignment of
reference words, layer-k embedding dumps, and recognition of long recordings in chunks with CTC segmentation."""
