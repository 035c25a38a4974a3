"""The embedded Czech mini corpus: parliament-like "sittings" read by espeak-ng, in ParCzech layout.

About the corpus
  With no ParCzech 3.0 at hand the parczech recipe builds a small corpus offline.  The text is
  Czech aphorisms and quotations from the Debian package ``fortunes-cs`` (GPL; used from
  ``/usr/share/games/fortunes/cs`` when installed, else fetched with ``apt-get download`` into a
  cache folder and unpacked with ``dpkg-deb -x``).  The speech is eSpeak NG's ``cs`` voice through
  its C library (``punct.synthesis.tts``), whose word events give the spoken words' start times.

Layout (ParCzech 3.0 original data, see shared/REFERENCE.md; audio as 16 kHz wav, not mp3)::

    <out>/2013ps/audio/YYYY/MM/DD/<16 digits>.wav    one long recording per sitting
    <out>/2013ps/audio/YYYY/MM/DD/<16 digits>.vert   its official transcript (gold vertical)
    <out>/speakers.tsv                               id, gender
    <out>/synth/<16 digits>.words.tsv                what was really spoken: word, start, end (s)
    <out>/build.json, <out>/.done

  ``synth/*.words.tsv`` is the synthesizer's own transcript with times: the recipe can use it
  as a perfect "recognised" transcript to test the dataset creation without an acoustic model.

How it is built (every random choice from ``seed``)
  * Text: fortunes cleaned of attributions ("-- author" lines), with only Czech letters, digits,
    common punctuation and the symbols % § / +; 8-120 words each.  Tokenised UDPipe-like: words,
    numbers, marks and symbols are separate tokens.
  * Text order: a random permutation of the fortunes; the ``small`` size prefers fortunes with the
    rarest labels (``rare_marks``, ``rare_mark_weight``: weighted sampling without replacement), so
    that ``!`` ``?`` ``;`` ``"`` reach every split often enough to be learned and scored.
  * Speakers: ``num_speakers`` synthetic deputies, each an espeak ``cs`` variant (tiny/mini: m1-m7 for
    men, f1-f4 for women; small: 16 and 11 variants), pitch, rate and (small) intonation range drawn
    per speaker from the config's bounds, with a Czech-looking id ``<First><Last>.<year>``.
  * Sittings: turns of 1-4 fortunes until the target duration; speakers take turns in random
    order, each once before anyone speaks again (so every speaker is heard even in ``tiny``);
    0.3-0.8 s of silence between fortunes, 0.8-2 s between turns, low white noise.
  * The record differs from the speech as stenographic records do:
      - numbers and symbols are written as digits/symbols (``1998``, ``%``) but spoken as words
        (``tisíc devět set devadesát osm``, ``procent``); besides those in the text, a number
        phrase ("v roce 1998", "o 25 procent", ...) is added to a sentence with ``number_rate``;
      - spoken fillers (``ehm``, ``no``, ``prostě`` ...) and repeated words are not in the record
        (``filler_rate``, ``repeat_rate`` per word);
      - some words are edited (``edit_rate``: the record has another word) and some recorded
        words were never said (``insert_rate``).
  * Word times: start from espeak's word events; end = the last 10 ms frame above -35 dB
    (re the fortune's peak) before the next word's start.  The ``cs`` voice merges short words
    with a neighbour into one event; such words get starts interpolated by character position
    (counted in build.json as interpolated_word_starts).
  * Determinism: the text, speakers, record edits, pauses and verticals follow from ``seed``
    alone (sittings are planned from the text length, not the audio).  espeak-ng's audio itself is
    not bit-exact between runs (differences of a few ms in a sentence), so wav files and word
    times may differ slightly from one build to the next.
"""

from __future__ import annotations

import datetime
import functools
import itertools
import json
import logging
import re
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

from punct.corpora.parczech_vertical import SpeakerInfo, VerticalToken, write_speakers, write_vertical
from punct.synthesis.build_record import hours_of_size, wav_md5s
from punct.synthesis.debian import download_deb, unpack_deb
from punct.synthesis.prosody import PauseModel, prosody_rng, resolve_prosody, speak
from punct.text.token_labels import PUNCT_MAP, extract_labels, is_mark
from punct.utils.atomic import atomic_path, atomic_write_text, is_done, mark_done

logger = logging.getLogger(__name__)

FORTUNES_PACKAGE = "fortunes-cs"
SYSTEM_FORTUNES = Path("/usr/share/games/fortunes/cs")
# Files that are not Czech prose (Slovak, kernel mailing list, computing jargon in English).
EXCLUDED_FILES = {"klasik-sk", "lkml", "pocitace"}
SAMPLE_RATE = 16000

LETTERS = "a-zA-ZáčďéěíňóřšťúůýžÁČĎÉĚÍŇÓŘŠŤÚŮÝŽ"
ALLOWED = re.compile(rf"^[{LETTERS}0-9\s.,!?:;\-–—\"„“”()…%§/+]*$")
TOKEN = re.compile(rf"\d+|[{LETTERS}]+|\.\.\.|[^\s{LETTERS}0-9]")
SYMBOL_WORDS = {"%": ["procent"], "§": ["paragraf"], "/": ["lomeno"], "+": ["plus"]}
FILLERS = ["ehm", "no", "prostě", "vlastně", "jako", "takže"]
CHARS_PER_WORD = 6.5  # characters (with space) per word of the fortunes: plans sittings from the text
PROSODY_MARKS = {",", ".", "!", "?", ":", ";"}  # marks passed to espeak (others only in the record)

FIRST_M = ["Jan", "Petr", "Josef", "Pavel", "Martin", "Tomáš", "Jiří", "Karel", "Miroslav", "Zdeněk"]
FIRST_F = ["Jana", "Eva", "Marie", "Hana", "Lenka", "Věra", "Alena", "Lucie", "Markéta", "Zuzana"]
LAST = ["Novák", "Svoboda", "Dvořák", "Černý", "Procházka", "Kučera", "Veselý", "Horák", "Němec", "Marek"]


MALE_VARIANTS = ("m1", "m2", "m3", "m4", "m5", "m6", "m7")
FEMALE_VARIANTS = ("f1", "f2", "f3", "f4")
# espeak-ng variants that read Czech without clipping at pitch 50 / rate 175 (checked one by one; iven, paul,
# john, norbert, Andy, Lee, Gene clip): more distinct voices for the small corpus.
WIDE_MALE_VARIANTS = MALE_VARIANTS + ("m8", "klatt", "klatt2", "klatt3", "edward", "michel", "quincy", "robert", "Mike")
WIDE_FEMALE_VARIANTS = FEMALE_VARIANTS + ("f5", "Annie", "belinda", "linda", "steph", "Alicia", "grandma")


@dataclass(frozen=True)
class CzechMiniConfig:
    size: str = "mini"
    seed: int = 42
    num_sittings: int = 10
    sitting_seconds: float = 360.0  # planned from the text; the audio comes out ~20 % longer
    num_speakers: int = 16
    female_share: float = 0.4  # probability that a drawn speaker is a woman
    male_variants: tuple[str, ...] = MALE_VARIANTS  # espeak-ng variants of the cs voice, one per speaker
    female_variants: tuple[str, ...] = FEMALE_VARIANTS
    pitch: tuple[int, int] = (25, 75)  # espeak pitch (0-99) per speaker, drawn uniformly, bounds included
    rate: tuple[int, int] = (140, 210)  # words per minute per speaker, bounds included
    intonation: tuple[int, int] = (50, 50)  # espeak pitch range (0-100) per speaker; equal bounds: no draw
    # Fortunes whose labels hold one of ``rare_marks`` are drawn ``rare_mark_weight`` times as often
    # (weighted sampling without replacement); weight 1: a uniform permutation, as before the option.
    rare_marks: tuple[str, ...] = ()
    rare_mark_weight: float = 1.0
    filler_rate: float = 0.02
    repeat_rate: float = 0.01
    edit_rate: float = 0.01
    insert_rate: float = 0.01
    number_rate: float = 0.15
    # What espeak-ng is told about the marks (punct.synthesis.prosody): marks (PROSODY_MARKS spoken), none (the
    # words alone) or natural (the words, with pauses and question rises drawn from ``pauses``).
    prosody: str = "marks"
    pauses: PauseModel | None = None  # the natural prosody's model; None for marks and none


SIZES: dict[str, dict] = {
    "tiny": dict(num_sittings=3, sitting_seconds=75.0, num_speakers=6),
    "mini": dict(num_sittings=10, sitting_seconds=360.0, num_speakers=16),
    # ~6.7 h, 56 speakers over 16 male and 11 female variants, wider pitch/rate/intonation; fortunes with
    # the four rarest labels (each in < 5 % of the fortunes) drawn 5 times as often: 2-3x as many segments
    # with ! ? ; " as the uniform draw of the same size (seed 42, 36 sittings: ! in 50 segments against 22,
    # ; 79 against 26).
    # 56 sittings and speakers rather than 42 and 46 (5.0 h): the ten extra speakers are test speakers
    # (conf/segments_small.yaml), so the training set stays the same and the test set doubles.
    "small": dict(
        num_sittings=56,
        sitting_seconds=360.0,
        num_speakers=56,
        male_variants=WIDE_MALE_VARIANTS,
        female_variants=WIDE_FEMALE_VARIANTS,
        pitch=(15, 85),
        rate=(130, 230),
        intonation=(30, 80),
        rare_marks=("!", "?", ";", '"'),
        rare_mark_weight=5.0,
    ),
}


# <H>h (punct.synthesis.build_record.hours_of_size), for benchmarks/bench_scale.py: the small corpus (its wide voices,
# pitch, rate and intonation, rare-mark weighting, one speaker per sitting) with as many sittings as give about H hours
# of training audio.  Stage 3 holds out whole speakers (conf/segments<suffix>.yaml): a fixed SCALED_HELD_OUT_SPEAKERS
# for dev and for test, the rest train, so that the training hours grow with H while dev and test stay about the same
# (3 speakers: ~0.38 h of audio each, about the 20 min of egs/mustc's mini dev and test) -- shares of the hours would
# grow them with H, and small's 6 + 26 held-out speakers would outnumber a 1 h corpus' 8 training speakers.
# A speaker has about a sitting's audio: the mini corpus' 10 sittings of 360 s planned came out 1.283 h (natural
# prosody, seed 42), ~460 s each; so H hours are round(H * 3600 / 460) training speakers (at least one).
SCALED_HELD_OUT_SPEAKERS = 3
SITTING_AUDIO_SECONDS = 460.0


def scaled_size(hours: float) -> dict:
    """The config values of the size ``<hours>h``: small's, with a sitting and a speaker per ~460 s of training audio
    and SCALED_HELD_OUT_SPEAKERS more each for dev and test."""
    speakers = max(1, round(hours * 3600 / SITTING_AUDIO_SECONDS)) + 2 * SCALED_HELD_OUT_SPEAKERS
    return {**SIZES["small"], "num_sittings": speakers, "num_speakers": speakers}


def config_for_size(
    size: str, seed: int = 42, prosody: str = "marks", pauses: PauseModel | None = None
) -> CzechMiniConfig:
    hours = hours_of_size(size)
    if size not in SIZES and hours is None:
        raise ValueError(f"unknown Czech mini corpus size {size!r}; known: {sorted(SIZES)} or <H>h")
    values = SIZES[size] if hours is None else scaled_size(hours)
    return CzechMiniConfig(size=size, seed=seed, prosody=prosody, pauses=resolve_prosody(prosody, pauses), **values)


# ----------------------------------------------------------------------------------------------
# Text


def fetch_fortunes(cache_dir: Path) -> Path:
    """The folder of Czech fortune files: the installed one, or the .deb unpacked in ``cache_dir``."""
    if SYSTEM_FORTUNES.is_dir() and any(SYSTEM_FORTUNES.iterdir()):
        return SYSTEM_FORTUNES
    cache_dir = Path(cache_dir)
    target = cache_dir / FORTUNES_PACKAGE
    folder = target / "usr/share/games/fortunes/cs"
    if folder.is_dir():
        return folder
    deb = download_deb(FORTUNES_PACKAGE, cache_dir, f"or install it: apt-get install {FORTUNES_PACKAGE}")
    unpack_deb(deb, target)
    if not folder.is_dir():
        raise RuntimeError(f"{deb}: no usr/share/games/fortunes/cs inside")
    return folder


def clean_fortune(text: str) -> str | None:
    """One fortune -> a single line of prose, or None if it is unsuitable."""
    lines = [ln.strip() for ln in text.splitlines() if not ln.strip().startswith("--")]
    prose = re.sub(r"\s+", " ", " ".join(lines)).strip()
    if not prose or not ALLOWED.match(prose) or "--" in prose:
        return None
    n = len(prose.split())
    if not 8 <= n <= 120:
        return None
    return prose


@functools.lru_cache(maxsize=4)
def read_fortunes(folder: Path) -> tuple[str, ...]:
    """All usable fortunes of the Czech files, in a fixed order (file name, position)."""
    out = []
    for path in sorted(folder.iterdir()):
        if path.suffix or path.name in EXCLUDED_FILES or not path.is_file():
            continue  # .dat indexes, .u8 links to the same files
        raw = path.read_text(encoding="utf-8", errors="replace")
        for block in raw.split("\n%\n"):
            cleaned = clean_fortune(block)
            if cleaned:
                out.append(cleaned)
    return tuple(out)


def tokenize(text: str) -> list[str]:
    """UDPipe-like tokens: words, numbers, ``...`` and every other non-space character alone."""
    return TOKEN.findall(text)


def has_label(text: str, marks: Sequence[str]) -> bool:
    """True when a label of ``marks`` follows a word of ``text`` (the labels a model sees, after mark reduction)."""
    return any(w.punct in marks for w in extract_labels(tokenize(text)))


def fortune_order(fortunes: Sequence[str], cfg: CzechMiniConfig, rng: np.random.Generator) -> np.ndarray:
    """The order in which the sittings read the fortunes.

    Uniform (a permutation) unless ``cfg.rare_mark_weight != 1``: then a weighted sampling without
    replacement (Efraimidis and Spirakis 2006: sort by ``u ** (1 / weight)``, u uniform) in which a fortune
    with a label of ``cfg.rare_marks`` weighs ``rare_mark_weight`` and any other 1.
    """
    if cfg.rare_mark_weight == 1.0 or not cfg.rare_marks:
        return rng.permutation(len(fortunes))
    if cfg.rare_mark_weight <= 0:
        raise ValueError(f"rare_mark_weight must be positive, got {cfg.rare_mark_weight}")
    weights = np.array([cfg.rare_mark_weight if has_label(f, cfg.rare_marks) else 1.0 for f in fortunes])
    keys = rng.random(len(fortunes)) ** (1.0 / weights)
    return np.argsort(-keys, kind="stable")


_ONES = ["nula", "jedna", "dva", "tři", "čtyři", "pět", "šest", "sedm", "osm", "devět"]
_TEENS = [
    "deset",
    "jedenáct",
    "dvanáct",
    "třináct",
    "čtrnáct",
    "patnáct",
    "šestnáct",
    "sedmnáct",
    "osmnáct",
    "devatenáct",
]
_TENS = ["", "", "dvacet", "třicet", "čtyřicet", "padesát", "šedesát", "sedmdesát", "osmdesát", "devadesát"]
_HUNDREDS = ["", "sto", "dvě stě", "tři sta", "čtyři sta", "pět set", "šest set", "sedm set", "osm set", "devět set"]


def _below_thousand(n: int) -> list[str]:
    words: list[str] = []
    h, rest = divmod(n, 100)
    if h:
        words += _HUNDREDS[h].split()
    if 10 <= rest < 20:
        words.append(_TEENS[rest - 10])
    else:
        t, o = divmod(rest, 10)
        if t:
            words.append(_TENS[t])
        if o:
            words.append(_ONES[o])
    return words


def number_words(n: int) -> list[str]:
    """Czech cardinal (nominative) for 0 <= n < 1,000,000, e.g. 1998 -> tisíc devět set devadesát osm."""
    if not 0 <= n < 1_000_000:
        raise ValueError(f"number {n} out of range")
    if n == 0:
        return ["nula"]
    th, rest = divmod(n, 1000)
    words: list[str] = []
    if th == 1:
        words.append("tisíc")
    elif 2 <= th <= 4:
        words += ["dva" if th == 2 else _ONES[th], "tisíce"]
    elif th:
        words += _below_thousand(th) + ["tisíc"]
    return words + _below_thousand(rest)


def spoken_form(token: str) -> list[str]:
    """How a record token is said: lower-case word(s); marks are not said."""
    if is_mark(token):
        return []
    if token.isdigit():
        return number_words(int(token)) if len(token) <= 6 else [w for d in token for w in number_words(int(d))]
    if token in SYMBOL_WORDS:
        return list(SYMBOL_WORDS[token])
    return [token.lower()]


@dataclass
class SpokenFortune:
    """One fortune as recorded (tokens, sentence index per token) and as spoken."""

    tokens: list[str]
    sentence: list[int]
    spoken: list[str]
    synth_text: str
    spans: list[tuple[int, int]]  # character span of each spoken word in synth_text


def _number_phrase(rng: np.random.Generator) -> list[str]:
    kind = rng.integers(3)
    if kind == 0:
        return ["v", "roce", str(int(rng.integers(1990, 2022)))]
    if kind == 1:
        return ["o", str(int(rng.integers(2, 99))), "procent"]
    return ["podle", "tisku", str(int(rng.integers(100, 999)))]


def _with_number_phrase(
    tokens: list[str], rng: np.random.Generator, cfg: CzechMiniConfig, counts: dict[str, int]
) -> list[str]:
    """``tokens``, sometimes (``cfg.number_rate`` per sentence end) with a number phrase before a final mark."""
    finals = [i for i, t in enumerate(tokens) if t in {".", "!", "?"} and i > 0 and not is_mark(tokens[i - 1])]
    if finals and rng.random() < cfg.number_rate * len(finals):
        i = finals[int(rng.integers(len(finals)))]
        tokens[i:i] = _number_phrase(rng)
        counts["number_phrases"] += 1
    return tokens


def make_utterance(
    text: str, rng: np.random.Generator, cfg: CzechMiniConfig, vocab: Sequence[str], counts: dict[str, int]
) -> SpokenFortune:
    """Record tokens and spoken words of one fortune, with the record/speech differences."""
    tokens = _with_number_phrase(tokenize(text), rng, cfg, counts)
    record: list[str] = []
    sentence: list[int] = []
    spoken: list[str] = []
    synth_parts: list[str] = []
    spans: list[tuple[int, int]] = []
    s_idx = 0
    pos = 0

    def say(words: Sequence[str]) -> None:
        nonlocal pos
        for w in words:
            if synth_parts:
                synth_parts.append(" ")
                pos += 1
            spans.append((pos, pos + len(w)))
            synth_parts.append(w)
            pos += len(w)
            spoken.append(w)

    for k, tok in enumerate(tokens):
        if is_mark(tok):
            record.append(tok)
            sentence.append(s_idx)
            mark = PUNCT_MAP.get(tok)
            if mark in PROSODY_MARKS:
                synth_parts.append(mark)
                pos += len(mark)
            if tok in {".", "!", "?"} and k + 1 < len(tokens):
                s_idx += 1
            continue
        said = spoken_form(tok)
        if tok.isalpha() and rng.random() < cfg.filler_rate:
            say([FILLERS[int(rng.integers(len(FILLERS)))]])
            counts["fillers"] += 1
        if tok.isalpha() and rng.random() < cfg.insert_rate:
            record.append(vocab[int(rng.integers(len(vocab)))])  # recorded, never said
            sentence.append(s_idx)
            counts["unsaid_record_words"] += 1
        if tok.isalpha() and rng.random() < cfg.edit_rate:
            new = vocab[int(rng.integers(len(vocab)))]
            record.append(new[:1].upper() + new[1:] if tok[:1].isupper() else new)
            counts["edited_words"] += 1
        else:
            record.append(tok)
        sentence.append(s_idx)
        say(said)
        if tok.isalpha() and rng.random() < cfg.repeat_rate:
            say(said)
            counts["repeated_words"] += 1
        counts["digits_or_symbols"] += not tok.isalpha()
    return SpokenFortune(record, sentence, spoken, "".join(synth_parts), spans)


# ----------------------------------------------------------------------------------------------
# Speech


def _word_ends(audio: np.ndarray, starts: Sequence[float], sr: int) -> list[float]:
    """End of each word: the last 10 ms frame above -35 dB re the peak before the next start."""
    hop = sr // 100
    n = len(audio) // hop
    frames = audio[: n * hop].reshape(n, hop)
    rms = np.sqrt((frames**2).mean(1) + 1e-12)
    loud = rms > rms.max() * 10 ** (-35 / 20)
    ends = []
    for k, s in enumerate(starts):
        a = int(s * 100)
        b = int(starts[k + 1] * 100) if k + 1 < len(starts) else n
        idx = np.nonzero(loud[a:b])[0]
        ends.append((a + idx[-1] + 1) / 100 if len(idx) else max(s + 0.01, b / 100))
    return ends


def word_starts(events, spans: Sequence[tuple[int, int]], duration: float) -> tuple[list[float], int]:
    """Start of each spoken word from espeak word events, tolerating merged events.

    The ``cs`` voice merges short unstressed words with their neighbour into one event
    ("za mrhání"); a word without an event of its own gets a start interpolated by character
    position between its neighbours' starts.  Returns (starts, number of interpolated words).
    """
    usable = sorted((e for e in events if e.length > 0), key=lambda e: e.offset)
    found: list[float | None] = []
    j, prev_end = 0, 0
    for begin, end in spans:
        while j < len(usable) and usable[j].offset < prev_end:
            j += 1
        if j < len(usable) and usable[j].offset < end:
            found.append(usable[j].start)
            j += 1
        else:
            found.append(None)
        prev_end = max(end, begin)
    anchors = [(spans[k][0], t) for k, t in enumerate(found) if t is not None]
    if not anchors or anchors[0][0] != spans[0][0]:
        anchors.insert(0, (spans[0][0], 0.0 if found[0] is None else found[0]))
    anchors.append((spans[-1][1] + 1, duration))
    xs = np.array([a for a, _ in anchors], dtype=float)
    ts = np.maximum.accumulate(np.array([t for _, t in anchors], dtype=float))
    starts = [t if t is not None else float(np.interp(spans[k][0], xs, ts)) for k, t in enumerate(found)]
    starts = list(np.maximum.accumulate(starts))
    return [float(x) for x in starts], sum(t is None for t in found)


def _draw(rng: np.random.Generator, bounds: tuple[int, int]) -> int:
    """An integer in ``bounds`` (both included); equal bounds take no draw, so the stream of the
    tiny and mini corpora, built before the option existed, is unchanged."""
    low, high = bounds
    return low if low == high else int(rng.integers(low, high + 1))


def draw_speakers(rng: np.random.Generator, n: int, cfg: CzechMiniConfig = CzechMiniConfig()):
    """``n`` speakers with Czech-looking ids, each an espeak ``cs`` variant with its own pitch, rate, intonation."""
    from punct.synthesis.tts import Voice

    speakers = []
    used = set()
    while len(speakers) < n:
        female = rng.random() < cfg.female_share
        first = (FIRST_F if female else FIRST_M)[int(rng.integers(10))]
        last = LAST[int(rng.integers(10))]
        if female:
            last = last + "ová" if not last.endswith("ý") else last[:-1] + "á"
        sid = f"{first}{last}.{int(rng.integers(1945, 1995))}"
        if sid in used:
            continue
        used.add(sid)
        variants = cfg.female_variants if female else cfg.male_variants
        variant = variants[int(rng.integers(len(variants)))]
        pitch = _draw(rng, cfg.pitch)
        rate = _draw(rng, cfg.rate)
        voice = Voice("cs", variant, pitch, rate, _draw(rng, cfg.intonation))
        speakers.append((SpeakerInfo(sid, "F" if female else "M"), voice))
    return speakers


# what the build summary counts
COUNTERS = (
    "number_phrases",
    "fillers",
    "unsaid_record_words",
    "edited_words",
    "repeated_words",
    "digits_or_symbols",
    "fortunes",
    "interpolated_word_starts",
)


def _speak(
    engine,
    text: str,
    voice,
    rng: np.random.Generator,
    cfg: CzechMiniConfig,
    vocab: list[str],
    counts: dict[str, int],
    prosody_draws: np.random.Generator | None = None,
):
    """One fortune as an utterance (edits drawn from ``rng``, natural pauses from ``prosody_draws``) read by a
    jittered ``voice``: ``(utterance, voice used, 16 kHz audio, word starts, word ends)``."""
    from punct.synthesis.tts import Voice, resample

    utt = make_utterance(text, rng, cfg, vocab, counts)
    jitter = Voice(
        voice.name,
        voice.variant,
        int(np.clip(voice.pitch + rng.integers(-4, 5), 0, 99)),
        int(voice.rate * rng.uniform(0.95, 1.05)),
    )
    synth, _ = speak(engine, utt.synth_text, utt.spans, jitter, cfg.prosody, cfg.pauses, prosody_draws)
    audio = resample(synth.audio, synth.sample_rate, SAMPLE_RATE)
    if not utt.spoken:
        return utt, jitter, audio, [], []
    starts, interpolated = word_starts(synth.words, utt.spans, len(audio) / SAMPLE_RATE)
    counts["interpolated_word_starts"] += interpolated
    return utt, jitter, audio, starts, _word_ends(audio, starts, SAMPLE_RATE)


def _vertical_tokens(utt, paragraph_id: str, speaker_id: str) -> list[VerticalToken]:
    """The utterance's record tokens with TEI word ids ``<paragraph>.s<N>.w<N>``."""
    tokens = []
    w_in_sentence: dict[int, int] = {}
    for tok, sent in zip(utt.tokens, utt.sentence):
        w_in_sentence[sent] = w_in_sentence.get(sent, 0) + 1
        wid = f"{paragraph_id}.s{sent + 1}.w{w_in_sentence[sent]}"
        tokens.append(VerticalToken(tok, wid, speaker_id, wid.rsplit(".", 1)[0], 0))
    return tokens


def _write_sitting(
    out_dir: Path,
    cfg: CzechMiniConfig,
    s: int,
    rng: np.random.Generator,
    begin,
    planned: float,
    pieces: list[np.ndarray],
    tokens: list[VerticalToken],
    said: list[tuple[str, float, float]],
) -> dict:
    """Sitting ``s``: its wav (with a little noise), vertical and spoken words; returns its summary record
    (and its length in seconds under ``_seconds``)."""
    wav = np.concatenate(pieces)
    noise = np.random.default_rng([cfg.seed, s])  # own generator: len(wav) must not shift the plan's draws
    wav += noise.normal(0.0, 10 ** (rng.uniform(-70, -55) / 20.0), size=len(wav)).astype(np.float32)
    wav = np.clip(wav, -1.0, 1.0)
    end = begin + datetime.timedelta(seconds=planned)
    rec_id = begin.strftime("%Y%m%d%H%M") + end.strftime("%H%M")
    folder = out_dir / "2013ps" / "audio" / begin.strftime("%Y/%m/%d")
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_path(folder / f"{rec_id}.wav", suffix=".wav") as tmp:
        sf.write(tmp, wav, SAMPLE_RATE, subtype="PCM_16")
    write_vertical(folder / f"{rec_id}.vert", tokens)
    atomic_write_text(
        out_dir / "synth" / f"{rec_id}.words.tsv", "".join(f"{w}\t{a:.3f}\t{b:.3f}\n" for w, a, b in said)
    )
    logger.info(
        "sitting %s: %.1f s, %d record tokens, %d spoken words", rec_id, len(wav) / SAMPLE_RATE, len(tokens), len(said)
    )
    return {
        "id": rec_id,
        "seconds": round(len(wav) / SAMPLE_RATE, 2),
        "record_tokens": len(tokens),
        "spoken_words": len(said),
        "_seconds": len(wav) / SAMPLE_RATE,
    }


def _speaker_turns(rng: np.random.Generator, speakers: list[tuple]) -> Iterator[tuple]:
    """The speakers (and their voices) in turn: every speaker takes a turn before anyone speaks again, in the
    order of a permutation drawn when the previous one is used up."""
    while True:
        queue = [int(k) for k in rng.permutation(len(speakers))]
        while queue:
            yield speakers[queue.pop()]


def _speak_sitting(
    engine,
    doc: str,
    turns: Iterator[tuple],
    texts: Iterator[str],
    rng: np.random.Generator,
    cfg: CzechMiniConfig,
    vocab: list[str],
    counts: dict[str, int],
    prosody_draws: np.random.Generator | None = None,
) -> tuple[list[np.ndarray], list[VerticalToken], list[tuple[str, float, float]], float]:
    """One sitting of record ``doc``: turns of 1-4 fortunes from ``texts`` until ``cfg.sitting_seconds`` are
    planned (natural pauses drawn from ``prosody_draws``).  Returns the audio pieces, the record tokens, the
    spoken words (word, start, end in seconds) and the planned length in seconds."""
    pieces: list[np.ndarray] = [np.zeros(int(rng.uniform(0.3, 1.0) * SAMPLE_RATE), np.float32)]
    position = len(pieces[0])
    tokens: list[VerticalToken] = []
    said: list[tuple[str, float, float]] = []
    u = 0
    planned = 0.0  # seconds estimated from the text: the plan must not depend on the audio (see _write_sitting)
    while planned < cfg.sitting_seconds:
        u += 1
        info, voice = next(turns)
        for p in range(int(rng.integers(1, 5))):
            if planned >= cfg.sitting_seconds:
                break
            counts["fortunes"] += 1
            utt, jitter, audio, starts, ends = _speak(
                engine, next(texts), voice, rng, cfg, vocab, counts, prosody_draws
            )
            offset = position / SAMPLE_RATE
            said += [(w, offset + a, offset + b) for w, a, b in zip(utt.spoken, starts, ends)]
            tokens += _vertical_tokens(utt, f"{doc}.u{u}.p{p + 1}", info.id)
            gap = rng.uniform(0.3, 0.8)
            pieces += [audio, np.zeros(int(gap * SAMPLE_RATE), np.float32)]
            position += len(audio) + int(gap * SAMPLE_RATE)
            planned += len(utt.synth_text) / (jitter.rate * CHARS_PER_WORD / 60.0) + gap
        gap = rng.uniform(0.8, 2.0)
        pieces.append(np.zeros(int(gap * SAMPLE_RATE), np.float32))
        position += int(gap * SAMPLE_RATE)
        planned += gap
    return pieces, tokens, said, planned


def build_czech_mini_corpus(out_dir: Path, cfg: CzechMiniConfig, cache_dir: Path, overwrite: bool = False) -> dict:
    """Builds the corpus (see the module docstring); returns the build summary."""
    from punct.synthesis.tts import Espeak

    out_dir = Path(out_dir)
    if is_done(out_dir) and not overwrite:
        return json.loads((out_dir / "build.json").read_text())
    if out_dir.exists() and overwrite:
        shutil.rmtree(out_dir)
    rng = np.random.default_rng(cfg.seed)
    fortunes = read_fortunes(fetch_fortunes(cache_dir))
    if len(fortunes) < 50:
        raise RuntimeError(f"only {len(fortunes)} usable fortunes found")
    order = fortune_order(fortunes, cfg, rng)
    vocab = sorted({t.lower() for f in fortunes[:2000] for t in tokenize(f) if t.isalpha() and len(t) > 2})
    speakers = draw_speakers(rng, cfg.num_speakers, cfg)
    engine = Espeak.get()
    engine.reset_noise()  # the breath noise of f2/f3, as in a process that has not called rand() before
    counts: dict[str, int] = {k: 0 for k in COUNTERS}
    texts = itertools.cycle(fortunes[i] for i in order)
    turns = _speaker_turns(rng, speakers)
    recordings = []
    base = datetime.datetime(2014, 1, 7, 9, 0)
    total_seconds = 0.0
    for s in range(cfg.num_sittings):
        begin = base + datetime.timedelta(days=int(7 * s + rng.integers(0, 3)), minutes=int(rng.integers(0, 300)))
        pieces, tokens, said, planned = _speak_sitting(
            engine, f"ps2013-{s + 1:03d}-01-000-000", turns, texts, rng, cfg, vocab, counts, prosody_rng([cfg.seed, s])
        )
        recordings.append(_write_sitting(out_dir, cfg, s, rng, begin, planned, pieces, tokens, said))
        total_seconds += recordings[-1].pop("_seconds")
    write_speakers(out_dir / "speakers.tsv", [info for info, _ in speakers])
    return _write_build_summary(
        out_dir,
        {"config": asdict(cfg), "hours": round(total_seconds / 3600, 4), "recordings": recordings, "counts": counts},
    )


def _write_build_summary(out_dir: Path, summary: dict) -> dict:
    summary = {**summary, "wav_md5": wav_md5s(out_dir)}
    atomic_write_text(out_dir / "build.json", json.dumps(summary, indent=1, ensure_ascii=False) + "\n")
    mark_done(out_dir)
    return summary


def read_spoken_words(path: Path) -> list[tuple[str, float, float]]:
    """``synth/<id>.words.tsv`` -> [(word, start, end)]; malformed lines name file and line."""
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            cols = line.rstrip("\n").split("\t")
            if len(cols) != 3:
                raise ValueError(f"{path}:{n}: expected word, start, end; got {line!r}")
            try:
                out.append((cols[0], float(cols[1]), float(cols[2])))
            except ValueError:
                raise ValueError(f"{path}:{n}: start/end are not numbers: {line!r}") from None
    return out
