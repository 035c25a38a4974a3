"""A corpus of your own -> the MuST-C recipe's manifests: lhotse manifests or Kaldi data directories per split.

About the input
  Two forms, each with one entry per *part* (a split of the source corpus), several parts per split allowed:

  * ``manifests``: a folder of lhotse manifests as lhotse's ``prepare_*`` recipes write them,
    ``<corpus>_recordings_<part>.jsonl.gz`` + ``<corpus>_supervisions_<part>.jsonl.gz`` (e.g.
    ``libritts_recordings_train-clean-100.jsonl.gz``). The punctuated text is the supervisions' ``text``, or
    a string in their ``custom`` (``text_field``): lhotse's ``prepare_libritts`` writes LibriTTS' normalized
    text (numbers spelled out, still punctuated) to ``text`` and the original one to ``custom["orig_text"]``.
  * ``data-dir``: a folder of Kaldi data directories, ``<folder>/<part>/{wav.scp,text}`` with optional
    ``segments`` and ``utt2spk`` (``data/train``, ``data/dev``, ``data/test`` in a Kaldi recipe); ``text`` holds the
    punctuated transcripts. Read by :mod:`punct.io.kaldi_data_dir` (why not lhotse's ``load_kaldi_data_dir``: there).

  Splits: ``parts = {"train": [...], "dev": [...], "test": [...]}`` names the parts of each (default: the parts
  called train, dev and test).

Output (``prepare_imported(form, source_dir, output_dir)``)
  The files :func:`punct.corpora.mustc.prepare_mustc` writes, read the same way by stage 1 on:
  ``mustc_{recordings,supervisions}_{train,dev,test}.jsonl.gz``. Each supervision keeps its id, its
  recording and time span; speaker = the input's speaker (utt2spk, the supervision's), else the recording;
  text = the punctuated text; words and labels from :func:`punct.text.normalize.normalize` through
  :func:`punct.corpora.mustc.make_supervision`, as for MuST-C. Recordings at another rate than 16 kHz (LibriTTS:
  24 kHz) are resampled by lhotse when loaded (a transform in the manifest): the MuST-C reader needs none, its
  wavs are 16 kHz. Channel 0 is used, as for MuST-C.

Bad input
  Errors naming ``file:line`` (from :mod:`punct.am_data.utterances` and :mod:`punct.io.kaldi_data_dir`): a
  malformed line or record, a repeated id, a missing or unreadable audio file, a supervision on a recording the
  manifest lacks, a supervision without the chosen text field. Also errors: a part that is not there, an
  utterance id in two parts, a recording in two splits, a split left without any utterance. Counted, logged
  skips (in the summary and ``mustc_skipped.json``): no transcript, no audio, a segment ending after its audio
  (more than ``end_tolerance``; less is clipped), no words, a token that cannot be spoken.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from lhotse import Recording, RecordingSet, SupervisionSegment, SupervisionSet
from lhotse.qa import validate_recordings_and_supervisions
from lhotse.utils import Pathlike

from punct.am_data.utterances import (
    ImportedUtterance,
    Skips,
    UtteranceImportConfig,
    kaldi_utterances,
    manifest_utterances,
)
from punct.corpora.mustc import (
    Manifests,
    SplitStats,
    _count_skip,
    _fit_to_recording,
    check_disjoint,
    make_supervision,
    write_manifests,
)
from punct.text.normalize import NormalizeConfig

logger = logging.getLogger(__name__)

Form = Literal["manifests", "data-dir"]
FORMS: tuple[str, ...] = ("manifests", "data-dir")
DEFAULT_PARTS: dict[str, list[str]] = {"train": ["train"], "dev": ["dev"], "test": ["test"]}


def part_manifest_files(manifest_dir: Path, part: str) -> tuple[Path, Path]:
    """The ``*_recordings_<part>.jsonl.gz`` and ``*_supervisions_<part>.jsonl.gz`` of ``manifest_dir``: one each."""
    found = []
    for kind in ("recordings", "supervisions"):
        files = sorted(manifest_dir.glob(f"*_{kind}_{part}.jsonl.gz"))
        if len(files) != 1:
            listed = sorted(p.name for p in manifest_dir.glob(f"*_{kind}_*.jsonl.gz"))
            what = "no" if not files else f"{len(files)} ({', '.join(f.name for f in files)})"
            raise FileNotFoundError(
                f"{manifest_dir}: {what} <corpus>_{kind}_{part}.jsonl.gz for part {part!r}; "
                f"the {kind} manifests there: {listed or 'none'}"
            )
        found.append(files[0])
    return found[0], found[1]


def part_utterances(
    form: Form, source_dir: Path, part: str, config: UtteranceImportConfig, skips: Skips, text_field: str = "text"
) -> list[ImportedUtterance]:
    """The utterances of one part of the input (see the module doc)."""
    if form == "manifests":
        return manifest_utterances(*part_manifest_files(source_dir, part), config, text_field)
    if form == "data-dir":
        if text_field != "text":
            raise ValueError(
                f"a text field ({text_field!r}) is for lhotse manifests; a Kaldi data dir has its text file"
            )
        part_dir = source_dir / part
        if not part_dir.is_dir():
            raise FileNotFoundError(f"{part_dir}: no such Kaldi data directory (part {part!r} of {source_dir})")
        return kaldi_utterances(part_dir, config, skips)
    raise ValueError(f"unknown input form {form!r}; known: {', '.join(FORMS)}")


def imported_split(
    utterances: Sequence[ImportedUtterance],
    skips: Skips,
    norm: NormalizeConfig,
    end_tolerance: float = 0.1,
) -> tuple[RecordingSet, SupervisionSet, SplitStats]:
    """One split's utterances -> recordings, supervisions with words and labels, and the counts of the summary."""
    stats = SplitStats()
    for reason, count in skips.counts.items():  # those of reading: no transcript, no audio
        stats.skipped[reason.replace(" ", "_")] += count
    recordings: dict[str, Recording] = {}
    supervisions: list[SupervisionSegment] = []
    for utt in utterances:
        end = utt.recording.duration if utt.end is None else utt.end
        duration = _fit_to_recording(utt.start, end - utt.start, utt.recording, end_tolerance)
        if duration is None:
            logger.warning(
                "%s: utterance %s (%.2f-%.2f s) ends after its audio (%.2f s): skipped",
                utt.span_where,
                utt.id,
                utt.start,
                end,
                utt.recording.duration,
            )
            stats.skipped["beyond_end"] += 1
            continue
        if duration < end - utt.start - 1e-3:  # not the rounding of a resampled length (< 1 sample)
            stats.clipped += 1
        sup, why = make_supervision(
            utt.id, utt.recording, utt.start, duration, utt.speaker or utt.recording.id, utt.text or "", norm
        )
        if sup is None:
            _count_skip(stats, why, f"{utt.where}: utterance {utt.id}")
            continue
        supervisions.append(sup)
        recordings[utt.recording.id] = utt.recording
        stats.segments += 1
        stats.seconds += sup.duration
        stats.labels.update(sup.custom["punct"])
    return (
        RecordingSet.from_recordings(recordings[k] for k in sorted(recordings)),
        SupervisionSet.from_segments(supervisions),
        stats,
    )


def check_parts(parts: Mapping[str, Sequence[str]]) -> None:
    """train, dev and test each name at least one part, and no part is in two splits."""
    if sorted(parts) != ["dev", "test", "train"] or not all(parts.values()):
        raise ValueError(f"give the parts of train, dev and test (at least one each), got {dict(parts)}")
    owner: dict[str, str] = {}
    for split, names in parts.items():
        for name in names:
            if name in owner:
                raise ValueError(f"part {name!r} is in {owner[name]} and in {split}: the splits must not share data")
            owner[name] = split


def prepare_imported(
    form: Form,
    source_dir: Pathlike,
    output_dir: Pathlike | None = None,
    parts: Mapping[str, Sequence[str]] = DEFAULT_PARTS,
    norm: NormalizeConfig | None = None,
    text_field: str = "text",
    end_tolerance: float = 0.1,
    sampling_rate: int = 16000,
) -> tuple[Manifests, dict[str, SplitStats]]:
    """Manifests of train, dev and test from lhotse manifests or Kaldi data dirs (module doc); written to
    ``output_dir`` if given; ``norm`` None: the default mark -> label mapping."""
    norm = norm or NormalizeConfig()
    source_dir = Path(source_dir)
    if not source_dir.is_dir():
        raise FileNotFoundError(f"{source_dir}: no such directory")
    check_parts(parts)
    # the utterance reader's own checks of duration and text are not used: ours are those of the MuST-C reader
    config = UtteranceImportConfig(sampling_rate=sampling_rate, end_tolerance=end_tolerance, max_duration=float("inf"))
    manifests: Manifests = {}
    stats: dict[str, SplitStats] = {}
    seen: dict[str, str] = {}  # utterance id -> where
    for split in ("train", "dev", "test"):
        skips = Skips()
        utterances: list[ImportedUtterance] = []
        for part in parts[split]:
            for utt in part_utterances(form, source_dir, part, config, skips, text_field):
                if utt.id in seen:
                    raise ValueError(
                        f"{utt.where}: utterance {utt.id!r} again (first at {seen[utt.id]}): ids must be "
                        "unique across parts"
                    )
                seen[utt.id] = utt.where
                utterances.append(utt)
        recs, sups, st = imported_split(utterances, skips, norm, end_tolerance)
        if not len(sups):
            raise ValueError(
                f"{source_dir}: split {split} (parts {', '.join(parts[split])}) has no usable utterance "
                f"among {len(utterances)}: skipped {dict(st.skipped)}"
            )
        validate_recordings_and_supervisions(recs, sups)
        manifests[split] = {"recordings": recs, "supervisions": sups}
        stats[split] = st
        logger.info(
            "%s <- %s %s: %d utterances, %.3f h", split, form, ", ".join(parts[split]), st.segments, st.seconds / 3600
        )
    check_disjoint(manifests)
    if output_dir is not None:
        write_manifests(manifests, Path(output_dir))
    return manifests, stats
