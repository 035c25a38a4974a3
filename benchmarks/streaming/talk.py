"""One talk of a recipe's split punctuated two ways: segment by segment (as the recipe scores it) and as one whole
recording with one transcript (``punctuate`` long-form), scored on the same words.

The talk is a recording of the split's manifests
(``data/manifests/<prefix>_{recordings,supervisions}_<split>.jsonl.gz``); its segments are its supervisions (reference
words and marks: ``custom["words"/"punct"]``).  Segment mode gets one request per supervision (the recording's samples
between its start and end, the talk's speaker for CMVN); long form gets the whole recording (or its samples ``repeat``
times over, with the transcript repeated) and the segments' texts joined in time order.  Both are scored on the words of
the segments that segment mode punctuated. Used by ``tests/e2e/test_longform_recipe.py`` (the tiny recipe) and
``benchmarks/bench_longform.py`` (any recipe).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from punct.inference.inputs import Request
from punct.inference.outputs import Failure, Result
from punct.inference.pipeline import Punctuator
from punct.labels import PUNCT4, WordLabels


@dataclass
class ScoredTalk:
    """A recording of a recipe's split, its segments in time order and their reference marks: a talk to punctuate
    segment by segment and as one recording, and to score both ways (:func:`compare`)."""

    id: str
    audio_path: Path
    speaker: str
    segments: list  # lhotse SupervisionSegments, in time order
    labels: list[WordLabels]  # reference words and marks of each segment

    @property
    def duration(self) -> float:
        import soundfile as sf

        return sf.info(str(self.audio_path)).duration

    def load(self) -> tuple[np.ndarray, int]:
        import soundfile as sf

        samples, rate = sf.read(str(self.audio_path), dtype="float32", always_2d=True)
        return samples.mean(axis=1), rate

    def segment_requests(self) -> list[Request]:
        def loader(sup):
            def load():
                samples, rate = self.load()
                return samples[int(round(sup.start * rate)) : int(round(sup.end * rate))], rate

            return load

        return [
            Request(sup.id, loader(sup), sup.text, self.speaker, f"{self.audio_path}:{sup.start}-{sup.end}")
            for sup in self.segments
        ]

    def whole_request(self, repeat: int = 1) -> Request:
        """The recording (``repeat`` times over) with the segments' texts joined (as often)."""

        def load():
            samples, rate = self.load()
            return np.tile(samples, repeat), rate

        text = " ".join(sup.text for sup in self.segments)
        return Request(self.id, load, " ".join([text] * repeat), self.speaker, str(self.audio_path))


def recipe_prefix(recipe_dir: Path, split: str) -> str:
    """The name prefix of a recipe's stage-0 manifests of ``split``: that of its one
    ``data/manifests/<prefix>_recordings_<split>.jsonl.gz``."""
    suffix = f"_recordings_{split}.jsonl.gz"
    found = sorted(p.name for p in (Path(recipe_dir) / "data" / "manifests").glob(f"*{suffix}"))
    if len(found) != 1:
        raise ValueError(f"{recipe_dir}/data/manifests: {len(found)} manifests *{suffix} ({', '.join(found)}), not one")
    return found[0][: -len(suffix)]


def load_talks(recipe_dir: Path, split: str, prefix: str) -> list[ScoredTalk]:
    """The talks of a recipe's split, from its stage-0 manifests ``<prefix>_{recordings,supervisions}_<split>``
    (audio paths relative to the recipe)."""
    from lhotse import load_manifest

    manifests = Path(recipe_dir) / "data" / "manifests"
    recordings = load_manifest(manifests / f"{prefix}_recordings_{split}.jsonl.gz")
    supervisions = load_manifest(manifests / f"{prefix}_supervisions_{split}.jsonl.gz")
    talks = []
    for rec in recordings:
        sups = sorted((s for s in supervisions if s.recording_id == rec.id), key=lambda s: s.start)
        if not sups:
            continue
        path = Path(rec.sources[0].source)
        talks.append(
            ScoredTalk(
                rec.id,
                path if path.is_absolute() else Path(recipe_dir) / path,
                sups[0].speaker or rec.id,
                sups,
                [WordLabels.from_supervision(s, PUNCT4) for s in sups],
            )
        )
    return talks


@dataclass
class Comparison:
    talk: str
    duration: float
    segments: int
    segments_failed: int  # not punctuated by segment, or words unlike the reference's: not scored
    words: int
    f1_segments: dict[str, float]  # overall F1 (%) of ensemble, BERT, TDNN, segment by segment
    f1_long: dict[str, float]  # the same, the talk as one recording
    start_differences: list[int]  # per scored word: its start frame as one recording minus by segment
    labels: dict[str, list[int]]  # per scored word: "reference", "segments" and "long" (ensemble) class ids


def overall_f1(ref: Sequence[int], hyp: Sequence[int]) -> float:
    from punct.scoring.punct_scores import score

    return 100.0 * float(score(np.array(ref), np.array(hyp), PUNCT4.classes).overall["f1"])


@contextmanager
def long_form_mode(punctuator: Punctuator, mode: str) -> Iterator[Punctuator]:
    """The punctuator with ``long_form`` set to ``mode`` inside the block, restored after it."""
    saved = punctuator.long_form_config
    punctuator.long_form_config = replace(saved, long_form=mode)
    try:
        yield punctuator
    finally:
        punctuator.long_form_config = saved


def whole_talk(punctuator: Punctuator, talk: ScoredTalk) -> Result:
    """The talk punctuated as one recording with one transcript (RuntimeError if that fails)."""
    with long_form_mode(punctuator, "always"):
        whole = next(iter(punctuator.run([talk.whole_request()])))
    if isinstance(whole, Failure):
        raise RuntimeError(f"{talk.id} as one recording failed: {whole.message}")
    return whole


def compare(punctuator: Punctuator, talk: ScoredTalk) -> Comparison:
    """Overall F1 of the talk segment by segment and as one recording, on the words of the segments that
    segment mode punctuated (``long_form`` is set to ``never``, then ``always``, and restored)."""
    with long_form_mode(punctuator, "never"):
        by_segment = list(punctuator.run(talk.segment_requests()))
    whole = whole_talk(punctuator, talk)
    from punct.text.normalize import normalize

    said = [list(normalize(sup.text, punctuator.normalize_config).words) for sup in talk.segments]
    starts = np.cumsum([0] + [len(w) for w in said])
    if whole.words != [w for words in said for w in words]:
        raise RuntimeError(f"{talk.id}: the whole transcript's words differ from the segments' words")
    ref, seg_hyp, long_hyp = (
        [],
        {k: [] for k in ("ensemble", "BERT", "TDNN")},
        {k: [] for k in ("ensemble", "BERT", "TDNN")},
    )
    failed, moved = 0, []
    for k, (lab, out) in enumerate(zip(talk.labels, by_segment)):
        if not isinstance(out, Result) or out.words != list(lab.words):
            failed += 1  # not punctuated, or its labels were made with another normalisation (an older recipe)
            continue
        ref.extend(PUNCT4.encode(lab.punct))
        part = slice(int(starts[k]), int(starts[k + 1]))
        offset = int(round(talk.segments[k].start * 100))
        moved.extend(a - (b + offset) for (a, _), (b, _) in zip(whole.spans[part], out.spans))
        for hyp, res, rows in ((seg_hyp, out, slice(None)), (long_hyp, whole, part)):
            hyp["ensemble"].extend(res.p_ensemble[rows].argmax(1))
            hyp["BERT"].extend(res.p_bert[rows].argmax(1))
            hyp["TDNN"].extend(res.p_tdnn[rows].argmax(1))
    return Comparison(
        talk.id,
        whole.duration,
        len(talk.segments),
        failed,
        len(ref),
        {k: overall_f1(ref, v) for k, v in seg_hyp.items()},
        {k: overall_f1(ref, v) for k, v in long_hyp.items()},
        moved,
        {
            "reference": [int(x) for x in ref],
            "segments": [int(x) for x in seg_hyp["ensemble"]],
            "long": [int(x) for x in long_hyp["ensemble"]],
        },
    )
