"""Window cutting on a hand-made utterance: centre = the transition to the next word (or the word's
last frame), zero padding at the edges, the previous word's vector in gaps, zeros before the first word."""

from __future__ import annotations

import numpy as np
import pytest

from punct.models.punct_tdnn.frames import (
    cut_window,
    frame_word_index,
    fuse_frames,
    text_table,
    window_centres,
    word_frame_spans,
)


def hand_made():
    # Cut starts at 2.0 s of its recording; alignment times are on the recording's axis.
    starts, ends = word_frame_spans([2.03, 2.08, 2.10], [2.06, 2.10, 2.10], offset=2.0)
    acoustic = (100 + np.arange(12, dtype=np.float32))[:, None]  # (T=12, 1): frame t holds 100 + t
    vectors = np.array([[1, -1], [2, -2], [3, -3]], dtype=np.float32)  # word i holds (i+1, -(i+1))
    return starts, ends, acoustic, vectors


def test_word_frames_follow_the_convention():
    starts, ends, _, _ = hand_made()
    assert starts.tolist() == [3, 8, 10]
    # [2.03, 2.06) -> frames 3..5; [2.08, 2.10) -> 8..9; a zero-length word still gets its start frame.
    assert ends.tolist() == [6, 10, 11]
    assert window_centres(starts, ends, 12, "word_end").tolist() == [5, 9, 10]
    assert window_centres([3], np.array([30]), 12, "word_end").tolist() == [11]  # clipped into the utterance


def test_transition_centre_attaches_the_pause_to_the_word_before():
    starts, ends, _, _ = hand_made()
    # word 0 is followed by a pause (frames 6-7) before word 1 starts on frame 8: its centre is frame 7;
    # the last word's pause runs to the end of the utterance.
    assert window_centres(starts, ends, 12, "transition").tolist() == [7, 9, 11]
    assert window_centres(starts, ends, 12).tolist() == [7, 9, 11]  # the default (the paper's)
    # a next word that starts inside the previous one (rounding) never moves a centre before the word's end
    assert window_centres([0, 2], [4, 6], 8, "transition").tolist() == [3, 7]
    with pytest.raises(ValueError, match="window centre"):
        window_centres(starts, ends, 12, "middle")


def test_frame_word_index_previous_word_in_gaps():
    starts, _, _, _ = hand_made()
    assert frame_word_index(starts, 12).tolist() == [-1, -1, -1, 0, 0, 0, 0, 0, 1, 1, 2, 2]
    with pytest.raises(ValueError, match="non-decreasing"):
        frame_word_index(np.array([5, 3]), 10)


def test_fused_frames_text_first_then_acoustic():
    starts, _, acoustic, vectors = hand_made()
    fused = fuse_frames(vectors, acoustic, frame_word_index(starts, 12))
    assert fused.shape == (12, 3)
    assert fused[:3, :2].tolist() == [[0, 0]] * 3  # before the first word: zeros
    assert fused[6:8, :2].tolist() == [[1, -1]] * 2  # gap after word 0 carries word 0
    assert fused[:, 2].tolist() == list(range(100, 112))


def test_small_window_around_word_1():
    starts, ends, acoustic, vectors = hand_made()
    index = frame_word_index(starts, 12)
    window = cut_window(acoustic, text_table(vectors), index, centre=9, context=3)  # frames 6..12
    expected_text = [[1, -1], [1, -1], [2, -2], [2, -2], [3, -3], [3, -3], [0, 0]]
    assert window[:, :2].tolist() == expected_text
    assert window[:, 2].tolist() == [106, 107, 108, 109, 110, 111, 0]  # frame 12 is past the end: zero


def test_301_frame_window_zero_padded_at_the_start():
    starts, ends, acoustic, vectors = hand_made()
    index = frame_word_index(starts, 12)
    centre = int(window_centres(starts, ends, 12, "word_end")[0])  # word 0 ends on frame 5
    window = cut_window(acoustic, text_table(vectors), index, centre=centre, context=150)
    assert window.shape == (301, 3)
    assert window[150].tolist() == [1, -1, 105]  # the centre row is the word's last frame
    assert not window[:145].any()  # frames -150..-1: zero padding in both parts
    assert window[145:148, :2].tolist() == [[0, 0]] * 3 and window[145:148, 2].tolist() == [100, 101, 102]
    assert window[156, 2] == 111 and not window[157:].any()  # after frame 11: padding
