"""Acoustic-model training data from a corpus with utterance-level transcripts (stage 1 of egs/parczech
with ``--am-data``).

The input is either
  * a Kaldi data directory (``wav.scp``, ``text``, optional ``segments`` and ``utt2spk``; read by
    ``punct.io.kaldi_data_dir``; a ``wav.scp`` line may be a command, ``<id> <command> |``), or
  * lhotse manifests: a folder with one ``*recordings*.jsonl.gz`` and one ``*supervisions*.jsonl.gz``,
    or with one ``*cuts*.jsonl.gz`` (MonoCuts with supervisions), or such a cuts file itself.

The output is the layout ``punct.am_data.long_audio`` writes for the mini corpus, which the rest of
stage 1 reads: ``<prefix>_{recordings,supervisions}_{train,dev}.jsonl.gz``, one supervision per utterance
with ``custom["words"]`` (the AM's transcript) and ``custom["speaker"]`` (the true speaker).

Text: the words the AM is trained on have the form of the mini corpus' spoken words: Unicode NFC,
lowercase, letters only.  Per token: a tag such as ``<unk>`` or ``[noise]`` is dropped (``tags: drop``) or
makes the utterance a skip (``tags: skip``); punctuation (Unicode category P: ``. , ? - „`` ...) that is
not in ``alphabet`` separates words and is removed (``„Dobrý den,“`` -> ``dobrý den``,
``česko-slovenský`` -> ``česko slovenský``); any other character outside ``alphabet`` (a digit, ``%``, a
foreign letter) makes the utterance a counted, logged skip, because its spoken form is unknown.  An empty
``alphabet`` allows every letter.  Numbers (``numbers: spoken``, default): a token with digits or a word
symbol (``737``, ``LC-10``, ``3,5``, ``10%``, ``§``) is first said in Czech words, its outer punctuation
stripped (``punct.text.token_labels.spoken_words``: ``sedm set třicet sedm``, ``lc deset``); one that cannot
be said is a skip ("unspeakable token").  ``numbers: keep``: digits are characters like any other.

CMVN grouping (the supervisions' ``speaker``, by which stage 1 accumulates CMVN stats): the long-recording
recogniser (``punct.recognition.recogniser``) normalises each recording with the stats of the whole recording, since
it does not know who speaks when.  ``cmvn_group: recording`` (default) trains on the same statistics:
``speaker`` = the recording id, as the mini path does.  For a Kaldi directory with ``segments`` the recording
is the ``wav.scp`` entry (typically a long recording, the recogniser's case); without ``segments`` each
utterance is its own recording (per-utterance CMVN).  ``cmvn_group: speaker`` keeps the utt2spk/supervision
speaker (Kaldi's per-speaker CMVN): with a ``utt2spk`` that maps each utterance to the long recording it
was cut from (e.g. the ParCzech ASR release, one wav per segment) this gives per-source-recording stats.
The true speaker is kept in ``custom["speaker"]`` either way (the recording id when there is none).

Dev part: the given dev data (``dev``), else ``dev_unit``s (speakers or recordings) drawn with ``seed`` until
they hold about ``dev_share`` of the hours, none that would take dev above ``max_dev_share``
(``punct.training.heldout.draw_by_share``): train and dev then share no speaker (recording), and a corpus with a few
dominant speakers keeps them in training.  A train or dev part under ``min_split_minutes`` or
``min_split_utterances`` is logged as a warning (and listed in ``import_stats.json``).

Validation: structural errors raise ValueError naming ``file:line`` (a malformed line, a repeated id, a
missing or unreadable audio file (soundfile), a supervision on an unknown recording).  Utterance problems
are counted, logged skips (the first ones of each reason with ``file:line``): no transcript, no audio,
empty text, a character outside the alphabet, a tag (``tags: skip``), a segment ending after its audio
(more than ``end_tolerance``; less is clipped), longer than ``max_duration``.
"""

from __future__ import annotations

import io
import json
import logging
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NamedTuple

import soundfile as sf
from lhotse import Recording, RecordingSet, SupervisionSegment, SupervisionSet
from lhotse.audio import AudioSource
from lhotse.cut import MonoCut
from lhotse.utils import Pathlike

from punct.io.jsonl import read_jsonl
from punct.io.kaldi_data_dir import pipe_command, read_kaldi_data_dir, run_pipe
from punct.text import numbers as num
from punct.text.token_labels import spoken_words
from punct.training.heldout import draw_by_share, small_part_warning
from punct.utils.atomic import atomic_path, atomic_write_text

logger = logging.getLogger(__name__)

TAG = re.compile(r"^(<[^<>\s]+>|\[[^\[\]\s]+\])$")


@dataclass(frozen=True)
class UtteranceImportConfig:
    alphabet: str = ""  # the AM's characters (lowercase letters); empty: every letter
    tags: Literal["drop", "skip"] = (
        "drop"  # tokens like <unk>, [noise]: removed from the text, or the utterance skipped
    )
    numbers: Literal["spoken", "keep"] = (
        "spoken"  # tokens with digits said as Czech words (see the module doc), or kept
    )
    cmvn_group: Literal["recording", "speaker"] = (
        "recording"  # the supervisions' speaker (CMVN stats): see the module doc
    )
    dev_unit: Literal["speaker", "recording"] = "speaker"  # held out together for dev (without given dev data)
    dev_share: float = 0.1  # share of the hours held out for dev (whole dev units, at least one)
    max_dev_share: float = 1 / 3  # no dev unit is drawn that would take dev above this share of the hours
    min_split_minutes: float = 2.0  # a train or dev part with less speech is warned about
    min_split_utterances: int = 20  # a train or dev part with fewer utterances is warned about
    max_duration: float = 30.0  # seconds; longer utterances are skipped
    end_tolerance: float = 0.05  # seconds a segment may end after its audio (clipped); more is a skip
    sampling_rate: int = 16000  # the AM's feature rate; other recordings are resampled (lhotse transform)

    def __post_init__(self) -> None:
        if self.alphabet != unicodedata.normalize("NFC", self.alphabet).lower() or any(
            c.isspace() for c in self.alphabet
        ):
            raise ValueError(f"alphabet must be lowercase NFC characters without spaces, got {self.alphabet!r}")
        if not 0.0 < self.dev_share <= self.max_dev_share < 1.0:
            raise ValueError(f"need 0 < dev_share <= max_dev_share < 1, got {self.dev_share}, {self.max_dev_share}")
        if self.max_duration <= 0 or self.end_tolerance < 0:
            raise ValueError(
                f"max_duration must be > 0 and end_tolerance >= 0, got {self.max_duration}, {self.end_tolerance}"
            )


@dataclass(frozen=True)
class ImportedUtterance:
    """One transcribed span of a recording, as read, with the lines that define it."""

    id: str
    recording: Recording
    start: float
    end: float | None  # None: to the end of the recording
    text: str | None
    speaker: str | None
    language: str | None
    where: str  # the line of the transcript
    span_where: str  # the line of the time span (Kaldi: segments or wav.scp)
    channel: int | list[int] = 0


class Skips:
    """Counted skips; the first ``limit`` of each reason are logged with their ``file:line``."""

    def __init__(self, limit: int = 5) -> None:
        self.counts: Counter = Counter()
        self.limit = limit

    def add(self, reason: str, where: str, detail: str = "") -> None:
        self.counts[reason] += 1
        if self.counts[reason] <= self.limit:
            logger.warning("%s: skipped: %s%s", where, reason, f" ({detail})" if detail else "")
        elif self.counts[reason] == self.limit + 1:
            logger.warning("more skips for %r are counted, not logged", reason)


class Normalised(NamedTuple):
    words: list[str]
    reason: str = ""  # why the utterance cannot be used; empty when it can
    detail: str = ""


def _allowed(ch: str, alphabet: str) -> bool:
    return ch in alphabet if alphabet else ch.isalpha()


def normalise_transcript(text: str, config: UtteranceImportConfig = UtteranceImportConfig()) -> Normalised:
    """A transcript -> the AM's words (see the module doc), or the reason it cannot be used."""
    words: list[str] = []
    for token in unicodedata.normalize("NFC", text).lower().split():
        if TAG.match(token):
            if config.tags == "skip":
                return Normalised([], "tag", token)
            continue
        core = token.strip(
            "".join(ch for ch in token if unicodedata.category(ch).startswith("P") and ch not in num.SYMBOL_WORDS["cs"])
        )
        if config.numbers == "spoken" and (num.has_digit(core) or core in num.SYMBOL_WORDS["cs"]):
            try:
                token = " ".join(w for w, _ in spoken_words(core)).lower()
            except num.Unspeakable as e:
                return Normalised([], "unspeakable token", f"{token!r}: {e.reason}")
        word = ""
        for ch in token:
            if ch == " ":
                words += [word] if word else []
                word = ""
            elif _allowed(ch, config.alphabet):
                word += ch
            elif unicodedata.category(ch).startswith("P"):
                words += [word] if word else []
                word = ""
            else:
                return Normalised([], "character outside the alphabet", f"{ch!r} in {token!r}")
        words += [word] if word else []
    return Normalised(words) if words else Normalised([], "empty text", repr(text))


def audio_recording(recording_id: str, path: str, where: str, sampling_rate: int) -> Recording:
    """A Recording of one audio file or ``wav.scp`` command (``<command> |``), checked with soundfile; resampled
    (lazily) to ``sampling_rate``.  A command is run once here for its rate and length; lhotse runs it again
    (a ``command`` audio source) when the audio is loaded."""
    command = pipe_command(path)
    if command is not None:
        try:
            output = run_pipe(command)
        except RuntimeError as e:  # a non-zero exit
            raise ValueError(f"{where}: recording {recording_id}: {e}") from None
        try:
            info = sf.info(io.BytesIO(output))
        except (RuntimeError, sf.LibsndfileError) as e:
            raise ValueError(
                f"{where}: recording {recording_id}: the output of {command!r} is not audio: {e}"
            ) from None
        source = AudioSource(type="command", channels=list(range(info.channels)), source=command)
        what = f"the output of {command!r}"
    else:
        file = Path(path).expanduser().absolute()
        if not file.is_file():
            raise FileNotFoundError(f"{where}: recording {recording_id}: no such audio file {file}")
        try:
            info = sf.info(str(file))
        except (RuntimeError, sf.LibsndfileError) as e:
            raise ValueError(f"{where}: recording {recording_id}: {file} is not readable audio: {e}") from None
        source = AudioSource(type="file", channels=list(range(info.channels)), source=str(file))
        what = str(file)
    if info.frames <= 0:
        raise ValueError(f"{where}: recording {recording_id}: {what} has no samples")
    rec = Recording(
        id=recording_id,
        sources=[source],
        sampling_rate=info.samplerate,
        num_samples=info.frames,
        duration=info.frames / info.samplerate,
    )
    return rec if rec.sampling_rate == sampling_rate else rec.resample(sampling_rate)


def kaldi_utterances(path: Pathlike, config: UtteranceImportConfig, skips: Skips) -> list[ImportedUtterance]:
    """The utterances of a Kaldi data directory; every wav.scp entry is checked (``audio_recording``)."""
    data = read_kaldi_data_dir(path)
    recordings = {rid: audio_recording(rid, e.value, e.where, config.sampling_rate) for rid, e in data.wav.items()}
    out = []
    for utt_id, seg in data.segments.items():
        text = data.text.get(utt_id)
        if text is None:
            skips.add("no transcript", seg.where, f"{utt_id} is not in {data.path / 'text'}")
            continue
        speaker = None
        if data.utt2spk is not None:
            if utt_id not in data.utt2spk:
                raise ValueError(f"{text.where}: utterance {utt_id} is not in {data.path / 'utt2spk'}")
            speaker = data.utt2spk[utt_id].value
        out.append(
            ImportedUtterance(
                utt_id,
                recordings[seg.recording_id],
                seg.start,
                seg.end,
                text.value,
                speaker,
                None,
                text.where,
                seg.where,
            )
        )
    listed = "segments" if data.has_segments else "wav.scp"
    for utt_id in data.text.keys() - data.segments.keys():
        skips.add("no audio", data.text[utt_id].where, f"{utt_id} is not in {data.path / listed}")
    return out


def _checked_recording(record: dict, where: str, sampling_rate: int) -> Recording:
    try:
        rec = Recording.from_dict(record)
    except Exception as e:  # lhotse raises assorted errors on a malformed record
        raise ValueError(f"{where}: not a lhotse Recording: {e}") from None
    for source in rec.sources:
        if source.type not in ("file", "command"):
            raise ValueError(
                f"{where}: recording {rec.id}: a {source.type!r} audio source; give audio files or commands"
            )
        # exists and is readable; a command as wav.scp writes it
        audio_recording(
            rec.id, f"{source.source} |" if source.type == "command" else str(source.source), where, sampling_rate
        )
    return rec if rec.sampling_rate == sampling_rate else rec.resample(sampling_rate)


def supervision_text(sup: SupervisionSegment, text_field: str, where: str) -> str | None:
    """``sup.text`` (``text_field`` "text"), or the string ``sup.custom[text_field]`` (e.g. LibriTTS' ``orig_text``,
    its punctuated, cased text); a supervision without that custom field is an error naming ``where``."""
    if text_field == "text":
        return sup.text
    custom = sup.custom or {}
    if text_field not in custom:
        raise ValueError(
            f"{where}: supervision {sup.id} has no custom field {text_field!r} (its custom fields: "
            f"{sorted(custom)}); choose the text with another text field"
        )
    value = custom[text_field]
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{where}: supervision {sup.id}: custom {text_field!r} is a {type(value).__name__}, not text")
    return value


def _supervision_utterance(
    sup: SupervisionSegment, rec: Recording, offset: float, where: str, text_field: str = "text"
) -> ImportedUtterance:
    if sup.duration <= 0:
        raise ValueError(f"{where}: supervision {sup.id}: duration {sup.duration} s")
    start = offset + sup.start
    return ImportedUtterance(
        sup.id,
        rec,
        start,
        start + sup.duration,
        supervision_text(sup, text_field, where),
        sup.speaker,
        sup.language,
        where,
        where,
        sup.channel,
    )


def _manifest_files(path: Path) -> tuple[Path | None, Path | None, Path | None]:
    """(recordings, supervisions, cuts) manifests of a folder (or a cuts file); one of each kind at most."""
    if path.is_file():
        return None, None, path
    found = {}
    for kind in ("recordings", "supervisions", "cuts"):
        files = sorted(path.glob(f"*{kind}*.jsonl.gz"))
        if len(files) > 1:
            raise ValueError(
                f"{path}: {len(files)} {kind} manifests ({', '.join(f.name for f in files)}); give a "
                "folder of one split (and the dev part with its own folder)"
            )
        found[kind] = files[0] if files else None
    if not (found["recordings"] and found["supervisions"]) and not found["cuts"]:
        raise FileNotFoundError(
            f"{path}: neither a Kaldi data directory (wav.scp, text) nor lhotse manifests "
            "(*recordings*.jsonl.gz + *supervisions*.jsonl.gz, or *cuts*.jsonl.gz)"
        )
    return found["recordings"], found["supervisions"], found["cuts"]


def manifest_utterances(
    rec_file: Pathlike, sup_file: Pathlike, config: UtteranceImportConfig, text_field: str = "text"
) -> list[ImportedUtterance]:
    """The supervisions of a recordings + supervisions manifest pair as utterances; errors name ``file:line``."""
    recordings = {}
    for where, record in read_jsonl(rec_file, "recordings manifest"):
        rec = _checked_recording(record, where, config.sampling_rate)
        if rec.id in recordings:
            raise ValueError(f"{where}: recording {rec.id!r} again: ids must be unique")
        recordings[rec.id] = rec
    out = []
    for where, record in read_jsonl(sup_file, "supervisions manifest"):
        try:
            sup = SupervisionSegment.from_dict(record)
        except Exception as e:  # a missing or mistyped field
            raise ValueError(f"{where}: not a lhotse SupervisionSegment: {e}") from None
        if sup.recording_id not in recordings:
            raise ValueError(
                f"{where}: supervision {sup.id} is on recording {sup.recording_id!r}, which {rec_file} does not list"
            )
        out.append(_supervision_utterance(sup, recordings[sup.recording_id], 0.0, where, text_field))
    return out


def lhotse_utterances(
    path: Pathlike, config: UtteranceImportConfig, text_field: str = "text"
) -> list[ImportedUtterance]:
    """The supervisions of lhotse manifests (see the module doc) as utterances; errors name ``file:line``."""
    rec_file, sup_file, cuts_file = _manifest_files(Path(path))
    if rec_file and sup_file:
        return manifest_utterances(rec_file, sup_file, config, text_field)
    out = []
    checked: dict[str, Recording] = {}
    for where, record in read_jsonl(cuts_file, "cuts manifest"):
        if record.get("type") != "MonoCut" or not record.get("recording"):
            raise ValueError(f"{where}: a {record.get('type')} without a recording; expected MonoCuts of recordings")
        try:
            cut = MonoCut.from_dict(record)
        except Exception as e:  # a missing or mistyped field
            raise ValueError(f"{where}: not a lhotse MonoCut: {e}") from None
        if cut.recording.id not in checked:
            checked[cut.recording.id] = _checked_recording(cut.recording.to_dict(), where, config.sampling_rate)
        rec = checked[cut.recording.id]
        out += [_supervision_utterance(sup, rec, cut.start, where, text_field) for sup in cut.supervisions]
    return out


def read_utterances(path: Pathlike, config: UtteranceImportConfig, skips: Skips) -> list[ImportedUtterance]:
    """A Kaldi data directory or lhotse manifests -> utterances (unique ids)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such directory")
    if (path / "wav.scp").is_file():
        utterances = kaldi_utterances(path, config, skips)
    else:
        utterances = lhotse_utterances(path, config)
    seen: dict[str, str] = {}
    for utt in utterances:
        if utt.id in seen:
            raise ValueError(f"{utt.where}: utterance {utt.id!r} again (first at {seen[utt.id]}): ids must be unique")
        seen[utt.id] = utt.where
    return utterances


def utterance_supervision(
    utt: ImportedUtterance, config: UtteranceImportConfig, skips: Skips
) -> SupervisionSegment | None:
    """The AM supervision of one utterance, or None (a counted skip)."""
    duration = utt.recording.duration
    end = duration if utt.end is None else utt.end
    if end > duration + config.end_tolerance or utt.start >= duration:
        skips.add(
            "segment outside the audio",
            utt.span_where,
            f"{utt.id}: {utt.start:.3f}-{end:.3f} s, {utt.recording.id} lasts {duration:.3f} s",
        )
        return None
    end = min(end, duration)
    if end - utt.start > config.max_duration:
        skips.add(
            "longer than max_duration", utt.span_where, f"{utt.id}: {end - utt.start:.1f} s > {config.max_duration} s"
        )
        return None
    norm = normalise_transcript(utt.text or "", config)
    if norm.reason:
        skips.add(norm.reason, utt.where, f"{utt.id}: {norm.detail}")
        return None
    speaker = utt.speaker or utt.recording.id
    return SupervisionSegment(
        id=utt.id,
        recording_id=utt.recording.id,
        start=round(utt.start, 3),
        duration=round(end - utt.start, 3),
        channel=utt.channel,
        text=" ".join(norm.words),
        language=utt.language,
        speaker=utt.recording.id if config.cmvn_group == "recording" else speaker,
        custom={"words": norm.words, "speaker": speaker},
    )


def dev_unit_of(sup: SupervisionSegment, unit: str) -> str:
    return sup.custom["speaker"] if unit == "speaker" else sup.recording_id


def choose_dev_units(
    hours: Mapping[str, float], share: float, seed: int, max_share: float = 1 / 3, what: str = "dev unit"
) -> list[str]:
    """Units (unit -> hours) drawn with ``seed`` until they hold about ``share`` of the hours, never more than
    ``max_share`` (``punct.training.heldout.draw_by_share``); at least one unit stays for training."""
    if len(hours) < 2:
        raise ValueError(
            f"{len(hours)} {what}(s): cannot hold one out for dev and train on the rest; give the dev "
            "data separately, or use another dev_unit"
        )
    return draw_by_share(hours, [share], seed, max_share, what)[0]


def supervisions_of(
    path: Pathlike, config: UtteranceImportConfig, skips: Skips
) -> tuple[dict[str, Recording], list[SupervisionSegment]]:
    """The recordings and AM supervisions of one input (skipped utterances counted in ``skips``)."""
    utterances = read_utterances(path, config, skips)
    sups = [s for s in (utterance_supervision(u, config, skips) for u in utterances) if s is not None]
    recordings = {u.recording.id: u.recording for u in utterances}
    if not sups:
        raise ValueError(f"{path}: no usable utterance among {len(utterances)} (skipped: {dict(skips.counts)})")
    return recordings, sups


def _check_shared_ids(
    recordings: dict[str, Recording],
    sups: Sequence[SupervisionSegment],
    dev_recordings: dict[str, Recording],
    dev_sups: Sequence[SupervisionSegment],
    dev_path: Pathlike,
) -> None:
    """Given dev data must not repeat a training utterance id, nor use a recording id for other audio."""
    shared = sorted({s.id for s in sups} & {s.id for s in dev_sups})
    if shared:
        raise ValueError(f"{dev_path}: utterance ids also in the training data: {shared[:5]}")
    for rec_id in sorted(recordings.keys() & dev_recordings.keys()):
        ours, theirs = recordings[rec_id].sources[0].source, dev_recordings[rec_id].sources[0].source
        if ours != theirs:
            raise ValueError(f"{dev_path}: recording {rec_id!r} is {theirs}, but {ours} in the training data")


def split_supervisions(
    sups: Sequence[SupervisionSegment], config: UtteranceImportConfig, seed: int
) -> tuple[list[SupervisionSegment], list[SupervisionSegment], list[str]]:
    """(train, dev, dev units): speakers or recordings holding a seeded ``dev_share`` of the hours held out for dev."""
    hours: dict[str, float] = {}
    for s in sups:
        unit = dev_unit_of(s, config.dev_unit)
        hours[unit] = hours.get(unit, 0.0) + s.duration / 3600
    dev_units = set(choose_dev_units(hours, config.dev_share, seed, config.max_dev_share, config.dev_unit))
    train = [s for s in sups if dev_unit_of(s, config.dev_unit) not in dev_units]
    dev = [s for s in sups if dev_unit_of(s, config.dev_unit) in dev_units]
    return train, dev, sorted(dev_units)


def import_utterance_data(
    data: Pathlike,
    output_dir: Pathlike | None = None,
    config: UtteranceImportConfig = UtteranceImportConfig(),
    seed: int = 42,
    *,
    prefix: str,
    dev: Pathlike | None = None,
) -> dict[str, dict[str, object]]:
    """Utterance data (and optional dev data) -> {split: {"recordings", "supervisions"}} for train and dev,
    written as ``<prefix>_<kind>_<split>.jsonl.gz`` (and ``import_stats.json``) when ``output_dir``."""
    skips = {str(data): Skips()}
    recordings, sups = supervisions_of(data, config, skips[str(data)])
    if dev is None:
        train, dev_sups, units = split_supervisions(sups, config, seed)
        held_out = (
            f"{len(units)} {config.dev_unit}(s) drawn with seed {seed} for {config.dev_share:.0%} of the "
            f"hours: {', '.join(units)}"
        )
    else:
        skips[str(dev)] = Skips()
        dev_recordings, dev_sups = supervisions_of(dev, config, skips[str(dev)])
        _check_shared_ids(recordings, sups, dev_recordings, dev_sups, dev)
        recordings.update(dev_recordings)
        train, held_out = sups, f"the given dev data {dev}"
    out: dict[str, dict[str, object]] = {}
    stats: dict[str, object] = {
        "dev_part": held_out,
        "skipped": {k: dict(sorted(v.counts.items())) for k, v in skips.items()},
    }
    warnings: list[str] = []
    for split, split_sups in (("train", train), ("dev", dev_sups)):
        rec_ids = sorted({s.recording_id for s in split_sups})
        out[split] = {
            "recordings": RecordingSet.from_recordings(recordings[r] for r in rec_ids),
            "supervisions": SupervisionSet.from_segments(split_sups),
        }
        stats[split] = split_stats(split_sups, len(rec_ids))
        logger.info("%s: %s", split, stats[split])
        warning = small_part_warning(
            f"the AM's {split} part",
            sum(s.duration for s in split_sups),
            len(split_sups),
            60 * config.min_split_minutes,
            config.min_split_utterances,
        )
        if warning:
            warnings.append(warning)
    if warnings:
        stats["warnings"] = warnings
    logger.info("dev: %s; skipped utterances: %s", held_out, stats["skipped"])
    if output_dir is not None:
        write_am_manifests(out, output_dir, prefix)
        atomic_write_text(Path(output_dir) / "import_stats.json", json.dumps(stats, indent=2, sort_keys=True) + "\n")
    return out


def split_stats(sups: Sequence[SupervisionSegment], num_recordings: int) -> dict[str, object]:
    return {
        "utterances": len(sups),
        "recordings": num_recordings,
        "speakers": len({s.custom["speaker"] for s in sups}),
        "hours": round(sum(s.duration for s in sups) / 3600, 4),
    }


def write_am_manifests(manifests: dict[str, dict[str, object]], output_dir: Pathlike, prefix: str) -> None:
    """``<prefix>_{recordings,supervisions}_<split>.jsonl.gz`` in ``output_dir``, each written atomically."""
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    for split, parts in manifests.items():
        for kind in ("recordings", "supervisions"):
            with atomic_path(output_dir / f"{prefix}_{kind}_{split}.jsonl.gz", suffix=".jsonl.gz") as tmp:
                parts[kind].to_file(tmp)
