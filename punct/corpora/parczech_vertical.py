"""Readers (and a writer) for ParCzech 3.0 gold "verticals" and speaker metadata.

A vertical ``<audio stem>.vert`` is the official (stenographic) transcript of one recording,
one token per line, three tab-separated columns::

    Usnesení        ps2013-016-01-000-000.u1.p1.s1.w4     JanNovak.1970
    .               ps2013-016-01-000-000.u1.p1.s1.w5     JanNovak.1970

* column 1: the token; punctuation marks are lines of their own and belong to the word
  before them (see ``punct.text.token_labels``);
* column 2: the TEI word id ``<doc>.u<N>.p<N>.s<N>.w<N>``; the part before ``.w<N>`` names
  the sentence, so a change of it is a sentence boundary;
* column 3: the speaker id (e.g. ``JanNovak.1970``).

Tolerance (the exact release format could not be fully confirmed, see REFERENCE.md):
* empty lines and lines starting with ``<`` (XML-like structure tags) or ``#`` are skipped
  and counted;
* a punctuation line may have only the token (1 column) or token and id (2 columns): the
  missing id/speaker are taken from the previous token;
* ids that do not match the TEI pattern are accepted if they contain a dot; the sentence is
  then the id without its last dot-separated part;
* anything else (a word line without id or speaker, more than three columns, an empty token,
  an id without a dot, a punctuation line before any word) is an error naming file and line.

Speaker metadata: a tab-separated file with a header line that contains at least the
columns ``id`` and ``gender`` (other columns are ignored).
"""

from __future__ import annotations

import csv
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from lhotse.utils import Pathlike

from punct.align.segments import OfficialWord
from punct.text.token_labels import ExtractionStats, LabeledWord, extract_labels, is_mark
from punct.utils.atomic import atomic_write_text

TEI_ID = re.compile(r"^(?P<sentence>.+\.u\d+\.p\d+\.s\d+)\.w(?P<word>\d+)$")


class VerticalToken(NamedTuple):
    token: str
    word_id: str
    speaker: str
    sentence: str  # sentence key (the id without its word part)
    line: int  # 1-based line number in the file


@dataclass
class Vertical:
    path: Path
    tokens: list[VerticalToken]
    skipped_lines: int = 0

    @property
    def recording_id(self) -> str:
        return vertical_stem(self.path)

    def words(self, stats: ExtractionStats | None = None, numbers: str = "spoken") -> list[OfficialWord]:
        """Labeled words: see ``punct.text.token_labels.extract_labels`` for the rules (the words of a
        spoken number share its token's id)."""
        labeled: list[LabeledWord] = extract_labels((t.token for t in self.tokens), stats, numbers)
        sentence_index: dict[str, int] = {}
        out = []
        for i, w in enumerate(labeled):
            tok = self.tokens[w.token_index]
            s = sentence_index.setdefault(tok.sentence, len(sentence_index))
            out.append(OfficialWord(w.word, w.punct, w.case, tok.word_id, tok.speaker, s, i))
        return out

    @property
    def speakers(self) -> list[str]:
        return sorted({t.speaker for t in self.tokens})


def vertical_stem(path: Pathlike) -> str:
    """``X.mp3.vert`` / ``X.wav.vert`` / ``X.vert`` -> ``X`` (the recording id)."""
    name = Path(path).name
    if name.endswith(".vert"):
        name = name[: -len(".vert")]
    for ext in (".mp3", ".wav", ".flac"):
        if name.lower().endswith(ext):
            return name[: -len(ext)]
    return name


def sentence_key(word_id: str, path: Pathlike, line: int) -> str:
    m = TEI_ID.match(word_id)
    if m:
        return m.group("sentence")
    if "." not in word_id:
        raise ValueError(f"{path}:{line}: word id {word_id!r} has no '.'; expected e.g. <doc>.u1.p1.s1.w4")
    return word_id.rsplit(".", 1)[0]


def read_vertical(path: Pathlike) -> Vertical:
    """Reads one vertical; see the module docstring for the format and the tolerance."""
    path = Path(path)
    tokens: list[VerticalToken] = []
    skipped = 0
    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, start=1):
            line = raw.rstrip("\r\n")
            if not line.strip() or line.startswith("<") or line.startswith("#"):
                skipped += 1
                continue
            cols = line.split("\t")
            if len(cols) > 3:
                raise ValueError(f"{path}:{n}: expected 3 tab-separated columns (token, id, speaker), got {len(cols)}")
            token = cols[0].strip()
            if not token:
                raise ValueError(f"{path}:{n}: empty token")
            if len(cols) < 3 or not all(c.strip() for c in cols[1:]):
                if not is_mark(token):
                    raise ValueError(
                        f"{path}:{n}: word {token!r} needs 3 tab-separated columns (token, id, speaker), got {line!r}"
                    )
                if not tokens:
                    raise ValueError(f"{path}:{n}: punctuation line without id/speaker before any word")
                prev = tokens[-1]
                word_id = cols[1].strip() if len(cols) > 1 and cols[1].strip() else prev.word_id
                sentence = sentence_key(word_id, path, n) if word_id != prev.word_id else prev.sentence
                tokens.append(VerticalToken(token, word_id, prev.speaker, sentence, n))
                continue
            word_id, speaker = cols[1].strip(), cols[2].strip()
            tokens.append(VerticalToken(token, word_id, speaker, sentence_key(word_id, path, n), n))
    if skipped:
        logging.debug("%s: skipped %d empty/structure lines", path, skipped)
    return Vertical(path, tokens, skipped)


def write_vertical(path: Pathlike, tokens: Iterable[VerticalToken]) -> None:
    """Writes token, id, speaker lines atomically (the format ``read_vertical`` reads)."""
    lines = []
    for t in tokens:
        if "\t" in t.token or "\n" in t.token:
            raise ValueError(f"token {t.token!r} contains a tab or newline")
        lines.append(f"{t.token}\t{t.word_id}\t{t.speaker}\n")
    atomic_write_text(path, "".join(lines))


@dataclass
class SpeakerInfo:
    id: str
    gender: str
    extra: dict[str, str] = field(default_factory=dict)


def read_speakers(path: Pathlike) -> dict[str, SpeakerInfo]:
    """Speaker metadata TSV (header with ``id`` and ``gender``) -> {id: SpeakerInfo}."""
    path = Path(path)
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            raise ValueError(f"{path}:1: empty speaker file; expected a header with id and gender") from None
        missing = [c for c in ("id", "gender") if c not in header]
        if missing:
            raise ValueError(f"{path}:1: header {header} lacks column(s) {missing}")
        speakers: dict[str, SpeakerInfo] = {}
        for n, row in enumerate(reader, start=2):
            if not row or not any(c.strip() for c in row):
                continue
            if len(row) != len(header):
                raise ValueError(f"{path}:{n}: {len(row)} columns, header has {len(header)}")
            values = dict(zip(header, (c.strip() for c in row)))
            sid = values.pop("id")
            if not sid:
                raise ValueError(f"{path}:{n}: empty speaker id")
            if sid in speakers:
                raise ValueError(f"{path}:{n}: duplicate speaker id {sid!r}")
            speakers[sid] = SpeakerInfo(sid, values.pop("gender"), values)
    return speakers


def write_speakers(path: Pathlike, speakers: Iterable[SpeakerInfo]) -> None:
    rows = ["id\tgender\n"] + [f"{s.id}\t{s.gender}\n" for s in speakers]
    atomic_write_text(path, "".join(rows))


def find_recordings(root: Pathlike, audio_extensions=(".mp3", ".wav", ".flac")) -> dict[str, dict[str, Path]]:
    """Pairs audio files and verticals under ``root`` by name.

    ParCzech keeps audio at ``<term>ps/audio/YYYY/MM/DD/<16 digits>.mp3``; the vertical of
    ``X.mp3`` is ``X.mp3.vert`` or ``X.vert`` anywhere under ``root``.  wav and flac are
    accepted as well (the mini corpus writes wav).  Returns {recording id: {"audio", "vert"}}
    for the recordings that have both; the others are logged and counted.
    """
    root = Path(root)
    audio: dict[str, Path] = {}
    for p in sorted(root.rglob("*")):
        if p.suffix.lower() in audio_extensions and p.is_file():
            if p.stem in audio:
                raise ValueError(f"{p}: recording id {p.stem!r} also at {audio[p.stem]}")
            audio[p.stem] = p
    verts = {vertical_stem(p): p for p in sorted(root.rglob("*.vert"))}
    both = sorted(set(audio) & set(verts))
    if len(both) < max(len(audio), len(verts)):
        logging.warning(
            "%s: %d audio files without vertical, %d verticals without audio",
            root,
            len(set(audio) - set(verts)),
            len(set(verts) - set(audio)),
        )
    return {r: {"audio": audio[r], "vert": verts[r]} for r in both}
