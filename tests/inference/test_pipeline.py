"""punct.inference + punct.bin.punctuate + steps/punctuate.sh on a tiny randomly initialised recipe."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch

from benchmarks.random_models import make_tokenizer, random_models, save_recipe
from punct.inference.acoustic import am_forward
from punct.inference.inputs import Request, UtteranceError, from_kaldi, from_pair, wav_loader
from punct.inference.outputs import Failure, Result, render_text
from punct.inference.pipeline import Punctuator
from punct.inference.words import transcript_words
from punct.models.punct_tdnn.frames import cut_window, frame_word_index, text_table
from punct.models.text.data import Utterance
from punct.models.text.infer import predict_words

REPO = Path(__file__).resolve().parents[2]
WORDS = ["hello", "world", "the", "cat", "sat", "on", "a", "mat", "why", "not"]
ALPHA = 0.3


def tiny_models(tmp: Path, seed: int = 0):
    from transformers import BertConfig

    from punct.am.model import AmModelConfig
    from punct.models.punct_tdnn.tdnn import TdnnConfig

    tokenizer = make_tokenizer(tmp / "tokenizer", WORDS)
    return random_models(
        am_config=AmModelConfig(
            dim=24, bottleneck_dim=8, prefinal_small_dim=16, prefinal_big_dim=24, frame_subsample=3
        ),
        bert_config=BertConfig(
            hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32, max_position_embeddings=64
        ),
        tokenizer=tokenizer,
        tdnn_config=TdnnConfig(fusion_dim=16, channels=(8, 8, 8, 8, 8, 8)),
        seed=seed,
    )


def write_wav(path: Path, seconds: float, seed: int, rate: int = 16000) -> Path:
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * rate)) / rate
    samples = 0.1 * np.sin(2 * np.pi * 220 * t) * (1 + np.sin(2 * np.pi * 3 * t)) + rng.normal(0, 0.02, t.size)
    sf.write(path, samples.astype(np.float32), rate)
    return path


@pytest.fixture(scope="module")
def recipe(tmp_path_factory):
    root = tmp_path_factory.mktemp("punctuate")
    models = tiny_models(root)
    save_recipe(root / "recipe", models, alpha=ALPHA)
    data = root / "data"
    data.mkdir()
    for i, seconds in enumerate((2.0, 3.0, 1.5)):
        write_wav(data / f"u{i}.wav", seconds, seed=i)
    write_wav(data / "short.wav", 0.02, seed=9)  # 320 samples < one 400-sample window
    return root


@pytest.fixture(scope="module")
def punctuator(recipe):
    torch.set_num_threads(1)
    return Punctuator.from_recipe(recipe / "recipe")


def test_render_text_keeps_surface_forms_and_replaces_marks():
    from punct.text.normalize import normalize

    text = "Hello, World! twenty-one U.S. cats"
    n = normalize(text)
    assert n.words == ["hello", "world", "twenty", "one", "us", "cats"]
    labels = ["NP", ",", "NP", "NP", ".", "?"]
    assert render_text(text, n.spans, labels) == "Hello World, twenty-one U.S. cats?"
    labels = [",", "NP", ".", "NP", "NP", "NP"]
    assert render_text(text, n.spans, labels) == "Hello, World twenty. one U.S. cats"


def test_render_text_writes_a_spoken_number_once_with_its_last_words_mark():
    from punct.text.normalize import normalize

    text = "in 2008 we paid $5 million so"
    n = normalize(text)
    assert n.words == ["in", "two", "thousand", "eight", "we", "paid", "five", "million", "dollars", "so"]
    labels = ["NP", "NP", ".", ",", "NP", "NP", "NP", "NP", ".", "?"]  # a mark inside a number is not shown
    assert render_text(text, n.spans, labels) == "in 2008, we paid $5 million. so?"


def test_unspeakable_transcript_is_refused_with_the_reason(punctuator):
    with pytest.raises(UtteranceError, match="unspeakable token: § .* cannot be said"):
        transcript_words("See § 5.", punctuator.normalize_config)


def test_am_forward_taps_layer_12_in_the_same_pass(punctuator):
    feats = np.random.default_rng(0).normal(size=(137, 40)).astype(np.float32)
    emb, log_probs = am_forward(punctuator.am, feats, 12)
    x = torch.from_numpy(feats).unsqueeze(0)
    with torch.no_grad():
        want_emb = punctuator.am(x, layer=12)[0].numpy()
        want_lp = punctuator.am(x)[0].log_softmax(-1).numpy()
    assert emb.shape == (137, punctuator.am.config.dim)
    np.testing.assert_allclose(emb, want_emb, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(log_probs, want_lp, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError):
        am_forward(punctuator.am, feats, 1)


def test_pipeline_equals_windowed_tdnn_and_ensemble(recipe, punctuator):
    data = recipe / "data"
    requests = [
        from_pair(data / "u0.wav", "Hello world, the cat sat.", "a"),
        from_pair(data / "u1.wav", "why not a mat on the cat", "b"),
    ]
    results = list(punctuator.run(requests))
    assert [type(r) for r in results] == [Result, Result]
    assert punctuator.alpha == ALPHA  # read from exp/results/results.json
    context = punctuator.tdnn.config.context
    for res, req in zip(results, requests):
        n = len(res.words)
        assert res.p_tdnn.shape == res.p_bert.shape == res.p_ensemble.shape == (n, 4)
        np.testing.assert_allclose(res.p_ensemble, ALPHA * res.p_tdnn + (1 - ALPHA) * res.p_bert, atol=1e-6)
        assert res.labels == [("NP", ",", ".", "?")[i] for i in res.p_ensemble.argmax(1)]
        starts = [s for s, _ in res.spans]
        assert starts == sorted(starts) and all(e > s for s, e in res.spans)
        # BERT posteriors and vectors: the text branch on the normalised words
        out = next(
            predict_words(punctuator.bert, [Utterance(res.id, res.words, ["NP"] * n)], 512, 32, 8, torch.device("cpu"))
        )
        np.testing.assert_allclose(res.p_bert, out.posteriors["punct"], atol=1e-5)
        # TDNN posteriors: the windowed network on explicit 301-frame windows gives the same numbers
        feats = punctuator.features([req])[req.id]
        emb, _ = am_forward(punctuator.am, feats, 12)
        index = frame_word_index(np.array(starts), emb.shape[0])
        windows = np.stack(
            [
                cut_window(emb, text_table(out.vectors), index, min(e - 1, emb.shape[0] - 1), context)
                for _, e in res.spans
            ]
        )
        with torch.no_grad():
            want = torch.softmax(punctuator.tdnn(torch.from_numpy(windows)), -1).numpy()
        np.testing.assert_allclose(res.p_tdnn, want, atol=1e-5)
        doc = res.to_json()
        assert [w["word"] for w in doc["words"]] == res.words
        assert all(abs(sum(w["ensemble"]) - 1) < 1e-4 for w in doc["words"])


def test_tdnn_batched_equals_one_by_one(recipe, punctuator):
    data = recipe / "data"
    requests = [from_pair(data / f"u{i}.wav", "the cat sat on a mat", f"x{i}") for i in range(3)]
    single = list(punctuator.run(requests))
    punctuator.tdnn_batch = True
    try:
        batched = list(punctuator.run(requests))
    finally:
        punctuator.tdnn_batch = False
    for a, b in zip(batched, single):
        np.testing.assert_allclose(a.p_tdnn, b.p_tdnn, atol=1e-5)


def test_bad_inputs_fail_alone(recipe, punctuator):
    data = recipe / "data"
    requests = [
        from_pair(data / "missing.wav", "hello world", "missing"),
        from_pair(data / "u0.wav", "  (Laughter) ... ", "empty"),
        from_pair(data / "u0.wav", "日本 東京", "unknown"),  # no word with a letter of the AM, even folded
        from_pair(data / "short.wav", "hello", "short"),
        from_pair(data / "u2.wav", " ".join(WORDS * 5), "toolong"),  # 148 frames < ~200 tokens
        from_pair(data / "u1.wav", "the cat sat", "good"),
        Request("broken", lambda: (_ for _ in ()).throw(RuntimeError("decoder crashed")), "hello", "broken", "x.flac"),
    ]
    out = {r.id: r for r in punctuator.run(requests)}
    assert isinstance(out["good"], Result) and out["good"].words == ["the", "cat", "sat"]
    reasons = {k: v.reason for k, v in out.items() if isinstance(v, Failure)}
    assert reasons == {
        "missing": "missing audio",
        "empty": "empty transcript",
        "unknown": "unknown characters",
        "short": "audio too short",
        "toolong": "too few frames",
        "broken": "unreadable audio",
    }
    assert "decoder crashed" in out["broken"].message
    assert "日本" in out["unknown"].message and "utterance unknown" in out["unknown"].message
    assert "missing.wav" in out["missing"].message
    with pytest.raises(ValueError, match="duplicate"):
        list(punctuator.run([requests[-1], requests[-1]]))


def test_letters_the_am_lacks_are_folded_and_the_words_kept(recipe, punctuator, caplog):
    """é, ï, ß, æ, ø are aligned as e, i, ss, ae, o; a word of no letter the AM has (日本) is placed between its
    neighbours; the output has the transcript's words as written, and the folds are logged in one line."""
    transcript = "Élizabeth, naïve café 日本 Straße Ærø"
    with caplog.at_level("WARNING"):
        res = list(punctuator.run([from_pair(recipe / "data" / "u1.wav", transcript, "loan")]))[0]
    assert isinstance(res, Result), res
    assert res.words == ["élizabeth", "naïve", "café", "日本", "straße", "ærø"]
    assert res.text.replace(",", "").replace(".", "").replace("?", "") == transcript.replace(",", "")
    starts = [s for s, _ in res.spans]
    assert starts == sorted(starts) and all(e > s for s, e in res.spans)
    assert [w["word"] for w in res.to_json()["words"]] == res.words  # punct.jsonl's words
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("loan:")]
    assert len(lines) == 1 and "ß->ss x1" in lines[0] and "placed between neighbours" in lines[0], lines


def test_transcript_from_am(recipe, punctuator):
    """With the output layer forced to prefer 'c', 'a', 't' in turn, the greedy hypothesis is known."""
    import copy

    am = copy.deepcopy(punctuator.am)
    ids = punctuator.tokens.ids
    with torch.no_grad():
        am.output.weight.zero_()
        am.output.bias.fill_(-10.0)
        am.output.bias[ids["c"]] = 10.0  # every frame says "c": the hypothesis is the one word "c"
    p = Punctuator(
        feature_config=punctuator.feature_config,
        am=am,
        tokens=punctuator.tokens,
        bert=punctuator.bert,
        tdnn=punctuator.tdnn,
        alpha=0.5,
    )
    res = list(p.run([from_pair(recipe / "data" / "u0.wav", None, "hyp")]))[0]
    assert isinstance(res, Result) and res.transcript_from == "am"
    assert res.words == ["c"] and res.text.startswith("c") and res.spans[0][0] == 0


def test_resampled_and_piped_audio(recipe, punctuator, tmp_path):
    rng = np.random.default_rng(3)
    samples = rng.normal(0, 0.05, 8000 * 2).astype(np.float32)
    sf.write(tmp_path / "r8k.wav", samples, 8000)
    feats = punctuator.features([from_pair(tmp_path / "r8k.wav", "x", "r")])["r"]
    assert feats.shape[0] == 1 + (32000 - 400) // 160  # 2 s at 16 kHz
    scp = tmp_path / "wav.scp"
    scp.write_text(f"p1 cat {recipe / 'data' / 'u0.wav'} |\np2 {recipe / 'data' / 'u1.wav'}\n")
    text = tmp_path / "text"
    text.write_text("p1 the cat\np2\n")
    reqs = from_kaldi(scp, text)
    assert [r.transcript for r in reqs] == ["the cat", ""]
    out = list(punctuator.run(reqs))
    assert isinstance(out[0], Result) and isinstance(out[1], Failure) and out[1].reason == "empty transcript"
    # Kaldi segments: wav.scp lists recordings, utterances are slices of them
    seg = tmp_path / "segments"
    seg.write_text("q1 p2 0.5 1.5\nq2 p2 2.0 -1\nq3 p2 9.0 10.0\n")
    (tmp_path / "text2").write_text("q1 the cat\nq2 a mat\nq3 why not\n")
    reqs = from_kaldi(scp, tmp_path / "text2", segments=seg)
    out = list(punctuator.run(reqs))
    assert [round(o.duration, 2) for o in out[:2]] == [1.0, 1.0]  # u1.wav lasts 3 s
    assert isinstance(out[2], Failure) and out[2].reason == "segment outside audio"
    bad = tmp_path / "bad.scp"
    bad.write_text("onlyid\n")
    with pytest.raises(ValueError, match="bad.scp:1"):
        from_kaldi(bad, text)


def test_cli_writes_outputs_and_exit_code(recipe, tmp_path, capsys):
    from punct.bin.punctuate import main

    data = recipe / "data"
    (tmp_path / "wav.scp").write_text(f"a {data / 'u0.wav'}\nb {data / 'missing.wav'}\nc {data / 'u1.wav'}\n")
    (tmp_path / "text").write_text("a Hello world the cat\nb hello\nc why not\n")
    args = [
        "--recipe-dir",
        str(recipe / "recipe"),
        "--wav-scp",
        str(tmp_path / "wav.scp"),
        "--text",
        str(tmp_path / "text"),
        "--out-dir",
        str(tmp_path / "out"),
        "--device",
        "cpu",
    ]
    assert main(args) == 1
    assert "missing.wav: no such file" in capsys.readouterr().err
    lines = (tmp_path / "out" / "text").read_text().splitlines()
    assert [line.split()[0] for line in lines] == ["a", "c"]
    assert lines[0].split(maxsplit=1)[1].replace(",", "").replace(".", "").replace("?", "") == "Hello world the cat"
    docs = [json.loads(line) for line in (tmp_path / "out" / "punct.jsonl").read_text().splitlines()]
    assert [d["id"] for d in docs] == ["a", "c"] and docs[0]["alpha"] == ALPHA
    assert (tmp_path / "out" / "failed").read_text().startswith("b missing audio")
    assert main(args + ["--allow-failures"]) == 0
    # one pair, transcript given on the command line: the punctuated text is printed
    one = [
        "--recipe-dir",
        str(recipe / "recipe"),
        "--wav",
        str(data / "u2.wav"),
        "--transcript",
        "Why not",
        "--out-dir",
        str(tmp_path / "one"),
        "--alpha",
        "1.0",
    ]
    assert main(one) == 0
    printed = capsys.readouterr().out.strip()
    assert printed.rstrip(",.?").replace(",", "").replace(".", "").replace("?", "") == "Why not"
    assert json.loads((tmp_path / "one" / "punct.jsonl").read_text())["alpha"] == 1.0


def test_jobs_take_whole_speakers():
    from punct.inference.inputs import speaker_share

    reqs = [Request(f"u{i}", lambda: None, "x", spk, "") for i, spk in enumerate("aabbbc")]
    shares = [[r.id for r in speaker_share(reqs, j, 2)] for j in (1, 2)]
    assert shares == [["u0", "u1"], ["u2", "u3", "u4", "u5"]]


def test_steps_punctuate_sh_jobs_and_merge(recipe, tmp_path):
    work = tmp_path / "egs"
    work.mkdir()
    for name in ("path.sh", "utils", "steps"):
        (work / name).symlink_to(REPO / name)
    data = work / "data" / "new"
    data.mkdir(parents=True)
    src = recipe / "data"
    (data / "wav.scp").write_text("".join(f"s{i} {src / f'u{i % 3}.wav'}\n" for i in range(4)))
    # s1 fails (no word with a letter the AM has): the others are merged in order, the script exits 1
    (data / "text").write_text("s0 the cat\ns1 日本\ns2 a mat\ns3 why not\n")
    (data / "utt2spk").write_text("s0 k1\ns1 k1\ns2 k2\ns3 k2\n")
    cmd = ["bash", "steps/punctuate.sh", "--nj", "2", "--recipe-dir", str(recipe / "recipe"), "data/new", "exp/punct"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=work)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "1 utterance(s) failed" in proc.stderr
    out = work / "exp" / "punct"
    assert [line.split()[0] for line in (out / "text").read_text().splitlines()] == ["s0", "s2", "s3"]
    assert [json.loads(line)["id"] for line in (out / "punct.jsonl").read_text().splitlines()] == ["s0", "s2", "s3"]
    assert (out / "failed").read_text().startswith("s1 unknown characters")
    assert not list(out.glob("text.*"))  # per-job files merged away
    # an exported folder instead of the recipe: the same outputs
    from punct.inference.model_folder import export_efficientpunct
    from punct.inference.recipe import recipe_paths

    export_efficientpunct(recipe_paths(recipe / "recipe"), tmp_path / "model", alpha=ALPHA, word_vectors="fine-tuned")
    cmd = ["bash", "steps/punctuate.sh", "--nj", "2", "--model", str(tmp_path / "model"), "data/new", "exp/folder"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=work)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    for name in ("text", "punct.jsonl", "failed"):
        assert (work / "exp" / "folder" / name).read_text() == (out / name).read_text(), name


def test_cmvn_per_speaker_and_global(recipe, punctuator, tmp_path):
    from punct.features.cmvn import CmvnStats, SpeakerCmvn
    from punct.features.compute import stored_features
    from punct.inference.acoustic import merged_cmvn

    data = recipe / "data"
    a = Request("a", wav_loader(str(data / "u0.wav")), "x", "spk", "u0")
    b = Request("b", wav_loader(str(data / "u1.wav")), "x", "spk", "u1")
    alone = punctuator.features([a])["a"]
    together = punctuator.features([a, b])["a"]
    samples, rate = a.audio()
    # the values stage 1 stores (lilcom-quantised), which the pipeline normalises
    raw = stored_features(punctuator.extractor.extract(samples, rate), len(samples), 0.01, rate)
    np.testing.assert_allclose(alone.mean(0), 0, atol=1e-3)  # normalised on its own
    assert not np.allclose(alone, together, atol=1e-3)  # a shared speaker shares the stats
    stats = {"s1": CmvnStats(), "s2": CmvnStats()}
    stats["s1"].accumulate(raw[:50])
    stats["s2"].accumulate(raw[50:])
    SpeakerCmvn(stats, norm_vars=True).save(tmp_path / "cmvn_train.json")
    merged = merged_cmvn(tmp_path / "cmvn_train.json")
    assert merged.count == raw.shape[0]
    punctuator.global_cmvn = merged
    try:
        got = punctuator.features([a])["a"]
    finally:
        punctuator.global_cmvn = None
    mean, std = raw.mean(0), raw.std(0)
    want = (raw - mean) / std if punctuator.feature_config.norm_vars else raw - mean
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)
    one = merged_cmvn(tmp_path / "cmvn_train.json", "s2")  # one speaker's stats alone (--cmvn-speaker)
    assert one.count == raw.shape[0] - 50
    np.testing.assert_allclose(one.sum, raw[50:].astype(np.float64).sum(0), rtol=1e-9)
    with pytest.raises(ValueError, match="no CMVN stats of speaker 's3'"):
        merged_cmvn(tmp_path / "cmvn_train.json", "s3")


def test_lhotse_cut_manifest_input(recipe, punctuator, tmp_path):
    from lhotse import CutSet, Recording, RecordingSet, SupervisionSegment, SupervisionSet

    from punct.inference.inputs import from_cuts

    rec = Recording.from_file(recipe / "data" / "u1.wav", recording_id="talk")
    sups = [
        SupervisionSegment("talk_0", "talk", 0.2, 1.3, speaker="spk", text="The cat sat."),
        SupervisionSegment("talk_1", "talk", 1.6, 1.2, speaker="spk", text=""),
    ]
    cuts = CutSet.from_manifests(
        recordings=RecordingSet.from_recordings([rec]), supervisions=SupervisionSet.from_segments(sups)
    ).trim_to_supervisions()
    cuts.to_file(tmp_path / "cuts.jsonl.gz")
    reqs = from_cuts(tmp_path / "cuts.jsonl.gz")
    assert [r.speaker for r in reqs] == ["spk", "spk"]
    out = list(punctuator.run(reqs))
    assert isinstance(out[0], Result) and out[0].words == ["the", "cat", "sat"]
    assert abs(out[0].duration - 1.3) < 0.02  # the cut's audio only, not the whole recording
    assert isinstance(out[1], Failure) and out[1].reason == "empty transcript"


def test_a_recipe_whose_parts_disagree_is_refused(tmp_path):
    """The TDNN records the AM and BERT its inputs came from; another model in their place is an error that
    names both files, and a checkpoint that records nothing is still loaded (with a warning)."""
    import shutil

    from benchmarks.random_models import save_recipe

    models = tiny_models(tmp_path)
    paths = save_recipe(tmp_path / "recipe", models, compression="two_byte")
    punctuator = Punctuator.from_recipe(tmp_path / "recipe")
    assert punctuator.embedding_compression == "two_byte" and punctuator.word_vector_model is None
    other = tiny_models(tmp_path / "other", seed=1)
    other_paths = save_recipe(tmp_path / "other" / "recipe", other)
    shutil.rmtree(paths["bert"])
    shutil.copytree(other_paths["bert"], paths["bert"])
    with pytest.raises(
        ValueError, match=r"best-valid-f1.pt was made from the BERT folder .*best-valid-f1 .*another model"
    ):
        Punctuator.from_recipe(tmp_path / "recipe")
    with pytest.raises(ValueError, match=r"best-valid-loss.pt is another model"):
        Punctuator.from_recipe(tmp_path / "recipe", am_checkpoint=other_paths["am"])
    # a TDNN saved before the inputs were recorded: loaded with the defaults, nothing checked
    from punct.models.punct_tdnn.checkpoint import save_checkpoint
    from punct.models.punct_tdnn.config import TrainTdnnConfig
    from punct.training.loop import TrainState

    legacy = tmp_path / "legacy.pt"
    save_checkpoint(legacy, models.tdnn, None, TrainState(), TrainTdnnConfig(model=models.tdnn.config))
    assert Punctuator.from_recipe(tmp_path / "recipe", tdnn_checkpoint=legacy).embedding_compression == "none"
