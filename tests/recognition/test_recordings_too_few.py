"""Stage 2 stops when the recogniser found (almost) no words (punct.recognition.recordings.too_few_words, the
entry point's --min-words-per-minute)."""

from __future__ import annotations

from pathlib import Path

from punct.recognition.recordings import too_few_words


def test_issue_38_recognition_stops_with_what_helps():
    # issue 38: 2 hours beam-searched into 364 words
    message = too_few_words(Path("exp/asr/summary.txt"), 364, 7200.0, 10.0)
    assert message.startswith(
        "exp/asr/summary.txt: 364 words recognised in 2.00 h of audio (3.0 per minute, fewer "
        "than --min-words-per-minute 10)"
    )
    for hint in ("--am-data", "--am-init", "--asr-model", "--am-dir", "more epochs"):
        assert hint in message, hint
    assert too_few_words(Path("s"), 0, 60.0, 10.0) is not None


def test_speech_passes_and_zero_turns_the_check_off():
    assert too_few_words(Path("s"), 611, 286.2, 10.0) is None  # the tiny corpus' official words: 128 per minute
    assert too_few_words(Path("s"), 10, 60.0, 10.0) is None  # exactly the minimum
    assert too_few_words(Path("s"), 0, 7200.0, 0.0) is None
