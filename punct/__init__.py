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

__version__ = "0.1.0"
