"""Stage 3's merge (punct.am.align.merge_alignments, punct.bin.align --merge) streams: the aligned cuts, ctm,
failures, counts and alignment error equal those of the merge that held every aligned cut (as it was before it
streamed), jobs out of the split's order fail without an output, and its memory does not grow with the split."""

from __future__ import annotations

import functools
import gzip
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from lhotse import CutSet, load_manifest
from lhotse.supervision import AlignmentItem
from lhotse.utils import fastcopy

import punct.am.align as stage3
from punct.am.align_quality import read_word_times, start_errors, summarise
from punct.bin import align as align_bin
from punct.features.compute import cuts_path
from punct.io.jsonl import record_ids
from punct.utils.atomic import atomic_write_text, is_done, mark_done
from punct.utils.jobs import job_share
from tests.am.test_align import fake_am, word_cut
from tests.am.test_alignable import ENGLISH, peaked_log_probs
from tests.helpers.memory import peak_bytes

WORDS = ["the", "cat", "sat", "on", "a", "mat"]


def split_cuts(n: int) -> list:
    """``n`` cuts of two or three words; every fifth of only a word the English AM cannot align."""
    cuts = []
    for i in range(n):
        words = [WORDS[(i + k) % len(WORDS)] for k in range(2 + i % 2)] if i % 5 != 3 else ["日本"]
        cuts.append(word_cut(f"talk_{i:04d}", words, start=float(i)))
    return cuts


def aligned_jobs(monkeypatch, tmp_path: Path, cuts: list, nj: int) -> Path:
    """Stage 3's jobs (each a contiguous share) over ``cuts`` with an AM that says their words; the split's
    stage-1 manifest in ``tmp_path/fbank``.  Returns the alignment folder."""
    said = {c.id: " ".join(w for w in c.supervisions[0].custom["words"] if w.isascii()) or "a" for c in cuts}
    fake_am(monkeypatch, {cut_id: peaked_log_probs(ENGLISH, text) for cut_id, text in said.items()})
    (tmp_path / "fbank").mkdir()
    CutSet.from_cuts(cuts).to_file(cuts_path(tmp_path / "fbank", "test", "p"))
    ali_dir = tmp_path / "ali"
    for job in range(1, nj + 1):
        stage3.align_job(None, job_share(cuts, job, nj), None, ENGLISH, ali_dir, "test", job)
    return ali_dir


def merge_as_before(ali_dir: Path, split: str, nj: int, order: list[str], cuts_out: Path) -> dict[str, int]:
    """Stage 3's merge as it was before it streamed: every aligned cut and ctm line held by id, then written in
    ``order``."""
    aligned, ctm_by_id, failed = {}, {}, []
    for job in range(1, nj + 1):
        c, m, f = stage3.job_paths(ali_dir, split, job)
        for cut in load_manifest(c):
            aligned[cut.id] = cut
        for line in m.read_text(encoding="utf-8").splitlines(keepends=True):
            ctm_by_id.setdefault(line.split(maxsplit=1)[0], []).append(line)
        failed.extend(f.read_text(encoding="utf-8").splitlines(keepends=True))
    CutSet.from_cuts([aligned[i] for i in order if i in aligned]).to_file(cuts_out)
    atomic_write_text(ali_dir / f"{split}.ctm.before", "".join(line for i in order for line in ctm_by_id.get(i, [])))
    atomic_write_text(ali_dir / f"{split}.failed.before", "".join(failed))
    counts = Counter(line.split(maxsplit=1)[1].split(":", 1)[0] for line in failed)
    counts["aligned"] = len(aligned)
    return dict(counts)


def gz_text(path: Path) -> str:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return f.read()


@pytest.mark.parametrize("nj", [1, 3, 7])
def test_the_merge_writes_what_the_merge_that_held_the_cuts_wrote(monkeypatch, tmp_path, nj):
    cuts = split_cuts(23)
    ali_dir = aligned_jobs(monkeypatch, tmp_path, cuts, nj)
    ids = [c.id for c in cuts]
    before = merge_as_before(ali_dir, "test", nj, ids, tmp_path / "before.jsonl.gz")
    out = tmp_path / "merged.jsonl.gz"
    counts = stage3.merge_alignments(ali_dir, "test", nj, lambda: iter(ids), out)
    assert counts == before == {"unknown character": 4, "aligned": 19}
    assert gz_text(out) == gz_text(tmp_path / "before.jsonl.gz") and len(load_manifest(out)) == 19
    for name in ("test.ctm", "test.failed"):
        assert (ali_dir / name).read_text() == (ali_dir / f"{name}.before").read_text() != ""


def test_the_entry_points_merge_measures_the_alignment_error_as_before(monkeypatch, tmp_path):
    """punct.bin.align --merge (the split's order from the stage-1 manifest, read lazily) writes the aligned cuts
    and the alignment error that the merge holding the cuts measured."""
    cuts = split_cuts(12)
    ali_dir = aligned_jobs(monkeypatch, tmp_path, cuts, 2)
    times = tmp_path / "corpus" / "test" / "txt" / "test.word_times.jsonl"
    times.parent.mkdir(parents=True)
    rng = np.random.default_rng(0)
    lines = []
    for c in cuts:
        words = c.supervisions[0].custom["words"]
        lines.append(json.dumps({"id": c.id, "words": words, "starts": sorted(rng.uniform(0, 1.5, len(words)))}))
    times.write_text("\n".join(lines) + "\n")
    argv = ["--fbank-dir", str(tmp_path / "fbank"), "--am-dir", str(tmp_path / "am"), "--ali-dir", str(ali_dir)]
    argv += ["--splits", "test", "--prefix", "p", "--nj", "2", "--merge", "--max-fail", "0.5"]
    assert align_bin.main(argv + ["--word-times-dir", str(tmp_path / "corpus")]) == 0
    out = cuts_path(tmp_path / "fbank", "test", "p", "_ali")
    merge_as_before(ali_dir, "test", 2, [c.id for c in cuts], tmp_path / "before.jsonl.gz")
    assert gz_text(out) == gz_text(tmp_path / "before.jsonl.gz")
    held = stage3.hypothesis_starts(load_manifest(tmp_path / "before.jsonl.gz"))
    summary = summarise(*start_errors(read_word_times(times), dict(held)))
    assert json.loads((ali_dir / "test.ali_error.json").read_text()) == summary and summary["segments"] == 10


def test_jobs_out_of_the_splits_order_fail_and_leave_no_output(monkeypatch, tmp_path):
    cuts = split_cuts(9)
    ali_dir = aligned_jobs(monkeypatch, tmp_path, cuts, 3)
    out = tmp_path / "merged.jsonl.gz"
    with pytest.raises(ValueError, match="not in the split's order"):
        stage3.merge_alignments(ali_dir, "test", 3, lambda: iter([c.id for c in cuts][::-1]), out)
    assert not out.exists() and not (ali_dir / "test.ctm").exists() and not list(tmp_path.glob(".merged*"))
    with pytest.raises(ValueError, match="'talk_0005' is not in the split"):  # a job of another split
        stage3.merge_alignments(ali_dir, "test", 3, lambda: iter([c.id for c in cuts][:5]), out)


def written_jobs(folder: Path, n: int, nj: int) -> functools.partial:
    """Aligned job outputs of ``n`` cuts written directly (three aligned words each, every tenth failed), and the
    split's order read lazily from its stage-1 manifest as the entry point reads it."""
    cuts = split_cuts(n)
    manifest = cuts_path(folder / "fbank", "test", "p")
    manifest.parent.mkdir(parents=True)
    CutSet.from_cuts(cuts).to_file(manifest)
    for job in range(1, nj + 1):
        c, m, f = stage3.job_paths(folder / "ali", "test", job)
        share = job_share(cuts, job, nj)
        ok = [cut for i, cut in enumerate(share) if i % 10]
        items = [AlignmentItem(w, cut.start + 0.3 * k, 0.2) for cut in ok[:1] for k, w in enumerate(WORDS[:3])]
        aligned = [fastcopy(cut, supervisions=[fastcopy(cut.supervisions[0], alignment={"word": items})]) for cut in ok]
        c.parent.mkdir(parents=True, exist_ok=True)
        CutSet.from_cuts(aligned).to_file(c)
        m.write_text("".join(f"{cut.id} 1 0.30 0.20 {w}\n" for cut in ok for w in WORDS[:3]))
        f.write_text("".join(f"{cut.id} no path: none\n" for i, cut in enumerate(share) if not i % 10))
        mark_done(c)
    return functools.partial(record_ids, manifest, "manifest")


def merge_held(folder: Path, order: functools.partial) -> None:
    merge_as_before(folder / "ali", "test", 2, list(order()), folder / "before.jsonl.gz")


def test_the_merge_holds_no_more_of_a_split_four_times_larger(tmp_path):
    """tracemalloc's peak of the merge grows by less than 1 KB per cut from N to 4N cuts (gzip's buffers vary by
    ~0.25 MB with the text); the merge that held the split grows by more (the test's own check, below)."""
    peaks, held = [], []
    for n in (500, 2000):
        folder = tmp_path / str(n)
        order = written_jobs(folder, n, 2)
        out = folder / "merged.jsonl.gz"
        peaks.append(peak_bytes(stage3.merge_alignments, folder / "ali", "test", 2, order, out))
        held.append(peak_bytes(merge_held, folder, order))
    assert (peaks[1] - peaks[0]) / 1500 < 1024, peaks
    assert (held[1] - held[0]) / 1500 > 1024, held  # what the check would see of the merge that held the split


def test_jobs_of_another_nj_that_leave_cuts_out_stop_the_entry_points_merge(monkeypatch, tmp_path, capfd):
    """Jobs 1-2 of 3 kept from an interrupted run, merged as --nj 2: in the split's order, but a third of the cuts
    is neither aligned nor failed; the merge stops and writes no done marker."""
    cuts = split_cuts(12)
    ali_dir = aligned_jobs(monkeypatch, tmp_path, cuts, 3)
    argv = ["--fbank-dir", str(tmp_path / "fbank"), "--am-dir", str(tmp_path / "am"), "--ali-dir", str(ali_dir)]
    assert align_bin.main(argv + ["--splits", "test", "--prefix", "p", "--nj", "2", "--merge", "--max-fail", "1"]) == 1
    assert "outputs cover 8 of the split's 12 cuts" in capfd.readouterr().err
    assert not is_done(cuts_path(tmp_path / "fbank", "test", "p", "_ali"))
