"""Live captions measured on whole speeches (benchmarks.itn_streaming.speeches): speeches read from stage 3's alignment
table (turns of one speaker, insertions and deletions counted, the audio cut between speakers), each streamed by
exactly what punctuate_itn prints, and scored on the words aligned to an official word."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import soundfile as sf

from benchmarks.itn_streaming.speeches import LiveScore, Speech, read_speeches, stream_speech
from punct.align.dataset import ALIGNMENT_COLUMNS
from punct.bin import punctuate_itn
from punct.inference.itn_stream import ItnWord, SegmentRule
from punct.inference.streaming import StreamStats
from punct.labels import CASE, PUNCT9, TimedWord
from punct.models.cross_attention.data import read_segments
from tests.helpers.cross_attention import random_live_model

RATE = 16000
SPEAKERS = ["A", "A", "B", "A"]  # of the tiny corpus' four segments (0.1 s between them)


def alignment_rows(segments) -> list[list[str]]:
    """The segments' words as stage 3's table, speakers by SPEAKERS; after segment 0 an inserted word, in
    segment 1 a deleted word followed by a comma, in segment 3 a misrecognised word; at the end speaker C's turn of
    one word the recogniser missed."""
    rows, idx = [], 0
    for k, seg in enumerate(segments):
        for i, (word, p, c) in enumerate(zip(seg.words, seg.punct, seg.case)):
            start, end = seg.start + seg.word_starts[i], seg.start + seg.word_ends[i]
            rec = "kocour" if (k, i) == (3, 2) else word
            rows.append([idx, k, rec, word, SPEAKERS[k], f"{start:.3f}", f"{end:.3f}", p, c, int(rec != word), k])
            idx += 1
            if (k, i) == (1, 1):
                rows.append([idx, k, "", "taky", "A", "", "", ",", "blank", 4, -1])
                idx += 1
        if k == 0:
            end = seg.start + seg.word_ends[-1]
            rows.append([-1, k, "navic", "", "", f"{end + 0.01:.3f}", f"{end + 0.05:.3f}", "blank", "blank", 5, -1])
    rows.append([idx, len(segments), "", "konec", "C", "", "", ".", "cap", 5, -1])  # a turn nothing was heard of
    return [[str(x) for x in r] for r in rows]


def write_table(path, rows, header=ALIGNMENT_COLUMNS):
    path.write_text("\n".join("\t".join(r) for r in [list(header), *rows]) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def speeches(tmp_path_factory):
    """A random multimodal model (first_word exclude), the tiny corpus' recording and its alignment table."""
    root = tmp_path_factory.mktemp("itn_speeches")
    model, cfg, data = random_live_model(root, num_segments=len(SPEAKERS))
    segments = [s._replace(punct=[PUNCT9.classes[x] for x in s.punct], case=[CASE.classes[x] for x in s.case])
                for s in read_segments(data / "parczech_supervisions_dev.jsonl.gz")]  # fmt: skip
    table = write_table(root / "rec.tsv", alignment_rows(segments))
    audio, _ = sf.read(root / "corpus" / "rec.wav", dtype="float32")
    return model, cfg, segments, table, audio, root


def test_speeches_are_turns_of_one_speaker_with_their_insertions_and_deletions(speeches, caplog):
    _, _, segments, table, _, _ = speeches
    a = read_speeches(table, {"A"}, margin=0.5)
    assert [(s.recording_id, s.speaker) for s in a] == [("rec", "A"), ("rec", "A")]
    first, second = a
    words = segments[0].words + ["navic"] + segments[1].words
    assert [t.word for t in first.tokens] == words
    assert first.punct[len(segments[0].words)] is None  # the insertion: no reference
    assert first.punct[: len(segments[0].words)] == tuple(segments[0].punct)
    assert (first.deleted, first.deleted_marks) == (1, 1)
    # from the recording's start (the first word starts at 0) to the middle of the 0.1 s pause before B's turn
    b_start = segments[2].start + segments[2].word_starts[0]
    a_end = segments[1].start + segments[1].word_ends[-1]
    assert first.start == 0.0 and first.end == pytest.approx((a_end + b_start) / 2, abs=1e-3)
    assert first.tokens[0].start == pytest.approx(segments[0].word_starts[0])  # times from the speech's start
    assert [t.word for t in second.tokens][2] == "kocour" and second.punct[2] == segments[3].punct[2]
    last_end = segments[3].start + segments[3].word_ends[-1]
    assert second.end == pytest.approx(last_end + 0.5, abs=1e-3)  # nothing after it: the margin
    assert [s.speaker for s in read_speeches(table, {"B"})] == ["B"]
    assert read_speeches(table, {"D"}) == [] and not caplog.records
    assert read_speeches(table, {"C"}) == []  # nothing to stream: left out, and said so
    assert "1 turn(s) of held-out speakers with no recognised word left out" in caplog.text


def test_a_bad_table_is_an_error_naming_its_file_and_line(speeches, tmp_path):
    _, _, segments, _, _, _ = speeches
    rows = alignment_rows(segments)
    with pytest.raises(ValueError, match=r"bad_header.tsv:1: not an alignment table"):
        read_speeches(write_table(tmp_path / "bad_header.tsv", rows, ALIGNMENT_COLUMNS[:-1]), {"A"})
    rows[3][7] = "%"
    with pytest.raises(ValueError, match=r"bad_mark.tsv:5: unknown mark '%'"):
        read_speeches(write_table(tmp_path / "bad_mark.tsv", rows), {"A"})
    rows[3][7], rows[4][6] = "blank", "x"
    with pytest.raises(ValueError, match=r"bad_time.tsv:6: times"):
        read_speeches(write_table(tmp_path / "bad_time.tsv", rows), {"A"})


@pytest.mark.parametrize("latency", [math.inf, 0.3])
def test_the_measured_stream_is_what_punctuate_itn_prints(speeches, latency):
    """Each speech's audio and words through punctuate_itn (a wav file and a CTM) give the labels the measurement
    scores; the tiny corpus' pauses are all 0.1 s, so segments are cut at --max-segment (1.6 s: three words)."""
    model, cfg, _, table, audio, root = speeches
    rule = SegmentRule(pause_split=1.0, max_segment=1.6)
    for speech in read_speeches(table, {"A"}):
        samples = audio[int(round(speech.start * RATE)) : int(round(speech.end * RATE))]
        words, stats, segments = stream_speech(model, cfg, speech, samples, latency, rule)
        wav, ctm, out = (root / f"{speech.id}.{ext}" for ext in ("wav", "ctm", "jsonl"))
        sf.write(wav, samples, RATE)
        ctm.write_text("".join(f"s 1 {t.start:.3f} {t.end - t.start:.3f} {t.word}\n" for t in speech.tokens))
        argv = ["--model", str(root / "mm.pt"), "--wav", str(wav), "--ctm", str(ctm), "--utt-id", "s"]
        assert punctuate_itn.main([*argv, "--latency", str(latency), "--max-segment", "1.6", "--out", str(out)]) == 0
        printed = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
        assert [(r["word"], r["label"], r["case"], r["final"]) for r in printed] == [
            (w.word, w.label, w.case, w.final) for w in words
        ]
        assert segments > 1 and sum(stats.chunk_seconds) == pytest.approx(len(samples) / RATE)
        assert all(w.final for w in words) == math.isinf(latency)
        assert len({w.label for w in words}) > 1 and len({w.case for w in words}) > 1  # a comparison that can fail


def word(label: str, case: str, end: float = 1.0, emitted_at: float = 2.0, final: bool = True) -> ItnWord:
    return ItnWord(0, "w", end - 0.3, end, label, case, emitted_at, final, False)


def test_the_score_counts_insertions_and_deletions_and_scores_the_aligned_words():
    speech = Speech("rec", "A", 0.0, 5.0, tuple(TimedWord("w", 0, 1) for _ in range(4)),
                    ("blank", ",", None, "."), ("cap", "blank", None, "blank"), deleted=2, deleted_marks=1)  # fmt: skip
    stats = StreamStats()
    stats.add(5.0, 0.5, 0.25)
    live = LiveScore()
    hyps = [word("blank", "cap"), word(",", "blank", final=False), word(".", "cap"), word(",", "blank", 3.0, 3.5)]
    live.add(speech, hyps, stats, segments=2)
    row = live.row(1.0, SegmentRule(0.5))
    assert (row["words"], row["streamed_words"], row["inserted_words"]) == (3, 4, 1)
    assert (row["deleted_words"], row["deleted_marks"], row["segments"]) == (2, 1, 2)
    assert row["punct_overall_f1"] == pytest.approx(50.0)  # ',' right, '.' called ','
    assert row["cap_f1"] == pytest.approx(100.0)  # the insertion's capital is not scored
    assert (
        row["final_share"] == 0.75
        and row["wait_median"] == pytest.approx(1.0)
        and (row["rtf"], row["rtf_cpu"]) == (0.1, 0.05)
    )
    assert (row["latency"], row["pause_split"]) == (1.0, 0.5)
    assert np.isfinite(row["punct_macro_f1"])
