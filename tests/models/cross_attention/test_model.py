"""punct.models.cross_attention.model / features / data: sound-encoder shapes, positional-embedding bookkeeping,
random audio, the two-head loss."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from punct.models.cross_attention.config import MmConfig
from punct.models.cross_attention.data import collate, encode_text, load_split, permute_audio, read_segments
from punct.models.cross_attention.features import MelSpectrogram
from punct.models.cross_attention.geometry import NO_WORD, SoundGeometry
from punct.models.cross_attention.model import (
    CrossAttentionModel,
    SoundEncoder,
    add_word_positions,
    build_model,
    head_specs,
)
from punct.models.cross_attention.train import schedule_factor, two_head_loss
from punct.models.text.model import PunctBert
from tests.helpers.cross_attention import make_encoder, tiny_config, write_corpus


def test_thesis_geometry_frame_counts():
    g = SoundGeometry.from_config(MmConfig())
    assert g.stride == 32 and g.receptive_field == 80  # 80 mel frames of 16 ms: ~1.3 s (thesis 5.6)
    # 15 s: 936 mel frames -> 468 234 117 58 57 28 27
    assert g.num_latent(936) == 27
    assert g.num_latent(80) == 1 and g.num_latent(79) == 0
    mel = MelSpectrogram()
    assert mel.num_frames(16000 * 15) == 936 and mel(torch.zeros(16000 * 15)).shape == (936, 128)


def test_mel_peak_at_tone_frequency():
    mel = MelSpectrogram(log=False)
    t = torch.arange(16000) / 16000
    spec = mel(torch.sin(2 * torch.pi * 1000 * t)).mean(0)  # (128,)
    centres = torch.tensor([(mel.filters[:, b].argmax() * 16000 / 512).item() for b in range(128)])
    assert abs(centres[spec.argmax()].item() - 1000) < 100


def test_sound_encoder_shapes_and_padding_invariance():
    torch.manual_seed(0)
    cfg = tiny_config()
    enc = SoundEncoder(cfg, d_model=16).eval()
    lengths = torch.tensor([200, 120])
    mel = torch.randn(2, 200, cfg.num_mel_bins)
    out, pad = enc(mel, lengths)
    g = enc.geometry
    assert out.shape == (2, g.num_latent(200), 16)
    assert pad.tolist() == [
        [False] * g.num_latent(200),
        [False] * g.num_latent(120) + [True] * (g.num_latent(200) - g.num_latent(120)),
    ]
    alone, _ = enc(mel[1:, :120], lengths[1:])
    torch.testing.assert_close(out[1, : g.num_latent(120)], alone[0], atol=1e-5, rtol=1e-4)


def test_frame_words_by_largest_overlap():
    cfg = tiny_config(conv_strides=(2, 2, 2, 2, 1, 2, 1))
    g = SoundGeometry.from_config(cfg)
    starts, ends = g.frame_windows(4)  # windows of 0.512 s
    assert np.allclose(ends - starts, 0.512) and np.allclose(np.diff(starts), 0.512)
    # word 0 covers frame 0 fully, word 1 overlaps frame 1 by more than word 2 does; frame 3 is silence
    w_starts = [starts[0] - 0.1, starts[1] + 0.01, starts[1] + 0.4]
    w_ends = [ends[0], starts[1] + 0.35, starts[2] + 0.1]
    assert g.frame_words(w_starts, w_ends, 4).tolist() == [0, 1, 2, NO_WORD]


def test_add_word_positions_gives_each_word_its_embedding():
    table = torch.nn.Embedding(3, 4)
    x = torch.zeros(1, 6, 4)
    idx = torch.tensor([[NO_WORD, 0, 0, 1, 5, NO_WORD]])  # 5 is past the table: shares the last row
    y = add_word_positions(x, idx, table)
    for t, w in enumerate([None, 0, 0, 1, 2, None]):
        expected = torch.zeros(4) if w is None else table.weight[w]
        torch.testing.assert_close(y[0, t], expected)


def test_encode_text_positions_and_token_words(tokenizer):
    ids, positions, token_words = encode_text(tokenizer, ["pes", "praha", "kočka"], 64)
    tokens = tokenizer.convert_ids_to_tokens(ids)
    assert tokens == ["[CLS]", "pes", "pr", "##ah", "##a", "kočka", "[SEP]"]
    assert positions == [1, 4, 5]  # last sub-token of each word
    assert token_words == [NO_WORD, 0, 1, 1, 1, 2, NO_WORD]
    assert encode_text(tokenizer, ["praha"] * 20, 16) is None  # does not fit


def _batch(cfg, n=2, words=4, tokens=7, mel=150):
    torch.manual_seed(1)
    g = SoundGeometry.from_config(cfg)
    frames = g.num_latent(mel)
    return {
        "input_ids": torch.randint(5, 19, (n, tokens)),
        "attention_mask": torch.ones(n, tokens, dtype=torch.long),
        "token_words": torch.tensor([[NO_WORD, 0, 1, 1, 2, 3, NO_WORD]] * n),
        "word_positions": torch.tensor([[1, 3, 4, 5]] * n),
        "mel": torch.randn(n, mel, cfg.num_mel_bins),
        "mel_lengths": torch.tensor([mel] * n),
        "frame_words": torch.tensor([[i % words for i in range(frames)]] * n),
        "labels_punct": torch.tensor([[0, 1, 0, 2]] * n),
        "labels_case": torch.tensor([[1, 0, 0, -100]] * n),
    }


@pytest.mark.parametrize("positional", [False, True])
def test_cross_attention_model_outputs_and_positions(positional):
    cfg = tiny_config(positional=positional)
    text = PunctBert(make_encoder(), None, head_specs(cfg))
    model = build_model("mm", cfg, text).eval()
    assert isinstance(model, CrossAttentionModel)
    batch = _batch(cfg)
    out = model(batch, need_attention=True)
    assert out["punct"].shape == (2, 4, 9) and out["case"].shape == (2, 4, 2)
    frames = batch["frame_words"].size(1)
    assert out["attention"].shape == (2, 7, frames)
    torch.testing.assert_close(out["attention"].sum(-1), torch.ones(2, 7))
    # the frame -> word assignment matters exactly when the positional embeddings are on
    moved = dict(batch, frame_words=batch["frame_words"].flip(1))
    changed = not torch.allclose(model(moved)["punct"], out["punct"])
    assert changed == positional


def test_text_only_model_ignores_audio():
    cfg = tiny_config()
    model = build_model("text", cfg, PunctBert(make_encoder(), None, head_specs(cfg))).eval()
    batch = _batch(cfg)
    a = model(batch)
    b = model(dict(batch, mel=torch.randn_like(batch["mel"])))
    assert a["punct"].shape == (2, 4, 9) and a["case"].shape == (2, 4, 2)
    torch.testing.assert_close(a["punct"], b["punct"])


def test_two_head_loss_weights_and_ignored_words():
    torch.manual_seed(0)
    logits = {"punct": torch.randn(2, 3, 9), "case": torch.randn(2, 3, 2)}
    batch = {
        "labels_punct": torch.tensor([[0, 4, -100], [1, 0, 2]]),
        "labels_case": torch.tensor([[1, 0, -100], [0, 0, 1]]),
    }
    loss, parts = two_head_loss(logits, batch, 0.5, 0.5)
    lp = F.cross_entropy(
        torch.stack([logits["punct"][0, 0], logits["punct"][0, 1], *logits["punct"][1]]), torch.tensor([0, 4, 1, 0, 2])
    )
    lc = F.cross_entropy(
        torch.stack([logits["case"][0, 0], logits["case"][0, 1], *logits["case"][1]]), torch.tensor([1, 0, 0, 0, 1])
    )
    torch.testing.assert_close(loss, 0.5 * lp + 0.5 * lc)
    assert parts["punct"] == pytest.approx(lp.item()) and parts["case"] == pytest.approx(lc.item())
    only_punct, _ = two_head_loss(logits, batch, 1.0, 0.0)
    torch.testing.assert_close(only_punct, lp)


def test_lr_schedule_warmup_then_linear_decay():
    f = [schedule_factor(s, 100, 0.2) for s in range(100)]
    assert f[0] == pytest.approx(1 / 20) and f[19] == pytest.approx(1.0)
    assert f[20] == pytest.approx(1.0) and f[60] == pytest.approx(0.5) and f[99] == pytest.approx(1 / 80)
    assert all(a <= b for a, b in zip(f[:20], f[1:20])) and all(a >= b for a, b in zip(f[20:], f[21:]))


def test_permute_audio_keeps_values_and_is_seeded():
    x = np.sin(np.arange(1000) / 10).astype(np.float32)
    y = permute_audio(x, 7)
    assert y.shape == x.shape and not np.array_equal(x, y)
    np.testing.assert_array_equal(np.sort(x), np.sort(y))
    np.testing.assert_array_equal(y, permute_audio(x, 7))
    assert not np.array_equal(y, permute_audio(x, 8))


def test_dataset_random_audio_changes_mel_not_shapes(tmp_path, tokenizer):
    data = write_corpus(tmp_path)
    sup, rec = data / "parczech_supervisions_train.jsonl.gz", data / "parczech_recordings_train.jsonl.gz"
    segs = read_segments(sup)
    assert segs[0].word_starts[0] == pytest.approx(0.0) and segs[0].word_ends[0] == pytest.approx(0.4)
    real = load_split(sup, rec, tokenizer, tiny_config(), True)
    rand = load_split(sup, rec, tokenizer, tiny_config(random_audio=True), True)
    a, b = real[1], rand[1]
    assert a["mel"].shape == b["mel"].shape and not torch.allclose(a["mel"], b["mel"])
    assert np.array_equal(a["frame_words"], b["frame_words"])
    frames = load_split(sup, rec, tokenizer, tiny_config(random_audio=True, random_audio_unit="frames"), True)[1]["mel"]
    assert frames.shape == a["mel"].shape and not torch.equal(frames, a["mel"])
    assert sorted(map(tuple, frames.tolist())) == sorted(map(tuple, a["mel"].tolist()))  # same rows, reordered
    assert len(a["frame_words"]) == real.geometry.num_latent(a["mel"].size(0))
    batch = collate([real[0], real[1], real[2]], 0)
    assert batch["mel"].shape[0] == 3 and batch["labels_punct"].shape == batch["word_positions"].shape
    assert (batch["labels_punct"][0, len(real.segments[0].words) :] == -100).all()


def test_zero_init_blocks_start_without_audio_influence():
    batch = _batch(tiny_config())
    noisy = dict(batch, mel=torch.randn_like(batch["mel"]))
    for zero_init in (True, False):
        cfg = tiny_config(mm_zero_init=zero_init, positional=True)
        model = build_model("mm", cfg, PunctBert(make_encoder(), None, head_specs(cfg))).eval()
        same = torch.allclose(model(batch)["punct"], model(noisy)["punct"])
        assert same == zero_init


def test_aligned_attention_mask_by_word_times():
    from punct.models.cross_attention.model import aligned_attention_mask

    # frames: leading silence, word 0, pause, word 1, word 2, pause, padding; word 3 has no frame
    frame_words = torch.tensor([[NO_WORD, 0, 0, NO_WORD, 1, 2, NO_WORD, NO_WORD]])
    audio_pad = torch.tensor([[False] * 7 + [True]])
    token_words = torch.tensor([[NO_WORD, 0, 1, 1, 2, 3, NO_WORD, NO_WORD]])  # [CLS] w0 w1 w1 w2 w3 [SEP] pad
    allowed = ~aligned_attention_mask(token_words, frame_words, audio_pad, context=0)[0]
    every = [True] * 7 + [False]
    assert allowed.tolist() == [
        every,
        [False, True, True, True, False, False, False, False],  # word 0: its frames and the pause after it
        [False, False, False, False, True, False, False, False],
        [False, False, False, False, True, False, False, False],
        [False, False, False, False, False, True, True, False],  # word 2 and the trailing pause
        every,  # word 3 owns no frame
        every,
        every,
    ]
    wider = ~aligned_attention_mask(token_words, frame_words, audio_pad, context=1)[0]
    assert wider[2].tolist() == [False, True, True, True, True, True, True, False]  # words 0-2
    assert wider[5].tolist() == [False, False, False, False, False, True, True, False]  # word 3 sees word 2's frames


def test_aligned_attention_reaches_the_cross_attention():
    """The last block's cross-attention weights: with aligned attention a word's token puts no weight on the
    other word's frames (context 0), with full attention it weighs every frame."""

    def attention(**options):
        torch.manual_seed(0)
        cfg = tiny_config(**options)
        model = build_model("mm", cfg, PunctBert(make_encoder(), head_specs(cfg))).eval()
        geometry = model.sound.geometry
        mel_frames = geometry.receptive_field + 5 * geometry.stride
        num_latent = geometry.num_latent(mel_frames)
        batch = {
            "input_ids": torch.tensor([[2, 5, 6, 3]]),
            "attention_mask": torch.ones(1, 4, dtype=torch.long),
            "word_positions": torch.tensor([[1, 2]]),
            "token_words": torch.tensor([[NO_WORD, 0, 1, NO_WORD]]),
            "mel": torch.randn(1, mel_frames, cfg.num_mel_bins),
            "mel_lengths": torch.tensor([mel_frames]),
            "frame_words": torch.tensor([[0, 0] + [1] * (num_latent - 2)]),
        }
        with torch.no_grad():
            return model(batch, need_attention=True)["attention"][0]  # (T, F)

    aligned = attention(mm_attention="aligned", mm_attention_context=0)
    assert aligned.shape[1] == 6
    assert (aligned[1, 2:] == 0).all() and (aligned[2, :2] == 0).all()
    assert torch.allclose(aligned[1, :2].sum(), torch.tensor(1.0)) and (aligned[0] > 0).all()  # [CLS]: every frame
    assert (attention()[1:3] > 0).all()
    with pytest.raises(ValueError, match="mm_attention must be one of"):
        MmConfig(mm_attention="local")


def test_predictions_in_order_of_length_equal_those_in_dataset_order(tmp_path, tokenizer, monkeypatch):
    """predict batches the segments by sub-token count; the rows go back to their segments by index."""
    from punct.models.cross_attention import data as data_module
    from punct.models.cross_attention import predictions

    sup = write_corpus(tmp_path, num_segments=9) / "parczech_supervisions_train.jsonl.gz"
    cfg = tiny_config(eval_batch_size=2)
    dataset = load_split(sup, None, tokenizer, cfg, False)
    lengths = dataset.token_lengths()
    assert len(set(lengths)) > 1
    batches = [b["index"].tolist() for b in data_module.loader(dataset, 2, False, 0, 0, by_length=True)]
    assert [lengths[i] for b in batches for i in b] == sorted(lengths)
    assert sorted(i for b in batches for i in b) == list(range(len(dataset)))
    model = build_model("text", cfg, PunctBert(make_encoder(), tokenizer, head_specs(cfg)))
    by_length = predictions.predict(model, dataset, cfg, torch.device("cpu"), 0)

    def in_dataset_order(*args, by_length: bool = False, **kwargs):
        return data_module.loader(*args, **kwargs)

    monkeypatch.setattr(predictions, "loader", in_dataset_order)
    in_order = predictions.predict(model, dataset, cfg, torch.device("cpu"), 0)
    assert by_length.punct_hyp == in_order.punct_hyp and by_length.case_hyp == in_order.case_hyp
    np.testing.assert_allclose(by_length.losses, in_order.losses, rtol=1e-5)


def test_batching_is_checked():
    with pytest.raises(ValueError, match="batching must be one of random, length"):
        tiny_config(batching="sorted")


def test_words_per_batch_weighs_like_length_batches_as_random_ones(tmp_path, tokenizer):
    """The mean trained words per rank batch (first words excluded), and a step's loss weighed by them."""
    from punct.models.cross_attention.train import build_optimizer, train_one_epoch, words_per_batch
    from punct.training.loop import TrainState

    sup = write_corpus(tmp_path, num_segments=9) / "parczech_supervisions_train.jsonl.gz"
    cfg = tiny_config(first_word="exclude", batch_size=4, grad_clip=1e9)  # no clipping: the gradients compare
    dataset = load_split(sup, None, tokenizer, cfg, False)
    words = sum(len(seg.words) - 1 for seg in dataset.segments)
    assert words_per_batch(dataset, cfg, 3) == pytest.approx(words / 3)
    assert words_per_batch(dataset, cfg, 2, world_size=2) == pytest.approx(words / 4)
    batch = collate([dataset[i] for i in range(4)], 0)
    trained = int((batch["labels_punct"] != -100).sum())
    grads = []
    for mean_words in (0.0, trained / 2):  # unweighed, then a batch of twice the mean words: twice the gradient
        torch.manual_seed(0)
        model = build_model("text", cfg, PunctBert(make_encoder(), tokenizer, head_specs(cfg)))
        optimizer = build_optimizer(model, cfg)
        torch.manual_seed(1)  # the same dropout masks in both passes
        state = TrainState()
        train_one_epoch(
            model, optimizer, [batch], cfg, state, 1, torch.device("cpu"), progress=False, mean_batch_words=mean_words
        )
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None]))
    torch.testing.assert_close(grads[1], 2 * grads[0])


def test_the_optimizer_is_the_fused_adamw_in_its_groups(tokenizer):
    """Fused where PyTorch has it (the per-tensor AdamW was 11 % of a bf16 step), one group per (new or
    pretrained, decayed or not) with its own peak learning rate."""
    from punct.models.cross_attention.train import build_optimizer

    cfg = tiny_config(lr=1e-4, lr_new=1e-3)
    optimizer = build_optimizer(build_model("mm", cfg, PunctBert(make_encoder(), tokenizer, head_specs(cfg))), cfg)
    assert isinstance(optimizer, torch.optim.AdamW) and optimizer.defaults["fused"] is True
    assert all(group["fused"] is True for group in optimizer.param_groups)
    assert {(g["peak_lr"], g["weight_decay"]) for g in optimizer.param_groups} == {
        (lr, decay) for lr in (1e-4, 1e-3) for decay in (0.0, cfg.weight_decay)
    }
