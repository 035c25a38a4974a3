"""The segment dataset built from long recordings, per job, and merged (egs/parczech stage 3).

A job (:func:`build_job`) takes its share of the recordings: the recognised words of each
(``<recognised-dir>/<recording id>.words.tsv``) aligned to its official words, the per-word alignment table
(``align/<recording id>.tsv``) and the segments of :func:`punct.align.dataset.process_recording` in
``parts/segments.JOB.jsonl`` with their counts (``.counts.json``, with what the part was made from: a part made
from other inputs is made again).  The held-out parts (:func:`heldout_units`): the given speaker lists, else
``num_dev_speakers``/``num_test_speakers`` drawn with the seed, or with ``dev_share``/``test_share`` speakers
(``split_by: recording``: recordings) holding those shares of the hours.  The merge (:func:`merge_jobs`) writes
``<prefix>_{recordings,supervisions}_{train,dev,test}.jsonl.gz``, ``stats.md`` and ``stats.json``, and raises
:class:`TooFewSegments` (after writing them, before the done marker) when a split is under its minimum.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass
from pathlib import Path

from lhotse import RecordingSet, SupervisionSet, load_manifest, load_manifest_lazy

from punct.align.dataset import (
    ItnDatasetConfig,
    alignment_table,
    official_words,
    process_recording,
    segment_to_supervision,
    too_few_segments,
)
from punct.align.segments import (
    SPLITS,
    AlignedWord,
    Segment,
    SegmentCounts,
    choose_heldout_speakers,
    dataset_statistics,
    format_statistics,
    zero_distance_runs,
)
from punct.labels import read_recognised_words
from punct.training.heldout import draw_by_share
from punct.utils.atomic import atomic_path, atomic_write_text, is_done, mark_done
from punct.utils.jobs import job_share
from punct.utils.progress import progress


@dataclass
class SegmentBuild:
    """Where a build of the segment dataset reads and writes, and the share of the recordings a job takes."""

    manifest_dir: Path  # stage 0: <prefix>_{recordings,supervisions}_all.jsonl.gz
    prefix: str  # of the manifests read and written
    out_dir: Path
    recognised_dir: Path | None = None  # <recording id>.words.tsv (a job needs it, the merge not)
    dev_speakers: Path | None = None  # one speaker id a line; default: drawn
    test_speakers: Path | None = None
    job: int = 1  # 1..nj
    nj: int = 1
    overwrite: bool = False  # redo finished job parts


class TooFewSegments(RuntimeError):
    """A split of the segment dataset is under its configured minimum."""


def _read_list(path: Path) -> list[str]:
    return sorted({ln.strip() for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()})


def speaker_hours(supervisions) -> dict[str, float]:
    """Each speaker's estimated hours: every recording's duration shared by its speakers' official word counts."""
    hours: dict[str, float] = {}
    for sup in supervisions:
        speakers = sup.custom["speakers"]
        for speaker in set(speakers):
            hours[speaker] = hours.get(speaker, 0.0) + sup.duration / 3600 * speakers.count(speaker) / len(speakers)
    return hours


def heldout_units(
    build: SegmentBuild, cfg: ItnDatasetConfig, supervisions: SupervisionSet
) -> tuple[set[str], set[str]]:
    """Dev and test units (speakers, or recordings with ``split_by: recording``) from the given lists, else drawn
    with the seed: a count of speakers, or a share of the hours (``dev_share``, ``test_share``).  Written to
    ``{dev,test}_{speakers,recordings}.txt``."""
    unit = cfg.split_by
    if build.dev_speakers or build.test_speakers:
        if unit != "speaker":
            raise ValueError("--dev-speakers/--test-speakers name speakers: they need split_by: speaker")
        dev = _read_list(build.dev_speakers) if build.dev_speakers else []
        test = _read_list(build.test_speakers) if build.test_speakers else []
        both = set(dev) & set(test)
        if both:
            raise ValueError(f"speakers in both dev and test lists: {sorted(both)[:5]}")
    elif cfg.by_share:
        hours = (
            speaker_hours(supervisions)
            if unit == "speaker"
            else {sup.recording_id: sup.duration / 3600 for sup in supervisions}
        )
        test, dev = draw_by_share(hours, [cfg.test_share, cfg.dev_share], cfg.seed, cfg.max_heldout_share, unit)
        total = sum(hours.values())
        logging.info(
            "held out by hours: test %d %ss (%.1f%% of %.3f h), dev %d (%.1f%%)",
            len(test),
            unit,
            100 * sum(hours[u] for u in test) / total,
            total,
            len(dev),
            100 * sum(hours[u] for u in dev) / total,
        )
    else:
        all_speakers = sorted({s for sup in supervisions for s in sup.custom["speakers"]})
        dev, test = choose_heldout_speakers(all_speakers, cfg.num_dev_speakers, cfg.num_test_speakers, cfg.seed)
    atomic_write_text(build.out_dir / f"dev_{unit}s.txt", "".join(f"{s}\n" for s in dev))
    atomic_write_text(build.out_dir / f"test_{unit}s.txt", "".join(f"{s}\n" for s in test))
    return set(dev), set(test)


def recording_heldout(cfg: ItnDatasetConfig, sup, dev: set[str], test: set[str]) -> tuple[set[str], set[str]]:
    """The held-out speaker sets build_segments reads for one recording: with ``split_by: recording`` every
    speaker of a dev (test) recording, none of a training one; else the held-out speakers themselves."""
    if cfg.split_by == "speaker":
        return dev, test
    speakers = set(sup.custom["speakers"])
    return (speakers if sup.recording_id in dev else set()), (speakers if sup.recording_id in test else set())


# Config values that do not change a job part (the merge's minimums), or change it only through the held-out
# units, which job_inputs stores: a part made before they existed is still up to date.
NOT_PART_INPUTS = (
    "split_by",
    "dev_share",
    "test_share",
    "max_heldout_share",
    "min_train_segments",
    "min_dev_segments",
    "min_test_segments",
)


def job_inputs(build: SegmentBuild, cfg: ItnDatasetConfig, sups, dev: set[str], test: set[str]) -> dict:
    """What a job part is made from, stored with it: a part made from other recognised words (a
    re-recognition, or --words-from switched), another config or other held-out speakers is redone."""
    words_files = [build.recognised_dir / f"{sup.recording_id}.words.tsv" for sup in sups]
    inputs = {
        "recognised_dir": str(build.recognised_dir.resolve()),
        "words_mtime": max((f.stat().st_mtime for f in words_files if f.exists()), default=0.0),
        "config": {k: v for k, v in dataclasses.asdict(cfg).items() if k not in NOT_PART_INPUTS},
        f"dev_{cfg.split_by}s": sorted(dev),
        f"test_{cfg.split_by}s": sorted(test),
    }
    return json.loads(json.dumps(inputs))  # as read back from the counts file


def _stored_inputs(part: Path) -> dict | None:
    counts = part.with_suffix(".counts.json")
    return json.loads(counts.read_text()).get("inputs") if counts.exists() else None


def _made_from(part: Path, inputs: dict) -> bool:
    """Whether a finished part was made from ``inputs`` (then it is kept), logged either way."""
    if _stored_inputs(part) == inputs:
        logging.info("%s is done; --overwrite redoes it", part)
        return True
    logging.info("%s was made from other recognised words, config or speakers; building it again", part)
    return False


def build_job(build: SegmentBuild, cfg: ItnDatasetConfig) -> None:
    """Job ``build.job`` of ``build.nj``: its share of the recordings aligned and cut into segments, written to
    ``parts/segments.JOB.jsonl`` with its counts (a part made from the same inputs is kept unless ``overwrite``);
    the held-out units and every recording's alignment table are written on the way."""
    part = build.out_dir / "parts" / f"segments.{build.job}.jsonl"
    if build.recognised_dir is None:
        raise ValueError("--recognised-dir is required unless --merge")
    supervisions = load_manifest(build.manifest_dir / f"{build.prefix}_supervisions_all.jsonl.gz")
    dev, test = heldout_units(build, cfg, supervisions)
    sups = job_share(sorted(supervisions, key=lambda s: s.recording_id), build.job, build.nj)
    inputs = job_inputs(build, cfg, sups, dev, test)
    if is_done(part) and not build.overwrite and _made_from(part, inputs):
        return
    counts = SegmentCounts()
    totals = {
        "recordings": 0,
        "missing_recognised": 0,
        "official_words": 0,
        "recognised_words": 0,
        "exact_words": 0,
        "exact_seconds": 0.0,
        "official_seconds": 0.0,
    }
    lines = []
    for sup in progress(sups, desc=f"job {build.job}", mininterval=10):
        words_file = build.recognised_dir / f"{sup.recording_id}.words.tsv"
        if not words_file.exists():
            logging.warning("%s: no recognised words; recording skipped", words_file)
            totals["missing_recognised"] += 1
            continue
        rec_words = read_recognised_words(words_file)
        off = official_words(sup)
        rows, segments = process_recording(
            sup.recording_id, rec_words, off, *recording_heldout(cfg, sup, dev, test), cfg, counts
        )
        atomic_write_text(build.out_dir / "align" / f"{sup.recording_id}.tsv", alignment_table(rows, segments))
        runs = zero_distance_runs(rows)
        totals["recordings"] += 1
        totals["official_words"] += len(off)
        totals["recognised_words"] += len(rec_words)
        totals["exact_words"] += sum(len(r) for r in runs)
        totals["exact_seconds"] += sum(w.end - w.start for r in runs for w in r)
        totals["official_seconds"] += sup.duration
        lines += [json.dumps(s.to_dict(), ensure_ascii=False) + "\n" for s in segments]
        logging.info(
            "%s: %d official, %d recognised, %d exact words, %d segments",
            sup.recording_id,
            len(off),
            len(rec_words),
            sum(len(r) for r in runs),
            len(segments),
        )
    atomic_write_text(part, "".join(lines))
    atomic_write_text(
        part.with_suffix(".counts.json"),
        json.dumps({"totals": totals, "filters": dataclasses.asdict(counts), "inputs": inputs}, indent=1) + "\n",
    )
    mark_done(part)


def segment_from_dict(d: dict) -> Segment:
    """The :class:`Segment` of a job part's line (``Segment.to_dict``); the recognised words are not stored."""
    words = [
        AlignedWord(i, s, None, w, spk, d["start"] + a, d["start"] + b, p, c, 0)
        for i, s, w, spk, a, b, p, c in zip(
            d["word_idx"],
            d["sentence_idx"],
            d["words"],
            d["word_speakers"],
            d["starts"],
            d["ends"],
            d["punct"],
            d["case"],
        )
    ]
    seg = Segment(d["recording_id"], int(d["id"].rsplit("_", 1)[1]), d["split"], words)
    return seg


def sum_job_counts(parts: list[Path]) -> tuple[dict[str, float], dict[str, float]]:
    """The alignment totals and the filter counts of all job parts (their ``.counts.json``), summed."""
    totals: dict[str, float] = {}
    filters: dict[str, float] = {}
    for p in parts:
        c = json.loads(p.with_suffix(".counts.json").read_text())
        for k, v in c["totals"].items():
            totals[k] = totals.get(k, 0) + v
        for k, v in c["filters"].items():
            if isinstance(v, (int, float)):
                filters[k] = filters.get(k, 0) + v
    return totals, filters


def write_split_manifests(
    build: SegmentBuild, dicts: list[dict], recordings: RecordingSet, languages: dict[str, str | None]
) -> list[Segment]:
    """<prefix>_{recordings,supervisions}_<split>.jsonl.gz of every split from the jobs' segment lines
    ``dicts``; returns the segments of all splits."""
    segments = []
    for split in SPLITS:
        ds = [d for d in dicts if d["split"] == split]
        segs = [segment_from_dict(d) for d in ds]
        segments += segs
        sups = SupervisionSet.from_segments(segment_to_supervision(s, languages.get(s.recording_id)) for s in segs)
        rec_ids = sorted({s.recording_id for s in segs})
        recs = RecordingSet.from_recordings(recordings[r] for r in rec_ids)
        for name, manifest in (("recordings", recs), ("supervisions", sups)):
            with atomic_path(build.out_dir / f"{build.prefix}_{name}_{split}.jsonl.gz", suffix=".jsonl.gz") as tmp:
                manifest.to_file(tmp)
        logging.info("%s: %d segments from %d recordings", split, len(segs), len(rec_ids))
    return segments


def stats_report(totals: dict[str, float], filters: dict[str, float], stats: dict[str, dict]) -> str:
    """stats.md: the alignment before and after (thesis Table 3.3), the filter counts and the splits' statistics."""
    before_after = (
        "| Statistics | Before | After (zero edit distance) |\n|---|---:|---:|\n"
        f"| Recordings | {int(totals.get('recordings', 0))} | {int(totals.get('recordings', 0))} |\n"
        f"| Words | {int(totals.get('official_words', 0))} | {int(totals.get('exact_words', 0))} |\n"
        f"| Hours (sum of word durations after) | {totals.get('official_seconds', 0) / 3600:.3f} "
        f"| {totals.get('exact_seconds', 0) / 3600:.3f} |\n"
    )
    filter_lines = "".join(f"| {k} | {int(v)} |\n" for k, v in filters.items())
    return (
        "# Segment dataset (long recordings aligned to official transcripts)\n\n## Alignment (thesis Table 3.3)\n\n"
        + before_after
        + "\n## Filters (counts)\n\n| filter | count |\n|---|---:|\n"
        + filter_lines
        + "\n## Splits (Table 3.4) and labels in % of words (Table 3.5)\n\n"
        + format_statistics(stats)
    )


def merge_jobs(build: SegmentBuild, cfg: ItnDatasetConfig) -> None:
    """The job parts -> manifests per split, stats.md (also printed) and stats.json; TooFewSegments (after writing
    them, before the done marker) when a split is under its minimum."""
    parts = [build.out_dir / "parts" / f"segments.{j}.jsonl" for j in range(1, build.nj + 1)]
    missing = [str(p) for p in parts if not is_done(p)]
    if missing:
        raise FileNotFoundError(f"unfinished job parts: {missing}")
    dicts = [json.loads(ln) for p in parts for ln in p.read_text(encoding="utf-8").splitlines() if ln.strip()]
    totals, filters = sum_job_counts(parts)
    recordings = load_manifest(build.manifest_dir / f"{build.prefix}_recordings_all.jsonl.gz")
    languages = {
        s.recording_id: s.language
        for s in load_manifest_lazy(build.manifest_dir / f"{build.prefix}_supervisions_all.jsonl.gz")
    }
    stats = dataset_statistics(write_split_manifests(build, dicts, recordings, languages))
    report = stats_report(totals, filters, stats)
    atomic_write_text(build.out_dir / "stats.md", report)
    plain = {
        k: {
            kk: (sorted(vv) if isinstance(vv, set) else dict(vv) if hasattr(vv, "items") else vv)
            for kk, vv in v.items()
        }
        for k, v in stats.items()
    }
    atomic_write_text(
        build.out_dir / "stats.json",
        json.dumps({"totals": totals, "filters": filters, "splits": plain}, indent=1, ensure_ascii=False) + "\n",
    )
    print(report, end="")
    problem = too_few_segments(
        build.out_dir,
        {k: v["segments"] for k, v in stats.items()},
        cfg,
        int(totals.get("official_words", 0)),
        int(totals.get("exact_words", 0)),
    )
    if problem:
        raise TooFewSegments(problem)
    mark_done(build.out_dir)
