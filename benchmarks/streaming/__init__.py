"""Live punctuation measured on a recipe's talks (``bench_streaming.py``, ``bench_lookahead.py``,
``bench_stream_offline.py``, ``bench_longform.py``) and the tables of their results.

* ``talk``                  a talk of a split (a recording with its scored segments), punctuated whole and by segment
* ``measure``               F1 against latency, against BERT's look-ahead, and what costs a stream against offline
* ``latency_table``         the tables (and plot) of F1 against latency by training variant (kind ``streaming``)
* ``lookahead_table``       BERT's F1 against the words it reads ahead, over seeds (kind ``lookahead``)
* ``stream_offline_table``  a stream at unbounded latency against stage 8, over seeds (kind ``stream_offline``)
"""
