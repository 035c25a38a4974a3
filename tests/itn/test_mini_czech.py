import dataclasses
import json
import os
from pathlib import Path

import numpy as np
import pytest

from punct.corpora.mini_czech import (
    CzechMiniConfig,
    build_czech_mini_corpus,
    clean_fortune,
    make_utterance,
    number_words,
    spoken_form,
    tokenize,
    word_starts,
)
from punct.corpora.parczech_vertical import find_recordings, read_speakers, read_vertical

CACHE = Path(os.environ.get("PUNCT_CACHE", Path.home() / ".cache" / "punct"))


def test_number_words():
    assert number_words(0) == ["nula"]
    assert number_words(12) == ["dvanáct"]
    assert number_words(21) == ["dvacet", "jedna"]
    assert number_words(912) == ["devět", "set", "dvanáct"]
    assert number_words(1998) == ["tisíc", "devět", "set", "devadesát", "osm"]
    assert number_words(2004) == ["dva", "tisíce", "čtyři"]
    assert number_words(200) == ["dvě", "stě"] and number_words(300) == ["tři", "sta"]
    assert number_words(45000) == ["čtyřicet", "pět", "tisíc"]
    with pytest.raises(ValueError):
        number_words(10**6)


def test_tokenize_and_spoken_form():
    assert tokenize("Řekl: „Ano…“ (str. 72) 5 % i 3/4.") == [
        "Řekl", ":", "„", "Ano", "…", "“", "(", "str", ".", "72", ")", "5", "%", "i", "3", "/", "4", ".",
    ]
    assert spoken_form("Řekl") == ["řekl"] and spoken_form(",") == []
    assert spoken_form("%") == ["procent"] and spoken_form("72") == ["sedmdesát", "dva"]
    assert clean_fortune("Krátké.") is None
    assert clean_fortune("Co se může pokazit, to se také pokazí, a to hned.\n\t\t-- Murphy") == (
        "Co se může pokazit, to se také pokazí, a to hned."
    )
    assert clean_fortune("This has <html> tags and more words here ok") is None


def test_make_utterance_record_differs_from_speech():
    cfg = CzechMiniConfig(filler_rate=0.3, repeat_rate=0.2, edit_rate=0.2, insert_rate=0.2, number_rate=1.0)
    counts = {k: 0 for k in ("number_phrases", "fillers", "unsaid_record_words", "edited_words", "repeated_words",
                             "digits_or_symbols")}
    text = "Když jde všechno dobře, v nejbližších chvílích se nutně něco stane. Platí to v 90 % případů."
    utt = make_utterance(text, np.random.default_rng(3), cfg, ["slovník", "výbor"], counts)
    assert counts["number_phrases"] == 1 and counts["fillers"] > 0 and counts["edited_words"] > 0
    assert "90" in utt.tokens and "devadesát" in utt.spoken and "90" not in utt.spoken
    assert len(utt.spans) == len(utt.spoken)
    assert [utt.synth_text[a:b] for a, b in utt.spans] == utt.spoken
    assert utt.sentence[-1] == 1 and utt.sentence[0] == 0
    # with all rates at zero the record's words are exactly what is said (no digits in the text)
    clean = make_utterance("Když jde všechno dobře, nic se nestane.", np.random.default_rng(0),
                           dataclasses.replace(cfg, filler_rate=0, repeat_rate=0, edit_rate=0, insert_rate=0,
                                               number_rate=0), ["x"], counts)
    assert clean.spoken == ["když", "jde", "všechno", "dobře", "nic", "se", "nestane"]
    assert clean.synth_text == "když jde všechno dobře, nic se nestane."


class _E:
    def __init__(self, offset, length, start):
        self.offset, self.length, self.start = offset, length, start


def test_word_starts_interpolates_merged_events():
    spans = [(0, 2), (3, 9), (10, 15)]  # "za mrhání časem"
    starts, n = word_starts([_E(0, 9, 0.5), _E(10, 5, 1.5)], spans, 2.0)
    assert n == 1 and starts[0] == 0.5 and starts[2] == 1.5
    assert 0.5 < starts[1] < 1.5


@pytest.mark.skipif(not CACHE.parent.exists(), reason="no cache folder")
def test_build_small_corpus(tmp_path):
    cfg = CzechMiniConfig(size="tiny", seed=5, num_sittings=2, sitting_seconds=20.0, num_speakers=3)
    try:
        summary = build_czech_mini_corpus(tmp_path / "c", cfg, CACHE)
    except RuntimeError as e:  # no fortunes-cs available offline
        pytest.skip(str(e))
    found = find_recordings(tmp_path / "c")
    assert len(found) == 2 and summary["counts"]["fortunes"] > 0
    speakers = read_speakers(tmp_path / "c" / "speakers.tsv")
    assert len(speakers) == 3
    for rec_id, paths in found.items():
        assert len(rec_id) == 16 and rec_id.isdigit()
        v = read_vertical(paths["vert"])
        assert set(v.speakers) <= set(speakers)
        said = (tmp_path / "c" / "synth" / f"{rec_id}.words.tsv").read_text(encoding="utf-8").splitlines()
        times = [tuple(map(float, ln.split("\t")[1:])) for ln in said]
        assert all(a <= b for a, b in times)
        assert all(b1 <= a2 + 1e-6 for (_, b1), (a2, _) in zip(times, times[1:]))
    # deterministic: same seed -> same verticals and times
    build_czech_mini_corpus(tmp_path / "d", cfg, CACHE)
    for rec_id, paths in found.items():
        other = find_recordings(tmp_path / "d")[rec_id]
        assert paths["vert"].read_bytes() == other["vert"].read_bytes()
    assert json.loads((tmp_path / "c" / "build.json").read_text())["config"]["seed"] == 5
