import numpy as np
import pytest

from punct.align.segments import (
    AlignedWord,
    OfficialWord,
    SegmentConfig,
    SegmentCounts,
    align_recording,
    assign_split,
    build_segments,
    choose_heldout_speakers,
    dataset_statistics,
    format_statistics,
    split_long,
    zero_distance_runs,
)
from punct.labels import CAP, PUNCT9, TimedWord

BLANK = PUNCT9.none  # "no mark" in the punct9 and case sets


def row(i, word="slovo", start=None, dur=0.4, punct=BLANK, case=BLANK, spk="A", dist=0, rec=True):
    start = i * 0.5 if start is None else start
    return AlignedWord(i, 0, word.lower() if rec else None, word, spk, start, start + dur, punct, case, dist)


def test_align_recording_rows_and_runs():
    off_tokens = [
        ("Usnesení", BLANK, CAP),
        ("bylo", BLANK, BLANK),
        ("doručeno", ",", BLANK),
        ("6", ".", BLANK),
        ("Nyní", BLANK, CAP),
    ]
    off = [OfficialWord(w, p, c, f"d.u1.p1.s1.w{k}", "A", 0, k) for k, (w, p, c) in enumerate(off_tokens)]
    rec = [
        TimedWord(w, k * 0.5, k * 0.5 + 0.4)
        for k, w in enumerate(["usnesení", "bylo", "ehm", "doručeno", "šestého", "nyní"])
    ]
    rows = align_recording(rec, off)
    assert [(r.rec_word, r.word, r.distance) for r in rows] == [
        ("usnesení", "Usnesení", 0),
        ("bylo", "bylo", 0),
        ("ehm", None, 3),
        ("doručeno", "doručeno", 0),
        ("šestého", "6", 7),
        ("nyní", "Nyní", 0),
    ]
    assert rows[2].word_idx == -1 and rows[3].punct == "," and rows[5].start == pytest.approx(2.5)
    runs = zero_distance_runs(rows)
    assert [[r.word for r in run] for run in runs] == [["Usnesení", "bylo"], ["doručeno"], ["Nyní"]]


def test_split_assignment_and_heldout_choice():
    dev, test = {"D"}, {"T", "T2"}
    assert assign_split({"A", "B"}, dev, test) == "train"
    assert assign_split({"T"}, dev, test) == "test" and assign_split({"D"}, dev, test) == "dev"
    assert assign_split({"T", "T2"}, dev, test) is None and assign_split({"A", "D"}, dev, test) is None
    spk = [f"s{k}" for k in range(10)]
    d1, t1 = choose_heldout_speakers(spk, 2, 3, seed=1)
    assert (d1, t1) == choose_heldout_speakers(reversed(spk), 2, 3, seed=1)
    assert len(d1) == 2 and len(t1) == 3 and not set(d1) & set(t1)
    assert choose_heldout_speakers(spk, 2, 3, seed=2) != (d1, t1)
    with pytest.raises(ValueError):
        choose_heldout_speakers(spk, 6, 5, seed=1)


def test_split_long_binomial_seconds():
    cfg = SegmentConfig()
    words = [row(i, start=i * 0.5, dur=0.4) for i in range(200)]  # 100 s
    rng = np.random.default_rng(0)
    pieces = split_long(words, cfg, rng)
    assert sum(len(p) for p in pieces) == 200
    assert [w.word_idx for p in pieces for w in p] == list(range(200))
    assert pieces[-1][-1].end - pieces[-1][0].start <= 15.0
    durs = [p[-1].end - p[0].start for p in pieces[:-1]]
    assert max(durs) <= 9.0
    # the sampled prefixes follow Binomial(9, 0.6) seconds: mean about 5.4 - 0.5 word quantisation
    many = split_long([row(i, start=i * 0.5, dur=0.4) for i in range(20000)], cfg, np.random.default_rng(1))
    mean = np.mean([p[-1].end - p[0].start for p in many[:-1]])
    assert 4.6 < mean < 5.4
    assert split_long(words[:20], cfg, rng) == [words[:20]]


def test_build_segments_filters():
    cfg = SegmentConfig()
    rows = []
    # run 1: 8 words of speaker A with a comma -> kept (train)
    rows += [row(i, punct="," if i == 3 else BLANK) for i in range(8)]
    rows.append(row(8, dist=2))  # substitution ends the run
    # run 2: 8 words without punct, capital only on the first word -> dropped (d)
    rows += [row(i, start=10 + i * 0.5, case=CAP if i == 9 else BLANK) for i in range(9, 17)]
    rows.append(row(-1, word="ehm", dist=3)._replace(word=None))
    # run 3: 4 words -> too short (e)
    rows += [row(i, start=20 + i * 0.5, punct=".") for i in range(17, 21)]
    rows.append(row(21, rec=False, dist=5))
    # run 4: word with 1 char lasting 0.4 s (0.4 s/char > 0.25) cuts 10 words into 5 + 4
    rows += [row(i, start=30 + i * 0.5, punct=".", word="slovo" if i != 27 else "a") for i in range(22, 32)]
    rows.append(row(32, dist=1))
    # run 5: test speaker, 6 words with a capital inside -> test
    rows += [row(i, start=40 + i * 0.5, spk="T", case=CAP if i == 35 else BLANK) for i in range(33, 39)]
    counts = SegmentCounts()
    segs = build_segments("rec1", rows, set(), {"T"}, cfg, counts)
    assert [(s.split, [w.word_idx for w in s.words]) for s in segs] == [
        ("train", list(range(8))),
        ("train", list(range(22, 27))),
        ("test", list(range(33, 39))),
    ]
    assert counts.runs == 5 and counts.bad_char_duration_words == 1
    assert counts.no_punct_or_cap == 1 and counts.too_short == 2 and counts.kept == 3
    assert segs[0].id == "rec1_0" and segs[2].id == "rec1_2"
    d = segs[0].to_dict()
    assert d["start"] == 0.0 and d["punct"][3] == "," and d["starts"][1] == 0.5 and len(d["ends"]) == 8


def test_build_segments_deterministic_and_statistics():
    rows = [
        row(i, start=i * 0.5, punct="." if i % 7 == 6 else BLANK, case=CAP if i % 7 == 0 else BLANK) for i in range(300)
    ]
    a = build_segments("r", rows, set(), set(), SegmentConfig(seed=3))
    b = build_segments("r", rows, set(), set(), SegmentConfig(seed=3))
    c = build_segments("r", rows, set(), set(), SegmentConfig(seed=4))
    assert [s.to_dict() for s in a] == [s.to_dict() for s in b]
    assert [s.to_dict() for s in a] != [s.to_dict() for s in c]
    assert all(len(s.words) >= 5 and s.duration >= 1.5 for s in a)
    stats = dataset_statistics(a)
    assert stats["train"]["words"] == sum(len(s.words) for s in a) and "dev" not in stats
    table = format_statistics(stats)
    assert "| train |" in table and "[cap]" in table and "[;]" in table


def test_statistics_count_segments_containing_each_label():
    """``segments_with``: segments holding a label at least once (twice in one segment counts once)."""
    marks = {3: "?", 4: "?", 40: "?", 41: ",", 90: ";"}
    rows = [row(i, start=i * 0.5, punct=marks.get(i, "." if i % 7 == 6 else BLANK)) for i in range(120)]
    segs = build_segments("r", rows, set(), set(), SegmentConfig(seed=3))
    expected = {m: sum(any(w.punct == m for w in s.words) for s in segs) for m in ("?", ",", ";", "!")}
    assert 1 <= expected["?"] < 3 and expected[","] == 1 and expected["!"] == 0  # 3 words with "?", in 1-2 segments
    stats = dataset_statistics(segs)
    assert {m: stats["train"]["segments_with"][m] for m in expected} == expected
    # the last table: segments, then [,] [.] [!] [?] [:] [-] ["] [;] [cap]
    last_row = [c.strip() for c in format_statistics(stats).rstrip("\n").splitlines()[-1].split("|")[1:-1]]
    assert last_row[0] == "total" and last_row[1] == str(len(segs))
    assert last_row[2] == "1" and last_row[4] == "0" and last_row[5] == str(expected["?"])
    assert last_row[9] == str(expected[";"])
