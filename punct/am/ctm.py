"""Word spans -> lhotse AlignmentItems and CTM lines.

Times: frame t starts at ``t * frame_shift`` seconds after the cut start.  AlignmentItems carry
times relative to the *recording* (lhotse keeps supervision alignments recording-relative, also
inside trimmed cuts): ``start = cut.start + first_frame * 0.01``, ``duration = frames * 0.01``.
Back to frames of the cut: ``round((item.start - cut.start) * 100)`` .. ``round((item.end - cut.start) * 100) - 1``.
The CTM is per utterance: ``<cut id> 1 <start> <duration> <word>`` with times relative to the cut
(Kaldi's utterance-level CTM).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from lhotse.supervision import AlignmentItem
from lhotse.utils import Pathlike

from punct.am.viterbi import WordSpan
from punct.labels import TimedWord

FRAME_SHIFT = 0.01


def spans_to_items(
    spans: Sequence[WordSpan], cut_start: float, frame_shift: float = FRAME_SHIFT
) -> list[AlignmentItem]:
    return [
        AlignmentItem(
            symbol=s.word,
            start=round(cut_start + s.start * frame_shift, 8),
            duration=round((s.end - s.start) * frame_shift, 8),
        )
        for s in spans
    ]


def items_to_frames(
    items: Sequence[AlignmentItem], cut_start: float, frame_shift: float = FRAME_SHIFT
) -> list[tuple[int, int]]:
    """``[start, end)`` frame spans relative to the cut (the inverse of :func:`spans_to_items`)."""
    return [
        (
            int(round((it.start - cut_start) / frame_shift)),
            int(round((it.start + it.duration - cut_start) / frame_shift)),
        )
        for it in items
    ]


def ctm_lines(cut_id: str, spans: Sequence[WordSpan], frame_shift: float = FRAME_SHIFT) -> list[str]:
    return [f"{cut_id} 1 {s.start * frame_shift:.2f} {(s.end - s.start) * frame_shift:.2f} {s.word}\n" for s in spans]


def read_ctm(path: Pathlike) -> dict:
    """``{cut id: [(word, start, duration), ...]}``; a malformed line is an error naming ``file:line``:
    fewer than five fields, a start or duration that is not a finite number >= 0, or a word that starts
    before the previous word of its utterance (a CTM lists each utterance's words in time order).
    Blank lines and ``;;`` comment lines are skipped; fields after the word (a confidence) are ignored."""
    out: dict = {}
    for line_number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        fields = line.split()
        if not fields or fields[0].startswith(";;"):
            continue
        where = f"{path}:{line_number}"
        if len(fields) < 5:
            raise ValueError(f"{where}: expected '<utt> <channel> <start> <dur> <word>', got {line!r}")
        try:
            start, duration = float(fields[2]), float(fields[3])
        except ValueError as e:
            raise ValueError(f"{where}: {e} in {line!r}") from e
        if not (math.isfinite(start) and math.isfinite(duration) and start >= 0 and duration >= 0):
            raise ValueError(f"{where}: start and duration must be finite and >= 0, got {line!r}")
        words = out.setdefault(fields[0], [])
        if words and start < words[-1][1]:
            raise ValueError(
                f"{where}: {fields[4]!r} starts at {start} s, before the previous word of "
                f"{fields[0]} ({words[-1][1]} s); CTM words must be in time order"
            )
        words.append((fields[4], start, duration))
    return out


def read_timed_words(path: Pathlike) -> dict[str, list[TimedWord]]:
    """:func:`read_ctm` as each utterance's :class:`punct.labels.TimedWord` list (times from the utterance start)."""
    return {
        utt: [TimedWord(w, start, start + duration) for w, start, duration in words]
        for utt, words in read_ctm(path).items()
    }
