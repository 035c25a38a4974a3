"""Right truncation of the TDNN's training examples (``right_truncation``): a cut example is exactly the example
of an utterance that ends at the cut with the words known by then, and the draws are seeded per epoch (a training
with it learns: tests/models/punct_tdnn/test_train_learns.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from lhotse import CutSet
from lhotse.utils import fastcopy

from punct.io.shards import MatrixReader, write_shard
from punct.models.punct_tdnn.dataset import FusedWindowDataset, UtteranceDataset, open_split
from punct.models.punct_tdnn.sampling import EpochSampler, WithEpoch
from punct.models.punct_tdnn.truncation import cut_after
from punct.training.truncation import RightTruncation
from tests.helpers.synthetic_splits import make_split


@pytest.fixture(scope="module")
def split(tmp_path_factory):
    return make_split(tmp_path_factory.mktemp("truncation"), "train", num_utts=4, text_dim=4, am_dim=3, seed=11)


def test_the_cut_follows_the_word_end_and_knows_the_words_ended_by_then():
    ends = np.array([10, 20, 24, 40])
    assert cut_after(ends, 50, word=1, latency=0) == (20, 2)
    assert cut_after(ends, 50, word=1, latency=4) == (24, 3)  # word 2 has ended by then: a recogniser knows it
    assert cut_after(ends, 50, word=1, latency=100) == (50, 4)  # never past the audio
    assert cut_after(np.array([10, 30, 25]), 50, word=2, latency=0) == (30, 3)  # an earlier word ending later
    assert cut_after(np.array([10, 60]), 50, word=1, latency=0) == (50, 2)  # an end past the last frame


def _as_if_ended(split: dict, root, cut_id: str, cut_frames: int, known: int) -> dict:
    """The split with cut ``cut_id`` replaced by its first ``cut_frames`` frames and ``known`` words, as a
    recording that ended there would give."""
    cuts = []
    for cut in CutSet.from_file(split["cuts"]):
        if cut.id == cut_id:
            sup = cut.supervisions[0]
            custom = {k: v[:known] for k, v in sup.custom.items()}
            short = fastcopy(
                sup,
                duration=cut_frames / 100,
                custom=custom,
                text=" ".join(custom["words"]),
                alignment={"word": sup.alignment["word"][:known]},
            )
            cut = fastcopy(cut, duration=cut_frames / 100, supervisions=[short])
        cuts.append(cut)
    root.mkdir(parents=True, exist_ok=True)
    CutSet.from_cuts(cuts).to_file(root / "cuts.jsonl.gz")
    acoustic, vectors = MatrixReader(split["acoustic_scp"]), MatrixReader(split["text_scp"])
    write_shard(
        root / "emb", [(k, acoustic[k][:cut_frames] if k == cut_id else acoustic[k]) for k in list(acoustic.keys())]
    )
    write_shard(root / "vec", [(k, vectors[k][:known] if k == cut_id else vectors[k]) for k in list(vectors.keys())])
    return {"cuts": root / "cuts.jsonl.gz", "acoustic_scp": root / "emb.scp", "text_scp": root / "vec.scp"}


@pytest.mark.parametrize("word, latency", [(0, 0), (1, 3), (2, 40), (3, 500)])
def test_a_cut_utterance_is_the_utterance_of_a_recording_that_ended_at_the_cut(split, tmp_path, word, latency):
    corpus = open_split(split["cuts"], split["acoustic_scp"], split["text_scp"])
    utt = 1
    info = corpus.utterances[utt]
    num_frames = corpus.matrices(utt)[0].shape[0]
    cut, known = cut_after(info.word_ends, num_frames, word, latency)
    assert known > word and cut <= num_frames
    frames, centres, labels = corpus.truncated_utterance(utt, word, latency)

    ended = open_split(**_as_if_ended(split, tmp_path, info.key, cut, known))
    same = next(i for i, u in enumerate(ended.utterances) if u.key == info.key)
    expected_frames, expected_centres = ended.utterance_frames(same)
    assert frames.shape == (cut, corpus.input_dim)
    np.testing.assert_array_equal(frames, expected_frames)
    np.testing.assert_array_equal(centres, expected_centres)
    np.testing.assert_array_equal(labels, ended.utterance_labels(same))
    if known < len(info.labels):  # the words after the cut are unknown: their frames carry the last known vector
        text = frames[info.word_starts[known] : cut, : corpus.text_dim]
        last_known = corpus.matrices(utt)[1][known - 1]
        assert np.all(text == last_known)
        assert centres[-1] == cut - 1  # the last known word's transition is the cut (transition rule)

    # the window of the chosen word is the ended utterance's window of the same word
    example = int(np.flatnonzero(corpus.example_utt == utt)[word])
    ended_example = int(np.flatnonzero(ended.example_utt == same)[word])
    np.testing.assert_array_equal(corpus.window(example, 150, latency), ended.window(ended_example, 150))


def test_the_draws_are_seeded_by_epoch_and_example(split):
    truncation = RightTruncation(0.5, 150)
    draws = [[truncation.draw(7, epoch, example) for example in range(40)] for epoch in range(3)]
    assert draws[0] == [truncation.draw(7, 0, example) for example in range(40)]  # a rerun draws the same
    assert draws[0] != draws[1]  # another epoch draws others
    cut = [d is not None for d in draws[0] + draws[1] + draws[2]]
    assert 0.3 < np.mean(cut) < 0.7
    assert all(0 <= d <= 150 for d in sum(draws, []) if d is not None)
    assert RightTruncation(0.0, 150).draw(7, 0, 0) is None
    with pytest.raises(ValueError, match="right_truncation"):
        RightTruncation(1.5, 150)


def test_the_datasets_cut_only_items_asked_for_with_their_epoch(split):
    corpus = open_split(split["cuts"], split["acoustic_scp"], split["text_scp"])
    always = RightTruncation(1.0, 0)
    utterances = UtteranceDataset(corpus, always, seed=3)
    whole = utterances[0][0]
    assert torch.equal(whole, torch.from_numpy(corpus.utterance_frames(0)[0]))  # a plain index: never cut
    shorter = [utterances[(0, epoch)][0].shape[0] for epoch in range(6)]
    assert all(n <= whole.shape[0] for n in shorter) and min(shorter) < whole.shape[0]
    windows = FusedWindowDataset(corpus, 150, truncation=always, seed=3)
    last_word = len(corpus.utterances[0].labels) - 1  # example ids of utterance 0 come first
    first = windows[(0, 0)][0]
    assert not torch.equal(first, windows[0][0]) or last_word == 0
    sampler = WithEpoch(EpochSampler(np.zeros(4, dtype=np.int64), "none", seed=0))
    sampler.set_epoch(2)
    assert sorted(sampler) == [(i, 2) for i in range(4)]
