"""Live captions of the speech-informed ITN models against latency (``bench_itn_streaming.py``,
``bench_itn_live.py``) and the tables of their results.

* ``segments``       a dataset's segments streamed at a latency, through the models' own decoding
* ``speeches``       whole speeches streamed through ``punctuate_itn``'s streamer, scored on recognised words
* ``latency_table``  the tables (and plot) of F1 against latency over seeds (kind ``itn_streaming``)
* ``live_table``     the pause split chosen on dev, then F1 against latency on whole speeches (kind ``itn_live``)
"""
