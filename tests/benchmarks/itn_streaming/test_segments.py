"""ParCzech segments streamed at a latency (benchmarks.itn_streaming.segments): when each word is due and what has
arrived by then, offline equality at latency inf, and a stream that reads nothing after a word's boundary (checked
against a recording that really ends there)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import soundfile as sf
import torch
from lhotse import Recording, RecordingSet

from benchmarks.itn_streaming.segments import cut_segment, due_seconds, latency_row, stream_cuts, stream_split
from punct.models.cross_attention.data import ItnDataset, ItnSegment, load_split
from punct.models.cross_attention.model import build_model
from punct.models.cross_attention.predictions import predict
from tests.helpers.cross_attention import make_encoder, make_tokenizer, tiny_config, write_corpus

CPU = torch.device("cpu")


def _segment(ends, duration=2.0):
    n = len(ends)
    return ItnSegment("s", "rec", 10.0, duration, [f"w{i}" for i in range(n)], [0] * n, [0] * n,
                      [e - 0.3 for e in ends], list(ends))  # fmt: skip


def test_words_are_due_at_the_first_boundary_after_their_end_plus_latency():
    seg = _segment([0.45, 0.9, 1.32])
    assert due_seconds(0.45, 0.3, 2.0) == pytest.approx(0.8)
    assert due_seconds(0.9, 0.3, 2.0) == pytest.approx(1.2)  # exactly on a boundary: no extra chunk
    assert due_seconds(1.32, 1.0, 2.0) == 2.0  # past the end: the whole segment
    cuts = stream_cuts(seg, 0.3)
    assert [c.emit for c in cuts] == [(0,), (1,), (2,)]
    assert [c.final for c in cuts] == [False, False, False]
    assert [c.segment.duration for c in cuts] == pytest.approx([0.8, 1.2, 1.7])
    assert [c.segment.words for c in cuts] == [["w0"], ["w0", "w1"], ["w0", "w1", "w2"]]
    assert cuts[0].segment.start == seg.start and cuts[0].segment.word_ends == [0.45]

    late = stream_cuts(seg, 1.0)
    assert [(c.emit, c.final) for c in late] == [((0,), False), ((1,), False), ((2,), True)]  # 1.5 s, 1.9 s, end
    assert late[0].segment.words == ["w0", "w1", "w2"] and late[0].segment.duration == pytest.approx(1.5)
    assert [(c.emit, c.final, c.segment) for c in stream_cuts(seg, math.inf)] == [((0, 1, 2), True, seg)]
    assert [(c.emit, c.final) for c in stream_cuts(seg._replace(duration=1.1), 0.3)] == [((0,), False), ((1, 2), True)]

    with pytest.raises(ValueError, match="not ended"):
        stream_cuts(_segment([0.9, 0.45]), 0.0)


@pytest.fixture
def model_and_data(tmp_path):
    (tmp_path / "corpus").mkdir()
    data = write_corpus(tmp_path / "corpus", num_segments=6)
    bert = tmp_path / "bert"
    make_encoder().save_pretrained(bert)
    make_tokenizer(tmp_path).save_pretrained(bert)
    cfg = tiny_config(bert_model=str(bert), head_dropout=0.0, conv_dropout=0.0, audio_dropout=0.0, mm_dropout=0.0)
    torch.manual_seed(0)
    model = build_model("mm", cfg).eval()
    with torch.no_grad():  # random heads that do not all say blank
        for p in model.text.heads.parameters():
            p.normal_(0, 2.0)
    split = load_split(
        data / "parczech_supervisions_dev.jsonl.gz", data / "parczech_recordings_dev.jsonl.gz",
        model.text.tokenizer, cfg, with_audio=True,
    )  # fmt: skip
    return model, cfg, split, tmp_path


def test_latency_inf_is_the_offline_decode(model_and_data):
    model, cfg, split, _ = model_and_data
    offline = predict(model, split, cfg, CPU, 0)
    streamed = stream_split(model, split, cfg, math.inf, CPU, 0)
    assert streamed.predictions.punct_hyp == offline.punct_hyp
    assert streamed.predictions.case_hyp == offline.case_hyp
    assert streamed.model_inputs == len(split) and streamed.final_words == streamed.words
    row = latency_row(streamed, math.inf)
    punct, case = offline.scores()
    assert row["punct_macro_f1"] == pytest.approx(100 * punct.macro_f1)
    assert row["cap_f1"] == pytest.approx(100 * case.per_class["cap"]["f1"])
    assert row["final_share"] == 1.0


def test_a_stream_reads_nothing_after_a_words_boundary(model_and_data):
    """Every word streamed at 0.3 s gets the labels that the model gives it on a recording that ends at the word's
    boundary, holding the words ended by then; and some of them differ from offline, so the cut matters."""
    model, cfg, split, tmp_path = model_and_data
    streamed = stream_split(model, split, cfg, 0.3, CPU, 0)
    offline = predict(model, split, cfg, CPU, 0)
    rec = split.recordings["rec"]
    audio = rec.load_audio()[0]
    differs = 0
    for s, seg in enumerate(split.segments[:2]):
        for cut in stream_cuts(seg, 0.3):
            end = seg.start + cut.segment.duration
            wav = tmp_path / f"ends_{s}_{cut.emit[0]}.wav"
            sf.write(wav, audio[: int(round(end * rec.sampling_rate))], rec.sampling_rate)
            ended = Recording.from_file(wav, recording_id="rec")
            known = [i for i, e in enumerate(seg.word_ends) if e <= cut.segment.duration + 1e-6]
            heard = seg._replace(
                duration=ended.duration - seg.start,
                words=[seg.words[i] for i in known],
                punct=[seg.punct[i] for i in known],
                case=[seg.case[i] for i in known],
                word_starts=[seg.word_starts[i] for i in known],
                word_ends=[seg.word_ends[i] for i in known],
            )
            alone = predict(model, ItnDataset([heard], RecordingSet.from_recordings([ended]), model.text.tokenizer,
                                              cfg, with_audio=True), cfg, CPU, 0)  # fmt: skip
            for i in cut.emit:
                assert streamed.predictions.punct_hyp[s][i] == alone.punct_hyp[0][i], (seg.id, i)
                assert streamed.predictions.case_hyp[s][i] == alone.case_hyp[0][i], (seg.id, i)
    for s in range(len(split)):
        differs += sum(a != b for a, b in zip(streamed.predictions.punct_hyp[s], offline.punct_hyp[s]))
    assert differs > 0
    assert 0 < streamed.final_words < streamed.words
    assert streamed.waits.min() >= 0 and np.median(streamed.waits) >= 0.3 - 1e-6


def test_cut_segment_keeps_the_recording_and_start():
    seg = _segment([0.45, 0.9, 1.32])
    cut = cut_segment(seg, 1.0)
    assert (cut.recording_id, cut.start, cut.duration, cut.words) == ("rec", 10.0, 1.0, ["w0", "w1"])
    assert cut.punct == [0, 0] and cut.word_starts == pytest.approx([0.15, 0.6])
