"""Long-form punctuate: the chunked alignment of a known transcript (punct.recognition.long_align), CTM input,
the TDNN in blocks, and the pipeline on a whole recording (small random models)."""

import numpy as np
import pytest

from punct.inference.words import folded_words
from punct.recognition.chunks import ChunkConfig
from punct.recognition.long_align import align_transcript

SYMBOLS = ["<blk>", "|"] + list("abcdefghijklmnopqrstuvwxyz'")


def planted(words, rng, num_frames, char_frames=3):
    """Log-posteriors of words spoken at random times (pauses of 5-80 frames), and the true [start, end) frames."""
    V = len(SYMBOLS)
    probs = np.full((num_frames, V), 0.02 / (V - 1))
    probs[:, 0] = 0.98
    truth, t = [], 20
    for w in words:
        start = t
        for c in w:
            for _ in range(char_frames):
                probs[t] = 0.02 / (V - 1)
                probs[t, SYMBOLS.index(c)] = 0.9
                probs[t, 0] = 0.08
                t += 1
        truth.append((start, t))
        t += int(rng.integers(5, 80))
    assert t < num_frames
    probs /= probs.sum(1, keepdims=True)
    return np.log(probs), truth


def test_align_transcript_in_chunks_finds_every_word():
    rng = np.random.default_rng(3)
    vocab = ["the", "a", "cat", "sat", "on", "mat", "and", "dog", "ran", "away", "she's", "here"]
    words = [vocab[i] for i in rng.integers(0, len(vocab), 300)]
    lp, truth = planted(words, rng, 30000)
    counts = {}
    calls = []

    def log_probs_of(chunk):  # 100 "samples" per second: one sample per frame
        calls.append(chunk)
        return lp[chunk.start : chunk.end]

    got = align_transcript(
        words,
        lp.shape[0],
        100,
        log_probs_of,
        SYMBOLS,
        "|",
        config=ChunkConfig(chunk_seconds=10, overlap_seconds=2),
        counts=counts,
    )
    assert len(calls) > 15  # really in chunks
    assert [w.word for w in got] == words
    starts = np.array([w.start for w in got]) * 100
    ends = np.array([w.end for w in got]) * 100
    assert np.abs(starts - [s for s, _ in truth]).max() <= 2.01, counts
    assert np.abs(ends - [e for _, e in truth]).max() <= 2.01, counts
    assert counts["matched"] > 0


# ---- the pipeline on a whole recording (small random models) ---------------------------------------------


@pytest.fixture(scope="module")
def recipe(tmp_path_factory):
    from benchmarks.random_models import save_recipe
    from tests.inference.test_pipeline import ALPHA, tiny_models, write_wav

    root = tmp_path_factory.mktemp("longform")
    save_recipe(root / "recipe", tiny_models(root), alpha=ALPHA)
    write_wav(root / "talk.wav", 40.0, seed=5)
    return root


@pytest.fixture(scope="module")
def punctuator(recipe):
    import torch

    from punct.inference.pipeline import Punctuator
    from punct.inference.stretches import LongFormConfig

    torch.set_num_threads(1)
    chunks = ChunkConfig(chunk_seconds=12, overlap_seconds=3)
    return Punctuator.from_recipe(recipe / "recipe", long_form_config=LongFormConfig(chunk_config=chunks))


def long_form(punctuator, **changes):
    """The punctuator's long-form options with ``changes``."""
    from dataclasses import replace

    return replace(punctuator.long_form_config, **changes)


TALK = ("hello world, the cat sat on a mat. why not? " * 12).strip()


def test_tdnn_in_blocks_equals_one_pass(punctuator):
    import torch

    from punct.models.punct_tdnn.infer import tdnn_input, word_posteriors

    rng = np.random.default_rng(0)
    num_frames, num_words = 2000, 120
    starts = np.sort(rng.choice(np.arange(num_frames - 5), num_words, replace=False))
    ends = starts + rng.integers(1, 5, num_words)
    x = tdnn_input(
        rng.normal(size=(num_frames, punctuator.am.config.dim)).astype(np.float32),
        rng.normal(size=(num_words, punctuator.bert.hidden_size)).astype(np.float32),
        starts,
        ends,
        punctuator.tdnn.config.window_centre,
    )
    whole = word_posteriors(punctuator.factored, x, torch.device("cpu"))
    for block in (1, 7, 300, 1999):
        np.testing.assert_allclose(
            word_posteriors(punctuator.factored, x, torch.device("cpu"), block_frames=block),
            whole,
            atol=1e-6,
            err_msg=f"block_frames {block}",
        )


def test_long_form_recording_is_aligned_in_chunks(recipe, punctuator, monkeypatch):
    """A 40 s recording with 120 words: every word once, in order, with increasing spans inside the audio; the
    acoustic model sees one chunk at a time (5 chunks of 12 s) for the alignment, then one stretch at a time
    (at most 30 s), never the whole recording."""
    from punct.inference.inputs import from_pair
    from punct.inference.outputs import Result

    seen = []
    for name in ("am_pass", "am_embedding"):  # the alignment's passes, then the stretches' layer 12
        original = getattr(punctuator, name)
        monkeypatch.setattr(punctuator, name, lambda feats, f=original: seen.append(feats.shape[0]) or f(feats))
    monkeypatch.setattr(punctuator, "long_form_config", long_form(punctuator, long_form="always"))
    res = list(punctuator.run([from_pair(recipe / "talk.wav", TALK, "talk")]))[0]
    assert isinstance(res, Result), res
    assert res.long_form and len(res.words) == 120 and res.words[:3] == ["hello", "world", "the"]
    assert len(seen) > 5 and max(seen[:5]) <= 1200 and max(seen) <= 3000, seen
    starts = [s for s, _ in res.spans]
    assert starts == sorted(starts) and all(e > s for s, e in res.spans) and res.spans[-1][1] <= 4000
    assert res.p_tdnn.shape == (120, 4) and np.allclose(res.p_ensemble.sum(1), 1.0, atol=1e-5)
    assert res.text.count(" ") == 119  # the transcript's words, each followed by its predicted mark


def test_auto_long_form_only_above_the_threshold(recipe, punctuator, monkeypatch):
    from punct.inference.inputs import from_pair

    monkeypatch.setattr(punctuator, "long_form_config", long_form(punctuator, long_form_above=60.0))
    assert not list(punctuator.run([from_pair(recipe / "talk.wav", TALK, "talk")]))[0].long_form
    monkeypatch.setattr(punctuator, "long_form_config", long_form(punctuator, long_form_above=30.0))
    assert list(punctuator.run([from_pair(recipe / "talk.wav", TALK, "talk")]))[0].long_form


def test_pause_segments_cut_at_pauses_and_bound_the_length():
    from punct.inference.stretches import pause_segments

    starts, ends = np.array([0, 10, 100, 110, 400, 1000]), np.array([8, 20, 105, 120, 410, 1010])
    assert pause_segments(starts, ends, 1100, pause=50) == [
        (0, 60, 0, 2),
        (60, 260, 2, 4),
        (260, 705, 4, 5),
        (705, 1100, 5, 6),
    ]
    assert pause_segments(starts, ends, 1100, pause=600) == [(0, 1100, 0, 6)]
    # at most 600 frames: cut at the longest pause (410 -> 1000) first, then (120 -> 400)
    assert pause_segments(starts, ends, 1100, pause=600, max_frames=600) == [
        (0, 260, 0, 4),
        (260, 705, 4, 5),
        (705, 1100, 5, 6),
    ]


def test_ctm_times_are_used(recipe, punctuator):
    """With word times given, the spans are the CTM's (no alignment); a token said as two words shares its span."""
    from punct.inference.inputs import from_pair
    from punct.labels import TimedWord

    times = [
        TimedWord("Hello", 1.0, 1.5),
        TimedWord("world,", 2.0, 2.4),
        TimedWord("2", 3.0, 3.2),
        TimedWord("cats", 30.0, 30.6),
        TimedWord("sat.", 38.0, 38.5),
    ]
    res = list(punctuator.run([from_pair(recipe / "talk.wav", None, "talk")], {"talk": times}))[0]
    assert res.transcript_from == "ctm" and res.words == ["hello", "world", "two", "cats", "sat"]
    assert res.spans == [(100, 150), (200, 240), (300, 320), (3000, 3060), (3800, 3850)]
    assert res.text.split()[0].startswith("Hello") and res.text.split()[2].startswith("2")
    missing = list(punctuator.run([from_pair(recipe / "talk.wav", None, "other")], {"talk": times}))[0]
    assert missing.reason == "empty transcript"


def test_ctm_cli_and_bad_lines_name_file_and_line(recipe, tmp_path):
    from punct.bin.punctuate import main

    ctm = tmp_path / "talk.ctm"
    ctm.write_text("talk 1 1.00 0.50 hello\ntalk 1 2.00 0.40 world\n")
    assert (
        main(
            [
                "--recipe-dir",
                str(recipe / "recipe"),
                "--wav",
                str(recipe / "talk.wav"),
                "--ctm",
                str(ctm),
                "--utt-id",
                "talk",
                "--out-dir",
                str(tmp_path / "out"),
            ]
        )
        == 0
    )
    out = [line for line in (tmp_path / "out/punct.jsonl").read_text().splitlines()]
    import json

    words = json.loads(out[0])["words"]
    assert [(w["word"], w["start"], w["end"]) for w in words] == [("hello", 1.0, 1.5), ("world", 2.0, 2.4)]
    for bad, why in (
        ("talk 1 1.0 0.5\n", "expected"),
        ("talk 1 x 0.5 hello\n", "could not convert"),
        ("talk 1 1.0 -0.5 hello\n", "finite and >= 0"),
        ("talk 1 0.05 0.5 hello\n", "time order"),
    ):
        ctm.write_text("talk 1 0.1 0.2 ok\n" + bad)
        with pytest.raises(SystemExit, match=rf"{ctm}:2: .*{why}"):
            main(
                [
                    "--recipe-dir",
                    str(recipe / "recipe"),
                    "--wav",
                    str(recipe / "talk.wav"),
                    "--ctm",
                    str(ctm),
                    "--out-dir",
                    str(tmp_path / "out"),
                ]
            )


def test_features_fed_in_blocks_are_the_whole_waveforms(monkeypatch):
    """kaldi-native-fbank gets a long recording 10 s at a time (bounded memory); the frames are bit-identical."""
    import punct.features.extractor as extractor
    from punct.features import FeatureConfig

    rng = np.random.default_rng(0)
    samples = (rng.normal(size=16000 * 23 + 123) * 0.1).astype(np.float32)
    mfcc = FeatureConfig().extractor()
    monkeypatch.setattr(extractor, "WAVEFORM_BLOCK_SECONDS", 10**6)
    whole = mfcc.extract(samples, 16000)
    for seconds in (1, 10):
        monkeypatch.setattr(extractor, "WAVEFORM_BLOCK_SECONDS", seconds)
        assert np.array_equal(mfcc.extract(samples, 16000), whole)


def test_long_form_folds_letters_and_places_a_word_with_none_the_am_has(punctuator):
    """A whole recording's transcript is folded as an utterance's is (punct.am.alignable): ``café`` is aligned as
    ``cafe``, ``日本`` is placed between its aligned neighbours, and the times carry the transcript's words."""
    said = ["hello", "cafe", "sat"]
    lp, truth = planted(said, np.random.default_rng(4), 600)
    columns = [SYMBOLS.index(s) if s in SYMBOLS else None for s in punctuator.tokens.symbols]
    lp = np.stack([lp[:, c] if c is not None else np.full(lp.shape[0], -30.0) for c in columns], axis=1)
    folded = folded_words("talk", ["hello", "日本", "café", "sat"], punctuator.char_ids)
    assert folded.said == ["hello", "", "cafe", "sat"]
    times = punctuator.long_form.align_in_chunks(folded, lambda chunk: lp, 600 * 160, 6.0, {})
    assert [t.word for t in times] == ["hello", "日本", "café", "sat"]
    frames = [(round(t.start * 100), round(t.end * 100)) for t in times]
    for (start, end), (a, b) in zip([frames[0], frames[2], frames[3]], truth):
        assert abs(start - a) <= 2 and abs(end - b) <= 2, (frames, truth)
    assert frames[0][1] <= frames[1][0] < frames[1][1] <= frames[2][0], frames
