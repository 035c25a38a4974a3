"""Benchmarks of the recipes' models and tools (``bench_*.py``, run as scripts from the repository's root), and the
studies that stay beside their benchmarks: each folder holds what its benchmark measures with and the tables its
results.json render to (``punct.results.regions.STUDY_TABLES`` names them), never imported by the package.

* ``streaming``      live punctuation against latency, look-ahead, a stream against offline, long form (talks)
* ``itn_streaming``  live captions of the ITN models against latency: dataset segments and whole speeches
* ``am_data``        the acoustic model's dev WER by hours of training speech
* ``random_models``  randomly initialised models of any size in a recipe's formats (the benchmarks and the tests)
"""
