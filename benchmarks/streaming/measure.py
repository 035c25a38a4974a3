"""Overall F1 of live punctuation against its latency (``punct.inference.streaming``) on a recipe's talks
(``benchmarks/bench_streaming.py`` measures; ``benchmarks.streaming.latency_table`` makes the README table).

Each talk of a split is one recording (``benchmarks.streaming.talk.ScoredTalk``).  Its words and their times come from
offline long-form ``punctuate`` aligning the talk's transcript (the reference words, lowercase and without marks: a
recogniser's output with no errors), written as CTM tokens; the stream then reads the talk's audio 0.1 s at a
time with those tokens and fixed CMVN stats (the recipe's training stats).  Latency ``inf`` is offline
``punctuate`` with the same CTM and stats (every word punctuated from its complete stretch).  F1 is pooled over the
talks' words (the segments' reference marks), for BERT, the TDNN and the ensemble; the ensemble's also at every alpha
of a grid (``f1_by_alpha``: the same stream's posteriors mixed anew), from which a latency's own alpha can be chosen on
dev (``benchmarks.streaming.latency_table.alpha_by_latency_table``).  ``lookahead_rows``: BERT's F1 when it may read
only ``k`` words past the word it punctuates (``benchmarks/bench_lookahead.py``): what this BERT keeps of its F1 where a
stream has heard ``k`` more words.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from benchmarks.streaming.talk import ScoredTalk, overall_f1, whole_talk
from punct.inference.pipeline import Punctuator
from punct.inference.streaming import StreamingPunctuator, StreamSegment, run_stream, stream_segments, wav_chunks
from punct.labels import PUNCT4, TimedWord, encode_labels
from punct.models.text.data import Utterance
from punct.scoring.ensemble import default_alphas, ensemble
from punct.text.normalize import NormalizeConfig, normalize

MODELS = ("BERT", "TDNN", "ensemble")
CHUNK_SECONDS = 0.1
ALPHAS = tuple(default_alphas(0.1))  # the ensemble's weight of the TDNN, 0.0 (BERT alone) to 1.0 (the TDNN alone)


def talk_tokens(punctuator: Punctuator, talk: ScoredTalk) -> list[TimedWord]:
    """The talk's reference words with the times offline long-form ``punctuate`` aligned them to."""
    result = whole_talk(punctuator, talk)
    hop = punctuator.frame_shift
    return [TimedWord(w, s * hop, e * hop) for w, (s, e) in zip(result.words, result.spans)]


def aligned_tokens(recipe_dir: Path, split: str, prefix: str) -> dict[str, list[TimedWord]]:
    """Each recording's words with the times stage 3 aligned them to, segment by segment (the word alignments of
    data/fbank/<prefix>_cuts_<split>_ali.jsonl.gz, on the recording's time axis), in time order: the words and
    spans stage 8 scored.  A segment stage 3 could not align has none."""
    from lhotse import load_manifest

    cuts = load_manifest(Path(recipe_dir) / "data" / "fbank" / f"{prefix}_cuts_{split}_ali.jsonl.gz")
    out: dict[str, list[TimedWord]] = {}
    for cut in sorted(cuts, key=lambda c: (c.recording_id, c.start)):
        items = cut.supervisions[0].alignment["word"]
        out.setdefault(cut.recording_id, []).extend(TimedWord(i.symbol, i.start, i.end) for i in items)
    return out


def talk_segments(talk: ScoredTalk, rate: int) -> list[StreamSegment]:
    """The talk's segments (its supervisions) as a stream's utterances, cut as the recipe cuts them."""
    return stream_segments([(sup.start, sup.end) for sup in talk.segments], rate, talk.id)


def reference(talk: ScoredTalk, config: NormalizeConfig) -> tuple[list[str], list[int]]:
    """The talk's words and reference class ids: its segments' texts in time order, normalised as now."""
    said = [normalize(sup.text, config) for sup in talk.segments]
    return [w for n in said for w in n.words], [c for n in said for c in PUNCT4.encode(n.labels)]


def stream_talk(
    punctuator: Punctuator,
    talk: ScoredTalk,
    tokens: Sequence[TimedWord],
    latency: float,
    segments: Sequence[StreamSegment] | None = None,
) -> dict:
    """One talk streamed at ``latency`` (cut at ``segments`` when given, else at pauses): per model the predicted
    class ids (and the ensemble's at each alpha of :data:`ALPHAS`), the share of final words, the RTF."""
    streamer = StreamingPunctuator(punctuator, latency, talk.id, segments)
    chunk = int(round(CHUNK_SECONDS * streamer.rate))
    words, stats = run_stream(streamer, wav_chunks(talk.audio_path, chunk, streamer.rate), tokens)
    ref_words, _ = reference(talk, punctuator.normalize_config)
    if [w.word for w in words] != ref_words:
        raise RuntimeError(f"{talk.id}: the streamed words differ from the reference words")
    return {
        "predicted": {
            "BERT": [int(w.p_bert.argmax()) for w in words],
            "TDNN": [int(w.p_tdnn.argmax()) for w in words],
            "ensemble": [int(w.p_ensemble.argmax()) for w in words],
        },
        "ensemble_by_alpha": {
            alpha: [int(ensemble(w.p_tdnn, w.p_bert, alpha).argmax()) for w in words] for alpha in ALPHAS
        },
        "final": int(sum(w.final for w in words)),
        "wait_seconds": [w.emitted_at - w.span[1] * punctuator.frame_shift for w in words],
        **stats.summary(),
    }


def latency_rows(
    punctuator: Punctuator, talks: Sequence[ScoredTalk], latencies: Sequence[float], log=print
) -> list[dict]:
    """One row per latency: pooled overall F1 (%) per model over ``talks`` (the ensemble's also per alpha of
    :data:`ALPHAS`, keyed by its text), words, share final, waits, RTF, and the CPU RTF of each part of the pipeline
    (``Punctuator.timer``'s stages)."""
    tokens = {t.id: talk_tokens(punctuator, t) for t in talks}
    refs = [c for t in talks for c in reference(t, punctuator.normalize_config)[1]]
    rows = []
    for latency in latencies:
        punctuator.timer.reset()
        runs = [stream_talk(punctuator, t, tokens[t.id], latency) for t in talks]
        f1 = {m: overall_f1(refs, [c for r in runs for c in r["predicted"][m]]) for m in MODELS}
        by_alpha = {str(a): overall_f1(refs, [c for r in runs for c in r["ensemble_by_alpha"][a]]) for a in ALPHAS}
        waits = np.array([w for r in runs for w in r["wait_seconds"]])
        audio = sum(r["audio_seconds"] for r in runs)
        row = {
            "latency": "inf" if math.isinf(latency) else latency,
            "talks": len(talks),
            "words": len(refs),
            "f1": f1,
            "f1_by_alpha": by_alpha,
            "final_share": sum(r["final"] for r in runs) / max(1, len(refs)),
            "wait_median": float(np.median(waits)),
            "wait_max": float(waits.max()),
            "rtf": sum(r["rtf"] * r["audio_seconds"] for r in runs) / max(audio, 1e-9),
            "rtf_cpu": sum(r["rtf_cpu"] * r["audio_seconds"] for r in runs) / max(audio, 1e-9),
            "rtf_cpu_chunk_p95": max(r["rtf_cpu_chunk_p95"] for r in runs),
            "rtf_cpu_parts": {k: v / max(audio, 1e-9) for k, v in punctuator.timer.cpu_seconds.items()},
        }
        log(f"latency {row['latency']}: {row}")
        rows.append(row)
    return rows


def offline_factor_rows(
    punctuator: Punctuator, recipe_dir: Path, split: str, talks: Sequence[ScoredTalk], log=print
) -> list[dict]:
    """Pooled overall F1 (%) per model of the talks streamed at latency inf under each combination of what a
    stream is given and what stage 8 had: word times from aligning the whole talk (``talk_tokens``, a recogniser's
    CTM) or stage 3's per segment (``aligned_tokens``); stretches between pauses or the talk's segments; the
    training speakers' CMVN stats merged (``punctuator.global_cmvn``) or the talk's speaker's stage-1 stats.  With all
    three of stage 8's the stream is stage 8 (``tests/e2e/test_longform_recipe.py``)."""
    from punct.inference.acoustic import merged_cmvn

    train = punctuator.global_cmvn
    stats = Path(recipe_dir) / "data" / "fbank" / f"cmvn_{split}.json"
    tokens = {"whole-talk alignment": {t.id: talk_tokens(punctuator, t) for t in talks}}
    tokens["stage 3"] = aligned_tokens(recipe_dir, split)
    refs = [c for t in talks for c in reference(t, punctuator.normalize_config)[1]]
    rows = []
    try:
        for times in tokens:
            for cuts in ("pauses", "segments"):
                for cmvn in ("training stats", "speaker stats"):
                    runs = []
                    for t in talks:
                        punctuator.global_cmvn = train if cmvn == "training stats" else merged_cmvn(stats, t.speaker)
                        segments = talk_segments(t, punctuator.sampling_rate) if cuts == "segments" else None
                        runs.append(stream_talk(punctuator, t, tokens[times][t.id], math.inf, segments))
                    f1 = {m: overall_f1(refs, [c for r in runs for c in r["predicted"][m]]) for m in MODELS}
                    rows.append({"times": times, "cuts": cuts, "cmvn": cmvn, "words": len(refs), "f1": f1})
                    log(f"{times} / {cuts} / {cmvn}: {f1}")
    finally:
        punctuator.global_cmvn = train
    return rows


def lookahead_posteriors(punctuator: Punctuator, utterances: Sequence[Utterance], k: int | None) -> np.ndarray:
    """BERT's posteriors of every word of ``utterances`` (rows in order) when each is punctuated from its segment's
    words up to ``k`` after it only (None: all of them, stage 6's posteriors)."""
    if k is None:
        return np.concatenate([out.posteriors[punctuator.head] for out in punctuator.text_outputs(utterances)])
    pieces, rows = [], []
    for u in utterances:
        for w in range(len(u.words)):
            end = min(len(u.words), w + k + 1)
            pieces.append(Utterance(f"{u.id}#{w}", u.words[:end], u.labels[:end]))
            rows.append(w)
    outputs = punctuator.text_outputs(pieces)
    return np.stack([out.posteriors[punctuator.head][w] for out, w in zip(outputs, rows)])


def lookahead_rows(
    punctuator: Punctuator, utterances: Sequence[Utterance], lookaheads: Sequence[int | None], log=print
) -> list[dict]:
    """BERT's pooled overall F1 (%) over ``utterances`` (stage 8's segments) for each ``k`` of ``lookaheads``
    (:func:`lookahead_posteriors`): what a text model that reads at most ``k`` words ahead could start from, with
    this BERT's weights."""
    refs = [c for u in utterances for c in encode_labels(u.labels)]
    rows = []
    for k in lookaheads:
        hyp = lookahead_posteriors(punctuator, utterances, k).argmax(1)
        row = {"lookahead": "all" if k is None else k, "words": len(refs), "f1": overall_f1(refs, hyp)}
        log(f"lookahead {row['lookahead']}: {row}")
        rows.append(row)
    return rows
