"""AM training data of egs/parczech: utterances cut from long recordings (punct.am_data.long_audio)."""

import numpy as np
import pytest
import soundfile as sf
from lhotse import load_manifest

from punct.am_data.long_audio import AmDataConfig, choose_dev_recordings, read_words_checked, split_utterances
from punct.bin import prepare_am_data, prepare_parczech
from punct.corpora.parczech_vertical import SpeakerInfo, VerticalToken, write_speakers, write_vertical
from punct.labels import TimedWord, write_recognised_words

# (speaker, official text, spoken words, pause after the turn in seconds)
TURNS_A = [
    (
        "JanNovak.1970",
        "Dobrý den , kolegové . Dnes projednáme tisk 912 .",
        "dobrý den kolegové | dnes projednáme tisk devět set dvanáct",
    ),
    ("EvaMala.1980", "Děkuji za slovo .", "děkuji za slovo"),
]
TURNS_B = [
    ("EvaMala.1980", "Vláda předkládá návrh zákona o rozpočtu .", "vláda předkládá návrh zákona o rozpočtu"),
]
TURNS_C = [
    ("JanNovak.1970", "Prosím , máte slovo .", "prosím máte slovo"),
]


def write_recording(root, rec_id, turns, doc):
    """A recording whose words last 0.4 s with 0.05 s gaps; '|' in the spoken text is a 0.5 s pause,
    a turn change a 1 s pause.  Returns the spoken TimedWords."""
    folder = root / "2013ps" / "audio" / "2014" / "02" / "18"
    folder.mkdir(parents=True, exist_ok=True)
    tokens, timed, t, s = [], [], 0.5, 1
    for u, (speaker, text, said) in enumerate(turns, start=1):
        for w, tok in enumerate(text.split(), start=1):
            wid = f"{doc}.u{u}.p1.s{s}.w{w}"
            tokens.append(VerticalToken(tok, wid, speaker, wid.rsplit(".", 1)[0], 0))
        s += 1
        for word in said.split():
            if word == "|":
                t += 0.45
                continue
            timed.append(TimedWord(word, round(t, 3), round(t + 0.4, 3)))
            t += 0.45
        t += 1.0
    write_vertical(folder / f"{rec_id}.mp3.vert", tokens)
    sf.write(folder / f"{rec_id}.wav", np.zeros(int((t + 0.5) * 16000), np.float32), 16000)
    return timed


@pytest.fixture
def corpus(tmp_path):
    root, words = tmp_path / "corpus", tmp_path / "synth"
    spoken = {}
    for rec_id, turns, doc in (
        ("2014021816581712", TURNS_A, "ps-a"),
        ("2014021817121726", TURNS_B, "ps-b"),
        ("2014021817261740", TURNS_C, "ps-c"),
    ):
        spoken[rec_id] = write_recording(root, rec_id, turns, doc)
        write_recognised_words(words / f"{rec_id}.words.tsv", spoken[rec_id])
    write_speakers(root / "speakers.tsv", [SpeakerInfo("JanNovak.1970", "M"), SpeakerInfo("EvaMala.1980", "F")])
    prepare_parczech.main([str(root), str(tmp_path / "manifests")])
    return tmp_path, spoken


def test_utterances_split_at_pauses_and_speakers(corpus):
    tmp_path, spoken = corpus
    out = tmp_path / "am"
    prepare_am_data.main(
        [
            "--prefix",
            "parczech",
            "--manifest-dir",
            str(tmp_path / "manifests"),
            "--words-dir",
            str(tmp_path / "synth"),
            "--out-dir",
            str(out),
            "--seed",
            "3",
        ]
    )
    sups = {}
    for split in ("train", "dev"):
        recs = load_manifest(out / f"parczech_recordings_{split}.jsonl.gz")
        split_sups = list(load_manifest(out / f"parczech_supervisions_{split}.jsonl.gz"))
        assert {s.recording_id for s in split_sups} == {r.id for r in recs}
        sups[split] = split_sups
    dev_recs = {s.recording_id for s in sups["dev"]}
    assert len(dev_recs) == 1 and not dev_recs & {s.recording_id for s in sups["train"]}
    by_id = {s.id: s for split in sups.values() for s in split}
    a = [by_id[k] for k in sorted(by_id) if k.startswith("2014021816581712_")]
    # the 0.5 s pause and the turn change split recording A into three utterances
    assert [s.custom["words"] for s in a] == [
        ["dobrý", "den", "kolegové"],
        ["dnes", "projednáme", "tisk", "devět", "set", "dvanáct"],
        ["děkuji", "za", "slovo"],
    ]
    assert [s.custom["speaker"] for s in a] == ["JanNovak.1970", "JanNovak.1970", "EvaMala.1980"]
    # CMVN convention: the supervision speaker is the recording
    assert all(s.speaker == "2014021816581712" for s in a)
    words = spoken["2014021816581712"]
    # pauses of >= 0.5 s between utterances leave room for the full 0.15 s margin
    assert a[0].start == pytest.approx(words[0].start - 0.15, abs=1e-3)
    assert a[0].end == pytest.approx(words[2].end + 0.15, abs=1e-3)
    assert a[1].start == pytest.approx(words[3].start - 0.15, abs=1e-3)
    for x, y in zip(a, a[1:]):
        assert x.end <= y.start


def test_long_runs_split_at_the_longest_pause():
    words = [TimedWord(f"w{i}", i * 1.0, i * 1.0 + 0.8) for i in range(10)]
    # a slightly longer pause (0.25 s, below min_pause) before w6
    words = words[:6] + [w.shifted(0.05) for w in words[6:]]
    utts = split_utterances(words, ["s"] * 10, AmDataConfig(max_duration=7.0))
    assert [[w.word for w in u] for u, _ in utts] == [[f"w{i}" for i in range(6)], [f"w{i}" for i in range(6, 10)]]
    assert all(u[-1].end - u[0].start <= 7.0 for u, _ in utts)


def test_bad_words_files_name_file_and_line(tmp_path):
    path = tmp_path / "x.words.tsv"
    path.write_text("a\t0.0\t0.5\nb\t1.0\t1.5\nc\t0.7\t0.9\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"x\.words\.tsv:3: .*time order"):
        read_words_checked(path)
    path.write_text("a\t0.0\t0.5\n\nb\t1.0\t9.5\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"x\.words\.tsv:3: .*after the end"):
        read_words_checked(path, duration=5.0)
    path.write_text("a\t0.0\t0.5\nb 1.0 1.5\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"x\.words\.tsv:2:"):
        read_words_checked(path)


def test_dev_recordings_need_training_recordings():
    assert choose_dev_recordings(["a", "b", "c"], 1, seed=1) == choose_dev_recordings(["c", "b", "a"], 1, seed=1)
    with pytest.raises(ValueError, match="nothing left to train"):
        choose_dev_recordings(["a"], 1, seed=1)


def test_missing_words_folder_is_an_error(corpus):
    tmp_path, _ = corpus
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no <recording id>.words.tsv"):
        prepare_am_data.main(
            [
                "--prefix",
                "parczech",
                "--manifest-dir",
                str(tmp_path / "manifests"),
                "--words-dir",
                str(tmp_path / "empty"),
                "--out-dir",
                str(tmp_path / "am"),
            ]
        )
