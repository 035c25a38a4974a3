"""The long recordings recognised per job (punct.recognition.recordings): when a recording is done, which file
makes its outputs stale, the decoder's name, the job's checks and the summary (a whole job with a tiny AM:
tests/bin/test_recognise_long.py)."""

from __future__ import annotations

import json
import os

import pytest
from lhotse import Recording, RecordingSet
from lhotse.audio import AudioSource

from punct.labels import TimedWord, write_recognised_words
from punct.recognition.beam_search import BeamSearchConfig
from punct.recognition.chunks import ChunkConfig
from punct.recognition.recordings import (
    GREEDY,
    RecognitionJob,
    decoder_name,
    is_recognised,
    model_file,
    model_name,
    recognise_job,
    stats_path,
    words_path,
    write_summary,
)


def recordings(seconds: dict[str, float]) -> RecordingSet:
    return RecordingSet.from_recordings(
        Recording(rec_id, [AudioSource("file", [0], f"{rec_id}.wav")], 16000, int(16000 * s), s)
        for rec_id, s in seconds.items()
    )


def touch(path, mtime_ns: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    os.utime(path, ns=(mtime_ns, mtime_ns))


def test_done_means_newer_than_the_model_and_made_by_it(tmp_path):
    model, out = tmp_path / "am" / "best.pt", tmp_path / "words"
    touch(model, 1_000_000_000)
    touch(words_path(out, "r1"), 2_000_000_000)
    assert not is_recognised(out, "r1", model, "am", GREEDY)  # no stats
    stats_path(out, "r1").write_text(json.dumps({"model": "am", "decoder": GREEDY}))
    assert is_recognised(out, "r1", model, "am", GREEDY)
    assert not is_recognised(out, "r1", model, "wav2vec2", GREEDY)
    assert not is_recognised(out, "r1", model, "am", "beam search")
    stats_path(out, "r1").write_text(json.dumps({"model": "am"}))  # stats of an older version: greedy
    assert is_recognised(out, "r1", model, "am", GREEDY)
    touch(model, 3_000_000_000)
    assert not is_recognised(out, "r1", model, "am", GREEDY)


def test_the_newest_of_model_and_lm_makes_outputs_stale(tmp_path):
    touch(tmp_path / "am" / "best.pt", 2_000_000_000)
    touch(tmp_path / "words.arpa", 1_000_000_000)
    spec = RecognitionJob(out_dir=tmp_path / "out", am_dir=tmp_path / "am", checkpoint="best.pt")
    assert model_file(spec) == tmp_path / "am" / "best.pt"
    assert model_name(spec) == str((tmp_path / "am" / "best.pt").resolve())
    spec.lm = tmp_path / "words.arpa"
    touch(spec.lm, 3_000_000_000)
    assert model_file(spec) == spec.lm
    (tmp_path / "w2v").mkdir()
    with pytest.raises(FileNotFoundError, match="no such folder, or it is empty"):
        model_file(RecognitionJob(out_dir=tmp_path / "out", asr_model=tmp_path / "w2v"))


def test_the_decoder_is_greedy_without_an_lm(tmp_path):
    assert decoder_name(RecognitionJob(out_dir=tmp_path), BeamSearchConfig()) == GREEDY
    named = decoder_name(RecognitionJob(out_dir=tmp_path, lm=tmp_path / "words.arpa"), BeamSearchConfig())
    assert named.startswith("beam search") and named.endswith(f"with LM {(tmp_path / 'words.arpa').resolve()}")


def test_a_job_checks_its_index_and_lm_before_any_model(tmp_path):
    recs = recordings({"r1": 60.0})
    with pytest.raises(ValueError, match="--job must be in 1..--nj"):
        recognise_job(RecognitionJob(out_dir=tmp_path, job=3, nj=2), recs, ChunkConfig(), BeamSearchConfig())
    spec = RecognitionJob(out_dir=tmp_path, am_dir=tmp_path / "no_am", lm=tmp_path / "none.arpa")
    with pytest.raises(FileNotFoundError, match="none.arpa: no such file"):
        recognise_job(spec, recs, ChunkConfig(), BeamSearchConfig())


def test_the_summary_sums_every_recording_and_stops_on_too_few_words(tmp_path):
    out, recs = tmp_path / "words", recordings({"r1": 60.0, "r2": 120.0})
    for rec_id, words in (("r1", 3), ("r2", 1)):
        write_recognised_words(words_path(out, rec_id), [TimedWord("a", 0.0, 0.5)] * words)
        stats = {"chunks": 1, "words": words, "duration": 60.0 if rec_id == "r1" else 120.0, "cpu_seconds": 2.0}
        stats_path(out, rec_id).write_text(json.dumps({**stats, "model": "am", "decoder": GREEDY}))
    problem = write_summary(tmp_path / "summary.txt", out, recs, 10.0)
    lines = (tmp_path / "summary.txt").read_text().splitlines()
    assert lines[0] == "recordings 2, 0.05 h, 2 chunks, 4 words, 4 CPU s"
    assert lines[2:] == ["recognised with am", "decoded by greedy"]
    assert problem.startswith(f"{tmp_path / 'summary.txt'}: 4 words recognised in 0.05 h of audio (1.3 per minute")
    assert write_summary(tmp_path / "summary.txt", out, recs, 1.0) is None
    with pytest.raises(FileNotFoundError, match="1 recordings not recognised yet, e.g. r3"):
        write_summary(tmp_path / "summary.txt", out, recordings({"r1": 60.0, "r3": 60.0}), 1.0)
