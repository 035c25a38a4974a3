"""Punctuation TDNN: the authors' topology (301 -> 243 frames, 3.0 M parameters at paper size) and
the exact equivalence of fully convolutional evaluation with the windowed one."""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F

from punct.models.punct_tdnn.tdnn import PunctTdnn, TdnnConfig, count_parameters
from tests.helpers.synthetic_splits import randomise_batch_norms


def test_paper_topology_and_parameter_count():
    cfg = TdnnConfig()
    assert cfg.input_dim == 768 + 1024 and cfg.window == 301
    assert cfg.shrink == 58 and cfg.output_frames == 243 and cfg.context == 150
    model = PunctTdnn(cfg)
    sizes = [(c.in_channels, c.out_channels, c.kernel_size[0], c.dilation[0]) for c in model.convs]
    assert sizes == [
        (512, 256, 9, 1),
        (256, 256, 9, 2),
        (256, 128, 5, 1),
        (128, 128, 5, 2),
        (128, 64, 7, 1),
        (64, 64, 7, 2),
        (64, 4, 5, 1),
    ]
    assert all(norm.num_features == conv.out_channels for norm, conv in zip(model.norms, model.convs))
    assert (model.head_hidden.in_features, model.head_hidden.out_features, model.head_out.out_features) == (243, 70, 1)
    n = count_parameters(model)
    print(f"paper-size punctuation TDNN: {n:,} parameters")
    # fusion 918,016 + convs 2,103,428 + BatchNorms 1,940 + head 17,151
    assert n == 3_040_535
    assert round(n / 1e6, 1) == 3.0


def test_window_shrinks_to_243_frames():
    model = PunctTdnn(TdnnConfig(input_dim=10, fusion_dim=8, channels=(6, 6, 5, 5, 4, 4))).eval()
    x = torch.randn(3, 301, 10)
    assert model.conv_stack(x).shape == (3, 4, 243)
    assert model(x).shape == (3, 4)
    with pytest.raises(ValueError, match="expects windows"):
        model(torch.randn(3, 300, 10))


def test_bad_config_is_rejected():
    with pytest.raises(ValueError, match="len\\(kernels\\)"):
        TdnnConfig(kernels=(9, 9))
    with pytest.raises(ValueError, match="odd"):
        TdnnConfig(window=300)


def randomised_model(seed: int = 0) -> PunctTdnn:
    torch.manual_seed(seed)
    model = PunctTdnn(TdnnConfig(input_dim=7, fusion_dim=12, channels=(10, 10, 8, 8, 6, 6), head_dim=9))
    randomise_batch_norms(model)
    with torch.no_grad():  # sharpen the output so that posteriors differ clearly between words
        model.head_out.weight.mul_(40.0)
    return model.eval()


@pytest.mark.parametrize("num_frames", [40, 420])  # shorter than a window, and longer
def test_fully_convolutional_equals_windowed(num_frames):
    model = randomised_model()
    gen = torch.Generator().manual_seed(num_frames)
    frames = torch.randn(num_frames, 7, generator=gen)
    centres = torch.tensor(sorted({0, num_frames - 1, *torch.randint(0, num_frames, (8,), generator=gen).tolist()}))
    padded = F.pad(frames, (0, 0, 150, 150))
    windows = torch.stack([padded[c : c + 301] for c in centres.tolist()])  # window of centre c, zero-padded
    with torch.no_grad():
        windowed = torch.softmax(model(windows), dim=-1)
        full = torch.softmax(model.utterance_logits(frames, centres), dim=-1)
    assert full.shape == (len(centres), 4)
    assert windowed.max().item() > 0.5  # not a flat output: the comparison means something
    assert (windowed - windowed.mean(dim=0)).abs().max().item() > 0.05  # words get different posteriors
    diff = (full - windowed).abs().max().item()
    assert diff < 1e-5, diff
    # A wrong slice offset would be caught: shifting the centres by one frame changes the result.
    with torch.no_grad():
        shifted = torch.softmax(model.utterance_logits(frames, (centres + 1).clamp(max=num_frames - 1)), dim=-1)
    assert (shifted - windowed).abs().max().item() > 1e-2


def test_no_words_gives_no_rows():
    model = randomised_model()
    with torch.no_grad():
        assert model.utterance_logits(torch.randn(5, 7), []).shape == (0, 4)


def test_padded_utterance_batch_equals_windows():
    """Utterances of different lengths in one zero-padded batch give the windowed posteriors."""
    from punct.models.punct_tdnn.dataset import collate_utterances

    model = randomised_model(1)
    gen = torch.Generator().manual_seed(5)
    items = []
    for length in (30, 250, 90):
        frames = torch.randn(length, 7, generator=gen)
        centres = torch.randint(0, length, (4,), generator=gen)
        items.append((frames, centres, torch.zeros(4, dtype=torch.long)))
    padded, rows, centres, _ = collate_utterances(items, context=150)
    assert padded.shape == (3, 250 + 300, 7) and rows.tolist() == [0] * 4 + [1] * 4 + [2] * 4
    with torch.no_grad():
        batch = torch.softmax(model(padded, utterance=rows, centres=centres), dim=-1)
        windows = []
        for frames, word_centres, _ in items:
            p = F.pad(frames, (0, 0, 150, 150))
            windows += [p[c : c + 301] for c in word_centres.tolist()]
        expected = torch.softmax(model(torch.stack(windows)), dim=-1)
    assert expected.max().item() > 0.5
    assert (batch - expected).abs().max().item() < 1e-5


@pytest.mark.parametrize("num_frames", [40, 420])
def test_word_factored_fusion_equals_fused_frames(num_frames):
    """The fusion layer's text part once per word (WordFactoredTdnn) gives the fused-frame posteriors."""
    import numpy as np

    from punct.models.punct_tdnn.frames import frame_word_index, fuse_frames
    from punct.models.punct_tdnn.tdnn import WordFactoredTdnn

    model = randomised_model()
    gen = torch.Generator().manual_seed(num_frames)
    starts = np.array(sorted(torch.randint(3, num_frames, (6,), generator=gen).tolist()))
    word_vectors = torch.randn(len(starts), 3, generator=gen)
    acoustic = torch.randn(num_frames, 4, generator=gen)
    index = frame_word_index(starts, num_frames)
    assert index[0] == -1  # frames before the first word are covered
    fused = torch.from_numpy(fuse_frames(word_vectors.numpy(), acoustic.numpy(), index))
    centres = torch.tensor(sorted({0, num_frames - 1, *torch.randint(0, num_frames, (6,), generator=gen).tolist()}))
    factored = WordFactoredTdnn(model, text_dim=3).eval()
    with torch.no_grad():
        expected = torch.softmax(model.utterance_logits(fused, centres), dim=-1)
        got = torch.softmax(factored.utterance_logits(acoustic, word_vectors, torch.from_numpy(index), centres), dim=-1)
        shifted = torch.softmax(
            factored.utterance_logits(acoustic, word_vectors.roll(1, 0), torch.from_numpy(index), centres), dim=-1
        )
    assert expected.max().item() > 0.5 and (expected - expected.mean(0)).abs().max().item() > 0.05
    assert (got - expected).abs().max().item() < 1e-5
    assert (shifted - expected).abs().max().item() > 1e-2  # each frame must get its own word's part
    with pytest.raises(ValueError, match="text_dim"):
        WordFactoredTdnn(model, text_dim=7)


def test_folded_conv_stack_equals_word_factored():
    from punct.models.punct_tdnn.tdnn import FoldedWordFactoredTdnn, WordFactoredTdnn

    model = randomised_model()
    with torch.no_grad():
        for norm in model.norms:
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.uniform_(-0.5, 0.5)
    factored = WordFactoredTdnn(model, text_dim=3).eval()
    folded = FoldedWordFactoredTdnn(factored).eval()
    assert not any(isinstance(m, torch.nn.BatchNorm1d) for m in folded.modules())
    gen = torch.Generator().manual_seed(4)
    acoustic, vectors = torch.randn(2, 400, 4, generator=gen), torch.randn(5, 3, generator=gen)
    index = torch.randint(-1, 5, (2, 400), generator=gen)
    with torch.no_grad():
        want = factored(acoustic, vectors, index)
        assert (folded(acoustic, vectors, index) - want).abs().max().item() < 1e-4
        assert want.abs().mean().item() > 0.1
        model.norms[2].weight[1] = -1.0
        with pytest.raises(ValueError, match="conv layer 3"):
            FoldedWordFactoredTdnn(WordFactoredTdnn(model, text_dim=3))


def test_padding_column_is_the_full_padded_pass_and_kept_per_stack():
    """utterance_logits runs the stack over shrink padding frames only and reads the outputs that see nothing
    but padding from one column; the result is the pass over the whole context of padding."""
    from punct.models.punct_tdnn.tdnn import FoldedWordFactoredTdnn, WordFactoredTdnn, pad_utterance, word_slices

    model = randomised_model()
    config = model.config
    assert config.context - config.shrink == 92  # the frames the column stands for on each side
    factored = WordFactoredTdnn(model, text_dim=3).eval()
    gen = torch.Generator().manual_seed(7)
    acoustic, vectors = torch.randn(120, 4, generator=gen), torch.randn(4, 3, generator=gen)
    index = torch.tensor([-1] * 10 + [0] * 30 + [1] * 30 + [2] * 30 + [3] * 20)
    centres = torch.tensor([0, 39, 69, 99, 119])
    with torch.no_grad():
        padded, padded_index = pad_utterance(acoustic, index, config.context)
        full = factored(padded.unsqueeze(0), vectors, padded_index.unsqueeze(0))[0]
        want = model.head(word_slices(full, centres, config.output_frames))
        got = factored.utterance_logits(acoustic, vectors, index, centres)
        assert (got - want).abs().max().item() < 1e-5 and want.std().item() > 0.1
        column = factored._padding_output[1]
        assert torch.allclose(column[:, 0], full[:, 0], atol=1e-6) and torch.allclose(
            column[:, 0], full[:, -1], atol=1e-6
        )
        folded = FoldedWordFactoredTdnn(factored).eval()
        by_folded = factored.utterance_logits(acoustic, vectors, index, centres, conv_stack=folded)
        assert factored._padding_output[0] is folded  # another stack: its own column
        assert (by_folded - want).abs().max().item() < 1e-4
