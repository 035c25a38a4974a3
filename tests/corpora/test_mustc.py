"""The MuST-C reader on hand-made MuST-C v1/v2 folders (yaml, en and wav written here) and UniPunc json."""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from lhotse import load_manifest

from punct.corpora.mustc import format_summary, prepare_mustc, prepare_split, prepare_unipunc, read_unipunc_items
from punct.labels import WordLabels
from punct.text.normalize import NormalizeConfig


def supervision_words(sup):
    """``(words, punct)`` lists of a supervision, validated by :class:`WordLabels`."""
    labelled = WordLabels.from_supervision(sup)
    return list(labelled.words), list(labelled.punct)


SR = 16000
# (offset, duration, text) per talk; written to the yaml in the order given (not sorted).
TALKS: dict[str, dict[str, list[tuple[float, float, str]]]] = {
    "train": {
        "ted_11": [
            (4.0, 2.0, "And then, it stopped."),
            (0.5, 3.0, "Hello, everyone! How are you?"),
            (7.0, 1.5, "(Laughter) Great; thanks."),
        ],
        "ted_12": [(1.0, 2.0, "It's twenty-one: really.")],
    },
    "dev": {"ted_21": [(0.2, 1.0, "Is it you?"), (2.0, 1.5, "Yes, it is.")]},
    "tst-COMMON": {"ted_31": [(0.0, 2.0, "Good night.")]},
}
WAV_SECONDS = {"ted_11": 9.0, "ted_12": 4.0, "ted_21": 4.0, "ted_31": 3.0}


def write_wav(path: Path, seconds: float, seed: int = 0) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    audio = np.random.default_rng(seed).normal(0, 0.05, int(seconds * SR)).astype(np.float32)
    sf.write(path, audio, SR, subtype="PCM_16")


def yaml_line(wav: str, offset: float, duration: float, v2: bool = False) -> str:
    talk = wav.split("_")[1].split(".")[0]
    extra = ", rW: 5, uW: 0" if v2 else ""
    return f"- {{duration: {duration:.6f}, offset: {offset:.6f}{extra}, speaker_id: spk.{talk}, wav: {wav}}}"


def make_mustc(root: Path, talks=TALKS, v2: bool = False, wav_seconds=WAV_SECONDS) -> Path:
    """A MuST-C en-de release folder: data/<split>/{wav,txt}."""
    for split, by_talk in talks.items():
        txt = root / "data" / split / "txt"
        txt.mkdir(parents=True, exist_ok=True)
        yaml_lines, en_lines = [], []
        for k, (talk, segs) in enumerate(by_talk.items()):
            write_wav(root / "data" / split / "wav" / f"{talk}.wav", wav_seconds[talk], seed=k)
            for offset, duration, text in segs:
                yaml_lines.append(yaml_line(f"{talk}.wav", offset, duration, v2))
                en_lines.append(text)
        (txt / f"{split}.yaml").write_text("\n".join(yaml_lines) + "\n", encoding="utf-8")
        (txt / f"{split}.en").write_text("\n".join(en_lines) + "\n", encoding="utf-8")
        (txt / f"{split}.de").write_text("\n".join("x" for _ in en_lines) + "\n", encoding="utf-8")
    return root


def split_files(root: Path, split: str) -> tuple[Path, Path]:
    txt = root / "data" / split / "txt"
    return txt / f"{split}.yaml", txt / f"{split}.en"


@pytest.mark.parametrize("v2", [False, True])
def test_reads_v1_and_v2_and_writes_manifests(tmp_path, v2):
    root = make_mustc(tmp_path / "en-de", v2=v2)
    out = tmp_path / "manifests"
    manifests, stats = prepare_mustc(root, out)
    for split in ("train", "dev", "test"):
        for kind in ("recordings", "supervisions"):
            assert (out / f"mustc_{kind}_{split}.jsonl.gz").is_file()
    assert not list(out.glob(".*tmp*"))  # no temporary files left
    sups = load_manifest(out / "mustc_supervisions_train.jsonl.gz")
    by_id = {s.id: s for s in sups}
    # ids: index after sorting each talk's segments by offset.
    assert sorted(by_id) == ["ted_11_0", "ted_11_1", "ted_11_2", "ted_12_0"]
    first = by_id["ted_11_0"]
    assert first.start == pytest.approx(0.5) and first.duration == pytest.approx(3.0)
    assert first.text == "Hello, everyone! How are you?"
    assert first.speaker == "spk.11" and first.recording_id == "ted_11" and first.language == "English"
    assert supervision_words(first) == (["hello", "everyone", "how", "are", "you"], [",", ".", "NP", "NP", "?"])
    assert supervision_words(by_id["ted_11_2"]) == (["great", "thanks"], [".", "."])
    assert supervision_words(by_id["ted_12_0"]) == (["it's", "twenty", "one", "really"], ["NP", "NP", ",", "."])
    recs = load_manifest(out / "mustc_recordings_train.jsonl.gz")
    assert sorted(r.id for r in recs) == ["ted_11", "ted_12"]
    assert recs["ted_11"].duration == pytest.approx(9.0) and recs["ted_11"].sampling_rate == SR
    test_sups = load_manifest(out / "mustc_supervisions_test.jsonl.gz")
    assert [s.id for s in test_sups] == ["ted_31_0"]  # test = tst-COMMON
    assert stats["train"].segments == 4 and sum(stats["train"].labels.values()) == 15
    table = format_summary(stats)
    assert "train" in table and "test" in table and "skipped" in table


def test_label_mapping_config_reaches_the_supervisions(tmp_path):
    root = make_mustc(tmp_path / "en-de")
    manifests, _ = prepare_mustc(root, norm=NormalizeConfig(exclamation="NP", semicolon=","))
    sups = {s.id: s for s in manifests["train"]["supervisions"]}
    assert supervision_words(sups["ted_11_0"])[1] == [",", "NP", "NP", "NP", "?"]
    assert supervision_words(sups["ted_11_2"])[1] == [",", "."]


def test_supervision_words_rejects_bad_custom(tmp_path):
    root = make_mustc(tmp_path / "en-de")
    manifests, _ = prepare_mustc(root, splits=("test",))
    sup = next(iter(manifests["test"]["supervisions"]))
    with pytest.raises(ValueError, match="ted_31_0.*2 words but 1 labels"):
        supervision_words(sup.with_custom("punct", ["."]))
    with pytest.raises(ValueError, match="unknown labels"):
        supervision_words(sup.with_custom("punct", ["NP", "!"]))
    sup.custom = None
    with pytest.raises(ValueError, match="no custom"):
        supervision_words(sup)


# ------------------------------------------------------------------------------------------------
# Bad input


def test_line_count_mismatch_names_both_files(tmp_path):
    root = make_mustc(tmp_path / "en-de")
    yaml_path, en_path = split_files(root, "dev")
    en_path.write_text("Is it you?\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"dev\.yaml has 2 segments but .*dev\.en has 1 lines"):
        prepare_mustc(root, splits=("dev",))


def test_malformed_yaml_line_names_file_and_line(tmp_path):
    root = make_mustc(tmp_path / "en-de")
    yaml_path, _ = split_files(root, "dev")
    lines = yaml_path.read_text().splitlines()
    lines[1] = "- duration: 1.5, offset: 2.0"
    yaml_path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"dev\.yaml:2: malformed"):
        prepare_mustc(root, splits=("dev",))
    lines[1] = "- {duration: abc, offset: 2.0, speaker_id: spk.21, wav: ted_21.wav}"
    yaml_path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"dev\.yaml:2: offset/duration are not numbers"):
        prepare_mustc(root, splits=("dev",))
    lines[1] = "- {duration: 1.0, offset: 2.0, speaker_id: spk.21}"
    yaml_path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"dev\.yaml:2: segment line lacks \['wav'\]"):
        prepare_mustc(root, splits=("dev",))


def test_non_utf8_text_names_the_line(tmp_path):
    root = make_mustc(tmp_path / "en-de")
    _, en_path = split_files(root, "dev")
    en_path.write_bytes(b"Is it you?\nYes, it \xe9s.\n")
    with pytest.raises(ValueError, match=r"dev\.en:2: not UTF-8"):
        prepare_mustc(root, splits=("dev",))


def test_duplicate_segment_names_both_lines(tmp_path):
    talks = {"dev": {"ted_21": [(0.2, 1.0, "Is it you?"), (0.2, 1.0, "Is it you?")]}}
    root = make_mustc(tmp_path / "en-de", talks=talks)
    with pytest.raises(ValueError, match=r"dev\.yaml:2: duplicate segment .* line 1"):
        prepare_split(root, "dev")


def test_talk_in_two_splits_is_an_error(tmp_path):
    talks = {
        "train": {"ted_21": [(0.2, 1.0, "Hi.")]},
        "dev": {"ted_21": [(2.0, 1.0, "Yes.")]},
        "tst-COMMON": {"ted_31": [(0.0, 1.0, "No.")]},
    }
    root = make_mustc(tmp_path / "en-de", talks=talks)
    with pytest.raises(ValueError, match="ted_21 appears in splits train and dev"):
        prepare_mustc(root)


def test_missing_and_unreadable_wavs_are_counted_skips(tmp_path):
    root = make_mustc(tmp_path / "en-de")
    (root / "data/train/wav/ted_12.wav").unlink()
    manifests, stats = prepare_mustc(root, splits=("train",))
    assert stats["train"].skipped["missing_wav"] == 1
    assert sorted(s.id for s in manifests["train"]["supervisions"]) == ["ted_11_0", "ted_11_1", "ted_11_2"]
    assert "missing_wav 1" in format_summary(stats)
    (root / "data/train/wav/ted_12.wav").write_bytes(b"RIFF not really a wav")
    manifests, stats = prepare_mustc(root, splits=("train",))
    assert stats["train"].skipped["unreadable_wav"] == 1
    assert "ted_12" not in {r.id for r in manifests["train"]["recordings"]}


def test_all_wavs_missing_is_an_error(tmp_path):
    root = make_mustc(tmp_path / "en-de")
    (root / "data/dev/wav/ted_21.wav").unlink()
    with pytest.raises(FileNotFoundError, match="none of the 1 wavs"):
        prepare_mustc(root, splits=("dev",))


def test_segment_beyond_wav_end_is_skipped_or_clipped(tmp_path):
    talks = {"dev": {"ted_21": [(0.2, 1.0, "Is it you?"), (3.5, 0.55, "Almost, yes."), (3.0, 5.0, "Far too long.")]}}
    root = make_mustc(tmp_path / "en-de", talks=talks)
    recs, sups, stats = prepare_split(root, "dev")
    by_id = {s.id: s for s in sups}
    assert stats.skipped["beyond_end"] == 1 and stats.clipped == 1
    # sorted by offset: 0.2 -> _0, 3.0 -> _1 (skipped), 3.5 -> _2 (clipped to the 4.0 s wav end)
    assert sorted(by_id) == ["ted_21_0", "ted_21_2"]
    assert by_id["ted_21_2"].end == pytest.approx(4.0)
    assert "beyond_end 1" in format_summary({"dev": stats})


def test_segment_without_words_is_a_counted_skip(tmp_path):
    talks = {"dev": {"ted_21": [(0.2, 1.0, "(Applause)"), (2.0, 1.0, ""), (3.0, 0.5, "Thanks.")]}}
    root = make_mustc(tmp_path / "en-de", talks=talks)
    _, sups, stats = prepare_split(root, "dev")
    assert stats.skipped["no_words"] == 2
    assert [s.id for s in sups] == ["ted_21_2"]


def test_numbers_are_spoken_and_unspeakable_tokens_a_counted_logged_skip(tmp_path, caplog):
    talks = {"dev": {"ted_21": [(0.2, 1.0, "In 2008, we paid $5."), (2.0, 1.0, "See § 5."), (3.0, 0.5, "Thanks.")]}}
    root = make_mustc(tmp_path / "en-de", talks=talks)
    _, sups, stats = prepare_split(root, "dev")
    assert stats.skipped["unspeakable_token"] == 1 and stats.skipped["no_words"] == 0
    assert [s.id for s in sups] == ["ted_21_0", "ted_21_2"]
    assert sups[0].custom["words"] == ["in", "two", "thousand", "eight", "we", "paid", "five", "dollars"]
    assert sups[0].custom["punct"][3] == "," and sups[0].text == "In 2008, we paid $5."
    assert "unspeakable_token 1" in format_summary({"dev": stats})
    assert "segment ted_21_1 skipped: unspeakable token: § (a symbol with no spoken form)" in caplog.text
    _, kept, stats = prepare_split(root, "dev", norm=NormalizeConfig(numbers="keep"))
    assert len(kept) == 3 and kept[0].custom["words"][1] == "2008" and not stats.skipped


def test_missing_text_file_is_named(tmp_path):
    root = make_mustc(tmp_path / "en-de")
    split_files(root, "dev")[1].unlink()
    with pytest.raises(FileNotFoundError, match=r"dev\.en: no such file"):
        prepare_mustc(root, splits=("dev",))
    with pytest.raises(FileNotFoundError, match="no data/tst-HE folder"):
        prepare_split(root, "tst-HE")


# ------------------------------------------------------------------------------------------------
# UniPunc


def unipunc_line(ids: Sequence[str], split: str, talk: str, start: float, seconds: float, text: str) -> str:
    return json.dumps(
        {
            "id": ",".join(ids) + ",",
            "audio": f"/path/to/MUSTC_v1.0/en-de/{split}/wav/{talk}.wav:{int(start * SR)}:{int(seconds * SR)}",
            "n_frames": int(seconds * SR),
            "tgt_text": text,
            "speaker_id": f"spk.{talk}",
            "tgt_lang": "en",
        }
    )


def make_unipunc(root: Path, num_train: int = 20) -> Path:
    folder = root / "unipunc"
    folder.mkdir()
    train = [
        unipunc_line([f"ted_11_{i}", f"ted_11_{i + 1}"], "train", "ted_11", 0.4 * i, 0.4, f"Item {i}, is it?")
        for i in range(num_train)
    ]
    test = [
        unipunc_line(["ted_21_0", "ted_21_1"], "dev", "ted_21", 0.2, 3.3, "Is it you? Yes, it is."),
        unipunc_line(["ted_21_2"], "dev", "ted_21", 3.5, 0.4, "Fine."),
    ]
    (folder / "train-audio.json").write_text("\n".join(train) + "\n")
    (folder / "test-audio.json").write_text("\n".join(test) + "\n")
    return folder


def test_unipunc_split(tmp_path):
    root = make_mustc(tmp_path / "en-de")
    unipunc = make_unipunc(tmp_path)
    out = tmp_path / "manifests"
    manifests, stats = prepare_unipunc(root, unipunc, out, seed=3)
    train = {s.id for s in manifests["train"]["supervisions"]}
    dev = {s.id for s in manifests["dev"]["supervisions"]}
    assert len(train) == 18 and len(dev) == 2 and not train & dev
    split = json.loads((out / "unipunc_split.json").read_text())
    assert split["seed"] == 3 and sorted(split["train"] + split["dev"]) == list(range(20))
    assert {f"ted_11_{i}" for i in split["dev"]} == dev
    # The same seed gives the same split; another seed (almost surely) another.
    again, _ = prepare_unipunc(root, unipunc, seed=3)
    assert {s.id for s in again["dev"]["supervisions"]} == dev
    other = {
        frozenset(s.id for s in prepare_unipunc(root, unipunc, seed=k)[0]["dev"]["supervisions"]) for k in range(4)
    }
    assert len(other) > 1
    test = {s.id: s for s in manifests["test"]["supervisions"]}
    assert sorted(test) == ["ted_21_0", "ted_21_2"]
    item = test["ted_21_0"]
    assert item.recording_id == "ted_21" and item.start == pytest.approx(0.2) and item.duration == pytest.approx(3.3)
    assert item.custom["unipunc_id"] == "ted_21_0,ted_21_1"
    assert supervision_words(item) == (["is", "it", "you", "yes", "it", "is"], ["NP", "NP", "?", ",", "NP", "."])
    with gzip.open(out / "mustc_supervisions_test.jsonl.gz", "rt") as f:
        assert len(f.readlines()) == 2


def test_unipunc_bad_input(tmp_path):
    root = make_mustc(tmp_path / "en-de")
    unipunc = make_unipunc(tmp_path)
    test_path = unipunc / "test-audio.json"
    good = test_path.read_text().splitlines()
    test_path.write_text(good[0] + "\n{not json\n")
    with pytest.raises(ValueError, match=r"test-audio\.json:2: malformed UniPunc item"):
        read_unipunc_items(test_path)
    test_path.write_text(good[0] + "\n" + good[0] + "\n")
    with pytest.raises(ValueError, match=r"test-audio\.json:2: duplicate id 'ted_21_0,ted_21_1' \(also line 1\)"):
        read_unipunc_items(test_path)
    test_path.write_text(good[0] + "\n" + unipunc_line(["ted_21_9"], "dev", "ted_21", 3.0, 4.0, "Too long.") + "\n")
    manifests, stats = prepare_unipunc(root, unipunc)
    assert stats["test"].skipped["beyond_end"] == 1 and stats["test"].segments == 1
    test_path.write_text(unipunc_line(["ted_99_0"], "dev", "ted_99", 0.0, 1.0, "Gone.") + "\n" + good[0] + "\n")
    manifests, stats = prepare_unipunc(root, unipunc)
    assert stats["test"].skipped["missing_wav"] == 1
    (unipunc / "train-audio.json").unlink()
    with pytest.raises(FileNotFoundError, match=r"train-audio\.json: no such file"):
        prepare_unipunc(root, unipunc)


# ------------------------------------------------------------------------------------------------
# The command line (what stage 0 runs)


def run_prepare(monkeypatch, capsys, *args: str) -> str:
    from punct.bin import prepare_mustc as cli

    monkeypatch.setattr("sys.argv", ["prepare_mustc", *args])
    cli.main()
    captured = capsys.readouterr()
    return captured.out + captured.err


def test_cli_prints_tables_and_redoes_only_changed_inputs(tmp_path, monkeypatch, capsys):
    root = make_mustc(tmp_path / "en-de")
    out = tmp_path / "manifests"
    log = run_prepare(monkeypatch, capsys, str(root), str(out), "--norm-colon", ".")
    assert ":            -> ." in log  # the mark -> label table, with the override
    assert "segments" in log and "test" in log
    assert (out / ".mustc.done").exists() and (out / "mustc_summary.txt").exists()
    assert set(json.loads((out / "mustc_skipped.json").read_text())) == {"train", "dev", "test"}  # for RESULTS.md
    assert "already prepared" in run_prepare(monkeypatch, capsys, str(root), str(out), "--norm-colon", ".")
    # Another mapping, or a changed corpus, is prepared again.
    assert "already prepared" not in run_prepare(monkeypatch, capsys, str(root), str(out))
    _, en_path = split_files(root, "dev")
    en_path.write_text("Is it you?\nNo, it is not.\n")
    assert "already prepared" not in run_prepare(monkeypatch, capsys, str(root), str(out))
    sups = load_manifest(out / "mustc_supervisions_dev.jsonl.gz")
    assert sups["ted_21_1"].text == "No, it is not."
