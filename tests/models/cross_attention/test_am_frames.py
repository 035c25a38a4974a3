"""``sound_encoder: am``: the recipe's acoustic model, frozen, as the cross-attention model's audio encoder
(punct.models.cross_attention.am_frames, AmFrameGeometry, AmSoundEncoder, the dataset's AM frames)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from punct.am.infer import run_model
from punct.features.cmvn import SpeakerCmvn
from punct.models.cross_attention.am_frames import am_frames_of, pool_frames
from punct.models.cross_attention.config import MmConfig
from punct.models.cross_attention.data import collate, load_split
from punct.models.cross_attention.geometry import NO_WORD, AmFrameGeometry
from punct.models.cross_attention.model import AmSoundEncoder, build_model, head_specs
from punct.models.cross_attention.train import build_optimizer, two_head_loss, with_absolute_am_dir
from punct.models.text.model import PunctBert
from tests.helpers.cross_attention import make_encoder, tiny_config, write_corpus
from tests.helpers.tiny_am import TINY_AM, write_am_dir


@pytest.fixture
def am_setup(tmp_path, tokenizer):
    """A tiny random AM folder, the tone corpus of tests/helpers/cross_attention and the AM-encoder config."""
    am = write_am_dir(tmp_path / "am")
    data = write_corpus(tmp_path)
    cfg = tiny_config(sound_encoder="am", am_dir=str(tmp_path / "am"), positional=True, am_frame_stride=4)
    return am, data, cfg, tokenizer


def _split(data, tokenizer, cfg):
    return load_split(
        data / "parczech_supervisions_train.jsonl.gz", data / "parczech_recordings_train.jsonl.gz", tokenizer, cfg, True
    )


def test_am_geometry_follows_the_10ms_frames():
    g = AmFrameGeometry(frame_length=0.025, frame_shift=0.01, sample_rate=16000, stride=4)
    assert g.num_feature_frames(16000) == 98 and g.num_frames(16000) == 24  # snip_edges: 1 + (16000 - 400) // 160
    assert g.min_samples == 400 + 3 * 160 and g.num_frames(g.min_samples) == 1 and g.num_frames(g.min_samples - 1) == 0
    starts, ends = g.frame_windows(3)
    # pooled frame j: feature frames 4j..4j+3, centres 4j * 0.01 + 0.0125 ..., window 40 ms around them
    assert np.allclose(starts, [0.0075, 0.0475, 0.0875]) and np.allclose(ends - starts, 0.04)
    one = AmFrameGeometry(0.025, 0.01, 16000, stride=1)
    s1, e1 = one.frame_windows(100)
    assert np.allclose(s1[:2], [0.0075, 0.0175]) and np.allclose(e1 - s1, 0.01)
    # a word of [0.5, 0.7) s owns the 100-fps frames whose 10 ms windows overlap it: 49 ([0.4975, 0.5075))
    # to 69 ([0.6975, 0.7075)); frame 48 ([0.4875, 0.4975)) and frame 70 do not overlap it
    words = one.frame_words([0.5], [0.7], 100)
    assert np.flatnonzero(words == 0).tolist() == list(range(49, 70)) and (words[:49] == NO_WORD).all()


def test_dataset_gives_pooled_layer_k_frames_of_the_segment(am_setup):
    am, data, cfg, tokenizer = am_setup
    ds = _split(data, tokenizer, cfg)
    seg = ds.segments[2]
    samples = ds.load_samples(seg)
    ex = ds[2]
    frames = ex["am_frames"]
    assert frames.shape == (ds.geometry.num_frames(len(samples)), TINY_AM.dim)
    # the same as running the AM by hand: MFCC, the segment's own CMVN, layer 12, mean of 4 frames
    extractor = am_frames_of(cfg).extractor
    feats = extractor.extract(samples, 16000)
    cmvn = SpeakerCmvn.accumulate([("s", feats)], norm_vars=True)
    expected = pool_frames(run_model(am, cmvn.apply("s", feats), layer=12), 4)
    np.testing.assert_allclose(frames.numpy(), expected, atol=2e-2, rtol=1e-2)  # float16 cache
    # each word owns the frames inside its 0.4 s tone: ~10 frames of 40 ms
    counts = np.bincount(ex["frame_words"][ex["frame_words"] >= 0], minlength=len(seg.words))
    assert len(ex["frame_words"]) == frames.shape[0] and (counts >= 9).all() and (counts <= 11).all(), counts
    assert 2 in ds.am_cache and torch.equal(ds[2]["am_frames"], frames)  # computed once


def test_random_audio_with_the_am(am_setup):
    _, data, cfg, tokenizer = am_setup
    real = _split(data, tokenizer, cfg)[1]["am_frames"]
    samples = _split(data, tokenizer, MmConfig(**{**cfg.__dict__, "random_audio": True}))[1]["am_frames"]
    frames = _split(data, tokenizer, MmConfig(**{**cfg.__dict__, "random_audio": True, "random_audio_unit": "frames"}))[
        1
    ]["am_frames"]
    assert samples.shape == real.shape and (samples - real).abs().mean() > 0.1  # permuted samples through the AM
    assert frames.shape == real.shape and not torch.equal(frames, real)
    assert sorted(map(tuple, frames.tolist())) == sorted(map(tuple, real.tolist()))  # the same frames, reordered


def test_am_encoder_model_shapes_masks_and_frozen_am(am_setup):
    am, data, cfg, tokenizer = am_setup
    ds = _split(data, tokenizer, cfg)
    torch.manual_seed(0)
    model = build_model("mm", cfg, PunctBert(make_encoder(), None, head_specs(cfg)))
    assert isinstance(model.sound, AmSoundEncoder) and model.sound.project.in_features == TINY_AM.dim
    frozen_am = ds.am_frames.model
    assert not any(p.requires_grad for p in frozen_am.parameters())
    assert not {id(p) for p in frozen_am.parameters()} & {id(p) for p in model.parameters()}
    before = {k: v.clone() for k, v in frozen_am.state_dict().items()}  # weights and BatchNorm statistics

    examples = [ds[i] for i in (0, 2, 5)]
    batch = collate(examples, pad_id=0)
    lengths = [e["am_frames"].size(0) for e in examples]
    assert batch["am_frames"].shape == (3, max(lengths), TINY_AM.dim) and batch["am_lengths"].tolist() == lengths
    audio, pad = model.sound(batch["am_frames"], batch["am_lengths"], batch["frame_words"], model.positions)
    assert audio.shape == (3, max(lengths), 16) and pad.sum(1).tolist() == [max(lengths) - n for n in lengths]
    model.eval()
    logits = model(batch)
    words = max(len(e["word_positions"]) for e in examples)
    assert logits["punct"].shape == (3, words, 9) and logits["case"].shape == (3, words, 2)
    shortest = int(np.argmin(lengths))  # padding frames change nothing
    alone = model(collate([examples[shortest]], pad_id=0))
    n = len(examples[shortest]["word_positions"])
    torch.testing.assert_close(alone["punct"][0, :n], logits["punct"][shortest, :n], atol=1e-5, rtol=1e-4)

    model.train()
    optimizer = build_optimizer(model, cfg)
    project = model.sound.project.weight.detach().clone()
    loss, _ = two_head_loss(model(batch), batch)
    loss.backward()
    assert model.sound.project.weight.grad.abs().sum() > 0
    optimizer.step()
    assert not torch.equal(model.sound.project.weight, project)  # the audio side trains...
    _ = [ds[i] for i in range(len(ds))]  # ... and more frames go through the AM after the step
    after = frozen_am.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before), "the AM changed"  # ... the AM does not


def test_am_encoder_needs_an_am_folder(tmp_path):
    with pytest.raises(ValueError, match="am_dir"):
        with_absolute_am_dir(tiny_config(sound_encoder="am"), "mm")
    with pytest.raises(FileNotFoundError, match="best-valid-loss.pt"):
        am_frames_of(tiny_config(sound_encoder="am", am_dir=str(tmp_path)))
    with pytest.raises(ValueError, match="sound_encoder"):
        tiny_config(sound_encoder="wav2vec2")
    cfg = with_absolute_am_dir(tiny_config(sound_encoder="am", am_dir="exp/am"), "mm")
    assert cfg.am_dir.startswith("/") and cfg.am_dir.endswith("exp/am")


def test_dumped_frames_are_the_frames_training_computes(am_setup, tmp_path):
    """punct.bin.dump_am_frames (two jobs, merged) writes every segment's frames exactly as the dataset computes
    them, of the real audio and of the random-audio control of a seed; the dataset reads them from the shards as
    needed and holds none; a model trained on the dump (train_mm --am-frames) is the model trained without it, with
    real or random audio; a dump of another geometry, one
    without a segment, of other audio (real for random, another seed) or saying nothing of its audio is refused."""
    import json

    from punct.bin import dump_am_frames, train_mm
    from punct.io.shards import MatrixReader
    from punct.utils.config import save_config
    from tests.helpers.cross_attention import TINY_MODEL, TINY_TRAINING, cli_options, make_tokenizer

    _, data, cfg, tokenizer = am_setup
    config = tmp_path / "mm.yaml"
    save_config(cfg, config)
    frames = tmp_path / "am_frames"
    options = ["--config", str(config), "--am-dir", cfg.am_dir, "--data-dir", str(data), "--prefix", "parczech"]
    options += ["--out-dir", str(frames), "--nj", "2", "--random-audio-seed", "7"]
    for job in ("1", "2"):
        dump_am_frames.main(options + ["--job", job])
    dump_am_frames.main(options + ["--merge"])
    random_cfg = MmConfig(**{**cfg.__dict__, "random_audio": True, "seed": 7})
    for model_cfg, dump in ((cfg, frames), (random_cfg, frames / "random_audio")):
        computed = _split(data, tokenizer, model_cfg)
        dumped = _split(data, tokenizer, model_cfg)
        dumped.take_am_frames(dump / "train" / "frames.scp")
        assert all(torch.equal(dumped[i]["am_frames"], computed[i]["am_frames"]) for i in range(len(computed)))
        assert not dumped.am_cache and len(computed.am_cache) == len(dumped) > 0  # read as needed, none held
    real, random = (MatrixReader(d / "dev" / "frames.scp") for d in (frames, frames / "random_audio"))
    key = next(iter(real.keys()))
    assert real[key].shape == random[key].shape and np.abs(real[key] - random[key]).mean() > 0.1

    with pytest.raises(ValueError, match="dumped with another AM or geometry"):
        _split(data, tokenizer, MmConfig(**{**cfg.__dict__, "am_frame_stride": 2})).take_am_frames(
            frames / "train" / "frames.scp"
        )
    with pytest.raises(ValueError, match="the model reads frames of"):
        _split(data, tokenizer, random_cfg).take_am_frames(frames / "train" / "frames.scp")  # real audio
    with pytest.raises(ValueError, match="'seed': 7.*the model reads frames of .*'seed': 8"):
        _split(data, tokenizer, MmConfig(**{**random_cfg.__dict__, "seed": 8})).take_am_frames(
            frames / "random_audio" / "train" / "frames.scp"
        )
    short = frames / "short" / "frames.scp"  # a split of the dump without one segment
    short.parent.mkdir()
    short.write_text("".join((frames / "train" / "frames.scp").read_text().splitlines(keepends=True)[1:]))
    with pytest.raises(ValueError, match="no AM frames of 1 segment"):
        _split(data, tokenizer, cfg).take_am_frames(short)
    (frames / "random_audio" / "frames.json").unlink()
    with pytest.raises(FileNotFoundError, match="frames.json: no such file"):
        _split(data, tokenizer, random_cfg).take_am_frames(frames / "random_audio" / "train" / "frames.scp")
    dump_am_frames.main(options + ["--merge"])
    assert len(MatrixReader(frames / "dev" / "frames.scp")) > 0 and (frames / "test" / "frames.scp").is_file()

    bert = tmp_path / "bert"
    make_encoder().save_pretrained(bert)
    make_tokenizer(tmp_path).save_pretrained(bert)
    common = ["--data-dir", str(data), "--prefix", "parczech", "--bert-model", str(bert), "--num-epochs", "1"]
    common += ["--model", "mm", "--sound-encoder", "am", "--am-dir", cfg.am_dir, "--am-frame-stride", "4"]
    common += cli_options(**TINY_MODEL, batch_size=2, **TINY_TRAINING) + ["--seed", "7"]
    random = ["--random-audio", "true"]
    train_mm.main(common + ["--exp-dir", str(tmp_path / "computed")])
    train_mm.main(common + random + ["--exp-dir", str(tmp_path / "random_computed")])
    train_mm.main(
        common + random + ["--exp-dir", str(tmp_path / "random_dumped"), "--am-frames", str(frames / "random_audio")]
    )
    train_mm.main(common + ["--exp-dir", str(tmp_path / "dumped"), "--am-frames", str(frames)])
    runs = ("computed", "dumped", "random_computed", "random_dumped")
    logs = {run: "".join(p.read_text() for p in (tmp_path / run / "log").glob("log-train-*")) for run in runs}
    for run in ("dumped", "random_dumped"):
        assert "train/frames.scp: AM frames of" in logs[run] and "test/frames.scp: AM frames of" in logs[run]
    assert "AM frames of" not in logs["computed"] + logs["random_computed"]
    histories = {run: json.loads((tmp_path / run / "history.json").read_text()) for run in runs}
    decodes = {run: (tmp_path / run / "decode" / "test.jsonl").read_text() for run in runs}
    for computed_run, dumped_run in (("computed", "dumped"), ("random_computed", "random_dumped")):
        assert histories[computed_run][0]["dev_loss"] == histories[dumped_run][0]["dev_loss"]
        assert decodes[computed_run] == decodes[dumped_run]
    assert histories["computed"][0]["dev_loss"] != histories["random_computed"][0]["dev_loss"]
