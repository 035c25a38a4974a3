"""The long recordings of a manifest recognised per job into words files, and their summary (egs/parczech stage 2).

Per recording (:func:`recognise_job`): ``<out-dir>/<recording id>.words.tsv`` (``word<TAB>start<TAB>end``,
:func:`punct.labels.write_recognised_words`) and ``<out-dir>/<recording id>.stats.json`` (chunks, merge cases, CPU
time, the model and decoder, and with a reference folder the word errors against its
``<recording id>.words.tsv``).  Both are written atomically, the words file last: a recording whose words file is
newer than the model (the AM checkpoint, or the newest file of a transformers CTC folder) and the LM, and whose
stats name that model and decoder, is done (:func:`is_recognised`) and skipped unless ``overwrite``.  The
recognition itself: :func:`punct.recognition.recogniser.recognise_recording`.  :func:`write_summary` sums every
recording's stats and says when the recogniser found too few words for the segment dataset (:func:`too_few_words`).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

import torch
from lhotse import RecordingSet

from punct.labels import read_recognised_words, write_recognised_words
from punct.recognition.beam_search import BeamSearchConfig, CtcBeamSearch
from punct.recognition.chunks import ChunkConfig
from punct.recognition.recogniser import ChunkRecogniser, TdnnRecogniser, recognise_recording, total_wer, word_errors
from punct.recognition.transformers_ctc import load_transformers_ctc
from punct.recognition.word_lm import read_word_lm
from punct.utils.atomic import atomic_write_text
from punct.utils.device import resolve_device
from punct.utils.jobs import check_job, job_share
from punct.utils.progress import progress

GREEDY = "greedy"


@dataclass
class RecognitionJob:
    """The recogniser (the recipe's AM in ``am_dir``, or a transformers CTC folder ``asr_model``), the decoder
    (greedy, or beam search with the word n-gram LM ``lm``), where the outputs go and which share of the
    recordings this job takes."""

    out_dir: Path
    am_dir: Path | None = None  # <am_dir>/<checkpoint> and mfcc.yaml
    asr_model: Path | None = None  # instead of am_dir: processor + model
    checkpoint: str = "best-valid-loss.pt"
    lm: Path | None = None  # ARPA; None: greedy decoding
    ref_dir: Path | None = None  # reference <recording id>.words.tsv for the word errors
    overwrite: bool = False  # recognise finished recordings again
    device: str = "auto"
    job: int = 1  # 1..nj
    nj: int = 1


def words_path(out_dir: Path, recording_id: str) -> Path:
    return out_dir / f"{recording_id}.words.tsv"


def stats_path(out_dir: Path, recording_id: str) -> Path:
    return out_dir / f"{recording_id}.stats.json"


def model_file(spec: RecognitionJob) -> Path:
    """The file whose change makes earlier outputs stale: the newest of the AM checkpoint (or the files of
    --asr-model) and the LM."""
    if spec.am_dir is not None:
        files = [spec.am_dir / spec.checkpoint]
    else:
        files = [p for p in spec.asr_model.glob("*") if p.is_file()] if spec.asr_model.is_dir() else []
        if not files:
            raise FileNotFoundError(
                f"{spec.asr_model}: no such folder, or it is empty; --asr-model needs a "
                "transformers CTC folder (processor + model)"
            )
    if spec.lm is not None:
        files.append(spec.lm)
    return max(files, key=lambda p: p.stat().st_mtime_ns)


def model_name(spec: RecognitionJob) -> str:
    return str((spec.am_dir / spec.checkpoint if spec.am_dir is not None else spec.asr_model).resolve())


def is_recognised(out_dir: Path, recording_id: str, model: Path, name: str, decoder: str) -> bool:
    """A words file made with this model and decoder: written after the model file last changed, and its stats
    name that model and decoder (the outputs of another recogniser in the same folder are not done)."""
    path = words_path(out_dir, recording_id)
    if not (path.is_file() and model.is_file() and path.stat().st_mtime_ns >= model.stat().st_mtime_ns):
        return False
    try:
        stats = json.loads(stats_path(out_dir, recording_id).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return stats.get("model") == name and stats.get("decoder", GREEDY) == decoder


def load_recogniser(spec: RecognitionJob, device: torch.device) -> ChunkRecogniser:
    if spec.am_dir is not None:
        return TdnnRecogniser.from_dir(spec.am_dir, spec.checkpoint, device)
    return load_transformers_ctc(spec.asr_model, device)


def decoder_name(spec: RecognitionJob, beam_config: BeamSearchConfig) -> str:
    if spec.lm is None:
        return GREEDY
    return f"{CtcBeamSearch.describe_config(beam_config)} with LM {spec.lm.resolve()}"


def recognise_job(
    spec: RecognitionJob, recordings: RecordingSet, config: ChunkConfig, beam_config: BeamSearchConfig
) -> dict[str, int]:
    """Job ``spec.job`` of ``spec.nj``: its share of ``recordings`` not yet recognised with this model and decoder
    into words and stats files; the counts of recognised and skipped recordings."""
    check_job(spec.job, spec.nj)
    if spec.lm is not None and not spec.lm.is_file():
        raise FileNotFoundError(f"{spec.lm}: no such file (--lm: a word n-gram LM in ARPA form)")
    device = resolve_device(spec.device)
    share = job_share([r for r in recordings], spec.job, spec.nj)
    model, name, decoder = model_file(spec), model_name(spec), decoder_name(spec, beam_config)
    todo = [r for r in share if spec.overwrite or not is_recognised(spec.out_dir, r.id, model, name, decoder)]
    logging.info("job %d/%d: %d recordings, %d done already", spec.job, spec.nj, len(share), len(share) - len(todo))
    if not todo:
        return {"recognised": 0, "skipped_done": len(share)}
    recogniser = load_recogniser(spec, device)
    logging.info("recogniser: %s; decoder: %s", recogniser.name, decoder)
    decode = None
    if spec.lm is not None:
        lm = read_word_lm(spec.lm)
        decode = CtcBeamSearch(recogniser.symbols, lm, beam_config).decode
        logging.info("%s: %d-gram LM, %d words", spec.lm, lm.order, len(lm.vocab))
    spec.out_dir.mkdir(parents=True, exist_ok=True)
    for rec in progress(todo, desc=f"recognise job {spec.job}", mininterval=10):
        words, counts = recognise_recording(rec, recogniser, config, decode)
        stats: dict[str, object] = {"recording": rec.id, "model": name, "decoder": decoder, **counts}
        if spec.ref_dir is not None:
            ref_path = words_path(spec.ref_dir, rec.id)
            if ref_path.is_file():
                stats["errors"] = word_errors(
                    [w.word for w in read_recognised_words(ref_path)], [w.word for w in words]
                )
            else:
                logging.warning("%s: no such file; no WER for %s", ref_path, rec.id)
        atomic_write_text(stats_path(spec.out_dir, rec.id), json.dumps(stats) + "\n")
        write_recognised_words(words_path(spec.out_dir, rec.id), words)
        logging.info("%s", json.dumps(stats))
    return {"recognised": len(todo), "skipped_done": len(share) - len(todo)}


def summarise(out_dir: Path, recordings: RecordingSet) -> tuple[str, dict[str, float]]:
    """The summary text and totals over the recordings' stats files; raises if a recording is not finished."""
    missing = [r.id for r in recordings if not words_path(out_dir, r.id).is_file()]
    if missing:
        raise FileNotFoundError(f"{out_dir}: {len(missing)} recordings not recognised yet, e.g. {missing[0]}")
    totals: dict[str, float] = {}
    errors: list[dict[str, int]] = []
    models, decoders = set(), set()
    for rec in recordings:
        path = stats_path(out_dir, rec.id)
        try:
            stats = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise ValueError(f"{path}: unreadable stats ({e})") from None
        for key in ("chunks", "words", "duration", "cpu_seconds", "matched", "discarded", "concatenated"):
            totals[key] = totals.get(key, 0) + stats.get(key, 0)
        if "errors" in stats:
            errors.append(stats["errors"])
        models.add(stats.get("model", "unknown (stats of an older version)"))
        decoders.add(stats.get("decoder", GREEDY))
    lines = [
        f"recordings {len(recordings)}, {totals['duration'] / 3600:.2f} h, {int(totals['chunks'])} chunks, "
        f"{int(totals['words'])} words, {totals['cpu_seconds']:.0f} CPU s",
        "chunk joins: " + ", ".join(f"{k} {int(totals[k])}" for k in ("matched", "discarded", "concatenated")),
        "recognised with " + ", ".join(sorted(models)),
        "decoded by " + ", ".join(sorted(decoders)),
    ]
    wer = total_wer(errors)
    if wer is not None:
        lines.append(f"long-recording {wer.summary().split(' %SER')[0]} ({len(errors)} recordings with a reference)")
    return "\n".join(lines) + "\n", totals


def too_few_words(summary_path: Path, words: float, seconds: float, min_words_per_minute: float) -> str | None:
    """Why the recognised words are too few for stage 3 (under ``min_words_per_minute``), with what helps."""
    if min_words_per_minute <= 0 or seconds <= 0 or words / (seconds / 60) >= min_words_per_minute:
        return None
    return (
        f"{summary_path}: {int(words)} words recognised in {seconds / 3600:.2f} h of audio "
        f"({words / (seconds / 60):.1f} per minute, fewer than --min-words-per-minute {min_words_per_minute:g}): "
        "the recogniser learned (almost) nothing, and stage 3 would find no segments.  What helps: an AM with a "
        "lower dev WER (stage 1: more --am-data, --am-init <trained AM>, more epochs), or a trained recogniser "
        "(--asr-model <transformers CTC folder>, --am-dir <trained AM>)."
    )


def write_summary(
    summary_path: Path, out_dir: Path, recordings: RecordingSet, min_words_per_minute: float
) -> str | None:
    """Every recording's stats in ``out_dir`` summed into ``summary_path`` (and the log); why the recognised
    words are too few for the segment dataset (:func:`too_few_words`), or None."""
    text, totals = summarise(out_dir, recordings)
    atomic_write_text(summary_path, text)
    logging.info("%s:\n%s", summary_path, text.strip())
    return too_few_words(summary_path, totals["words"], totals["duration"], min_words_per_minute)
