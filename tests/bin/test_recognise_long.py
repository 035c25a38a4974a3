"""Long-recording recognition with a real (tiny, randomly initialised) TDNN acoustic model:
the recogniser's CMVN convention, jobs, skipping, overwriting and the WER summary (the cross-lingual
initialisation of punct.am.init_from: tests/am/test_init_from.py)."""

import json

import numpy as np
import pytest
import soundfile as sf
import torch
import yaml
from lhotse import Recording, RecordingSet

from punct.am.checkpoint import AmTrainState, load_am, save_checkpoint
from punct.am.config import AmConfig
from punct.am.infer import run_model
from punct.am.model import AmModelConfig, build_model
from punct.am.tokens import TokenTable
from punct.bin import recognise_long
from punct.labels import TimedWord, read_recognised_words, write_recognised_words
from punct.recognition.chunks import ChunkConfig, plan_chunks
from punct.recognition.recogniser import ChunkPosteriors, recording_cmvn

MFCC = {
    "kind": "mfcc",
    "norm_vars": True,
    "options": {"sampling_rate": 16000, "num_ceps": 13, "num_mel_bins": 23, "dither": 0.0},
}
TOKENS = ["<blk>", "|", "a", "á", "b", "k", "o"]
DURATIONS = {"rec1": 9.0, "rec2": 5.5, "rec3": 3.0}


def tiny_config() -> AmConfig:
    return AmConfig(
        model=AmModelConfig(feat_dim=13, dim=32, bottleneck_dim=8, prefinal_small_dim=16, prefinal_big_dim=32)
    )


def write_am(am_dir, all_blank: bool = False, seed: int = 0):
    torch.manual_seed(seed)
    tokens = TokenTable(TOKENS)
    model = build_model(tiny_config(), len(tokens)).eval()
    if all_blank:  # every frame's best token is the blank: no words at all
        with torch.no_grad():
            model.output.bias[0] = 1e4
    am_dir.mkdir(parents=True, exist_ok=True)
    save_checkpoint(
        am_dir / "best-valid-loss.pt",
        model=model,
        optimizer=None,
        state=AmTrainState(),
        config=tiny_config(),
        tokens=tokens,
    )
    (am_dir / "mfcc.yaml").write_text(yaml.safe_dump(MFCC))


@pytest.fixture
def corpus(tmp_path):
    rng = np.random.default_rng(0)
    recs = []
    for rec_id, seconds in DURATIONS.items():
        path = tmp_path / f"{rec_id}.wav"
        # noise bursts: speech-like energy changes, so that MFCCs vary over time
        audio = rng.normal(0, 0.05, int(seconds * 16000)) * np.repeat(rng.uniform(0.1, 1, int(seconds * 10)), 1600)
        sf.write(path, audio.astype(np.float32), 16000)
        recs.append(Recording.from_file(path, recording_id=rec_id))
    (tmp_path / "manifests").mkdir()
    RecordingSet.from_recordings(recs).to_file(tmp_path / "manifests" / "parczech_recordings_all.jsonl.gz")
    for rec_id in ("rec1", "rec2"):  # rec3 has no reference
        write_recognised_words(
            tmp_path / "ref" / f"{rec_id}.words.tsv", [TimedWord("kobka", 0.5, 1.0), TimedWord("bába", 1.2, 1.6)]
        )
    return tmp_path


def args(tmp_path, *extra):
    return [
        "--prefix",
        "parczech",
        "--manifest-dir",
        str(tmp_path / "manifests"),
        "--am-dir",
        str(tmp_path / "am"),
        "--out-dir",
        str(tmp_path / "words"),
        "--chunk-seconds",
        "3",
        "--overlap-seconds",
        "1",
        *extra,
    ]


def test_chunk_posteriors_use_whole_recording_cmvn(corpus):
    write_am(corpus / "am")
    model, _, feat_config = load_am(corpus / "am")
    audio, _ = sf.read(corpus / "rec1.wav", dtype="float32")
    extractor = feat_config.extractor()
    feats = extractor.extract(audio, 16000)
    cmvn = recording_cmvn(feats, "rec1", norm_vars=True)
    with torch.no_grad():  # a random network's posteriors hardly depend on its input: sharpen them
        model.output.weight *= 1000
    posteriors = ChunkPosteriors(model, feat_config, cmvn, "rec1")
    chunk = audio[16000:64000] * 3  # louder than the rest: its own stats differ from the recording's
    got = posteriors(chunk)
    chunk_feats = extractor.extract(chunk, 16000)
    expected = run_model(model, (chunk_feats - feats.mean(0)) / feats.std(0))
    assert got.shape == (chunk_feats.shape[0], len(TOKENS))
    per_chunk = run_model(model, (chunk_feats - chunk_feats.mean(0)) / chunk_feats.std(0))
    # the stats really are the recording's, not the chunk's
    assert np.abs(got - expected).max() < 0.01 * np.abs(got - per_chunk).max()
    assert posteriors(chunk[:200]).shape == (0, len(TOKENS))


def test_jobs_skip_and_overwrite(corpus):
    write_am(corpus / "am")
    for job in (1, 2):
        assert recognise_long.main(args(corpus, "--ref-dir", str(corpus / "ref"), "--job", str(job), "--nj", "2")) == 0
    out = corpus / "words"
    assert sorted(p.name for p in out.iterdir()) == sorted(
        f"{r}.{kind}" for r in DURATIONS for kind in ("words.tsv", "stats.json")
    )
    for rec_id, seconds in DURATIONS.items():
        stats = json.loads((out / f"{rec_id}.stats.json").read_text())
        n_chunks = len(plan_chunks(int(seconds * 16000), 16000, ChunkConfig(3.0, 1.0)))
        assert stats["chunks"] == n_chunks
        assert stats["matched"] + stats["discarded"] + stats["concatenated"] == n_chunks - 1
        words = read_recognised_words(out / f"{rec_id}.words.tsv")
        assert stats["words"] == len(words)
        assert all(0 <= w.start <= w.end <= seconds + 0.05 for w in words)
        assert all(a.start <= b.start for a, b in zip(words, words[1:]))
        assert ("errors" in stats) == (rec_id != "rec3")
    mtimes = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    recognise_long.main(args(corpus, "--job", "1", "--nj", "1"))
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == mtimes  # all done: nothing rewritten
    recognise_long.main(args(corpus, "--overwrite", "--job", "2", "--nj", "2"))
    changed = {p.name for p in out.iterdir() if p.stat().st_mtime_ns != mtimes[p.name]}
    assert changed == {f"{r}.{kind}" for r in ("rec2", "rec3") for kind in ("words.tsv", "stats.json")}
    # a new model (newer checkpoint): every recording again, now all blank -> no words, WER 100% deletions
    write_am(corpus / "am", all_blank=True)
    recognise_long.main(args(corpus, "--ref-dir", str(corpus / "ref")))
    for rec_id in ("rec1", "rec2"):
        stats = json.loads((out / f"{rec_id}.stats.json").read_text())
        assert stats["words"] == 0 and stats["errors"] == {"words": 2, "sub": 0, "dele": 2, "ins": 0}
        assert (out / f"{rec_id}.words.tsv").read_text() == ""
    recognise_long.main(args(corpus, "--summary", str(corpus / "summary.txt")))
    summary = (corpus / "summary.txt").read_text()
    assert "long-recording %WER 100.00 [ 4 / 4, 0 ins, 4 del, 0 sub ] (2 recordings with a reference)" in summary
    assert "recordings 3," in summary


def test_summary_needs_every_recording(corpus):
    write_am(corpus / "am")
    recognise_long.main(args(corpus, "--job", "1", "--nj", "3"))
    with pytest.raises(FileNotFoundError, match="2 recordings not recognised yet"):
        recognise_long.main(args(corpus, "--summary", str(corpus / "summary.txt")))


def test_am_folder_without_feature_config(corpus):
    write_am(corpus / "am")
    (corpus / "am" / "mfcc.yaml").unlink()
    with pytest.raises(FileNotFoundError, match=r"mfcc\.yaml: no such file"):
        recognise_long.main(args(corpus))


def test_beam_search_with_an_lm_is_recorded_and_a_new_decoder_recognises_again(corpus):
    from punct.recognition.word_lm import estimate_word_lm

    write_am(corpus / "am")
    estimate_word_lm([["kobka", "bába"], ["bok", "kob"]], 2).write_arpa(corpus / "lm.arpa")
    lm_args = ["--lm", str(corpus / "lm.arpa"), "--beam", "4", "--oov-penalty", "-1000"]
    assert recognise_long.main(args(corpus, *lm_args)) == 0
    out = corpus / "words"
    stats = json.loads((out / "rec1.stats.json").read_text())
    assert (
        stats["decoder"].startswith("beam search (beam 4, lm_weight 0.5")
        and str(corpus / "lm.arpa") in stats["decoder"]
    )
    vocab = {"kobka", "bába", "bok", "kob"}

    def words_in_vocab():  # (in the LM's vocabulary, all) recognised words over the recordings
        words = [w.word for r in DURATIONS for w in read_recognised_words(out / f"{r}.words.tsv")]
        return sum(w in vocab for w in words), len(words)

    beam_in_vocab, beam_total = words_in_vocab()
    mtimes = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    recognise_long.main(args(corpus, *lm_args))
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == mtimes  # same model and decoder: done
    recognise_long.main(args(corpus, *lm_args, "--lm-weight", "2.0"))
    assert all(p.stat().st_mtime_ns != mtimes[p.name] for p in out.iterdir())  # another decoder: all again
    assert "lm_weight 2.0" in json.loads((out / "rec1.stats.json").read_text())["decoder"]
    recognise_long.main(args(corpus))  # greedy again
    assert json.loads((out / "rec1.stats.json").read_text())["decoder"] == "greedy"
    greedy_in_vocab, greedy_total = words_in_vocab()
    # the random AM's greedy words are hardly ever words of the LM; the beam search's mostly are
    assert beam_total > 0 and greedy_total > 0
    assert beam_in_vocab / beam_total > 0.5 > greedy_in_vocab / greedy_total
    recognise_long.main(args(corpus, "--summary", str(corpus / "summary.txt")))
    assert "decoded by greedy" in (corpus / "summary.txt").read_text()
