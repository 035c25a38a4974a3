"""Stage 1 helpers: manifests -> one cut per supervision -> features in per-job lilcom archives.

Layout under ``data/fbank`` (``<p>`` = the corpus' manifest prefix):
  ``split/<p>_cuts_<split>.<job>.jsonl.gz``   per-job cut manifests (+ ``.done``)
  ``feats_<split>/feats.<job>.lca``            per-job lilcom chunky archive
  ``<p>_cuts_<split>.jsonl.gz``               merged cuts (manifest order), cut id = supervision id
  ``cmvn_<split>.json``                        per-speaker CMVN stats (see cmvn.py)

Each cut covers exactly one supervision, and its features were computed on exactly the cut's
``N`` samples with Kaldi's ``snip_edges=True``: ``S = 1 + (N - 400) // 160`` frames, frame ``t``
covering ``[t * 0.01, t * 0.01 + 0.025)`` s of the cut (the project's frame convention, which the
acoustic model, CTC alignment and embedding dumps rely on).

Two frame counts, one stored matrix.  lhotse requires ``num_frames == round(duration / frame_shift)``
(``lhotse.utils.compute_num_frames``: ``L = (N + 80) // 160`` at 16 kHz / 10 ms, exactly; ``qa.py``
allows no tolerance for features, and ``cut.load_features()`` forgives only one frame), while
``S = L - 2`` for every ``N >= 400``.  So :func:`compute_job` stores the ``S`` frames followed by
``L - S`` copies of the last one, and declares ``num_frames = L`` and ``duration = N / sr``: the
manifests pass ``lhotse.qa.validate_cut_set(cuts, read_data=True)``, and lhotse's own loaders
(``cut.load_features()``, ``lhotse.dataset.collation.collate_features``) get ``cut.num_frames = L``
rows whose frame ``t < S`` is the project's frame ``t`` (padding at the end keeps frame ``t`` at
``t * 0.01`` s, as ``punct.am.ctm`` assumes).  The project's readers take the first ``S`` rows:
use :func:`load_cut_features` for the matrix and :func:`feature_frames` for its length, never
``cut.features.num_frames`` or ``cut.num_frames``.  Manifests written before the padding (``num_frames
= S``, not lhotse-valid) load the same way: :func:`feature_frames` is ``min(num_frames, S)``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
from lhotse import CutSet, RecordingSet, SupervisionSet, load_manifest, load_manifest_lazy
from lhotse.features.base import Features
from lhotse.features.io import LilcomChunkyWriter
from lhotse.utils import Pathlike, compute_num_frames_from_samples, compute_num_samples

from punct.features.cmvn import SpeakerCmvn
from punct.features.extractor import expected_num_frames
from punct.utils.atomic import atomic_path, is_done, mark_done
from punct.utils.jobs import in_order, job_share_lazy
from punct.utils.progress import progress

# lilcom's accuracy in the stage-1 archives: values are stored as multiples of 2 ** LILCOM_TICK_POWER.
LILCOM_TICK_POWER = -5


def manifest_paths(manifest_dir: Pathlike, split: str, prefix: str) -> tuple[Path, Path]:
    manifest_dir = Path(manifest_dir)
    return (
        manifest_dir / f"{prefix}_recordings_{split}.jsonl.gz",
        manifest_dir / f"{prefix}_supervisions_{split}.jsonl.gz",
    )


def cuts_path(fbank_dir: Pathlike, split: str, prefix: str, suffix: str = "") -> Path:
    """``data/fbank/<prefix>_cuts_<split><suffix>.jsonl.gz`` (suffix ``_ali`` after stage 3)."""
    return Path(fbank_dir) / f"{prefix}_cuts_{split}{suffix}.jsonl.gz"


def supervision_cuts(recordings: RecordingSet, supervisions: SupervisionSet) -> CutSet:
    """One cut per supervision spanning exactly that supervision; cut id = supervision id."""
    cuts = CutSet.from_manifests(recordings=recordings, supervisions=supervisions)
    trimmed = cuts.trim_to_supervisions(keep_overlapping=False)
    out = []
    for cut in trimmed:
        if len(cut.supervisions) != 1:
            raise ValueError(f"cut {cut.id} has {len(cut.supervisions)} supervisions after trimming, expected 1")
        out.append(cut.with_id(cut.supervisions[0].id))
    ids = [c.id for c in out]
    if len(set(ids)) != len(ids):
        raise ValueError("supervision ids are not unique: cut ids would collide")
    order = {s.id: i for i, s in enumerate(supervisions)}
    out.sort(key=lambda c: order[c.id])
    return CutSet.from_cuts(out)


def load_split_cuts(manifest_dir: Pathlike, split: str, prefix: str) -> CutSet:
    rec_path, sup_path = manifest_paths(manifest_dir, split, prefix)
    for path in (rec_path, sup_path):
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such manifest (run stage 0)")
    return supervision_cuts(load_manifest(rec_path), load_manifest(sup_path))


def load_job_cuts(manifest_dir: Pathlike, split: str, prefix: str, job: int, nj: int) -> CutSet:
    """Job ``job`` of ``nj``'s share of :func:`load_split_cuts` (one cut per supervision, in supervision order),
    made from only its supervisions and their recordings: the manifests are read lazily, the rest not kept."""
    rec_path, sup_path = manifest_paths(manifest_dir, split, prefix)
    for path in (rec_path, sup_path):
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such manifest (run stage 0)")
    supervisions = job_share_lazy(load_manifest_lazy(sup_path), job, nj)
    if not supervisions:
        return CutSet.from_cuts([])
    needed = {s.recording_id for s in supervisions}
    recordings = RecordingSet.from_recordings(r for r in load_manifest_lazy(rec_path) if r.id in needed)
    return supervision_cuts(recordings, SupervisionSet.from_segments(supervisions))


def compute_job(cuts: CutSet, extractor, storage_path: Pathlike, output_manifest: Pathlike) -> dict[str, int]:
    """Features of ``cuts`` into one lilcom archive; writes the cuts with features attached.

    A cut whose audio cannot be read or is shorter than one window is skipped, logged and counted.
    Returns counts ``{"done": n, "skipped": m}``.
    """
    storage_path = Path(storage_path)
    storage_path.parent.mkdir(parents=True, exist_ok=True)
    if storage_path.suffix != ".lca":
        raise ValueError(f"{storage_path}: lilcom chunky archives must end in .lca")
    tmp_storage = storage_path.with_name(storage_path.stem + ".tmp.lca")
    tmp_storage.unlink(missing_ok=True)
    with_feats: list = []
    skipped = 0
    with LilcomChunkyWriter(tmp_storage, tick_power=LILCOM_TICK_POWER) as writer:
        for cut in progress(cuts, desc=f"features {storage_path.name}", mininterval=5):
            try:
                audio = cut.load_audio()
            except Exception as e:  # unreadable audio: a counted skip, not a crash
                logging.warning("skip %s: cannot load audio: %s", cut.id, e)
                skipped += 1
                continue
            sr = cut.sampling_rate
            feats = extractor.extract(audio, sr)
            want = expected_num_frames(audio.shape[-1], sr)
            if feats.shape[0] == 0:
                logging.warning("skip %s: %d samples is shorter than one window", cut.id, audio.shape[-1])
                skipped += 1
                continue
            if feats.shape[0] != want:
                raise RuntimeError(f"{cut.id}: {feats.shape[0]} frames, frame convention says {want}")
            stored = pad_to_lhotse_frames(feats, audio.shape[-1], extractor.frame_shift, sr)
            key = writer.write(cut.id, stored)
            features = Features(
                type=extractor.name,
                num_frames=stored.shape[0],
                num_features=stored.shape[1],
                frame_shift=extractor.frame_shift,
                sampling_rate=sr,
                start=cut.start,
                duration=round(audio.shape[-1] / sr, 8),
                storage_type=writer.name,
                storage_path=str(storage_path),
                storage_key=key,
                recording_id=cut.recording_id,
                channels=cut.channel,
            )
            with_feats.append(_with_features(cut, features))
    tmp_storage.replace(storage_path)
    with atomic_path(output_manifest, suffix=".jsonl.gz") as tmp:
        CutSet.from_cuts(with_feats).to_file(tmp)
    mark_done(output_manifest)
    return {"done": len(with_feats), "skipped": skipped}


def _with_features(cut, features: Features):
    from lhotse.utils import fastcopy

    return fastcopy(cut, features=features)


def pad_to_lhotse_frames(feats: np.ndarray, num_samples: int, frame_shift: float, sampling_rate: int) -> np.ndarray:
    """``feats`` (S, D) followed by copies of its last row up to lhotse's frame count of ``num_samples``."""
    target = compute_num_frames_from_samples(num_samples, frame_shift, sampling_rate)
    if target < feats.shape[0] or feats.shape[0] == 0:
        raise ValueError(f"cannot pad {feats.shape[0]} frames to lhotse's {target} for {num_samples} samples")
    return np.concatenate([feats, np.repeat(feats[-1:], target - feats.shape[0], axis=0)])


def stored_features(feats: np.ndarray, num_samples: int, frame_shift: float, sampling_rate: int) -> np.ndarray:
    """The (S, D) matrix that stage 1 stores for ``feats`` (S frames of ``num_samples`` samples) and
    :func:`load_cut_features` reads back: lilcom-quantised as :func:`compute_job` writes it (the stored
    padding rows included, since lilcom compresses in chunks of frames).  The acoustic model was trained
    on these values, so ``punctuate`` computes the same."""
    import lilcom
    from lhotse.features.compression import lilcom_compress_chunked

    stored = pad_to_lhotse_frames(feats, num_samples, frame_shift, sampling_rate)
    chunks = lilcom_compress_chunked(stored, tick_power=LILCOM_TICK_POWER, chunk_size=LilcomChunkyWriter.CHUNK_SIZE)
    return np.concatenate([lilcom.decompress(c) for c in chunks])[: feats.shape[0]].astype(np.float32)


def feature_frames(cut) -> int:
    """The cut's frame count in the project's convention (``snip_edges=True``), ``S`` of the module doc.

    The rows of ``cut.features`` beyond it are lhotse padding (manifests since the padding) or
    absent (older manifests, whose ``num_frames`` is already ``S``).
    """
    f = cut.features
    if f is None:
        raise ValueError(f"cut {cut.id} has no features (run stage 1)")
    num_samples = compute_num_samples(f.duration, f.sampling_rate)
    snip = expected_num_frames(num_samples, f.sampling_rate, frame_shift_ms=f.frame_shift * 1000)
    return min(f.num_frames, snip)


def load_cut_features(cut, cmvn: SpeakerCmvn | None = None) -> np.ndarray:
    """The cut's (S, D) float32 feature matrix (S = :func:`feature_frames`), with the speaker's CMVN
    applied when given."""
    if cut.features is None:
        raise ValueError(f"cut {cut.id} has no features (run stage 1)")
    feats = cut.features.load()[: feature_frames(cut)]
    if cmvn is not None:
        speaker = cut.supervisions[0].speaker if cut.supervisions else None
        feats = cmvn.apply(speaker, feats)
    return np.asarray(feats, dtype=np.float32)


def split_cut_ids(manifest_dir: Pathlike, split: str, prefix: str) -> Iterator[str]:
    """The ids of :func:`load_split_cuts`, in its order (one cut per supervision, cut id = supervision id, in
    supervision order), read from the supervisions manifest lazily, one supervision at a time."""
    _, sup_path = manifest_paths(manifest_dir, split, prefix)
    if not sup_path.is_file():
        raise FileNotFoundError(f"{sup_path}: no such manifest (run stage 0)")
    return (supervision.id for supervision in load_manifest_lazy(sup_path))


def merge_jobs(parts: list[Path], order: Iterable[str], output: Pathlike) -> int:
    """Concatenates per-job cut manifests (each job's share a contiguous run of the split) into ``output``, checked
    to follow ``order`` (the split's cut ids, :func:`split_cut_ids`): the split's order, skipped cuts left out.
    The cuts stream from the parts into a temporary file renamed to ``output`` when complete (one cut held at a
    time); returns how many were written."""
    for part in parts:
        if not is_done(part):
            raise FileNotFoundError(f"{part}: job output missing or unfinished")
    jobs_cuts = (cut for part in parts for cut in load_manifest_lazy(part))
    written = 0
    with atomic_path(output, suffix=".jsonl.gz") as tmp, CutSet.open_writer(tmp, overwrite=True) as writer:
        for cut in in_order(jobs_cuts, order, f"{output}: the jobs' cuts"):
            writer.write(cut)
            written += 1
    return written


def accumulate_cmvn(cuts: Iterable, norm_vars: bool = False) -> SpeakerCmvn:
    """Per-speaker CMVN stats of ``cuts``' features, read one cut at a time (a lazy manifest is never held)."""
    pairs = ((c.supervisions[0].speaker, load_cut_features(c)) for c in progress(cuts, desc="cmvn", mininterval=5))
    return SpeakerCmvn.accumulate(pairs, norm_vars=norm_vars)
