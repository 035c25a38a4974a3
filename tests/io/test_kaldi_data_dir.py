"""The one Kaldi data directory reader (punct.io.kaldi_data_dir), as import and ``punctuate`` use it."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf

from punct.am_data.utterances import Skips, UtteranceImportConfig, kaldi_utterances
from punct.inference.inputs import UtteranceError, from_kaldi
from punct.io.kaldi_data_dir import pipe_command, read_kaldi_data_dir, read_table, run_pipe


def write_dir(root, wav_lines, text_lines, utt2spk=None, segments=None):
    root.mkdir(parents=True, exist_ok=True)
    (root / "wav.scp").write_text("".join(f"{line}\n" for line in wav_lines), encoding="utf-8")
    (root / "text").write_text("".join(f"{line}\n" for line in text_lines), encoding="utf-8")
    for name, lines in (("utt2spk", utt2spk), ("segments", segments)):
        if lines is not None:
            (root / name).write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return root


def punctuate_inputs(root):
    """``from_kaldi`` on the files of a data directory, as ``punctuate --wav-scp ... --segments ...`` gives them."""
    optional = {n: root / n if (root / n).is_file() else None for n in ("utt2spk", "segments")}
    return from_kaldi(root / "wav.scp", root / "text", optional["utt2spk"], optional["segments"])


@pytest.fixture
def audio(tmp_path):
    rng = np.random.default_rng(60)
    a = rng.uniform(-0.5, 0.5, 16000).astype(np.float32)  # 1 s at 16 kHz
    b = rng.uniform(-0.5, 0.5, 16000).astype(np.float32)  # 2 s at 8 kHz
    sf.write(tmp_path / "a.wav", a, 16000, subtype="FLOAT")
    sf.write(tmp_path / "b.wav", b, 8000, subtype="FLOAT")
    return tmp_path / "a.wav", a, tmp_path / "b.wav", b


def test_pipe_command():
    assert pipe_command("cat a.wav |") == "cat a.wav"
    assert pipe_command("  sox a.flac -t wav - |  ") == "sox a.flac -t wav -"
    assert pipe_command("a.wav") is None and pipe_command("a|b.wav") is None
    assert run_pipe("printf abc") == b"abc"
    with pytest.raises(RuntimeError, match="command 'echo oops >&2; exit 3' exited with 3: oops"):
        run_pipe("echo oops >&2; exit 3")


def test_pipes_are_read_alike_by_import_and_punctuate(audio, tmp_path):
    a_path, a, b_path, b = audio
    data = write_dir(
        tmp_path / "data",
        [f"ra cat {a_path} |", f"rb {b_path}"],
        ["ra the first one", "rb the second one"],
        utt2spk=["ra spk1", "rb spk2"],
    )
    table = read_kaldi_data_dir(data)
    assert table.wav["ra"].value == f"cat {a_path} |" and table.wav["ra"].where == f"{data / 'wav.scp'}:1"
    # import: a lhotse Recording with a command source, at the file's own rate and length
    utts = {u.id: u for u in kaldi_utterances(data, UtteranceImportConfig(), Skips())}
    ra, rb = utts["ra"].recording, utts["rb"].recording
    assert ra.sources[0].type == "command" and ra.sources[0].source == f"cat {a_path}"
    assert ra.sampling_rate == 16000 and ra.num_samples == len(a)
    np.testing.assert_array_equal(ra.load_audio()[0], a)
    assert rb.sources[0].type == "file" and rb.sampling_rate == 16000 and rb.num_samples == 2 * len(b)  # resampled
    assert utts["ra"].speaker == "spk1" and utts["ra"].text == "the first one"
    # punctuate: the same lines, the same audio
    reqs = punctuate_inputs(data)
    assert [(r.id, r.transcript, r.speaker) for r in reqs] == [
        ("ra", "the first one", "spk1"),
        ("rb", "the second one", "spk2"),
    ]
    samples, rate = reqs[0].audio()
    assert rate == 16000
    np.testing.assert_array_equal(samples, a)


def test_segments_on_a_pipe(audio, tmp_path):
    a_path, a, _, _ = audio
    data = write_dir(
        tmp_path / "data",
        [f"ra cat {a_path} |"],
        ["u1 one", "u2 two"],
        segments=["u1 ra 0.25 0.5", "u2 ra 0.5 -1"],
    )
    table = read_kaldi_data_dir(data)
    assert [(s.recording_id, s.start, s.end) for s in table.segments.values()] == [("ra", 0.25, 0.5), ("ra", 0.5, None)]
    reqs = punctuate_inputs(data)
    np.testing.assert_array_equal(reqs[0].audio()[0], a[4000:8000])
    np.testing.assert_array_equal(reqs[1].audio()[0], a[8000:])
    utts = kaldi_utterances(data, UtteranceImportConfig(), Skips())
    assert [(u.id, u.start, u.end) for u in utts] == [("u1", 0.25, 0.5), ("u2", 0.5, None)]


def test_failing_command_names_the_line_at_import_and_fails_one_utterance_at_punctuate(audio, tmp_path):
    _, _, b_path, _ = audio
    data = write_dir(tmp_path / "fails", ["r1 exit 7 |", f"r2 {b_path}"], ["r1 a", "r2 b"])
    with pytest.raises(ValueError, match=r"wav.scp:1: recording r1: command 'exit 7' exited with 7"):
        kaldi_utterances(data, UtteranceImportConfig(), Skips())
    reqs = punctuate_inputs(data)
    with pytest.raises(UtteranceError, match="unreadable audio: command 'exit 7' exited with 7"):
        reqs[0].audio()
    assert reqs[1].audio()[1] == 8000
    junk = write_dir(tmp_path / "junk", ["r1 echo hello |"], ["r1 a"])
    with pytest.raises(ValueError, match=r"wav.scp:1: recording r1: the output of 'echo hello' is not audio"):
        kaldi_utterances(junk, UtteranceImportConfig(), Skips())
    with pytest.raises(UtteranceError, match="unreadable audio: output of 'echo hello'"):
        punctuate_inputs(junk)[0].audio()


@pytest.mark.parametrize(
    "wav,text,utt2spk,segments,message",
    [
        (["r1"], ["r1 a"], None, None, r"wav.scp:1: 'r1' has no value"),
        (["r1 x.wav", "", "r1 y.wav"], ["r1 a"], None, None, r"wav.scp:3: 'r1' again \(first at .*wav.scp:1\)"),
        (["r1 x.wav"], ["u1 a", "u1 b"], None, ["u1 r1 0 1"], r"text:2: 'u1' again"),
        (["r1 x.wav"], ["u1 a"], None, ["u1 r1 0"], r"segments:1: expected '<utterance-id> <recording-id>"),
        (["r1 x.wav"], ["u1 a"], None, ["u1 r1 zero 1"], r"segments:1: start and end must be seconds"),
        (["r1 x.wav"], ["u1 a"], None, ["u1 r1 2 1"], r"segments:1: segment u1 from 2.0 to 1.0 s"),
        (["r1 x.wav"], ["u1 a"], None, ["u1 r9 0 1"], r"segments:1: segment u1 is on recording 'r9'"),
        (["r1 x.wav"], ["r1 a"], ["r1 spk extra"], None, r"utt2spk:1: expected '<utterance-id> <speaker-id>'"),
    ],
)
def test_bad_lines_are_the_same_errors_for_import_and_punctuate(tmp_path, wav, text, utt2spk, segments, message):
    data = write_dir(tmp_path / "data", wav, text, utt2spk, segments)
    with pytest.raises(ValueError, match=message):
        read_kaldi_data_dir(data)
    with pytest.raises(ValueError, match=message):
        punctuate_inputs(data)


def test_not_utf8_and_missing_files(tmp_path):
    bad = tmp_path / "text"
    bad.write_bytes(b"u1 fine\nu2 caf\xe9\n")
    with pytest.raises(ValueError, match=r"text:2: not UTF-8"):
        read_table(bad)
    with pytest.raises(FileNotFoundError, match=r"nothing: no such file"):
        from_kaldi(tmp_path / "nothing", None)
