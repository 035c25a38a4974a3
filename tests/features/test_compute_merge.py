"""Stage 1's merge (punct.features.compute.merge_jobs, punct.bin.compute_features --merge) streams: the merged
manifest and CMVN stats equal those of the merge that held the split (as it was before it streamed), it is written
atomically, and its memory does not grow with the split."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
from lhotse import CutSet, load_manifest
from lhotse.features.base import Features
from lhotse.features.io import LilcomChunkyWriter
from lhotse.utils import fastcopy

from punct.bin import compute_features
from punct.features.cmvn import SpeakerCmvn
from punct.features.compute import (
    accumulate_cmvn,
    cuts_path,
    load_job_cuts,
    load_split_cuts,
    merge_jobs,
    split_cut_ids,
)
from punct.utils.atomic import mark_done
from tests.features.test_compute import write_stage0_manifests
from tests.helpers.memory import peak_bytes


def job_parts(folder, nj: int, skip: set[str] = frozenset(), with_features: bool = True) -> list:
    """Stage 1's job outputs for ``folder``'s stage-0 manifests without audio: each job's share (but the cuts in
    ``skip``, as a job skips unreadable audio) with random 4-dim features in its own lilcom archive."""
    parts = []
    for job in range(1, nj + 1):
        part = compute_features.part_path(_args(folder, nj), "train", job)
        part.parent.mkdir(parents=True, exist_ok=True)
        cuts = [c for c in load_job_cuts(folder, "train", "mustc", job, nj) if c.id not in skip]
        if with_features:
            cuts = _with_random_features(cuts, folder / "fbank" / f"feats.{job}.lca", seed=job)
        CutSet.from_cuts(cuts).to_file(part)
        mark_done(part)
        parts.append(part)
    return parts


def _with_random_features(cuts: list, storage, seed: int) -> list:
    rng = np.random.default_rng(seed)
    out = []
    with LilcomChunkyWriter(storage) as writer:
        for cut in cuts:
            feats = rng.normal(size=(500, 4)).astype(np.float32)
            key = writer.write(cut.id, feats)
            features = Features(
                type="kaldi-mfcc",
                num_frames=500,
                num_features=4,
                frame_shift=0.01,
                sampling_rate=16000,
                start=cut.start,
                duration=cut.duration,
                storage_type=writer.name,
                storage_path=str(storage),
                storage_key=key,
                recording_id=cut.recording_id,
                channels=0,
            )
            out.append(fastcopy(cut, features=features))
    return out


def _args(folder, nj: int):
    return compute_features.get_parser().parse_args(
        ["--manifest-dir", str(folder), "--fbank-dir", str(folder / "fbank"), "--splits", "train"]
        + ["--prefix", "mustc", "--nj", str(nj)]
    )


def merge_as_before(parts, split_cuts: CutSet) -> list:
    """Stage 1's merge as it was before it streamed: every job's cuts held by id, then taken in the split's order."""
    by_id = {cut.id: cut for part in parts for cut in load_manifest(part)}
    return [by_id[c.id] for c in split_cuts if c.id in by_id]


def manifest_lines(path) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return f.read().splitlines()


@pytest.mark.parametrize("nj", [1, 3, 5])
def test_the_merged_manifest_and_cmvn_are_those_of_the_merge_that_held_the_split(tmp_path, nj):
    write_stage0_manifests(tmp_path, num_recordings=4, per_recording=5)
    parts = job_parts(tmp_path, nj, skip={"ted_1_2", "ted_3_0"})
    compute_features.main(["--merge"] + sum(([k, v] for k, v in _argv(tmp_path, nj)), []))
    before = merge_as_before(parts, load_split_cuts(tmp_path, "train", "mustc"))
    merged = cuts_path(tmp_path / "fbank", "train", "mustc")
    assert manifest_lines(merged) == [json.dumps(c.to_dict(), ensure_ascii=False) for c in before]
    assert len(before) == 18
    accumulate_cmvn(before).save(tmp_path / "cmvn_before.json")
    assert (tmp_path / "fbank" / "cmvn_train.json").read_text() == (tmp_path / "cmvn_before.json").read_text()
    assert SpeakerCmvn.load(tmp_path / "fbank" / "cmvn_train.json").stats["spk1"].count == 4 * 498


def _argv(folder, nj: int) -> list[tuple[str, str]]:
    return [
        ("--manifest-dir", str(folder)),
        ("--fbank-dir", str(folder / "fbank")),
        ("--splits", "train"),
        ("--prefix", "mustc"),
        ("--nj", str(nj)),
    ]


def test_parts_out_of_the_splits_order_fail_and_leave_no_manifest(tmp_path):
    write_stage0_manifests(tmp_path)
    parts = job_parts(tmp_path, 3, with_features=False)
    out = tmp_path / "merged.jsonl.gz"
    with pytest.raises(ValueError, match="not in the split's order"):
        merge_jobs(parts[::-1], split_cut_ids(tmp_path, "train", "mustc"), out)
    assert not out.exists() and not list(tmp_path.glob(".merged*"))
    assert merge_jobs(parts, split_cut_ids(tmp_path, "train", "mustc"), out) == 12


def merge_streaming(folder, parts) -> None:
    merge_jobs(parts, split_cut_ids(folder, "train", "mustc"), folder / "merged.jsonl.gz")


def merge_held(folder, parts) -> None:
    merged = merge_as_before(parts, load_split_cuts(folder, "train", "mustc"))
    CutSet.from_cuts(merged).to_file(folder / "before.jsonl.gz")


def test_the_merge_holds_no_more_of_a_split_four_times_larger(tmp_path):
    """tracemalloc's peak of the merge grows by less than 1 KB per cut from N to 4N cuts (gzip's buffers vary by
    ~0.25 MB with the text); that of the merge that held the split by more (the test's own check, below)."""
    peaks, held = [], []
    for num_recordings in (120, 480):
        folder = tmp_path / str(num_recordings)
        folder.mkdir()
        write_stage0_manifests(folder, num_recordings=num_recordings, per_recording=4)
        parts = job_parts(folder, 2, with_features=False)
        peaks.append(peak_bytes(merge_streaming, folder, parts))
        held.append(peak_bytes(merge_held, folder, parts))
    added = 4 * (480 - 120)
    assert (peaks[1] - peaks[0]) / added < 1024, peaks
    assert (held[1] - held[0]) / added > 1024, held  # what the check would see of the merge that held the split
