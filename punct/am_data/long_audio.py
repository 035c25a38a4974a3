"""Utterance-level acoustic-model training data cut from long recordings (stage 1 of the speech-informed ITN recipe).

Long recordings with official transcripts have no utterance-level transcripts, so the AM is trained
on utterances cut from its long recordings with the words really spoken and their times
(``<words-dir>/<recording id>.words.tsv``, the synthesizer's transcript):

* utterances are runs of consecutive words split at pauses of at least ``min_pause`` seconds;
  a run longer than ``max_duration`` is split again at its longest pause (recursively);
* each utterance spans its words plus ``margin`` seconds of context on either side (at most
  half the neighbouring pause, so that utterances never overlap);
* the speaker of each word is the speaker of the official word it aligns to (Needleman-Wunsch,
  ``punct.align.nw``); an utterance whose words come from several speakers is split at the
  change.  The true speaker is kept in ``custom["speaker"]``;
* CMVN convention: the long-recording recogniser does not know who speaks when, so it
  normalises with per-recording stats.  To train on the same inputs, the supervisions'
  ``speaker`` is the *recording id*: stage-1 CMVN stats (per "speaker") become per-recording.
* ``dev_recordings`` recordings (chosen with ``seed``) are held out for the AM's dev WER.  The
  long-recording recognition then runs over all recordings, most of which the AM was trained on
  (the thesis' ASR model was also trained on speech of its corpus); its WER on the held-out recording is
  the honest one.

Output: ``<prefix>_{recordings,supervisions}_{train,dev}.jsonl.gz`` (lhotse), one supervision per
utterance with id ``<recording id>_<4-digit index>``, ``custom["words"]`` = the lowercase words
(the form ``punct.align.segments`` compares with the official words).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from lhotse import Recording, RecordingSet, SupervisionSegment, SupervisionSet, load_manifest
from lhotse.utils import Pathlike

from punct.align.dataset import official_words
from punct.align.nw import align_words
from punct.am_data.utterances import write_am_manifests
from punct.labels import TimedWord, read_recognised_words
from punct.text.token_labels import normalise_word

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class AmDataConfig:
    min_pause: float = 0.3  # seconds; the mini corpus has >= 0.3 s between fortunes
    max_duration: float = 15.0  # seconds of words per utterance (before margins)
    margin: float = 0.15  # seconds of context kept before the first and after the last word
    min_words: int = 1
    dev_recordings: int = 1  # recordings held out for the dev WER


def read_words_checked(path: Pathlike, duration: float | None = None) -> list[TimedWord]:
    """A ``words.tsv`` file; words must be in time order and inside the recording (file:line errors)."""
    words = read_recognised_words(path)
    with open(path, encoding="utf-8") as f:
        line_numbers = [n for n, line in enumerate(f, start=1) if line.strip()]
    for i, w in enumerate(words):
        if i and w.start < words[i - 1].start:
            raise ValueError(
                f"{path}:{line_numbers[i]}: word {w.word!r} starts at {w.start} before the "
                f"previous word ({words[i - 1].start}); words must be in time order"
            )
        if duration is not None and w.end > duration + 0.05:
            raise ValueError(
                f"{path}:{line_numbers[i]}: word {w.word!r} ends at {w.end} s, after the end of "
                f"the recording ({duration:.3f} s)"
            )
    return words


def word_speakers(words: Sequence[TimedWord], off_words: Sequence[str], off_speakers: Sequence[str]) -> list[str]:
    """Speaker of each spoken word: that of its aligned official word; unaligned words take the
    speaker of the previous aligned word (the next one at the start)."""
    pairs, _ = align_words([w.word.lower() for w in words], [normalise_word(w) for w in off_words])
    speakers: list[str | None] = [None] * len(words)
    for p in pairs:
        if p.rec is not None and p.off is not None:
            speakers[p.rec] = off_speakers[p.off]
    known = [s for s in speakers if s is not None]
    if not known:
        raise ValueError("no spoken word aligns to an official word")
    last = known[0]
    for i, s in enumerate(speakers):
        if s is None:
            speakers[i] = last
        else:
            last = s
    return speakers  # type: ignore[return-value]


def _split_at_longest_pause(words: list[TimedWord], max_duration: float) -> list[list[TimedWord]]:
    if len(words) < 2 or words[-1].end - words[0].start <= max_duration:
        return [words]
    gaps = [b.start - a.end for a, b in zip(words, words[1:])]
    k = int(np.argmax(gaps)) + 1
    return _split_at_longest_pause(words[:k], max_duration) + _split_at_longest_pause(words[k:], max_duration)


def split_utterances(
    words: Sequence[TimedWord], speakers: Sequence[str], config: AmDataConfig = AmDataConfig()
) -> list[tuple[list[TimedWord], str]]:
    """Runs of one speaker's words split at pauses and to at most ``max_duration``; (words, speaker)."""
    runs: list[tuple[list[TimedWord], str]] = []
    for i, w in enumerate(words):
        if i and speakers[i] == speakers[i - 1] and w.start - words[i - 1].end < config.min_pause:
            runs[-1][0].append(w)
        else:
            runs.append(([w], speakers[i]))
    out = []
    for run, speaker in runs:
        out.extend((part, speaker) for part in _split_at_longest_pause(run, config.max_duration))
    return [(u, s) for u, s in out if len(u) >= config.min_words]


def recording_supervisions(
    recording: Recording,
    words: Sequence[TimedWord],
    speakers: Sequence[str],
    config: AmDataConfig = AmDataConfig(),
    language: str | None = None,
) -> list[SupervisionSegment]:
    """The utterance supervisions of one recording (speaker = recording id, see the module doc)."""
    utterances = split_utterances(words, speakers, config)
    sups = []
    for i, (utt, speaker) in enumerate(utterances):
        prev_end = utterances[i - 1][0][-1].end if i else 0.0
        next_start = utterances[i + 1][0][0].start if i + 1 < len(utterances) else recording.duration
        start = max(0.0, utt[0].start - min(config.margin, 0.5 * (utt[0].start - prev_end)))
        end = min(recording.duration, utt[-1].end + min(config.margin, 0.5 * (next_start - utt[-1].end)))
        sups.append(
            SupervisionSegment(
                id=f"{recording.id}_{i:04d}",
                recording_id=recording.id,
                start=round(start, 3),
                duration=round(end - start, 3),
                channel=0,
                text=" ".join(w.word.lower() for w in utt),
                language=language,
                speaker=recording.id,
                custom={"words": [w.word.lower() for w in utt], "speaker": speaker},
            )
        )
    return sups


def choose_dev_recordings(recording_ids: Sequence[str], num: int, seed: int) -> list[str]:
    if num >= len(recording_ids):
        raise ValueError(f"cannot hold out {num} of {len(recording_ids)} recordings for dev: nothing left to train on")
    rng = np.random.default_rng(seed)
    return sorted(rng.choice(sorted(recording_ids), size=num, replace=False).tolist())


def prepare_am_data(
    manifest_dir: Pathlike,
    words_dir: Pathlike,
    output_dir: Pathlike | None = None,
    config: AmDataConfig = AmDataConfig(),
    seed: int = 42,
    *,
    prefix: str,
) -> dict[str, dict[str, object]]:
    """Stage-0 manifests ``<prefix>_{recordings,supervisions}_all`` + spoken words -> {split: {"recordings",
    "supervisions"}}; written as ``<prefix>_<kind>_<split>.jsonl.gz`` when output_dir.  The utterances keep
    the language of their recording's official supervision."""
    manifest_dir, words_dir = Path(manifest_dir), Path(words_dir)
    recordings = load_manifest(manifest_dir / f"{prefix}_recordings_all.jsonl.gz")
    official = {s.recording_id: s for s in load_manifest(manifest_dir / f"{prefix}_supervisions_all.jsonl.gz")}
    sups: dict[str, list[SupervisionSegment]] = {}
    missing = 0
    for rec in recordings:
        path = words_dir / f"{rec.id}.words.tsv"
        if not path.is_file() or rec.id not in official:
            missing += 1
            logger.warning("recording %s: no %s or no official transcript; skipped", rec.id, path)
            continue
        words = read_words_checked(path, rec.duration)
        off = official_words(official[rec.id])
        try:
            speakers = word_speakers(words, [w.word for w in off], [w.speaker for w in off])
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from None
        sups[rec.id] = recording_supervisions(rec, words, speakers, config, official[rec.id].language)
    if not sups:
        raise ValueError(f"{words_dir}: no <recording id>.words.tsv for any recording of {manifest_dir}")
    dev = set(choose_dev_recordings(list(sups), config.dev_recordings, seed))
    out: dict[str, dict[str, object]] = {}
    for split, ids in (("train", [r for r in sups if r not in dev]), ("dev", sorted(dev))):
        out[split] = {
            "recordings": RecordingSet.from_recordings(recordings[r] for r in ids),
            "supervisions": SupervisionSet.from_segments(s for r in ids for s in sups[r]),
        }
        durations = [s.duration for r in ids for s in sups[r]]
        logger.info(
            "%s: %d recordings, %d utterances, %.2f h (%.1f-%.1f s, mean %.1f s)",
            split,
            len(ids),
            len(durations),
            sum(durations) / 3600,
            min(durations),
            max(durations),
            float(np.mean(durations)),
        )
    logger.info("skipped recordings: %d; dev recordings: %s", missing, sorted(dev))
    if output_dir is not None:
        write_am_manifests(out, output_dir, prefix)
    return out
