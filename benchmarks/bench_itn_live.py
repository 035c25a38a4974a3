"""Live captions of egs/parczech's stage-4 models on whole speeches: every held-out speaker's turn of a trained run's
recordings streamed through ``punctuate_itn``'s streamer with the recogniser's words, 0.1 s of audio at a time, and
scored against the official transcript (``benchmarks.itn_streaming.speeches``), per latency and pause split, with the
real-time factor on one thread.

Writes benchmarks/results/itn_live.json and, with --results-dir, its committed copy DIR/NAME.json with the run's
seed; files of several seeds (and models) make the ``live`` region of egs/parczech/RESULTS/regions.yaml
(``benchmarks.itn_streaming.live_table``: the pause split chosen on dev at latency inf, then F1 against latency at it)
and, with ``--plot-from``, the plot:

  . ./path.sh
  python benchmarks/bench_itn_live.py --recipe-dir /work/runs/parczech_seed2026 --splits dev --latencies inf \\
      --pause-splits 0.3 0.5 1 2 --results-dir egs/parczech/RESULTS/live/seed2026 --name pause_dev
  python benchmarks/bench_itn_live.py --plot-from egs/parczech/RESULTS/live/seed*/*.json \\
      --plot egs/parczech/RESULTS/live/live_dev.png
"""

from __future__ import annotations

import math
import os
import shlex
import sys
from pathlib import Path

from common import itn_bench_parser, machine, print_table, save_result

LATENCIES = (0.5, 1.0, math.inf)
MODELS = ("text", "mm", "mm_pe")


def split_speeches(split: str, margin: float) -> list:
    """The speeches of a split's speakers (data/segments/<split>_speakers.txt) in every alignment table."""
    from benchmarks.itn_streaming.speeches import read_speeches

    speakers_file = Path("data/segments") / f"{split}_speakers.txt"
    if not speakers_file.is_file():
        raise SystemExit(f"no such file: {speakers_file} (stage 3 writes it)")
    speakers = set(speakers_file.read_text(encoding="utf-8").split())
    tables = sorted(Path("data/segments/align").glob("*.tsv"))
    return [speech for table in tables for speech in read_speeches(table, speakers, margin)]


def speech_audio(recording, speech):
    """A speech's samples (mono), to the end of the recording at most."""
    duration = min(speech.end, recording.duration) - speech.start
    return recording.load_audio(offset=speech.start, duration=duration).mean(axis=0)


def measure_model(name: str, splits: dict, audio: dict, latencies: list[float], rules: list) -> tuple[int, dict]:
    """(the model's seed, per split its rows: one per pause split and latency)."""
    from benchmarks.itn_streaming.speeches import LiveScore, stream_speech
    from punct.models.cross_attention.checkpoint import load_model

    model, cfg, kind = load_model(Path("exp") / name / "best-valid-f1.pt")
    out = {}
    for split, speeches in splits.items():
        rows = []
        for rule in rules:
            for latency in latencies:
                live = LiveScore()
                for speech in speeches:
                    live.add(speech, *stream_speech(model, cfg, speech, audio[speech.id], latency, rule))
                rows.append({**live.row(latency, rule), "sound_encoder": cfg.sound_encoder, "kind": kind})
                print(f"{name} {split} pause split {rule.pause_split} latency {latency}: {rows[-1]}", flush=True)
        out[split] = rows
    return cfg.seed, out


def measure(recipe_dir: Path, models: list[str], splits: list[str], latencies: list[float], args) -> dict:
    import torch
    from lhotse import RecordingSet

    from benchmarks.itn_streaming.live_table import KIND
    from benchmarks.itn_streaming.speeches import CHUNK_SECONDS
    from punct.inference.itn_stream import SegmentRule

    torch.set_num_threads(1)
    recipe_dir = recipe_dir.resolve()
    os.chdir(recipe_dir)  # the manifests name the audio relative to the recipe
    recordings = RecordingSet.from_file("data/manifests/parczech_recordings_all.jsonl.gz").to_eager()
    speeches = {split: split_speeches(split, args.margin) for split in splits}
    audio = {s.id: speech_audio(recordings[s.recording_id], s) for in_split in speeches.values() for s in in_split}
    rules = [SegmentRule(p, args.max_segment) for p in args.pause_splits or [SegmentRule.pause_split]]
    result = {"kind": KIND, "machine": machine(), "recipe_dir": str(recipe_dir), "chunk_seconds": CHUNK_SECONDS}
    result |= {"margin": args.margin, "splits": {split: {} for split in splits}}
    for name in models:
        seed, rows = measure_model(name, speeches, audio, latencies, rules)
        if result.setdefault("seed", seed) != seed:
            raise ValueError(f"exp/{name}: seed {seed}, but another model of the run has seed {result['seed']}")
        for split, split_rows in rows.items():
            result["splits"][split][name] = split_rows
    return result


def main() -> None:
    parser = itn_bench_parser(__doc__, "itn_live", MODELS, LATENCIES)
    parser.add_argument(
        "--pause-splits",
        type=float,
        nargs="+",
        default=None,
        help="punctuate_itn --pause-split values (default: its own default)",
    )
    parser.add_argument("--max-segment", type=float, default=15.0, help="punctuate_itn --max-segment")
    parser.add_argument("--margin", type=float, default=0.5, help="seconds of audio before and after a speech")
    args = parser.parse_args()
    if args.plot_from is not None:
        from benchmarks.itn_streaming.live_table import plot_live

        if args.plot is None:
            raise SystemExit("--plot-from needs --plot OUT.png")
        plot_live(args.plot_from, "dev", args.plot)
        return
    if args.recipe_dir is None:
        raise SystemExit("give --recipe-dir (measure) or --plot-from (plot)")
    command = shlex.join(["python", "benchmarks/bench_itn_live.py", *sys.argv[1:]])
    results_dir = args.results_dir.resolve() if args.results_dir is not None else None
    result = measure(args.recipe_dir, args.models, args.splits, args.latencies, args)
    result["command"] = command
    save_result("itn_live", result, results_dir, args.name)
    rows = [
        [split, model, row["pause_split"], row["latency"], round(row["punct_overall_f1"], 1),
         round(row["cap_f1"], 1), round(row["final_share"], 2), round(row["rtf_cpu"], 4)]
        for split, by_model in result["splits"].items()
        for model, model_rows in by_model.items()
        for row in model_rows
    ]  # fmt: skip
    print_table(
        "live captions on whole speeches: punctuation overall F1 and [cap] F1 (%)",
        ["split", "model", "pause split s", "latency s", "overall F1", "cap F1", "final", "RTF (CPU)"],
        rows,
    )


if __name__ == "__main__":
    main()
