"""How much speech the acoustic model needs (``bench_am_data.py``): nested training subsets by hours and the table
of their dev WERs (``wer_by_hours``, kind ``am_data``)."""
