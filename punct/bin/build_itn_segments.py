"""Stage 3 of egs/parczech: align recognised and official words, build the segment dataset.

  # per job (JOB=1..nj): alignment tables and segments of a share of the recordings
  python -m punct.bin.build_itn_segments --config conf/segments.yaml \\
      --manifest-dir data/manifests --recognised-dir exp/asr/words --out-dir data/segments --job 1 --nj 2
  # then once: lhotse manifests per split and the statistics tables
  python -m punct.bin.build_itn_segments --merge --manifest-dir data/manifests --out-dir data/segments --nj 2

Inputs: ``<prefix>_{recordings,supervisions}_all.jsonl.gz`` of stage 0 and
``<recognised-dir>/<recording id>.words.tsv`` (word, start, end).  Outputs in ``--out-dir``:
``align/<recording id>.tsv`` (the thesis' per-word alignment table), ``parts/segments.JOB.jsonl``,
``{dev,test}_speakers.txt`` (``{dev,test}_recordings.txt`` with ``split_by: recording``), and after ``--merge``:
``<prefix>_{recordings,supervisions}_{train,dev,test}.jsonl.gz``, ``stats.md`` and ``stats.json``.

Held-out parts: the given speaker lists, else ``num_dev_speakers``/``num_test_speakers`` drawn with the seed, or with
``dev_share``/``test_share`` speakers (``--split-by recording``: recordings) holding those shares of the hours.  The
merge exits 1, after writing ``stats.md``, when a split has fewer segments than ``min_{train,dev,test}_segments``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
from pathlib import Path

from lhotse import RecordingSet, SupervisionSet, load_manifest, load_manifest_lazy

from punct.align.dataset import (
    ItnDatasetConfig,
    alignment_table,
    official_words,
    process_recording,
    read_recognised_words,
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
from punct.training.heldout import draw_by_share
from punct.utils.atomic import atomic_path, atomic_write_text, is_done, mark_done
from punct.utils.config import add_config_arguments, config_from_args
from punct.utils.jobs import add_job_arguments, job_share
from punct.utils.logging import log_config, setup_logging
from punct.utils.progress import progress


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--manifest-dir", type=Path, required=True, help="stage 0 output (<prefix>_*_all.jsonl.gz)")
    parser.add_argument("--prefix", required=True, help="manifest name prefix, input and output (e.g. parczech)")
    parser.add_argument(
        "--recognised-dir", type=Path, default=None, help="folder of <recording id>.words.tsv (needed unless --merge)"
    )
    parser.add_argument("--out-dir", type=Path, required=True, help="output folder (data/segments)")
    parser.add_argument("--config", type=Path, default=None, help="YAML with ItnDatasetConfig values")
    parser.add_argument(
        "--dev-speakers",
        type=Path,
        default=None,
        help="file with one dev speaker id per line (default: draw num_dev_speakers with the seed)",
    )
    parser.add_argument(
        "--test-speakers",
        type=Path,
        default=None,
        help="file with one test speaker id per line (default: draw num_test_speakers with the seed)",
    )
    parser.add_argument("--merge", action="store_true", help="merge the --nj job parts into manifests and statistics")
    parser.add_argument("--overwrite", action="store_true", help="redo finished job parts")
    parser.add_argument("--log-file", type=Path, default=None, help="also log to this file")
    add_job_arguments(parser)
    add_config_arguments(parser, ItnDatasetConfig)
    return parser


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


def heldout_units(args, cfg: ItnDatasetConfig, supervisions: SupervisionSet) -> tuple[set[str], set[str]]:
    """Dev and test units (speakers, or recordings with ``split_by: recording``) from the given lists, else drawn
    with the seed: a count of speakers, or a share of the hours (``dev_share``, ``test_share``).  Written to
    ``{dev,test}_{speakers,recordings}.txt``."""
    unit = cfg.split_by
    if args.dev_speakers or args.test_speakers:
        if unit != "speaker":
            raise ValueError("--dev-speakers/--test-speakers name speakers: they need split_by: speaker")
        dev = _read_list(args.dev_speakers) if args.dev_speakers else []
        test = _read_list(args.test_speakers) if args.test_speakers else []
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
    atomic_write_text(args.out_dir / f"dev_{unit}s.txt", "".join(f"{s}\n" for s in dev))
    atomic_write_text(args.out_dir / f"test_{unit}s.txt", "".join(f"{s}\n" for s in test))
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


def job_inputs(args, cfg: ItnDatasetConfig, sups, dev: set[str], test: set[str]) -> dict:
    """What a job part is made from, stored with it: a part made from other recognised words (a
    re-recognition, or --words-from switched), another config or other held-out speakers is redone."""
    words_files = [args.recognised_dir / f"{sup.recording_id}.words.tsv" for sup in sups]
    inputs = {
        "recognised_dir": str(args.recognised_dir.resolve()),
        "words_mtime": max((f.stat().st_mtime for f in words_files if f.exists()), default=0.0),
        "config": {k: v for k, v in dataclasses.asdict(cfg).items() if k not in NOT_PART_INPUTS},
        f"dev_{cfg.split_by}s": sorted(dev),
        f"test_{cfg.split_by}s": sorted(test),
    }
    return json.loads(json.dumps(inputs))  # as read back from the counts file


def _stored_inputs(part: Path) -> dict | None:
    counts = part.with_suffix(".counts.json")
    return json.loads(counts.read_text()).get("inputs") if counts.exists() else None


def run_job(args, cfg: ItnDatasetConfig) -> None:
    part = args.out_dir / "parts" / f"segments.{args.job}.jsonl"
    if args.recognised_dir is None:
        raise ValueError("--recognised-dir is required unless --merge")
    supervisions = load_manifest(args.manifest_dir / f"{args.prefix}_supervisions_all.jsonl.gz")
    dev, test = heldout_units(args, cfg, supervisions)
    sups = job_share(sorted(supervisions, key=lambda s: s.recording_id), args.job, args.nj)
    inputs = job_inputs(args, cfg, sups, dev, test)
    if is_done(part) and not args.overwrite:
        if _stored_inputs(part) == inputs:
            logging.info("%s is done; --overwrite redoes it", part)
            return
        logging.info("%s was made from other recognised words, config or speakers; building it again", part)
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
    for sup in progress(sups, desc=f"job {args.job}", mininterval=10):
        words_file = args.recognised_dir / f"{sup.recording_id}.words.tsv"
        if not words_file.exists():
            logging.warning("%s: no recognised words; recording skipped", words_file)
            totals["missing_recognised"] += 1
            continue
        rec_words = read_recognised_words(words_file)
        off = official_words(sup)
        rows, segments = process_recording(
            sup.recording_id, rec_words, off, *recording_heldout(cfg, sup, dev, test), cfg, counts
        )
        atomic_write_text(args.out_dir / "align" / f"{sup.recording_id}.tsv", alignment_table(rows, segments))
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


def _segment_from_dict(d: dict) -> Segment:
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
    args, dicts: list[dict], recordings: RecordingSet, languages: dict[str, str | None]
) -> list[Segment]:
    """<prefix>_{recordings,supervisions}_<split>.jsonl.gz of every split from the jobs' segment lines
    ``dicts``; returns the segments of all splits."""
    segments = []
    for split in SPLITS:
        ds = [d for d in dicts if d["split"] == split]
        segs = [_segment_from_dict(d) for d in ds]
        segments += segs
        sups = SupervisionSet.from_segments(segment_to_supervision(s, languages.get(s.recording_id)) for s in segs)
        rec_ids = sorted({s.recording_id for s in segs})
        recs = RecordingSet.from_recordings(recordings[r] for r in rec_ids)
        for name, manifest in (("recordings", recs), ("supervisions", sups)):
            with atomic_path(args.out_dir / f"{args.prefix}_{name}_{split}.jsonl.gz", suffix=".jsonl.gz") as tmp:
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


def merge(args, cfg: ItnDatasetConfig) -> None:
    """The job parts -> manifests per split, stats.md and stats.json; TooFewSegments (after writing them, before the
    done marker) when a split is under its minimum."""
    parts = [args.out_dir / "parts" / f"segments.{j}.jsonl" for j in range(1, args.nj + 1)]
    missing = [str(p) for p in parts if not is_done(p)]
    if missing:
        raise FileNotFoundError(f"unfinished job parts: {missing}")
    dicts = [json.loads(ln) for p in parts for ln in p.read_text(encoding="utf-8").splitlines() if ln.strip()]
    totals, filters = sum_job_counts(parts)
    recordings = load_manifest(args.manifest_dir / f"{args.prefix}_recordings_all.jsonl.gz")
    languages = {
        s.recording_id: s.language
        for s in load_manifest_lazy(args.manifest_dir / f"{args.prefix}_supervisions_all.jsonl.gz")
    }
    stats = dataset_statistics(write_split_manifests(args, dicts, recordings, languages))
    report = stats_report(totals, filters, stats)
    atomic_write_text(args.out_dir / "stats.md", report)
    plain = {
        k: {
            kk: (sorted(vv) if isinstance(vv, set) else dict(vv) if hasattr(vv, "items") else vv)
            for kk, vv in v.items()
        }
        for k, v in stats.items()
    }
    atomic_write_text(
        args.out_dir / "stats.json",
        json.dumps({"totals": totals, "filters": filters, "splits": plain}, indent=1, ensure_ascii=False) + "\n",
    )
    print(report, end="")
    problem = too_few_segments(
        args.out_dir,
        {k: v["segments"] for k, v in stats.items()},
        cfg,
        int(totals.get("official_words", 0)),
        int(totals.get("exact_words", 0)),
    )
    if problem:
        raise TooFewSegments(problem)
    mark_done(args.out_dir)


def main(argv: list[str] | None = None) -> int:
    args = get_parser().parse_args(argv)
    setup_logging(args.log_file)
    cfg = config_from_args(ItnDatasetConfig, args, args.config)
    log_config({"args": vars(args), "config": dataclasses.asdict(cfg)})
    args.out_dir.mkdir(parents=True, exist_ok=True)
    if args.merge:
        try:
            merge(args, cfg)
        except TooFewSegments as e:
            logging.error("%s", e)
            return 1
    else:
        run_job(args, cfg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
