"""MuST-C v1/v2 (English side) -> lhotse manifests with words and punctuation labels.

About the corpus
  MuST-C (Di Gangi et al. 2019) is TED talks in English with translations.  A release directory
  ``en-X/`` holds ``data/{train,dev,tst-COMMON,tst-HE}/{wav,txt}``: one 16 kHz wav per talk and per
  split a YAML list (one flow mapping per line: duration, offset, speaker_id, wav; v2 adds rW, uW)
  with the cased, punctuated English text ``<split>.en`` line by line in the same order.
  It is distributed by FBK after registration (https://ict.fbk.eu/must-c/); nothing is downloaded here.
  lhotse's own ``must_c`` recipe keeps the target-language text, hence this reader of the English side.

  The embedded mini corpus (``punct.corpora.mini_english``) is written in the same layout and read by
  the same code.

Output (``prepare_mustc(corpus_dir, output_dir)``)
  ``mustc_{recordings,supervisions}_{train,dev,test}.jsonl.gz`` (test = tst-COMMON).  Each supervision:
  id ``<wav stem>_<i>`` (i = index of the segment after sorting the talk's segments by offset),
  speaker = the talk (YAML speaker_id), text = the original English, and
  ``custom = {"words": [...], "punct": [...]}`` from :mod:`punct.text.normalize`.

Optional UniPunc split (``prepare_unipunc``): test = UniPunc's ``test-audio.json`` (490 multi-segment
items from MuST-C v1 dev), train/dev = UniPunc's ``train-audio.json`` split 90/10 with a seed; the
chosen line indices are saved in ``unipunc_split.json``.

Bad input
  Errors (naming file and line): malformed YAML line, YAML/text line-count mismatch, non-UTF-8 text,
  duplicate segment (same wav, offset, duration) or duplicate id, a talk in two splits, a split whose
  wavs are all missing.  Counted skips (reported in the summary): a missing or unreadable wav
  (all its segments), a segment that ends after its wav (beyond ``end_tolerance`` seconds; closer
  than that it is clipped), a segment without words.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import soundfile as sf
from lhotse import Recording, RecordingSet, SupervisionSegment, SupervisionSet
from lhotse.qa import validate_recordings_and_supervisions
from lhotse.utils import Pathlike

from punct.labels import PUNCT4, WordLabels
from punct.text.normalize import NormalizeConfig, normalize
from punct.utils.atomic import atomic_path

logger = logging.getLogger(__name__)

# Our split name -> MuST-C folder name.
MUSTC_SPLITS: dict[str, str] = {"train": "train", "dev": "dev", "test": "tst-COMMON"}
SKIP_REASONS = (
    "missing_wav",
    "unreadable_wav",
    "beyond_end",
    "no_words",
    "unspeakable_token",
    "no_transcript",
    "no_audio",
)  # the last two: an imported corpus (punct.corpora.imported)

_FLOW_LINE = re.compile(r"^\s*-\s*\{(?P<body>.*)\}\s*$")
_PAIR = re.compile(r"\s*(?P<key>[A-Za-z_][\w]*)\s*:\s*(?P<value>'[^']*'|\"[^\"]*\"|[^,]*?)\s*(?:,|$)")


@dataclass
class SegmentEntry:
    """One YAML line with its text."""

    line: int  # 1-based line in the YAML file
    wav: str
    offset: float
    duration: float
    speaker: str
    text: str


@dataclass
class SplitStats:
    segments: int = 0
    seconds: float = 0.0
    labels: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)
    clipped: int = 0


# ----------------------------------------------------------------------------------------------
# Reading the text files


def parse_yaml_line(line: str, path: Path, lineno: int) -> dict[str, str]:
    """``- {duration: 2.71, offset: 12.34, speaker_id: spk.9, wav: ted_9.wav}`` -> dict of strings."""
    m = _FLOW_LINE.match(line)
    if not m:
        raise ValueError(
            f"{path}:{lineno}: malformed segment line (expected '- {{duration: .., offset: .., "
            f"speaker_id: .., wav: ..}}'): {line.strip()[:120]!r}"
        )
    body = m.group("body").strip()
    values: dict[str, str] = {}
    pos = 0
    while pos < len(body):
        pm = _PAIR.match(body, pos)
        if not pm or pm.end() == pos:
            raise ValueError(f"{path}:{lineno}: malformed segment line near {body[pos : pos + 40]!r}")
        values[pm.group("key")] = pm.group("value").strip("'\"")
        pos = pm.end()
    return values


def read_yaml_segments(path: Path) -> list[tuple[int, str, float, float, str]]:
    """(line, wav, offset, duration, speaker) per segment line; blank lines are ignored."""
    entries = []
    for lineno, line in enumerate(_read_lines(path), start=1):
        if not line.strip():
            continue
        values = parse_yaml_line(line, path, lineno)
        missing = [k for k in ("duration", "offset", "wav") if k not in values]
        if missing:
            raise ValueError(f"{path}:{lineno}: segment line lacks {missing}: {line.strip()[:120]!r}")
        try:
            offset, duration = float(values["offset"]), float(values["duration"])
        except ValueError:
            raise ValueError(f"{path}:{lineno}: offset/duration are not numbers: {line.strip()[:120]!r}") from None
        if not (np.isfinite(offset) and np.isfinite(duration)) or offset < 0 or duration <= 0:
            raise ValueError(
                f"{path}:{lineno}: needs offset >= 0 and duration > 0, got offset {offset}, duration {duration}"
            )
        wav = values["wav"]
        entries.append((lineno, wav, offset, duration, values.get("speaker_id") or Path(wav).stem))
    return entries


def _read_lines(path: Path) -> list[str]:
    """Lines of a UTF-8 file; a byte that is not UTF-8 is an error naming the line."""
    try:
        raw = Path(path).read_bytes()
    except OSError as e:
        raise FileNotFoundError(f"{path}: cannot read ({e.strerror})") from None
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    lines = raw.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    out = []
    for lineno, line in enumerate(lines, start=1):
        try:
            out.append(line.decode("utf-8").rstrip("\r"))
        except UnicodeDecodeError as e:
            raise ValueError(
                f"{path}:{lineno}: not UTF-8 (byte {line[e.start]:#04x} at column {e.start + 1})"
            ) from None
    return out


def read_split_entries(split_dir: Path, split: str, language: str = "en") -> list[SegmentEntry]:
    """The segments of one MuST-C split folder with their English text."""
    yaml_path = split_dir / "txt" / f"{split}.yaml"
    text_path = split_dir / "txt" / f"{split}.{language}"
    for p in (yaml_path, text_path):
        if not p.is_file():
            raise FileNotFoundError(f"{p}: no such file (expected MuST-C layout <root>/data/{split}/txt/)")
    entries = read_yaml_segments(yaml_path)
    texts = [t for t in _read_lines(text_path)]
    # The YAML may have blank lines (ignored); the text file may not: every line is a segment.
    if len(texts) != len(entries):
        raise ValueError(
            f"{yaml_path} has {len(entries)} segments but {text_path} has {len(texts)} lines; "
            "they must correspond line by line"
        )
    return [
        SegmentEntry(line, wav, off, dur, spk, text.strip()) for (line, wav, off, dur, spk), text in zip(entries, texts)
    ]


def split_dir_of(corpus_dir: Path, mustc_split: str) -> Path:
    """``<root>/data/<split>`` (a release) or ``<root>/<split>`` (a data folder given directly)."""
    for candidate in (corpus_dir / "data" / mustc_split, corpus_dir / mustc_split):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"{corpus_dir}: no data/{mustc_split} folder (is this a MuST-C en-X directory?)")


# ----------------------------------------------------------------------------------------------
# Manifests


class _WavInfo:
    """Recordings by wav path, opened once; ``None`` for a missing/unreadable wav (with the reason)."""

    def __init__(self) -> None:
        self._cache: dict[Path, tuple[Recording | None, str]] = {}

    def get(self, path: Path) -> tuple[Recording | None, str]:
        if path not in self._cache:
            if not path.is_file():
                self._cache[path] = (None, "missing_wav")
            else:
                try:
                    sf.info(str(path))
                    self._cache[path] = (Recording.from_file(path, recording_id=path.stem), "")
                except Exception as e:  # noqa: BLE001 - any decoder error means "unreadable"
                    logger.warning("%s: unreadable wav (%s)", path, e)
                    self._cache[path] = (None, "unreadable_wav")
        return self._cache[path]


def make_supervision(
    seg_id: str,
    recording: Recording,
    start: float,
    duration: float,
    speaker: str,
    text: str,
    norm: NormalizeConfig,
    extra: dict[str, object] | None = None,
) -> tuple[SupervisionSegment | None, str]:
    """A supervision with words and labels, and ``""``; or None and the skip reason with its detail:
    ``no_words``, or ``unspeakable_token`` (a token that cannot be said as words: punct.text.numbers)."""
    result = normalize(text, norm)
    if result.unspeakable:
        return None, f"unspeakable_token: {', '.join(result.unspeakable)}"
    if not result.words:
        return None, "no_words"
    custom: dict[str, object] = WordLabels(seg_id, tuple(result.words), tuple(result.labels)).to_custom()
    if extra:
        custom.update(extra)
    return SupervisionSegment(
        id=seg_id,
        recording_id=recording.id,
        start=round(start, 6),
        duration=round(duration, 6),
        channel=0,
        text=text,
        language="English",
        speaker=speaker,
        custom=custom,
    ), ""


def _count_skip(stats: SplitStats, why: str, where: str) -> None:
    """Counts a segment skipped for its text (``why`` from make_supervision); an unspeakable token is logged."""
    reason = why.split(":", 1)[0]
    stats.skipped[reason] += 1
    if reason != "no_words":
        logger.warning("%s skipped: %s", where, why.replace("_", " ", 1))


def _fit_to_recording(start: float, duration: float, recording: Recording, tolerance: float) -> float | None:
    """The duration, clipped to the recording's end if it overshoots by at most ``tolerance``; else None."""
    end = start + duration
    if end <= recording.duration + 1e-6:
        return duration
    if end - recording.duration <= tolerance and recording.duration - start > 0:
        return recording.duration - start
    return None


def _segments_by_talk(entries: Sequence[SegmentEntry], yaml_path: Path) -> dict[str, list[SegmentEntry]]:
    """The split's segments grouped by wav; a segment listed twice (same wav, offset and duration) is an error."""
    by_talk: dict[str, list[SegmentEntry]] = defaultdict(list)
    seen: dict[tuple[str, float, float], int] = {}
    for e in entries:
        key = (e.wav, round(e.offset, 4), round(e.duration, 4))
        if key in seen:
            raise ValueError(
                f"{yaml_path}:{e.line}: duplicate segment (same wav, offset and duration as line {seen[key]})"
            )
        seen[key] = e.line
        by_talk[e.wav].append(e)
    return by_talk


def _talk_supervisions(
    talk: Sequence[SegmentEntry],
    recording: Recording,
    yaml_path: Path,
    norm: NormalizeConfig,
    end_tolerance: float,
    stats: SplitStats,
) -> list[SupervisionSegment]:
    """The supervisions of one talk's segments (sorted by offset), counting what is kept and skipped in ``stats``."""
    supervisions = []
    for i, e in enumerate(talk):
        seg_id = f"{recording.id}_{i}"
        duration = _fit_to_recording(e.offset, e.duration, recording, end_tolerance)
        if duration is None:
            logger.warning(
                "%s:%d: segment %s (%.2f-%.2f s) ends after its wav (%.2f s): skipped",
                yaml_path,
                e.line,
                seg_id,
                e.offset,
                e.offset + e.duration,
                recording.duration,
            )
            stats.skipped["beyond_end"] += 1
            continue
        if duration < e.duration:
            stats.clipped += 1
        sup, why = make_supervision(seg_id, recording, e.offset, duration, e.speaker, e.text, norm)
        if sup is None:
            _count_skip(stats, why, f"{yaml_path}:{e.line}: segment {seg_id}")
            continue
        supervisions.append(sup)
        stats.segments += 1
        stats.seconds += sup.duration
        stats.labels.update(sup.custom["punct"])
    return supervisions


def prepare_split(
    corpus_dir: Path,
    mustc_split: str,
    norm: NormalizeConfig = NormalizeConfig(),
    language: str = "en",
    end_tolerance: float = 0.1,
) -> tuple[RecordingSet, SupervisionSet, SplitStats]:
    """Reads one MuST-C split folder."""
    split_dir = split_dir_of(Path(corpus_dir), mustc_split)
    yaml_path = split_dir / "txt" / f"{mustc_split}.yaml"
    by_talk = _segments_by_talk(read_split_entries(split_dir, mustc_split, language), yaml_path)
    wavs = _WavInfo()
    stats = SplitStats()
    recordings: list[Recording] = []
    supervisions: list[SupervisionSegment] = []
    for wav_name in sorted(by_talk):
        talk = sorted(by_talk[wav_name], key=lambda e: (e.offset, e.line))
        recording, reason = wavs.get(split_dir / "wav" / wav_name)
        if recording is None:
            logger.warning(
                "%s:%d: %s %s: skipping its %d segments",
                yaml_path,
                talk[0].line,
                reason.replace("_", " "),
                split_dir / "wav" / wav_name,
                len(talk),
            )
            stats.skipped[reason] += len(talk)
            continue
        talk_supervisions = _talk_supervisions(talk, recording, yaml_path, norm, end_tolerance, stats)
        supervisions += talk_supervisions
        if talk_supervisions:
            recordings.append(recording)
    if not recordings and stats.skipped["missing_wav"] + stats.skipped["unreadable_wav"] > 0:
        raise FileNotFoundError(
            f"{split_dir / 'wav'}: none of the {len(by_talk)} wavs named in {yaml_path} could be read"
        )
    return RecordingSet.from_recordings(recordings), SupervisionSet.from_segments(supervisions), stats


Manifests = dict[str, dict[str, RecordingSet | SupervisionSet]]


def prepare_mustc(
    corpus_dir: Pathlike,
    output_dir: Pathlike | None = None,
    splits: Sequence[str] = ("train", "dev", "test"),
    norm: NormalizeConfig = NormalizeConfig(),
    language: str = "en",
    end_tolerance: float = 0.1,
) -> tuple[Manifests, dict[str, SplitStats]]:
    """Manifests per split (train/dev/test = train/dev/tst-COMMON); written to ``output_dir`` if given."""
    corpus_dir = Path(corpus_dir)
    manifests: Manifests = {}
    stats: dict[str, SplitStats] = {}
    for split in splits:
        if split not in MUSTC_SPLITS:
            raise ValueError(f"unknown split {split!r}; known: {sorted(MUSTC_SPLITS)}")
        recs, sups, st = prepare_split(corpus_dir, MUSTC_SPLITS[split], norm, language, end_tolerance)
        manifests[split] = {"recordings": recs, "supervisions": sups}
        stats[split] = st
    check_disjoint(manifests)
    for m in manifests.values():
        validate_recordings_and_supervisions(m["recordings"], m["supervisions"])
    if output_dir is not None:
        write_manifests(manifests, Path(output_dir))
    return manifests, stats


def check_disjoint(manifests: Manifests) -> None:
    """No recording (talk) and no supervision id in two splits."""
    owner: dict[str, str] = {}
    for split, m in manifests.items():
        for rec in m["recordings"]:
            if rec.id in owner and owner[rec.id] != split:
                raise ValueError(f"recording {rec.id} appears in splits {owner[rec.id]} and {split}")
            owner[rec.id] = split


def write_manifests(manifests: Manifests, output_dir: Path, prefix: str = "mustc") -> None:
    """``<prefix>_{recordings,supervisions}_<split>.jsonl.gz``, each written atomically."""
    output_dir.mkdir(parents=True, exist_ok=True)
    for split, m in manifests.items():
        for kind in ("recordings", "supervisions"):
            path = output_dir / f"{prefix}_{kind}_{split}.jsonl.gz"
            with atomic_path(path, suffix=".jsonl.gz") as tmp:
                m[kind].to_file(tmp)
            logger.info("wrote %s (%d)", path, len(m[kind]))


# ----------------------------------------------------------------------------------------------
# UniPunc


@dataclass
class UnipuncItem:
    line: int
    ids: list[str]  # MuST-C segment ids, e.g. ["ted_767_0", "ted_767_1"]
    wav_path: str  # as written: <MUSTC1_PATH>/dev/wav/ted_767.wav
    start_sample: int
    num_samples: int
    text: str
    speaker: str


def read_unipunc_items(path: Path) -> list[UnipuncItem]:
    """UniPunc's JSON Lines (``train-audio.json``, ``test-audio.json``)."""
    items: list[UnipuncItem] = []
    seen: dict[str, int] = {}
    for lineno, line in enumerate(_read_lines(path), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            audio = str(obj["audio"])
            wav_path, start, num = audio.rsplit(":", 2)
            item = UnipuncItem(
                line=lineno,
                ids=[x for x in str(obj["id"]).split(",") if x],
                wav_path=wav_path,
                start_sample=int(start),
                num_samples=int(num),
                text=str(obj["tgt_text"]).strip(),
                speaker=str(obj.get("speaker_id") or Path(wav_path).stem),
            )
        except (ValueError, KeyError, TypeError) as e:
            raise ValueError(
                f"{path}:{lineno}: malformed UniPunc item ({type(e).__name__}: {e}); expected JSON with "
                "id, audio '<path>.wav:<start>:<samples>', tgt_text"
            ) from None
        if not item.ids or item.num_samples <= 0 or item.start_sample < 0:
            raise ValueError(f"{path}:{lineno}: needs a segment id, start >= 0 and samples > 0")
        key = ",".join(item.ids)
        if key in seen:
            raise ValueError(f"{path}:{lineno}: duplicate id {key!r} (also line {seen[key]})")
        seen[key] = lineno
        items.append(item)
    if not items:
        raise ValueError(f"{path}: no UniPunc items")
    return items


def _resolve_unipunc_wav(corpus_dir: Path, wav_path: str) -> Path:
    """``<MUSTC1_PATH>/<split>/wav/<name>.wav`` -> the wav under ``corpus_dir`` (or the path itself if it exists)."""
    p = Path(wav_path)
    if p.is_file():
        return p
    parts = p.parts
    if len(parts) >= 3 and parts[-2] == "wav":
        split, name = parts[-3], parts[-1]
        for candidate in (corpus_dir / "data" / split / "wav" / name, corpus_dir / split / "wav" / name):
            if candidate.is_file():
                return candidate
        return corpus_dir / "data" / parts[-3] / "wav" / parts[-1]
    return corpus_dir / p.name


def unipunc_manifests(
    items: Sequence[UnipuncItem],
    corpus_dir: Path,
    source: Path,
    norm: NormalizeConfig,
    end_tolerance: float = 0.1,
) -> tuple[RecordingSet, SupervisionSet, SplitStats]:
    """One supervision per UniPunc item, id = the item's first MuST-C segment id."""
    wavs = _WavInfo()
    stats = SplitStats()
    recordings: dict[str, Recording] = {}
    supervisions: list[SupervisionSegment] = []
    for item in items:
        path = _resolve_unipunc_wav(corpus_dir, item.wav_path)
        recording, reason = wavs.get(path)
        if recording is None:
            logger.warning("%s:%d: %s %s: item skipped", source, item.line, reason.replace("_", " "), path)
            stats.skipped[reason] += 1
            continue
        seg_id = item.ids[0]
        if not re.fullmatch(re.escape(recording.id) + r"_\d+", seg_id):
            raise ValueError(f"{source}:{item.line}: id {seg_id!r} is not <wav stem>_<index> of {path.name}")
        start = item.start_sample / recording.sampling_rate
        duration = _fit_to_recording(start, item.num_samples / recording.sampling_rate, recording, end_tolerance)
        if duration is None:
            logger.warning("%s:%d: item %s ends after its wav %s: skipped", source, item.line, seg_id, path)
            stats.skipped["beyond_end"] += 1
            continue
        sup, why = make_supervision(
            seg_id, recording, start, duration, item.speaker, item.text, norm, extra={"unipunc_id": ",".join(item.ids)}
        )
        if sup is None:
            _count_skip(stats, why, f"{source}:{item.line}: item {seg_id}")
            continue
        supervisions.append(sup)
        recordings[recording.id] = recording
        stats.segments += 1
        stats.seconds += sup.duration
        stats.labels.update(sup.custom["punct"])
    if not supervisions:
        raise ValueError(f"{source}: none of the {len(items)} items could be used (see the warnings above)")
    return (
        RecordingSet.from_recordings(recordings[k] for k in sorted(recordings)),
        SupervisionSet.from_segments(supervisions),
        stats,
    )


def prepare_unipunc(
    corpus_dir: Pathlike,
    unipunc_dir: Pathlike,
    output_dir: Pathlike | None = None,
    seed: int = 42,
    dev_fraction: float = 0.1,
    norm: NormalizeConfig = NormalizeConfig(),
    end_tolerance: float = 0.1,
) -> tuple[Manifests, dict[str, SplitStats]]:
    """EfficientPunct's split of UniPunc: train/dev = train-audio.json 90/10 (seeded), test = test-audio.json.

    The chosen line indices (0-based item indices of train-audio.json) go to ``unipunc_split.json``.
    """
    corpus_dir, unipunc_dir = Path(corpus_dir), Path(unipunc_dir)
    train_path, test_path = unipunc_dir / "train-audio.json", unipunc_dir / "test-audio.json"
    for p in (train_path, test_path):
        if not p.is_file():
            raise FileNotFoundError(f"{p}: no such file (UniPunc's train-audio.json and test-audio.json)")
    train_items = read_unipunc_items(train_path)
    test_items = read_unipunc_items(test_path)
    order = np.random.default_rng(seed).permutation(len(train_items))
    num_dev = int(round(len(train_items) * dev_fraction))
    dev_idx, train_idx = sorted(order[:num_dev].tolist()), sorted(order[num_dev:].tolist())
    parts = {
        "train": ([train_items[i] for i in train_idx], train_path),
        "dev": ([train_items[i] for i in dev_idx], train_path),
        "test": (test_items, test_path),
    }
    manifests: Manifests = {}
    stats: dict[str, SplitStats] = {}
    for split, (items, source) in parts.items():
        recs, sups, st = unipunc_manifests(items, corpus_dir, source, norm, end_tolerance)
        validate_recordings_and_supervisions(recs, sups)
        manifests[split] = {"recordings": recs, "supervisions": sups}
        stats[split] = st
    if output_dir is not None:
        output_dir = Path(output_dir)
        write_manifests(manifests, output_dir)
        from punct.utils.atomic import atomic_write_text

        atomic_write_text(
            output_dir / "unipunc_split.json",
            json.dumps(
                {
                    "seed": seed,
                    "dev_fraction": dev_fraction,
                    "source": str(train_path),
                    "train": train_idx,
                    "dev": dev_idx,
                }
            )
            + "\n",
        )
    return manifests, stats


# ----------------------------------------------------------------------------------------------
# Summary


def format_summary(stats: dict[str, SplitStats]) -> str:
    """Per split: segments, hours, words, label counts and shares, skips."""
    head = f"{'split':<6}{'segments':>9}{'hours':>8}{'words':>9}" + "".join(f"{c:>16}" for c in PUNCT4.classes)
    head += "  skipped"
    lines = [head]
    for split, st in stats.items():
        words = sum(st.labels.values())
        line = f"{split:<6}{st.segments:>9}{st.seconds / 3600:>8.3f}{words:>9}"
        for c in PUNCT4.classes:
            line += f"{st.labels[c]:>9} {(st.labels[c] / words if words else 0):6.1%}"
        skipped = ", ".join(f"{k} {st.skipped[k]}" for k in SKIP_REASONS if st.skipped[k]) or "none"
        if st.clipped:
            skipped += f" (clipped to the wav end: {st.clipped})"
        lines.append(line + "  " + skipped)
    return "\n".join(lines)


def iter_supervisions(manifests: Manifests) -> Iterable[SupervisionSegment]:
    for m in manifests.values():
        yield from m["supervisions"]
