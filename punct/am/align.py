"""Forced alignment of a split's cuts with the trained acoustic model (stage 3).

Per job: the job's share of cuts -> ``<ali-dir>/<split>/cuts.JOB.jsonl.gz`` (aligned cuts),
``ctm.JOB``, ``failed.JOB`` (``<cut id> <reason>: <detail>``), then a ``.done`` marker.
Merge: ``data/fbank/<prefix>_cuts_<split>_ali.jsonl.gz``, ``<ali-dir>/<split>.ctm``,
``<ali-dir>/<split>.failed``, and the alignment-error summary when reference word times exist.
"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

from lhotse import CutSet, load_manifest
from lhotse.utils import fastcopy

from punct.am.alignable import align_folded, alignment_symbols, fold_words
from punct.am.ctm import ctm_lines, spans_to_items
from punct.am.dataset import cut_words
from punct.am.infer import run_model
from punct.am.tokens import TokenTable
from punct.am.viterbi import AlignmentError
from punct.features.cmvn import SpeakerCmvn
from punct.features.compute import load_cut_features
from punct.labels import aligned_words
from punct.utils.atomic import atomic_path, atomic_write_text, is_done, mark_done
from punct.utils.progress import progress


def align_cut(model, cut, cmvn: SpeakerCmvn, tokens: TokenTable, device=None, counts: Counter | None = None):
    """The cut with ``alignment={"word": [...]}`` on its supervision, and its word spans (frames).

    The words are aligned as ``punctuate`` aligns them (``punct.am.alignable``: letters the AM's tokens lack
    folded, a word with none left placed between its neighbours); ``counts`` gets the folds and placed words."""
    folded = fold_words(cut_words(cut), alignment_symbols(tokens))
    kwargs = {} if device is None else {"device": device}
    log_probs = run_model(model, load_cut_features(cut, cmvn), **kwargs)
    spans = align_folded(log_probs, folded, tokens)
    if counts is not None:
        counts.update({f"fold {k}": n for k, n in folded.folds.items()})
        counts.update({f"left out {k!r}": n for k, n in folded.dropped.items()})
        counts["words placed, not aligned"] += len(folded.unaligned)
    sup = cut.supervisions[0]
    aligned_sup = fastcopy(sup, alignment={**(sup.alignment or {}), "word": spans_to_items(spans, cut.start)})
    return fastcopy(cut, supervisions=[aligned_sup]), spans


def job_paths(ali_dir: Path, split: str, job: int) -> tuple[Path, Path, Path]:
    d = Path(ali_dir) / split
    return d / f"cuts.{job}.jsonl.gz", d / f"ctm.{job}", d / f"failed.{job}"


def align_job(
    model, cuts: list, cmvn: SpeakerCmvn, tokens: TokenTable, ali_dir: Path, split: str, job: int, device=None
) -> Counter:
    cuts_out, ctm_out, failed_out = job_paths(ali_dir, split, job)
    aligned, ctm, failed = [], [], []
    counts: Counter = Counter()
    folds: Counter = Counter()
    for cut in progress(cuts, desc=f"align {split}.{job}", mininterval=10):
        try:
            new_cut, spans = align_cut(model, cut, cmvn, tokens, device, folds)
        except AlignmentError as e:
            failed.append(f"{cut.id} {e}\n")
            counts[e.reason] += 1
            continue
        aligned.append(new_cut)
        ctm.extend(ctm_lines(cut.id, spans))
        counts["aligned"] += 1
    with atomic_path(cuts_out, suffix=".jsonl.gz") as tmp:
        CutSet.from_cuts(aligned).to_file(tmp)
    atomic_write_text(ctm_out, "".join(ctm))
    atomic_write_text(failed_out, "".join(failed))
    mark_done(cuts_out)
    if +folds:
        logging.warning("%s job %d: aligned in the AM's letters (punct.am.alignable): %s", split, job, dict(+folds))
    return counts


def merge_alignments(ali_dir: Path, split: str, nj: int, order: list[str], cuts_out: Path) -> dict[str, int]:
    """Merges the jobs' outputs in ``order`` (the split's cut order); returns counts by outcome."""
    aligned, ctm_by_id, failed = {}, {}, []
    for job in range(1, nj + 1):
        c, m, f = job_paths(ali_dir, split, job)
        if not is_done(c):
            raise FileNotFoundError(f"{c}: alignment job {job} did not finish")
        for cut in load_manifest(c):
            aligned[cut.id] = cut
        for line in m.read_text(encoding="utf-8").splitlines(keepends=True):
            ctm_by_id.setdefault(line.split(maxsplit=1)[0], []).append(line)
        failed.extend(f.read_text(encoding="utf-8").splitlines(keepends=True))
    with atomic_path(cuts_out, suffix=".jsonl.gz") as tmp:
        CutSet.from_cuts([aligned[i] for i in order if i in aligned]).to_file(tmp)
    atomic_write_text(Path(ali_dir) / f"{split}.ctm", "".join(line for i in order for line in ctm_by_id.get(i, [])))
    atomic_write_text(Path(ali_dir) / f"{split}.failed", "".join(failed))
    counts = Counter(line.split(maxsplit=1)[1].split(":", 1)[0] for line in failed)
    counts["aligned"] = len(aligned)
    return dict(counts)


def hypothesis_starts(cuts: CutSet) -> dict[str, tuple[list[str], list[float]]]:
    """``{cut id: (words, starts relative to the cut)}`` from aligned cuts."""
    out = {}
    for cut in cuts:
        words = aligned_words(cut.supervisions[0])
        if words is None:
            raise ValueError(f"cut {cut.id}: supervision has no alignment['word']")
        out[cut.id] = ([w.word for w in words], [w.start - cut.start for w in words])
    return out
