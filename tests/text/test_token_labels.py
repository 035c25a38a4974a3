from punct.labels import CAP, CASE, PUNCT9
from punct.text.token_labels import ExtractionStats, extract_labels, label_counts, normalise_word

BLANK = PUNCT9.none  # "no mark" in the punct9 and case sets


def labels(text):
    return [(w.word, w.punct, w.case) for w in extract_labels(text.split())]


def test_classes_follow_thesis_table_3_5():
    assert PUNCT9.classes == (BLANK, ",", ".", "!", "?", ":", "-", '"', ";")
    assert CASE.classes == (BLANK, CAP)


def test_thesis_example_quotes_dropped_in_runs():
    # w0 w1 w2: „ w3 w4 w5, w6 w7.“  ->  w2 [:], w5 [,], w7 [.]
    got = labels("a b c : „ d e f , g h . “")
    assert [p for _, p, _ in got] == [BLANK, BLANK, ":", BLANK, BLANK, ",", BLANK, "."]


def test_lone_quote_is_a_class_and_attaches_to_previous_word():
    got = labels("řekl „ ano “ a")
    assert got == [("řekl", '"', BLANK), ("ano", '"', BLANK), ("a", BLANK, BLANK)]


def test_mapping_parentheses_ellipsis_dashes_and_removed_marks():
    got = labels("x ( y ) z … w – v ' u ...")
    assert [p for _, p, _ in got] == [",", ",", ".", "-", BLANK, "."]
    assert [w for w, _, _ in got] == ["x", "y", "z", "w", "v", "u"]


def test_several_marks_first_kept_and_counted():
    stats = ExtractionStats()
    got = extract_labels(["Co", "?", "!", "Nic", ",", ",", "ano"], stats)
    assert [w.punct for w in got] == ["?", ",", BLANK]
    assert stats.merged_marks == 2 and stats.words == 3 and stats.marks == 4


def test_leading_marks_dropped_symbols_and_numbers_are_words():
    stats = ExtractionStats()
    got = extract_labels(["„", "Tisk", "912", "/", "3", ".", "§", "5"], stats, numbers="keep")
    assert [w.word for w in got] == ["Tisk", "912", "/", "3", "§", "5"]
    assert got[3].punct == "." and got[3].token_index == 4
    assert stats.leading_marks == 1 and stats.spoken_numbers == 0


def test_numbers_and_symbols_are_spoken_mark_on_the_last_word():
    stats = ExtractionStats()
    got = extract_labels(["„", "Tisk", "912", "/", "3", ".", "§", "5"], stats)
    assert [w.word for w in got] == ["Tisk", "devět", "set", "dvanáct", "lomeno", "tři", "paragraf", "pět"]
    assert [w.punct for w in got] == [BLANK] * 5 + ["."] + [BLANK] * 2
    assert [w.token_index for w in got] == [1, 2, 2, 2, 3, 4, 6, 7]  # the words of "912" share its token
    assert [w.case for w in got] == [CAP] + [BLANK] * 7  # a spoken number has no case
    assert stats.spoken_numbers == 5 and stats.words == 8 and stats.unspeakable == 0


def test_numbers_czech_forms():
    got = labels("V roce 1998 , LC-10 a 737 stály 3,5 % .")
    assert [w for w, _, _ in got] == [
        "V",
        "roce",
        "tisíc",
        "devět",
        "set",
        "devadesát",
        "osm",
        "LC",
        "deset",
        "a",
        "sedm",
        "set",
        "třicet",
        "sedm",
        "stály",
        "tři",
        "celá",
        "pět",
        "procent",
    ]
    assert got[6][1] == "," and got[-1][1] == "."
    assert got[7] == ("LC", BLANK, CAP) and got[8] == ("deset", BLANK, BLANK)  # letters keep their case


def test_unspeakable_czech_tokens_are_kept_and_counted(caplog):
    stats = ExtractionStats()
    got = extract_labels(["Bod", "6.", "a", "©5", "."], stats)
    assert [w.word for w in got] == ["Bod", "6.", "a", "©5"]  # num2words has no Czech ordinals
    assert stats.unspeakable == 2 and stats.spoken_numbers == 0
    assert "cannot be said" in caplog.text and "'6.'" in caplog.text


def test_case_labels():
    got = labels("Usnesení ODS iPhone 6. země Česká")
    assert [c for _, _, c in got] == [CAP, CAP, BLANK, BLANK, BLANK, CAP]


def test_counts_and_normalise():
    p, c = label_counts(extract_labels(["A", "b", ",", "c", "."]))
    assert p[","] == 1 and p["."] == 1 and p[BLANK] == 1 and p["?"] == 0
    assert c[CAP] == 1 and c[BLANK] == 2
    assert normalise_word("Důchodů,") == "důchodů"
    assert normalise_word("Roku.") == "roku"
