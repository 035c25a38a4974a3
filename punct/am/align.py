"""Forced alignment of a split's cuts with the trained acoustic model (stage 3).

Per job: the job's share of cuts -> ``<ali-dir>/<split>/cuts.JOB.jsonl.gz`` (aligned cuts),
``ctm.JOB``, ``failed.JOB`` (``<cut id> <reason>: <detail>``), then a ``.done`` marker.
Merge: ``data/fbank/<prefix>_cuts_<split>_ali.jsonl.gz``, ``<ali-dir>/<split>.ctm``,
``<ali-dir>/<split>.failed``, and the alignment-error summary when reference word times exist.
"""

from __future__ import annotations

import itertools
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from lhotse import CutSet, load_manifest_lazy
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
from punct.utils.jobs import in_order
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


def merge_alignments(
    ali_dir: Path, split: str, nj: int, order: Callable[[], Iterable[str]], cuts_out: Path
) -> dict[str, int]:
    """Merges the jobs' outputs (each job's share a contiguous run of the split) in the split's order: the jobs'
    aligned cuts, ctm lines and failures stream, job after job, into temporary files renamed into place when
    complete, the cuts and the ctm's cut ids checked to follow ``order()`` (the split's cut ids, read lazily;
    called once per check).  Holds one cut or line at a time and the counts; returns the counts by outcome."""
    jobs = [job_paths(ali_dir, split, job) for job in range(1, nj + 1)]
    for job, (c, _, _) in enumerate(jobs, 1):
        if not is_done(c):
            raise FileNotFoundError(f"{c}: alignment job {job} did not finish")
    counts: Counter = Counter(aligned=0)
    jobs_cuts = (cut for c, _, _ in jobs for cut in load_manifest_lazy(c))
    with atomic_path(cuts_out, suffix=".jsonl.gz") as tmp, CutSet.open_writer(tmp, overwrite=True) as writer:
        for cut in in_order(jobs_cuts, order(), f"{cuts_out}: the alignment jobs' cuts"):
            writer.write(cut)
            counts["aligned"] += 1
    ctm_out = Path(ali_dir) / f"{split}.ctm"
    with atomic_path(ctm_out) as tmp, open(tmp, "w", encoding="utf-8") as f:
        for _, lines in in_order(_cut_runs(ctm for _, ctm, _ in jobs), order(), f"{ctm_out}: the jobs' ctm", _run_id):
            f.writelines(lines)
    with atomic_path(Path(ali_dir) / f"{split}.failed") as tmp, open(tmp, "w", encoding="utf-8") as out:
        for line in _lines(failed for _, _, failed in jobs):
            out.write(line)
            counts[line.split(maxsplit=1)[1].split(":", 1)[0]] += 1
    return dict(counts)


def _lines(paths: Iterable[Path]) -> Iterator[str]:
    """The lines of ``paths``, one file after the other, read one at a time."""
    for path in paths:
        with open(path, encoding="utf-8") as f:
            yield from f


def _cut_runs(ctm_files: Iterable[Path]) -> Iterator[tuple[str, list[str]]]:
    """(cut id, its lines) of ctm files whose lines are grouped by cut, as :func:`align_job` writes them."""
    return ((cut_id, list(run)) for cut_id, run in itertools.groupby(_lines(ctm_files), _line_id))


def _line_id(line: str) -> str:
    return line.split(maxsplit=1)[0]


def _run_id(run: tuple[str, list[str]]) -> str:
    return run[0]


def hypothesis_starts(cuts: Iterable) -> Iterator[tuple[str, tuple[list[str], list[float]]]]:
    """``(cut id, (words, starts relative to the cut))`` of aligned cuts, one cut at a time."""
    for cut in cuts:
        words = aligned_words(cut.supervisions[0])
        if words is None:
            raise ValueError(f"cut {cut.id}: supervision has no alignment['word']")
        yield cut.id, ([w.word for w in words], [w.start - cut.start for w in words])
