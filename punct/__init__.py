"""punct: speech-informed punctuation restoration recipes (EfficientPunct, SCL, speech-informed ITN).

One concept per subpackage, on floors: a module imports its own area and areas on lower floors only
(tests/test_layout.py checks it), lowest first:

  0  utils
  1  labels, io, features, training, synthesis
  2  text, scoring, am
  3  align, recognition, models (its docstring only), models.text, models.pause
  4  am_data, models.cross_attention
  5  corpora, models.punct_tdnn
  6  inference, results
  7  bin
"""

import os

__version__ = "0.1.0"

# oneDNN (torch's CPU kernels for bf16 and conv) compiles a kernel per input shape and keeps 1024 of them.  Packed
# BERT rows (and the TDNN's and AM's batches) take a new length almost every step: with the default the cache
# overflows and kernels are compiled again, and a bf16 training step grew slower as the shapes accumulated (stage 5's
# epochs 62 -> 79-108 s in a default run; egs/mustc/RESULTS.md at 4eb3d4e, "second pass").  oneDNN may read it as torch
# loads, so it is set here, before torch is imported; a value already in the environment wins.  The larger cache
# costs memory where shapes never repeat: egs/parczech's AM in bf16 held 7.4-7.8 GB per rank against 1.9 GB with
# 1024 (its `amp: fastest` now picks float32 on such a CPU: benchmarks/README.md).
os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "8192")
