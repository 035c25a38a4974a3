"""Long-form punctuate on the tiny recipe: a test talk given as one recording with one transcript, against the
same talk segment by segment (punct.inference.talk.compare)."""

from dataclasses import replace

import numpy as np
import torch


def test_a_talk_as_one_recording_against_its_segments(mustc_tiny_recipe):
    """The talk's ~40 s are aligned in two chunks (30 s, 5 s overlap) and every word of every segment is placed
    once, in order, inside the recording; BERT and the TDNN run on it.  Both overall F1s are printed, but not
    compared: the tiny AM recognises almost nothing (greedy WER ~99 %, so any alignment of it is arbitrary) and
    ~100 words are scored.  The comparison (within a point or two) is made on the mini recipe:
    benchmarks/bench_longform.py --f1 (numbers in egs/mustc/local/README.md)."""
    from punct.inference.pipeline import Punctuator
    from punct.inference.talk import compare, load_talks
    from punct.recognition.chunks import plan_chunks

    torch.set_num_threads(1)
    punctuator = Punctuator.from_recipe(mustc_tiny_recipe)
    talk = load_talks(mustc_tiny_recipe, "test", "mustc")[-1]
    assert len(plan_chunks(int(talk.duration * 16000), 16000, punctuator.long_form_config.chunk_config)) >= 2
    assert not punctuator.is_long(talk.duration) and punctuator.is_long(121.0)  # auto: above 120 s
    c = compare(punctuator, talk)  # raises unless the recording's words are the segments' words, in order
    assert c.words >= 50 and c.segments - c.segments_failed >= 3
    assert len(c.start_differences) == c.words
    punctuator.long_form_config = replace(punctuator.long_form_config, long_form="always")
    whole = next(iter(punctuator.run([talk.whole_request()])))
    starts = np.array([s for s, _ in whole.spans])
    assert whole.long_form and (np.diff(starts) >= 0).all() and whole.spans[-1][1] <= int(talk.duration * 100) + 1
    assert whole.p_ensemble.shape == (len(whole.words), 4)
    print(
        f"\n[e2e long-form] {talk.id}: {c.duration:.1f} s, {c.segments} segments ({c.segments_failed} not scored), "
        f"{c.words} words; overall F1 segments {c.f1_segments['ensemble']:.1f}, one recording "
        f"{c.f1_long['ensemble']:.1f}"
    )


def test_a_talk_streamed_equals_offline_punctuate(mustc_tiny_recipe):
    """The trained tiny recipe's test talk streamed 0.1 s at a time with its aligned words as a CTM: with no latency
    bound every word equals offline ``punctuate`` with that CTM and the training CMVN stats; at 1 s each word comes
    out within its latency (the real models, not random ones: tests/inference/test_streaming.py)."""
    from punct.inference.latency import stream_talk, talk_tokens
    from punct.inference.pipeline import Punctuator, merged_cmvn
    from punct.inference.talk import load_talks

    torch.set_num_threads(1)
    stats = merged_cmvn(mustc_tiny_recipe / "data" / "fbank" / "cmvn_train.json")
    punctuator = Punctuator.from_recipe(mustc_tiny_recipe, global_cmvn=stats)
    talk = load_talks(mustc_tiny_recipe, "test", "mustc")[-1]
    tokens = talk_tokens(punctuator, talk)
    offline = next(iter(punctuator.run([talk.whole_request()], {talk.id: tokens})))
    streamed = stream_talk(punctuator, talk, tokens, float("inf"))
    assert streamed["final"] == len(offline.words) >= 50
    assert streamed["predicted"]["ensemble"] == offline.p_ensemble.argmax(1).tolist()
    assert streamed["predicted"]["TDNN"] == offline.p_tdnn.argmax(1).tolist()
    assert streamed["predicted"]["BERT"] == offline.p_bert.argmax(1).tolist()
    live = stream_talk(punctuator, talk, tokens, 1.0)
    assert max(live["wait_seconds"]) <= 1.0 + 0.1 + 0.011 and live["final"] < len(offline.words)
