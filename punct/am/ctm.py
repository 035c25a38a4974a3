"""Word spans -> lhotse AlignmentItems and CTM lines.

Times: frame t starts at ``t * frame_shift`` seconds after the cut start.  AlignmentItems carry
times relative to the *recording* (lhotse keeps supervision alignments recording-relative, also
inside trimmed cuts): ``start = cut.start + first_frame * 0.01``, ``duration = frames * 0.01``.
Back to frames of the cut: ``round((item.start - cut.start) * 100)`` .. ``round((item.end - cut.start) * 100) - 1``.
The CTM is per utterance: ``<cut id> 1 <start> <duration> <word>`` with times relative to the cut
(Kaldi's utterance-level CTM).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from lhotse.supervision import AlignmentItem
from lhotse.utils import Pathlike

from punct.am.viterbi import WordSpan

FRAME_SHIFT = 0.01


def spans_to_items(
    spans: Sequence[WordSpan], cut_start: float, frame_shift: float = FRAME_SHIFT
) -> list[AlignmentItem]:
    return [
        AlignmentItem(symbol=s.word, start=round(cut_start + s.start * frame_shift, 8),
                      duration=round((s.end - s.start) * frame_shift, 8))
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
    """``{cut id: [(word, start, duration), ...]}``; a malformed line is an error naming the line."""
    out: dict = {}
    for line_number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        fields = line.split()
        if len(fields) < 5:
            raise ValueError(f"{path}:{line_number}: expected '<utt> <channel> <start> <dur> <word>', got {line!r}")
        try:
            out.setdefault(fields[0], []).append((fields[4], float(fields[2]), float(fields[3])))
        except ValueError as e:
            raise ValueError(f"{path}:{line_number}: {e}") from e
    return out
