"""Long-form punctuate on the tiny recipe: a test talk given as one recording with one transcript, against the
same talk segment by segment (benchmarks.streaming.talk.compare)."""

from dataclasses import replace

import numpy as np
import torch


def test_a_talk_as_one_recording_against_its_segments(mustc_tiny_recipe):
    """The talk's ~40 s are aligned in two chunks (30 s, 5 s overlap) and every word of every segment is placed
    once, in order, inside the recording; BERT and the TDNN run on it.  Both overall F1s are printed, but not
    compared: the tiny AM recognises almost nothing (greedy WER ~99 %, so any alignment of it is arbitrary) and
    ~100 words are scored.  The comparison (within a point or two) is made on the mini recipe:
    benchmarks/bench_longform.py --f1 (numbers in benchmarks/longform/README.md)."""
    from benchmarks.streaming.talk import compare, load_talks
    from punct.inference.pipeline import Punctuator
    from punct.recognition.chunks import plan_chunks

    torch.set_num_threads(1)
    punctuator = Punctuator.from_recipe(mustc_tiny_recipe)
    talk = load_talks(mustc_tiny_recipe, "test", "mustc")[-1]
    assert len(plan_chunks(int(talk.duration * 16000), 16000, punctuator.long_form_config.chunk_config)) >= 2
    config = punctuator.long_form_config
    assert not config.is_long(talk.duration) and config.is_long(121.0)  # auto: above 120 s
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
    from benchmarks.streaming.measure import stream_talk, talk_tokens
    from benchmarks.streaming.talk import load_talks
    from punct.inference.acoustic import merged_cmvn
    from punct.inference.pipeline import Punctuator

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


def test_dev_talks_streamed_with_their_segments_give_stage8(mustc_tiny_recipe, tmp_path):
    """``punctuate --stream --latency inf`` on each whole dev talk, given what stage 8 had: the talk's segments
    (``--segments``), stage 3's word times (the CTM) and the speaker's stage-1 CMVN stats (``--cmvn-speaker``),
    prints stage 6's BERT posteriors, stage 8's TDNN posteriors and the ensemble for every word, to 1e-4."""
    import json
    import os
    import subprocess
    import sys

    from benchmarks.streaming.measure import aligned_tokens
    from benchmarks.streaming.talk import load_talks
    from punct.io.shards import MatrixReader
    from punct.scoring.ensemble import ensemble

    recipe = mustc_tiny_recipe
    alpha = json.loads((recipe / "exp/results/results.json").read_text())["chosen_alpha"]
    cwd = os.getcwd()
    os.chdir(recipe)  # the scp files hold paths relative to the recipe
    try:
        tdnn = dict(MatrixReader("exp/tdnn/post/dev/post.scp").items())
        bert = dict(MatrixReader("exp/emb_bert/dev/post.scp").items())
    finally:
        os.chdir(cwd)
    tokens = aligned_tokens(recipe, "dev", "mustc")
    checked = 0
    for talk in load_talks(recipe, "dev", "mustc"):
        scored = [sup.id for sup in talk.segments if sup.id in tdnn]  # stage 3 aligned them
        if not scored:
            continue
        ctm, segments = tmp_path / f"{talk.id}.ctm", tmp_path / f"{talk.id}.segments"
        ctm.write_text("".join(f"{talk.id} 1 {t.start!r} {t.end - t.start!r} {t.word}\n" for t in tokens[talk.id]))
        segments.write_text("".join(f"{s.id} {talk.id} {s.start!r} {s.end!r}\n" for s in talk.segments))
        out = tmp_path / talk.id
        # this file's tests run with one thread, and so does the subprocess
        command = [sys.executable, "-m", "punct.bin.punctuate", "--recipe-dir", str(recipe), "--stream"]
        command += ["--wav", str(talk.audio_path), "--ctm", str(ctm), "--segments", str(segments), "--latency", "inf"]
        command += ["--cmvn", str(recipe / "data/fbank/cmvn_dev.json"), "--cmvn-speaker", talk.speaker]
        run = subprocess.run([*command, "--out-dir", str(out)], capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr[-3000:]
        words = json.loads((out / "punct.jsonl").read_text())["words"]
        got = {name: np.array([w[name] for w in words]) for name in ("bert", "tdnn", "ensemble")}
        want_tdnn = np.concatenate([tdnn[k] for k in scored])
        want_bert = np.concatenate([bert[k] for k in scored])
        assert len(words) == len(want_tdnn) == len(tokens[talk.id])
        np.testing.assert_allclose(got["bert"], want_bert, atol=1e-4, err_msg=f"{talk.id}: BERT posteriors")
        np.testing.assert_allclose(got["tdnn"], want_tdnn, atol=1e-4, err_msg=f"{talk.id}: TDNN posteriors")
        np.testing.assert_allclose(got["ensemble"], ensemble(want_tdnn, want_bert, alpha), atol=1e-4)
        checked += len(words)
    assert checked >= 100
    print(f"\n[e2e stream = stage 8] {checked} dev words, posteriors within 1e-4")
