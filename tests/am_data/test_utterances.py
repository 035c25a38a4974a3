"""AM training data of any corpus with utterance-level transcripts (``--am-data``; punct.am_data.utterances):
Kaldi data dirs with and without ``segments`` and lhotse manifests of real espeak-ng Czech speech."""

from __future__ import annotations

import json
import logging
import shutil

import numpy as np
import pytest
import soundfile as sf
from lhotse import CutSet, Recording, RecordingSet, SupervisionSegment, SupervisionSet, load_manifest

from punct.am_data.utterances import (
    UtteranceImportConfig,
    choose_dev_units,
    import_utterance_data,
    normalise_transcript,
)
from punct.bin import import_am_data
from tests.helpers.am_data_dirs import (
    NORMALISED,
    SENTENCES,
    SPEAKERS,
    kaldi_dir_per_utterance,
    kaldi_dir_with_segments,
    speak_utterances,
    write_lines,
)

CZECH = "abcdefghijklmnopqrstuvwxyzáčďéěíňóřšťúůýž"
CONFIG = UtteranceImportConfig(alphabet=CZECH, dev_share=0.25)


@pytest.fixture(scope="module")
def spoken():
    return speak_utterances()


@pytest.fixture(scope="module")
def segmented(spoken, tmp_path_factory):
    root = tmp_path_factory.mktemp("segmented") / "data"
    return root, kaldi_dir_with_segments(root, spoken)


@pytest.fixture(scope="module")
def per_utterance(spoken, tmp_path_factory):
    root = tmp_path_factory.mktemp("per_utterance") / "data"
    kaldi_dir_per_utterance(root, spoken)
    return root


def load_split(out, split, prefix="parczech"):
    return (
        load_manifest(out / f"{prefix}_recordings_{split}.jsonl.gz"),
        list(load_manifest(out / f"{prefix}_supervisions_{split}.jsonl.gz")),
    )


def test_normalise_transcript_rules():
    assert normalise_transcript("„Dobrý den,“ řekl česko-slovenský poslanec.", CONFIG).words == [
        "dobrý",
        "den",
        "řekl",
        "česko",
        "slovenský",
        "poslanec",
    ]
    assert normalise_transcript("ano <unk> [noise] ne", CONFIG).words == ["ano", "ne"]
    tag = normalise_transcript("ano <unk> ne", UtteranceImportConfig(alphabet=CZECH, tags="skip"))
    assert (tag.words, tag.reason, tag.detail) == ([], "tag", "<unk>")
    digits = normalise_transcript("Tisk 912 .", UtteranceImportConfig(alphabet=CZECH, numbers="keep"))
    assert digits.reason == "character outside the alphabet" and "'9'" in digits.detail
    # numbers: spoken (default): said in Czech words (the 'LC-10', '737' skips of a real corpus)
    assert normalise_transcript("Tisk 912, LC-10 a 737 (10%).", CONFIG).words == [
        "tisk",
        "devět",
        "set",
        "dvanáct",
        "lc",
        "deset",
        "a",
        "sedm",
        "set",
        "třicet",
        "sedm",
        "deset",
        "procent",
    ]
    unspeakable = normalise_transcript("bod ©5", CONFIG)
    assert unspeakable.reason == "unspeakable token" and "©5" in unspeakable.detail
    assert normalise_transcript("Grüße", CONFIG).reason == "character outside the alphabet"
    assert normalise_transcript("Grüße", UtteranceImportConfig()).words == ["grüße"]  # empty alphabet: any letter
    assert normalise_transcript(" ... ", CONFIG).reason == "empty text"
    # a decomposed "é" (e + combining acute) is the alphabet's composed letter after NFC
    assert normalise_transcript("Pe\u0301C\u030c", CONFIG).words == ["péč"]


def test_kaldi_dir_with_segments(segmented, tmp_path):
    root, times = segmented
    out = tmp_path / "am"
    import_utterance_data(root, out, CONFIG, seed=1, prefix="parczech")
    sups = {}
    for split in ("train", "dev"):
        recs, split_sups = load_split(out, split)
        assert {s.recording_id for s in split_sups} == set(recs.ids) <= {"sitting1", "sitting2"}
        sups[split] = split_sups
    by_id = {s.id: s for split in sups.values() for s in split}
    assert set(by_id) == set(times)  # every utterance, in train or dev
    for utt_id, (rec_id, start, end) in times.items():
        sup = by_id[utt_id]
        assert (sup.recording_id, sup.start, sup.duration) == (rec_id, start, round(end - start, 3))
        sentence = SENTENCES.index(
            next(
                line.split(" ", 1)[1]
                for line in (root / "text").read_text().splitlines()
                if line.startswith(utt_id + " ")
            )
        )
        assert sup.text == NORMALISED[sentence] and sup.custom["words"] == NORMALISED[sentence].split()
        # CMVN per recording (the recogniser's convention); the true speaker is kept
        assert sup.speaker == rec_id and sup.custom["speaker"] == utt_id.split("-")[0]
    # dev: one of four speakers (dev_share 0.25), disjoint from train
    dev_speakers = {s.custom["speaker"] for s in sups["dev"]}
    assert len(dev_speakers) == 1 and not dev_speakers & {s.custom["speaker"] for s in sups["train"]}
    assert len(sups["dev"]) == 3
    stats = json.loads((out / "import_stats.json").read_text())
    assert stats["train"]["utterances"] == 9 and stats["dev"]["speakers"] == 1 and stats["skipped"] == {str(root): {}}


def test_dev_part_is_seeded(segmented, tmp_path):
    root, _ = segmented
    dev_of = {}
    for seed in (1, 2, 3, 4, 5, 6):
        parts = import_utterance_data(root, None, CONFIG, seed=seed, prefix="parczech")
        dev_of[seed] = sorted(s.id for s in parts["dev"]["supervisions"])
    again = import_utterance_data(root, None, CONFIG, seed=1, prefix="parczech")
    assert sorted(s.id for s in again["dev"]["supervisions"]) == dev_of[1]
    assert len({tuple(v) for v in dev_of.values()}) > 1  # the seed chooses
    hours = {u: 1.0 for u in "abcde"}
    assert choose_dev_units(hours, 0.2, seed=0) == choose_dev_units(dict(reversed(hours.items())), 0.2, seed=0)
    assert len(choose_dev_units({u: 1.0 for u in "abcdefghij"}, 0.3, seed=0)) == 3
    with pytest.raises(ValueError, match="cannot hold one out"):
        choose_dev_units({"a": 1.0}, 0.5, seed=0)


def test_cmvn_by_speaker_and_dev_by_recording(segmented, tmp_path):
    root, _ = segmented
    config = UtteranceImportConfig(
        alphabet=CZECH, cmvn_group="speaker", dev_unit="recording", dev_share=0.5, max_dev_share=0.6
    )  # two sittings: one is half the hours
    parts = import_utterance_data(root, None, config, seed=0, prefix="parczech")
    dev = list(parts["dev"]["supervisions"])
    assert all(s.speaker == s.custom["speaker"] == s.id.split("-")[0] for s in dev)
    assert len({s.recording_id for s in dev}) == 1 and len(dev) == 6  # one sitting: two speakers' utterances


def test_kaldi_dir_per_utterance_is_resampled(spoken, per_utterance, tmp_path):
    out = tmp_path / "am"
    import_am_data.main(
        [
            "--prefix",
            "kaldi",
            "--data",
            str(per_utterance),
            "--out-dir",
            str(out),
            "--seed",
            "3",
            "--alphabet",
            CZECH,
            "--dev-share",
            "0.25",
        ]
    )
    recs, sups = load_split(out, "train", prefix="kaldi")
    dev_recs, dev_sups = load_split(out, "dev", prefix="kaldi")
    assert len(sups) == 9 and len(dev_sups) == 3
    by_id = {u.id: u for u in spoken}
    for sup in sups + dev_sups:
        utt = by_id[sup.id]
        assert sup.recording_id == sup.id == sup.speaker and sup.start == 0.0  # one recording per utterance
        assert sup.duration == pytest.approx(len(utt.audio) / utt.rate, abs=1e-3)
        assert sup.text == NORMALISED[utt.sentence]
    rec = recs[sups[0].id]
    assert rec.sampling_rate == 16000 and spoken[0].rate != 16000
    audio = rec.load_audio()
    assert audio.shape[1] == rec.num_samples == pytest.approx(rec.duration * 16000, abs=1)
    assert np.abs(audio).max() > 0.05  # real speech, not silence


def test_lhotse_manifests_and_cuts_give_the_same_supervisions(segmented, tmp_path):
    root, times = segmented
    kaldi = import_utterance_data(root, None, CONFIG, seed=1, prefix="parczech")
    texts = dict(line.split(" ", 1) for line in (root / "text").read_text(encoding="utf-8").splitlines())
    recordings = RecordingSet.from_recordings(
        Recording.from_file(root / "wav" / f"{r}.wav", recording_id=r) for r in ("sitting1", "sitting2")
    )
    supervisions = SupervisionSet.from_segments(
        SupervisionSegment(
            id=u, recording_id=r, start=a, duration=round(b - a, 3), channel=0, text=texts[u], speaker=u.split("-")[0]
        )
        for u, (r, a, b) in times.items()
    )
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    recordings.to_file(manifests / "asr_recordings_train.jsonl.gz")
    supervisions.to_file(manifests / "asr_supervisions_train.jsonl.gz")
    cuts_file = tmp_path / "cuts" / "asr_cuts_train.jsonl.gz"
    cuts_file.parent.mkdir()
    CutSet.from_manifests(recordings=recordings, supervisions=supervisions).trim_to_supervisions(
        keep_overlapping=False
    ).to_file(cuts_file)
    for source in (manifests, cuts_file.parent, cuts_file):
        parts = import_utterance_data(source, None, CONFIG, seed=1, prefix="parczech")
        for split in ("train", "dev"):
            got = sorted(
                (s.id, s.recording_id, s.start, s.duration, s.text, s.speaker, s.custom["speaker"])
                for s in parts[split]["supervisions"]
            )
            want = sorted(
                (s.id, s.recording_id, s.start, s.duration, s.text, s.speaker, s.custom["speaker"])
                for s in kaldi[split]["supervisions"]
            )
            assert got == want, (source, split)


def test_given_dev_data(spoken, segmented, per_utterance, tmp_path):
    root, times = segmented
    kaldi_dir_per_utterance(tmp_path / "dev", spoken[:4], prefix="dev-")
    out = tmp_path / "am"
    import_utterance_data(root, out, CONFIG, seed=1, prefix="parczech", dev=tmp_path / "dev")
    _, train = load_split(out, "train")
    dev_recs, dev = load_split(out, "dev")
    assert {s.id for s in train} == set(times)
    assert sorted(s.id for s in dev) == sorted(f"dev-{u.id}" for u in spoken[:4]) == sorted(dev_recs.ids)
    assert json.loads((out / "import_stats.json").read_text())["dev_part"] == f"the given dev data {tmp_path / 'dev'}"
    with pytest.raises(ValueError, match="utterance ids also in the training data"):
        import_utterance_data(root, None, CONFIG, prefix="parczech", dev=per_utterance)


def copy_dir(source, dest):
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns("wav"))
    return dest


def test_bad_lines_are_errors_naming_file_and_line(segmented, tmp_path):
    root, _ = segmented
    cases = [
        ("text", lambda lines: lines + [lines[2]], "text:13: 'NovakJan-02' again \\(first at .*text:3\\)"),
        (
            "segments",
            lambda lines: lines[:4] + [lines[4].rsplit(" ", 1)[0] + " 0.1"] + lines[5:],
            "segments:5: segment MalaEva-01 from .* need 0 <= start < end",
        ),
        (
            "segments",
            lambda lines: lines[:1] + [lines[1].replace("sitting1", "sitting9")] + lines[2:],
            "segments:2: segment NovakJan-01 is on recording 'sitting9', which wav.scp does not list",
        ),
        ("segments", lambda lines: [lines[0].replace(" 0.600 ", " abc ")] + lines[1:], "segments:1: start and end"),
        (
            "wav.scp",
            lambda lines: lines[:1] + [lines[1].replace("sitting2.wav", "missing.wav")],
            "wav.scp:2: recording sitting2: no such audio file .*missing.wav",
        ),
        (
            "wav.scp",
            lambda lines: [lines[0] + " extra |"] + lines[1:],
            "wav.scp:1: recording sitting1: command '.*sitting1.wav extra' exited with",
        ),
        ("utt2spk", lambda lines: lines[:6], "text:7: utterance DvorakPetr-00 is not in .*utt2spk"),
    ]
    for k, (name, edit, message) in enumerate(cases):
        data = copy_dir(root, tmp_path / f"case{k}")
        write_lines(data / name, edit((root / name).read_text(encoding="utf-8").splitlines()))
        with pytest.raises((ValueError, FileNotFoundError), match=message):
            import_utterance_data(data, None, CONFIG, prefix="parczech")
    junk = copy_dir(root, tmp_path / "junk")
    (tmp_path / "junk.wav").write_bytes(b"RIFF not really a wav file")
    write_lines(
        junk / "wav.scp", [f"sitting1 {tmp_path / 'junk.wav'}"] + (root / "wav.scp").read_text().splitlines()[1:]
    )
    with pytest.raises(ValueError, match="wav.scp:1: recording sitting1: .*junk.wav is not readable audio"):
        import_utterance_data(junk, None, CONFIG, prefix="parczech")


def test_bad_utterances_are_counted_logged_skips(segmented, tmp_path, caplog):
    root, times = segmented
    data = copy_dir(root, tmp_path / "data")
    duration = sf.info(str(root / "wav" / "sitting1.wav")).duration
    text = (root / "text").read_text(encoding="utf-8").splitlines()
    text[0] = "NovakJan-00"  # empty transcript
    text[1] = "NovakJan-01 Tisk číslo 912 © ."  # "©": spoken form unknown (912 is said: devět set dvanáct)
    text.append("Nobody-00 Tato věta nemá zvuk.")  # no segment
    write_lines(data / "text", text)
    segments = (root / "segments").read_text().splitlines()
    segments[2] = f"NovakJan-02 sitting1 {duration - 0.5:.3f} {duration + 1.0:.3f}"  # ends after the audio
    segments[3] = f"MalaEva-00 sitting1 {times['MalaEva-00'][1]:.3f} {duration + 0.02:.3f}"  # within tolerance
    segments.append("Untranscribed-00 sitting2 0.0 1.0")  # no transcript
    write_lines(data / "segments", segments)
    with caplog.at_level(logging.WARNING):
        parts = import_utterance_data(data, tmp_path / "am", CONFIG, seed=1, prefix="parczech")
    stats = json.loads((tmp_path / "am" / "import_stats.json").read_text())
    assert stats["skipped"][str(data)] == {
        "character outside the alphabet": 1,
        "empty text": 1,
        "no audio": 1,
        "no transcript": 1,
        "segment outside the audio": 1,
    }
    kept = {s.id: s for split in parts.values() for s in split["supervisions"]}
    assert len(kept) == 12 - 3 and "MalaEva-00" in kept
    assert kept["MalaEva-00"].start + kept["MalaEva-00"].duration == pytest.approx(duration, abs=1e-3)  # clipped
    log = caplog.text
    for where, reason in (
        (f"{data}/text:1", "empty text"),
        (f"{data}/text:2", "character outside the alphabet"),
        (f"{data}/text:13", "no audio"),
        (f"{data}/segments:13", "no transcript"),
        (f"{data}/segments:3", "segment outside the audio"),
    ):
        assert f"{where}: skipped: {reason}" in log, (where, reason)


def test_no_usable_utterance_and_unknown_input_are_errors(segmented, tmp_path):
    root, _ = segmented
    with pytest.raises(ValueError, match="no usable utterance among 12"):
        import_utterance_data(root, None, UtteranceImportConfig(alphabet="abc"), prefix="parczech")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="neither a Kaldi data directory"):
        import_utterance_data(tmp_path / "empty", None, CONFIG, prefix="parczech")
    assert len(SPEAKERS) == 4
