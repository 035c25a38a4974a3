import pytest

from punct.corpora.parczech_vertical import (
    SpeakerInfo,
    VerticalToken,
    find_recordings,
    read_speakers,
    read_vertical,
    write_speakers,
    write_vertical,
)
from punct.labels import CAP, PUNCT9

BLANK = PUNCT9.none  # "no mark" in the punct9 and case sets

DOC = "ps2013-016-01-000-000"
VERT = (
    "<doc id='x'>\n"
    f"Usnesení\t{DOC}.u1.p1.s1.w1\tJanNovak.1970\n"
    f"bylo\t{DOC}.u1.p1.s1.w2\tJanNovak.1970\n"
    f"doručeno\t{DOC}.u1.p1.s1.w3\tJanNovak.1970\n"
    f".\t{DOC}.u1.p1.s1.w4\tJanNovak.1970\n"
    "\n"
    f"Nyní\t{DOC}.u2.p1.s1.w1\tEvaMala.1980\n"
    "se\t{doc}.u2.p1.s1.w2\tEvaMala.1980\n".format(doc=DOC)
    + "?\n"
    + f"ano\t{DOC}.u2.p1.s2.w1\tEvaMala.1980\n"
)


def test_read_vertical_words_sentences_speakers(tmp_path):
    p = tmp_path / "2017041211181132.mp3.vert"
    p.write_text(VERT, encoding="utf-8")
    v = read_vertical(p)
    assert v.recording_id == "2017041211181132"
    assert v.skipped_lines == 2
    assert len(v.tokens) == 8
    assert v.tokens[6].speaker == "EvaMala.1980" and v.tokens[6].line == 9  # the bare "?" line inherits
    words = v.words()
    assert [w.word for w in words] == ["Usnesení", "bylo", "doručeno", "Nyní", "se", "ano"]
    assert [w.punct for w in words] == [BLANK, BLANK, ".", BLANK, "?", BLANK]
    assert [w.case for w in words] == [CAP, BLANK, BLANK, CAP, BLANK, BLANK]
    assert [w.sentence_idx for w in words] == [0, 0, 0, 1, 1, 2]
    assert words[4].word_id == f"{DOC}.u2.p1.s1.w2"
    assert v.speakers == ["EvaMala.1980", "JanNovak.1970"]


@pytest.mark.parametrize(
    "line, msg",
    [
        ("slovo\tonlyid\n", "needs 3"),
        ("slovo\ta.b\tspk\textra\n", "expected 3"),
        ("slovo\tnodot\tspk\n", "no '.'"),
        (" \tx.w1\tspk\n", "empty token"),
    ],
)
def test_malformed_lines_name_file_and_line(tmp_path, line, msg):
    p = tmp_path / "bad.vert"
    p.write_text(f"a\t{DOC}.u1.p1.s1.w1\tS\n" + line, encoding="utf-8")
    with pytest.raises(ValueError, match=rf"bad.vert:2: .*{msg}"):
        read_vertical(p)


def test_punct_before_any_word_is_error(tmp_path):
    p = tmp_path / "bad.vert"
    p.write_text(".\n", encoding="utf-8")
    with pytest.raises(ValueError, match="bad.vert:1:"):
        read_vertical(p)


def test_write_read_round_trip_and_find(tmp_path):
    toks = [
        VerticalToken("Ahoj", "d.u1.p1.s1.w1", "A.1", "d.u1.p1.s1", 1),
        VerticalToken(",", "d.u1.p1.s1.w2", "A.1", "d.u1.p1.s1", 2),
    ]
    d = tmp_path / "2013ps" / "audio" / "2014" / "02" / "18"
    d.mkdir(parents=True)
    write_vertical(d / "2014021816581712.vert", toks)
    (d / "2014021816581712.wav").write_bytes(b"")
    (d / "1111111111111111.wav").write_bytes(b"")
    v = read_vertical(d / "2014021816581712.vert")
    assert [(t.token, t.word_id, t.speaker, t.sentence) for t in v.tokens] == [t[:4] for t in toks]
    found = find_recordings(tmp_path)
    assert list(found) == ["2014021816581712"]
    assert found["2014021816581712"]["audio"].suffix == ".wav"


def test_speakers(tmp_path):
    p = tmp_path / "spk.tsv"
    write_speakers(p, [SpeakerInfo("A.1", "M"), SpeakerInfo("B.2", "F")])
    s = read_speakers(p)
    assert s["B.2"].gender == "F" and len(s) == 2
    p.write_text("id\tname\tgender\nA\tx\tM\nA\ty\tF\n", encoding="utf-8")
    with pytest.raises(ValueError, match="spk.tsv:3: duplicate"):
        read_speakers(p)
    p.write_text("id\tname\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"spk.tsv:1: .*gender"):
        read_speakers(p)
    p.write_text("id\tgender\nA\n", encoding="utf-8")
    with pytest.raises(ValueError, match="spk.tsv:2: 1 columns"):
        read_speakers(p)
