"""Alignment quality against reference word start times (the mini corpus' synthesizer times).

Reference: ``<corpus_dir>/data/<split>/txt/<split>.word_times.jsonl``, one JSON per line
``{"id": ..., "words": [...], "starts": [seconds from the segment start]}``.  A segment is compared
when its reference words equal the aligned words; otherwise it is counted as a mismatch.  A
``null`` reference start is ignored.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
from lhotse.utils import Pathlike


def read_word_times(path: Pathlike) -> dict[str, tuple[list[str], list[float | None]]]:
    out = {}
    with open(path, encoding="utf-8") as f:
        for line_number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                words, starts = list(item["words"]), list(item["starts"])
                key = item["id"]
            except (ValueError, KeyError, TypeError) as e:
                raise ValueError(f"{path}:{line_number}: not a word-times record ({e})") from e
            if len(words) != len(starts):
                raise ValueError(f"{path}:{line_number}: {len(words)} words but {len(starts)} starts")
            out[key] = (words, starts)
    return out


WordStarts = tuple[Sequence[str], Sequence[float]]  # a segment's aligned words and their start times


def start_errors(
    reference: dict[str, tuple[list[str], list[float | None]]],
    hypothesis: Mapping[str, WordStarts] | Iterable[tuple[str, WordStarts]],
) -> tuple[np.ndarray, dict[str, int]]:
    """Signed errors (hyp - ref, seconds) of every comparable word start, and counts of what was compared.
    ``hypothesis``: a mapping, or its (key, (words, starts)) items read one at a time (a lazy manifest's); the
    errors are kept as 8-byte floats, the reference as given."""
    errors = array("d")
    counts = {"segments": 0, "words": 0, "word_mismatch": 0, "no_reference": 0}
    items = hypothesis.items() if isinstance(hypothesis, Mapping) else hypothesis
    for key, (words, starts) in items:
        if key not in reference:
            counts["no_reference"] += 1
            continue
        ref_words, ref_starts = reference[key]
        if list(ref_words) != list(words):
            counts["word_mismatch"] += 1
            continue
        counts["segments"] += 1
        for h, r in zip(starts, ref_starts):
            if r is None:
                continue
            errors.append(h - r)
            counts["words"] += 1
    return np.asarray(errors, dtype=np.float64), counts


def summarise(errors: np.ndarray, counts: dict[str, int]) -> dict[str, float]:
    """Median / 90th percentile of |error| in ms, mean signed error, share within 50 ms and 100 ms."""
    summary: dict[str, float] = dict(counts)
    if errors.size:
        abs_ms = np.abs(errors) * 1000
        summary.update(
            {
                "median_abs_ms": float(np.median(abs_ms)),
                "p90_abs_ms": float(np.percentile(abs_ms, 90)),
                "mean_signed_ms": float(errors.mean() * 1000),
                "within_50ms": float((abs_ms <= 50).mean()),
                "within_100ms": float((abs_ms <= 100).mean()),
            }
        )
    return summary


def format_summary(split: str, summary: dict[str, float]) -> str:
    if "median_abs_ms" not in summary:
        return f"{split}: no comparable words ({summary})\n"
    return (
        f"{split}: word-start error vs synthesizer times over {summary['words']} words "
        f"in {summary['segments']} segments: median {summary['median_abs_ms']:.1f} ms, "
        f"p90 {summary['p90_abs_ms']:.1f} ms, mean signed {summary['mean_signed_ms']:+.1f} ms, "
        f"<=50 ms {100 * summary['within_50ms']:.1f}%, <=100 ms {100 * summary['within_100ms']:.1f}% "
        f"(skipped: {summary['word_mismatch']} word mismatches, {summary['no_reference']} without reference)\n"
    )
