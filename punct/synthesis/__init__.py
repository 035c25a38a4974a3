"""Building the embedded mini corpora offline: espeak-ng speech synthesis with word timings (``tts``), the
Debian packages that hold their texts (``debian``) and the record a build leaves (``build_record``).  The
corpora themselves are defined in :mod:`punct.corpora` (``mini_english``, ``mini_czech``)."""
