"""punct.corpora.imported: a corpus of one's own (lhotse manifests, Kaldi data dirs) -> the MuST-C recipe's
manifests, words and labels from the punctuated text; errors name file:line, skips are counted."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from punct.corpora.imported import prepare_imported
from punct.labels import WordLabels
from tests.helpers.fake_corpora import LIBRITTS_PARTS, prepared_libritts, write_kaldi_data_dirs

PARTS = {split: [part] for split, part in LIBRITTS_PARTS.items()}


@pytest.fixture(scope="module")
def libritts(tmp_path_factory) -> Path:
    return prepared_libritts(tmp_path_factory.mktemp("libritts"))


@pytest.fixture(scope="module")
def kaldi_dirs(tmp_path_factory) -> Path:
    return write_kaldi_data_dirs(tmp_path_factory.mktemp("kaldi") / "data")


def words_of(manifests, split):
    return {s.id: WordLabels.from_supervision(s) for s in manifests[split]["supervisions"]}


def test_libritts_orig_text_gives_the_words_and_labels(libritts, tmp_path):
    manifests, stats = prepare_imported("manifests", libritts, tmp_path, parts=PARTS, text_field="orig_text")
    train = words_of(manifests, "train")
    first = train["14_208_000000_000000"]  # "Mr. Darcy came in, didn't he?"
    assert list(first.words) == ["mr", "darcy", "came", "in", "didn't", "he"]
    assert list(first.punct) == ["NP", "NP", "NP", ",", "NP", "?"]
    assert list(train["14_208_000001_000000"].punct) == ["NP", ".", "NP", "NP", ",", "."]  # "; then ... said: no."
    test = words_of(manifests, "test")["121_127_000000_000000"]  # "I paid 5 dollars, in 1811."
    assert "five" in test.words and "5" not in test.words and test.punct[-1] == "."
    assert {s: st.segments for s, st in stats.items()} == {"train": 8, "dev": 2, "test": 2}
    for split in ("train", "dev", "test"):
        for kind in ("recordings", "supervisions"):
            assert (tmp_path / f"mustc_{kind}_{split}.jsonl.gz").is_file()
    # the 24 kHz recordings are resampled to the features' 16 kHz by lhotse, and load at that rate
    rec = manifests["train"]["recordings"]["14_208_000000_000000"]
    assert rec.sampling_rate == 16000 and rec.load_audio().shape == (1, rec.num_samples)
    assert {s.speaker for s in manifests["train"]["supervisions"]} == {"14", "16"}
    assert stats["dev"].clipped == 0  # a resampled length's rounding is not a clipped segment


def test_libritts_text_field_text_is_the_normalized_text(libritts):
    manifests, _ = prepare_imported("manifests", libritts, parts=PARTS)  # supervision.text: "Mister Darcy ..."
    assert words_of(manifests, "train")["14_208_000000_000000"].words[0] == "mister"


def test_a_missing_text_field_names_the_line(libritts, tmp_path):
    with pytest.raises(
        ValueError,
        match=r"libritts_supervisions_train-clean-100\.jsonl\.gz:1: supervision \S+ has "
        r"no custom field 'original'",
    ):
        prepare_imported("manifests", libritts, parts=PARTS, text_field="original")


def test_a_missing_part_lists_the_manifests_there(libritts):
    with pytest.raises(
        FileNotFoundError,
        match=r"no <corpus>_recordings_train-other-500\.jsonl\.gz .*"
        r"libritts_recordings_dev-clean\.jsonl\.gz",
    ):
        prepare_imported("manifests", libritts, parts={**PARTS, "train": ["train-other-500"]})


def test_parts_must_not_repeat(libritts):
    with pytest.raises(ValueError, match="part 'dev-clean' is in dev and in test"):
        prepare_imported("manifests", libritts, parts={**PARTS, "test": ["dev-clean"]})
    with pytest.raises(ValueError, match="at least one each"):
        prepare_imported("manifests", libritts, parts={**PARTS, "test": []})


def test_a_malformed_manifest_line_names_it(libritts, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(libritts, broken)
    path = broken / "libritts_supervisions_dev-clean.jsonl.gz"
    with gzip.open(path, "rt") as f:
        lines = f.read().splitlines()
    record = json.loads(lines[1])
    del record["duration"]
    lines[1] = json.dumps(record)
    with gzip.open(path, "wt") as f:
        f.write("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=rf"{path}:2: not a lhotse SupervisionSegment"):
        prepare_imported("manifests", broken, parts=PARTS, text_field="orig_text")


def test_kaldi_data_dirs_with_segments(kaldi_dirs, tmp_path):
    manifests, stats = prepare_imported("data-dir", kaldi_dirs, tmp_path)
    train = words_of(manifests, "train")
    assert list(train["ben-talk2-000"].words) == ["rivers", "are", "long", "and", "often", "wide"]
    assert list(train["ben-talk2-000"].punct) == ["NP", "NP", ",", "NP", "NP", "."]
    assert list(train["anna-talk1-002"].punct) == ["NP", "NP", "?"]
    sups = {s.id: s for s in manifests["train"]["supervisions"]}
    assert sups["ben-talk2-001"].speaker == "ben" and sups["ben-talk2-001"].recording_id == "talk2"
    assert sups["ben-talk2-001"].start > 0.3  # the segment's time in its talk
    assert manifests["train"]["recordings"]["talk2"].sampling_rate == 16000  # 22.05 kHz resampled
    # a transcript without a segment and a segment without a transcript are counted skips
    assert dict(stats["train"].skipped) == {"no_audio": 1, "no_transcript": 1}
    assert stats["train"].segments == 6 and stats["dev"].segments == 2 and stats["test"].segments == 2


def test_kaldi_errors_name_the_file_and_line(kaldi_dirs, tmp_path):
    broken = tmp_path / "data"
    shutil.copytree(kaldi_dirs, broken)
    segments = broken / "dev" / "segments"
    rows = segments.read_text().splitlines()
    rows[1] = rows[1].rsplit(" ", 1)[0]  # "<utt> <rec> <start>": the end is missing
    segments.write_text("\n".join(rows) + "\n")
    with pytest.raises(ValueError, match=rf"{segments}:2: expected '<utterance-id> <recording-id> <start> <end>'"):
        prepare_imported("data-dir", broken)
    with pytest.raises(FileNotFoundError, match=r"data/eval: no such Kaldi data directory"):
        prepare_imported("data-dir", kaldi_dirs, parts={"train": ["train"], "dev": ["dev"], "test": ["eval"]})


def test_an_utterance_in_two_parts_is_an_error(kaldi_dirs, tmp_path):
    copy = tmp_path / "data"
    shutil.copytree(kaldi_dirs, copy)
    shutil.copytree(copy / "test", copy / "test2")
    with pytest.raises(
        ValueError, match=r"data/test/text:1: utterance 'dan-talk4-000' again \(first at \S+/test2/text:1\)"
    ):
        prepare_imported("data-dir", copy, parts={"train": ["train", "test2"], "dev": ["dev"], "test": ["test"]})
