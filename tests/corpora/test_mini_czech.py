import dataclasses
import hashlib
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

from punct.corpora.mini_czech import (
    SCALED_HELD_OUT_SPEAKERS,
    SITTING_AUDIO_SECONDS,
    SIZES,
    CzechMiniConfig,
    build_czech_mini_corpus,
    clean_fortune,
    config_for_size,
    draw_speakers,
    fortune_order,
    has_label,
    make_utterance,
    number_words,
    spoken_form,
    tokenize,
    word_starts,
)
from punct.corpora.parczech_vertical import find_recordings, read_speakers, read_vertical
from punct.synthesis.build_record import audio_digest
from punct.synthesis.prosody import resolve_prosody

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
        "Řekl",
        ":",
        "„",
        "Ano",
        "…",
        "“",
        "(",
        "str",
        ".",
        "72",
        ")",
        "5",
        "%",
        "i",
        "3",
        "/",
        "4",
        ".",
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
    counts = {
        k: 0
        for k in (
            "number_phrases",
            "fillers",
            "unsaid_record_words",
            "edited_words",
            "repeated_words",
            "digits_or_symbols",
        )
    }
    text = "Když jde všechno dobře, v nejbližších chvílích se nutně něco stane. Platí to v 90 % případů."
    utt = make_utterance(text, np.random.default_rng(3), cfg, ["slovník", "výbor"], counts)
    assert counts["number_phrases"] == 1 and counts["fillers"] > 0 and counts["edited_words"] > 0
    assert "90" in utt.tokens and "devadesát" in utt.spoken and "90" not in utt.spoken
    assert len(utt.spans) == len(utt.spoken)
    assert [utt.synth_text[a:b] for a, b in utt.spans] == utt.spoken
    assert utt.sentence[-1] == 1 and utt.sentence[0] == 0
    # with all rates at zero the record's words are exactly what is said (no digits in the text)
    clean = make_utterance(
        "Když jde všechno dobře, nic se nestane.",
        np.random.default_rng(0),
        dataclasses.replace(cfg, filler_rate=0, repeat_rate=0, edit_rate=0, insert_rate=0, number_rate=0),
        ["x"],
        counts,
    )
    assert clean.spoken == ["když", "jde", "všechno", "dobře", "nic", "se", "nestane"]
    assert clean.synth_text == "když jde všechno dobře, nic se nestane."


def test_small_size_is_bigger_and_more_varied_than_mini():
    small, mini = config_for_size("small"), config_for_size("mini")
    assert "small" in SIZES and small.size == "small" and config_for_size("small", seed=7).seed == 7
    assert small.num_sittings * small.sitting_seconds >= 3 * mini.num_sittings * mini.sitting_seconds
    assert small.num_speakers > mini.num_speakers
    assert set(mini.male_variants) < set(small.male_variants) and set(mini.female_variants) < set(small.female_variants)
    assert small.rate[1] - small.rate[0] > mini.rate[1] - mini.rate[0] and small.intonation[0] < small.intonation[1]
    assert small.rare_mark_weight > 1 and set(small.rare_marks) <= {"!", "?", ";", '"', ":", "-"}
    with pytest.raises(ValueError, match="small"):
        config_for_size("huge")


def test_named_sizes_unchanged_by_the_hours_size():
    """tiny, mini and small as before the <H>h size (digests of their configs at 96bd882): built corpora stay valid."""
    digests = {}
    for size in sorted(SIZES):
        for prosody in ("marks", "natural"):
            text = json.dumps(dataclasses.asdict(config_for_size(size, prosody=prosody)), sort_keys=True)
            digests[size, prosody] = hashlib.sha256(text.encode()).hexdigest()[:16]
    assert digests == {
        ("mini", "marks"): "45f5a7b2ac5a9391",
        ("mini", "natural"): "f5e197684574645f",
        ("small", "marks"): "271c402d661127a2",
        ("small", "natural"): "9e305a997a75ef40",
        ("tiny", "marks"): "89bb609b9310982a",
        ("tiny", "natural"): "c1d76598a1f18002",
    }


@pytest.mark.parametrize(("size", "train_speakers"), [("1h", 8), ("4h", 31), ("0.01h", 1)])
def test_hours_size_is_small_with_training_speakers_for_the_hours(size, train_speakers):
    cfg, small = config_for_size(size, seed=3), config_for_size("small", seed=3)
    assert cfg.size == size and cfg.num_sittings == cfg.num_speakers  # a sitting of audio per speaker, as small's
    assert dataclasses.replace(cfg, size="small", num_sittings=56, num_speakers=56) == small  # voices, rare marks
    # dev and test: the same few speakers at every size (stage 3's counts), the rest train
    assert cfg.num_speakers - 2 * SCALED_HELD_OUT_SPEAKERS == train_speakers


def test_hours_size_training_audio_grows_with_the_hours_and_held_out_does_not():
    def train_hours(size: str) -> float:
        return (config_for_size(size).num_speakers - 2 * SCALED_HELD_OUT_SPEAKERS) * SITTING_AUDIO_SECONDS / 3600

    for hours in (1, 2, 4, 8):
        assert abs(train_hours(f"{hours}h") - hours) <= SITTING_AUDIO_SECONDS / 2 / 3600  # the nearest speaker count
    assert 0.25 <= SCALED_HELD_OUT_SPEAKERS * SITTING_AUDIO_SECONDS / 3600 <= 0.5  # each of dev and test
    for size in ("0h", "1 h", "h", "-1h"):
        with pytest.raises(ValueError):
            config_for_size(size)


def test_speakers_of_the_mini_corpus_unchanged_by_the_size_options():
    """The voice options of the small size must not move the draws of the corpora built before them."""
    rng = np.random.default_rng(42)
    rng.permutation(5784)  # the fortune order is drawn first
    speakers = draw_speakers(rng, 4, config_for_size("mini"))
    assert [(info.id, v.variant, v.pitch, v.rate, v.pitch_range) for info, v in speakers] == [
        ("JosefMarek.1979", "m5", 51, 162, 50),
        ("MartinKučera.1984", "m1", 63, 176, 50),
        ("ZdeněkSvoboda.1985", "m5", 68, 146, 50),
        ("MarieKučeraová.1965", "f4", 68, 203, 50),
    ]
    wide = draw_speakers(np.random.default_rng(1), 40, config_for_size("small"))
    assert len({v.variant for _, v in wide}) > 11 and len({v.pitch_range for _, v in wide}) > 1
    assert all(130 <= v.rate <= 230 and 15 <= v.pitch <= 85 for _, v in wide)


def test_has_label_reads_the_labels_a_model_sees():
    assert has_label("Řekl „ano“ a odešel.", ['"'])  # a quote alone after a word is the ["] class
    assert not has_label("Řekl: „Ano.“", ['"'])  # beside another mark the quote is dropped
    assert has_label("Proč? Protože.", ["?"]) and not has_label("Proč, protože.", ["?", "!"])


def test_fortune_order_prefers_fortunes_with_rare_marks():
    fortunes = [f"Věta číslo {k} je tady{'!' if k % 10 == 0 else '.'}" for k in range(400)]  # 40 with "!"
    uniform = CzechMiniConfig(rare_marks=("!",), rare_mark_weight=1.0)
    # weight 1: exactly the permutation the mini corpus was built with
    assert np.array_equal(
        fortune_order(fortunes, uniform, np.random.default_rng(3)), np.random.default_rng(3).permutation(400)
    )
    weighted = dataclasses.replace(uniform, rare_mark_weight=5.0)
    order = fortune_order(fortunes, weighted, np.random.default_rng(3))
    assert sorted(order.tolist()) == list(range(400))  # every fortune once
    first = order[:100]
    # uniform: ~10 of the first 100 have "!"; weight 5: ~27 (36 % of the first draws, fewer as they run out)
    assert sum(k % 10 == 0 for k in first) >= 20
    assert sum(k % 10 == 0 for k in np.random.default_rng(3).permutation(400)[:100]) <= 15
    with pytest.raises(ValueError):
        fortune_order(fortunes, dataclasses.replace(uniform, rare_mark_weight=-1.0), np.random.default_rng(0))


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
    build = json.loads((tmp_path / "c" / "build.json").read_text())
    assert build["config"]["seed"] == 5
    # each recording's md5, condensed by audio_digest (espeak's hidden state differs in a second build in the
    # same process, so only the verticals are compared above)
    md5s = build["wav_md5"]
    assert len(md5s) == len(found) == 2
    for paths in found.values():
        name = str(paths["audio"].relative_to(tmp_path / "c"))
        assert md5s[name] == hashlib.md5(paths["audio"].read_bytes()).hexdigest()
    assert re.fullmatch(r"[0-9a-f]{12}", audio_digest(tmp_path / "c"))


@pytest.mark.skipif(not CACHE.parent.exists(), reason="no cache folder")
@pytest.mark.parametrize("prosody", ["none", "natural"])
def test_prosody_changes_the_speech_but_not_the_record(tmp_path, prosody):
    base = CzechMiniConfig(size="tiny", seed=5, num_sittings=1, sitting_seconds=60.0, num_speakers=2)
    other = dataclasses.replace(base, prosody=prosody, pauses=resolve_prosody(prosody, None))
    try:
        build_czech_mini_corpus(tmp_path / "marks", base, CACHE)
    except RuntimeError as e:  # no fortunes-cs available offline
        pytest.skip(str(e))
    build_czech_mini_corpus(tmp_path / prosody, other, CACHE)
    ((rec_id, paths),) = find_recordings(tmp_path / "marks").items()
    assert find_recordings(tmp_path / prosody)[rec_id]["vert"].read_bytes() == paths["vert"].read_bytes()

    def spoken(corpus: str) -> list[tuple[str, float, float]]:
        lines = (tmp_path / corpus / "synth" / f"{rec_id}.words.tsv").read_text(encoding="utf-8").splitlines()
        return [(w, float(a), float(b)) for w, a, b in (line.split("\t") for line in lines)]

    marks, changed = spoken("marks"), spoken(prosody)
    assert [w for w, _, _ in changed] == [w for w, _, _ in marks]  # the same words said
    gaps = lambda said: [a2 - b1 for (_, _, b1), (_, a2, _) in zip(said, said[1:])]  # noqa: E731
    # marks speak the commas as short pauses (21 of 209 gaps in 0.08-0.3 s); none removes them (7: stops, and the
    # gaps between fortunes remain)
    long_marks, long_changed = (sum(0.08 < g < 0.3 for g in gaps(s)) for s in (marks, changed))
    if prosody == "none":
        assert long_changed < long_marks / 2, (long_changed, long_marks)
    assert json.loads((tmp_path / prosody / "build.json").read_text())["config"]["prosody"] == prosody
