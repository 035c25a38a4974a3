"""Stage 0 and stage 3 of egs/parczech on a hand-made two-recording corpus (no synthesis)."""

import json

import numpy as np
import pytest
import soundfile as sf
from lhotse import load_manifest

from punct.align.dataset import segment_text
from punct.bin import build_itn_segments, prepare_parczech
from punct.corpora.parczech_vertical import SpeakerInfo, VerticalToken, write_speakers, write_vertical
from punct.labels import TimedWord, read_recognised_words, write_recognised_words

TEXT_A = (
    "Dobrý den , vážené kolegyně , vážení kolegové . Dnes projednáme tisk 912 , který vám byl doručen "
    "6. března . Nyní se táži navrhovatelky , zda má zájem vystoupit . Prosím , paní poslankyně , máte slovo ."
)
SAID_A = (
    "dobrý den vážené kolegyně vážení kolegové dnes projednáme tisk devět set dvanáct který vám byl doručen "
    "šestého března ehm nyní se táži navrhovatelky zda má zájem vystoupit prosím paní poslankyně máte slovo"
)
TEXT_B = (
    "Děkuji za slovo , pane předsedající . Vláda předkládá návrh zákona o státním rozpočtu . "
    "Rozpočet počítá se schodkem , který je nižší než loni . Děkuji za pozornost ."
)
SAID_B = (
    "děkuji za slovo pane předsedající vláda předkládá návrh zákona o státním rozpočtu "
    "rozpočet počítá se schodkem který je nižší než loni děkuji za pozornost"
)


def write_recording(root, rec_id, text, said, speaker, doc):
    folder = root / "2013ps" / "audio" / "2014" / "02" / "18"
    folder.mkdir(parents=True, exist_ok=True)
    tokens, s, w = [], 1, 0
    for tok in text.split():
        w += 1
        wid = f"{doc}.u1.p1.s{s}.w{w}"
        tokens.append(VerticalToken(tok, wid, speaker, wid.rsplit(".", 1)[0], 0))
        if tok == ".":
            s, w = s + 1, 0
    write_vertical(folder / f"{rec_id}.mp3.vert", tokens)
    words = said.split()
    timed, t = [], 0.5
    for word in words:
        d = 0.07 * len(word)
        timed.append(TimedWord(word, t, t + d))
        t += d + 0.1
    sf.write(folder / f"{rec_id}.wav", np.zeros(int((t + 1) * 16000), np.float32), 16000)
    return timed


def test_prepare_and_build_segments(tmp_path):
    root = tmp_path / "corpus"
    rec_dir = tmp_path / "words"
    a = write_recording(root, "2014021816581712", TEXT_A, SAID_A, "JanNovak.1970", "ps2013-016-01-000-000")
    b = write_recording(root, "2014021817121726", TEXT_B, SAID_B, "EvaMala.1980", "ps2013-016-01-000-001")
    write_recognised_words(rec_dir / "2014021816581712.words.tsv", a)
    write_recognised_words(rec_dir / "2014021817121726.words.tsv", b)
    assert read_recognised_words(rec_dir / "2014021817121726.words.tsv")[0].word == "děkuji"
    write_speakers(root / "speakers.tsv", [SpeakerInfo("JanNovak.1970", "M"), SpeakerInfo("EvaMala.1980", "F")])

    man = tmp_path / "manifests"
    prepare_parczech.main([str(root), str(man)])
    sups = load_manifest(man / "parczech_supervisions_all.jsonl.gz")
    sup = sups["2014021816581712"]
    assert sup.custom["words"][:3] == ["Dobrý", "den", "vážené"] and sup.custom["punct"][1] == ","
    assert sup.custom["case"][0] == "cap" and sup.custom["sentence_idx"][-1] == 3
    assert (man / "parczech_speakers.tsv").exists()

    out = tmp_path / "segments"
    test_list = tmp_path / "test.txt"
    test_list.write_text("EvaMala.1980\n")
    common = [
        "--prefix",
        "parczech",
        "--manifest-dir",
        str(man),
        "--out-dir",
        str(out),
        "--test-speakers",
        str(test_list),
        "--nj",
        "2",
        "--min-train-segments",
        "1",
        "--min-dev-segments",
        "0",
    ]  # two recordings: no dev speaker
    for job in ("1", "2"):
        build_itn_segments.main(common + ["--recognised-dir", str(rec_dir), "--job", job])
    assert build_itn_segments.main(common + ["--merge"]) == 0

    table = (out / "align" / "2014021816581712.tsv").read_text(encoding="utf-8").splitlines()
    assert table[0].split("\t")[:4] == ["word_idx", "sentence_idx", "rec_word", "gold_word"]
    rows = [ln.split("\t") for ln in table[1:]]
    pairs = [r[2:4] for r in rows]
    # "912" is said as words (numbers: spoken): its words align with the recognised ones; "6." (a Czech ordinal,
    # which num2words cannot say) stays as written and matches nothing
    k = pairs.index(["devět", "devět"])
    assert pairs[k : k + 3] == [["devět", "devět"], ["set", "set"], ["dvanáct", "dvanáct"]]
    assert all(r[9] == "0" for r in rows[k : k + 3])
    assert any(r[3] == "6." and r[9] != "0" for r in rows)
    assert any(r[2] == "ehm" and r[3] == "" for r in rows)

    train = load_manifest(out / "parczech_supervisions_train.jsonl.gz")
    test = load_manifest(out / "parczech_supervisions_test.jsonl.gz")
    assert {s.speaker for s in train} == {"JanNovak.1970"} and {s.speaker for s in test} == {"EvaMala.1980"}
    for s in list(train) + list(test):
        n = len(s.custom["words"])
        assert n >= 5 and s.duration >= 1.5 and n == len(s.custom["punct"]) == len(s.custom["case"])
        assert len(s.alignment["word"]) == n and s.alignment["word"][0].start == pytest.approx(s.start)
        assert all(w == w.lower() for w in s.custom["words"])
    # words that differ between speech and record never enter a segment
    all_words = [w for s in train for w in s.custom["cased_words"]]
    assert "912" not in all_words and "6." not in all_words and "ehm" not in all_words
    assert "dvanáct" in all_words  # the spoken number is in the data now
    # the run after "912" / "6." starts at "který" / "března" without those words
    assert any(s.custom["cased_words"][0] in ("který", "března", "Nyní") for s in train)
    stats = json.loads((out / "stats.json").read_text())
    assert stats["splits"]["test"]["segments"] == len(test)
    assert stats["totals"]["official_words"] == sum(t not in {",", "."} for t in (TEXT_A + " " + TEXT_B).split()) + 2
    assert "| test |" in (out / "stats.md").read_text()

    # a re-run keeps finished parts; new recognised words (a re-recognition) rebuild them
    part = out / "parts" / "segments.1.jsonl"
    before = part.stat().st_mtime_ns
    build_itn_segments.main(common + ["--recognised-dir", str(rec_dir), "--job", "1"])
    assert part.stat().st_mtime_ns == before
    fewer = [TimedWord(w.word if k % 4 else "ehm", w.start, w.end) for k, w in enumerate(a)]
    write_recognised_words(rec_dir / "2014021816581712.words.tsv", fewer)
    for job in ("1", "2"):
        build_itn_segments.main(common + ["--recognised-dir", str(rec_dir), "--job", job])
    build_itn_segments.main(common + ["--merge"])
    rebuilt = json.loads((out / "stats.json").read_text())
    assert rebuilt["totals"]["exact_words"] < stats["totals"]["exact_words"]


def test_segment_text_and_bad_words_file(tmp_path):
    assert segment_text(["Nyní", "se", "ptám"], ["blank", ",", "?"]) == "Nyní se, ptám?"
    p = tmp_path / "x.words.tsv"
    p.write_text("slovo\t1.0\t1.5\nšpatně\tx\t2\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"x.words.tsv:2: "):
        read_recognised_words(p)


def test_segment_dict_round_trip_multi_speaker():
    from punct.align.build import segment_from_dict
    from punct.align.dataset import segment_to_supervision
    from punct.align.segments import AlignedWord, Segment

    words = [
        AlignedWord(
            k,
            0,
            "a",
            w,
            "A" if k < 3 else "B",
            1.0 + k,
            1.5 + k,
            "," if k == 2 else "blank",
            "cap" if k == 0 else "blank",
            0,
        )
        for k, w in enumerate(["Ano", "tak", "jo", "dobře", "ne"])
    ]
    seg = Segment("rec", 4, "train", words)
    back = segment_from_dict(json.loads(json.dumps(seg.to_dict())))
    assert back.id == "rec_4" and back.speakers == ["A", "B"] and back.start == 1.0 and back.end == 5.5
    sup = segment_to_supervision(back)
    assert sup.speaker == "A+B" and sup.text == "Ano tak jo, dobře ne" and sup.custom["words"][0] == "ano"
    assert [a.start for a in sup.alignment["word"]] == [1.0, 2.0, 3.0, 4.0, 5.0]


def test_prepare_skips_unreadable_audio(tmp_path):
    from punct.corpora.parczech import prepare_parczech as prepare

    root = tmp_path / "corpus"
    write_recording(root, "2014021816581712", TEXT_B, SAID_B, "EvaMala.1980", "ps2013-016-01-000-000")
    bad = root / "2013ps" / "audio" / "2014" / "02" / "18" / "2014021817121726"
    bad.with_suffix(".mp3").write_bytes(b"not audio at all")
    (bad.parent / "2014021817121726.vert").write_text("Ano\td.u1.p1.s1.w1\tX\n", encoding="utf-8")
    recs, sups, counts = prepare(root)
    assert counts["recordings"] == 1 and counts["unreadable_audio"] == 1
    assert list(recs.ids) == ["2014021816581712"] and len(sups) == 1
