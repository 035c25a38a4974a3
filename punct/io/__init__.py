"""Reading and writing the toolkit's on-disk formats (kaldiio ark/scp shards, JSON lines, Kaldi data directories)."""
