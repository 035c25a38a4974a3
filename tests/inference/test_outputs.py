import json

import numpy as np

from punct.inference.outputs import Failure, Result, collect_outputs, write_outputs


def result(utt: str, text: str) -> Result:
    probs = np.full((2, 4), 0.25, dtype=np.float32)
    return Result(
        id=utt,
        text=text,
        words=text.lower().rstrip(".").split(),
        labels=["NP", "."],
        spans=[(0, 10), (10, 20)],
        p_tdnn=probs,
        p_bert=probs,
        p_ensemble=probs,
        alpha=0.5,
        transcript_from="given",
        duration=1.5,
    )


def test_results_and_failures_become_the_three_files(tmp_path, capsys):
    outputs = [result("a", "Hello world."), Failure("b", "no-words", "b: no words"), result("c", "Good bye.")]
    lines = collect_outputs(outputs, echo=True)
    assert lines.audio_seconds == 3.0
    assert capsys.readouterr().out == "Hello world.\nGood bye.\n"
    text, punct, failed = write_outputs(tmp_path, ".2", lines)
    assert [p.name for p in (text, punct, failed)] == ["text.2", "punct.2.jsonl", "failed.2"]
    assert text.read_text() == "a Hello world.\nc Good bye.\n"
    assert [json.loads(line)["id"] for line in punct.read_text().splitlines()] == ["a", "c"]
    assert failed.read_text() == "b b: no words\n"


def test_no_output_writes_empty_files(tmp_path):
    paths = write_outputs(tmp_path / "out", "", collect_outputs([], echo=False))
    assert [p.read_text() for p in paths] == ["", "", ""]
