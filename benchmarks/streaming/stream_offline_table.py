"""The README table of what costs a stream its points against stage 8 at unbounded latency, from the JSON files of
``benchmarks/bench_stream_offline.py`` (one per trained run: its dev talks streamed under each combination of
``benchmarks.streaming.measure.offline_factor_rows``), over seeds, one block of rows per label (the corpus' prosody)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from punct.results.punct_systems import system_key
from punct.results.tables import markdown_table, mean_sd_cell

KIND = "stream_offline"
MODELS = ("BERT", "TDNN", "ensemble")
_SYSTEMS = {"BERT": "BERT only", "TDNN": "TDNN", "ensemble": "Ensemble"}


def stage8_f1(results: dict, split: str) -> dict[str, float]:
    """Overall F1 (%) per model of a stage-8 results.json's split (the ensemble at the alpha chosen on dev)."""
    systems = results["systems"][split]
    return {m: 100.0 * systems[system_key(systems, name)]["overall"]["f1"] for m, name in _SYSTEMS.items()}


def read_runs(paths: Sequence[Path]) -> dict[str, dict[int, dict]]:
    """{label: {seed: result}} of bench_stream_offline.py files; a (label, seed) given twice is an error."""
    runs: dict[str, dict[int, dict]] = {}
    for path in paths:
        result = json.loads(Path(path).read_text(encoding="utf-8"))
        if result.get("kind") != KIND:
            raise ValueError(f"{path}: not a bench_stream_offline.py result (kind {result.get('kind')!r})")
        by_seed = runs.setdefault(result["label"], {})
        if result["seed"] in by_seed:
            raise ValueError(f"{path}: label {result['label']!r} seed {result['seed']} is already in another file")
        by_seed[result["seed"]] = result
    return runs


def _row_key(row: dict) -> tuple[str, str, str]:
    return row["times"], row["cuts"], row["cmvn"]


def offline_rows(by_seed: dict[int, dict]) -> list[list[str]]:
    """One label's rows: each combination's F1 per model (mean ± sd over seeds) and the TDNN's and ensemble's
    paired difference from stage 8, then stage 8's own row."""
    seeds = sorted(by_seed)
    keys = [_row_key(row) for row in by_seed[seeds[0]]["rows"]]
    f1 = {s: {_row_key(row): row["f1"] for row in by_seed[s]["rows"]} for s in seeds}
    stage8 = {s: by_seed[s]["stage8"] for s in seeds}
    rows = []
    for key in keys:
        cells = [mean_sd_cell([f1[s][key][m] for s in seeds]) for m in MODELS]
        cells += [mean_sd_cell([f1[s][key][m] - stage8[s][m] for s in seeds]) for m in ("TDNN", "ensemble")]
        rows.append([*key, *cells])
    rows.append(["stage 8", "", "", *(mean_sd_cell([stage8[s][m] for s in seeds]) for m in MODELS), "", ""])
    return rows


def stream_offline_tables(paths: Sequence[Path], command: str = "") -> str:
    """The README region: per label a table of the eight combinations and stage 8, and a caption."""
    runs = read_runs(paths)
    header = ["word times", "stretches", "CMVN stats", "BERT", "TDNN", "ensemble", "TDNN − stage 8"]
    header.append("ensemble − stage 8")
    parts = []
    for label, by_seed in runs.items():
        split = {r["split"] for r in by_seed.values()}
        if len(split) != 1:
            raise ValueError(f"label {label!r}: results of several splits {sorted(split)}")
        parts.append(
            f"**{label}** ({split.pop()}, seeds {', '.join(map(str, sorted(by_seed)))}): overall F1 (%)\n\n"
            + "\n".join(markdown_table(header, offline_rows(by_seed), 3))
            + "\n"
        )
    caption = (
        "Mean ± sd over seeds (sample sd); a difference column is paired by seed. Every talk streamed at latency "
        "inf. Word times: aligning the whole talk's transcript (a recogniser's CTM without errors) or stage 3's "
        "forced alignment of each segment; stretches: between pauses (`--pause-split`) or the talk's segments "
        "(`--segments`); CMVN stats: the training speakers' merged (`--cmvn data/fbank/cmvn_train.json`) or the "
        "talk's speaker's from stage 1 (`--cmvn data/fbank/cmvn_dev.json --cmvn-speaker SPK`)."
    )
    if command:
        caption += f" Made with `{command}`."
    return "\n".join(parts) + "\n" + caption + "\n"


def render(paths: Sequence[Path], command: str = "") -> str:
    """The region of bench_stream_offline.py's files (:func:`stream_offline_tables`)."""
    return stream_offline_tables(paths, command)
