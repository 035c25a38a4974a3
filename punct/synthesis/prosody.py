"""What the synthesizer is told about the punctuation: the prosody of the mini corpora.

espeak-ng speaks every mark it is given: a comma as ~155 ms of pause, a full stop as ~310 ms and a
falling tone, a question mark as a rise (shared/REFERENCE.md).  A corpus read from punctuated text
therefore spells its labels out in the audio far more reliably than a human reader does, and a model
that "uses speech" may only be reading espeak's pauses.  The builders take one of three prosodies:

* ``marks``: the punctuated text is spoken as it is (the corpora before this option, byte for byte);
* ``none``: the words are spoken with every mark removed, as one phrase: no pause or tone comes from a
  mark (the segment's edges stay silent);
* ``natural``: the marks are removed and a seeded :class:`PauseModel` decides, at each word boundary,
  whether a silent pause follows (with a probability per kind of boundary, including boundaries with
  no mark) and how long it is (log-normal per kind); questions end with espeak's rising question tone
  with probability ``question_rise``.  The words between two drawn breaks are one espeak phrase, spoken
  without marks; phrases are joined with the drawn silence.

The word events of every phrase are mapped back to the character offsets of the punctuated text, so a
builder maps them to its words as before: the word times a corpus records stay the synthesizer's own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from punct.synthesis.tts import Espeak, PhonemeEvent, Synthesis, Voice, WordEvent

PROSODIES = ("marks", "none", "natural")
# Kinds of word boundary, by the strongest mark between the two words (in this order of strength).
BOUNDARY_KINDS = ("question", "exclamation", "full_stop", "semicolon", "colon", "comma", "dash", "none")
_MARK_KINDS = {
    "?": "question",
    "!": "exclamation",
    ".": "full_stop",
    "…": "full_stop",
    ";": "semicolon",
    ":": "colon",
    ",": "comma",
    "-": "dash",
    "–": "dash",
    "—": "dash",
}


@dataclass(frozen=True)
class BoundaryPauses:
    """Silent pauses at one kind of word boundary: how often, and how long (log-normal)."""

    probability: float  # P(a silent pause follows the word)
    median_ms: float = 400.0  # median pause length
    log_sd: float = 0.5  # standard deviation of ln(length)

    def __post_init__(self) -> None:
        if not 0.0 <= self.probability <= 1.0:
            raise ValueError(f"pause probability must be in [0, 1], got {self.probability}")
        if self.median_ms <= 0 or self.log_sd < 0:
            raise ValueError(f"pause length needs median_ms > 0 and log_sd >= 0, got {self.median_ms}, {self.log_sd}")


@dataclass(frozen=True)
class PauseModel:
    """The ``natural`` prosody: pauses per kind of boundary and the share of questions spoken with a rise.

    The defaults are egs/mustc's ``conf/prosody.yaml`` (read English; the sources of each value are cited there)."""

    none: BoundaryPauses = BoundaryPauses(0.04, 180.0, 0.55)
    comma: BoundaryPauses = BoundaryPauses(0.55, 250.0, 0.5)
    full_stop: BoundaryPauses = BoundaryPauses(0.97, 550.0, 0.45)
    question: BoundaryPauses = BoundaryPauses(0.95, 550.0, 0.45)
    exclamation: BoundaryPauses = BoundaryPauses(0.95, 550.0, 0.45)
    semicolon: BoundaryPauses = BoundaryPauses(0.75, 350.0, 0.45)
    colon: BoundaryPauses = BoundaryPauses(0.7, 320.0, 0.45)
    dash: BoundaryPauses = BoundaryPauses(0.7, 300.0, 0.5)
    question_rise: float = 0.33  # share of questions that end with espeak's rising question tone

    def __post_init__(self) -> None:
        if not 0.0 <= self.question_rise <= 1.0:
            raise ValueError(f"question_rise must be in [0, 1], got {self.question_rise}")

    def at(self, kind: str) -> BoundaryPauses:
        if kind not in BOUNDARY_KINDS:
            raise ValueError(f"unknown boundary kind {kind!r}; known: {BOUNDARY_KINDS}")
        return getattr(self, kind)


def check_prosody(prosody: str) -> str:
    if prosody not in PROSODIES:
        raise ValueError(f"unknown prosody {prosody!r}; known: {PROSODIES}")
    return prosody


def boundary_kind(gap: str) -> str:
    """The kind of a word boundary from the text between the two words (``", "``, ``'?" '``, ``"-"``...).

    A hyphen with no space around it joins the parts of one written word ("to-morrow"): no boundary mark."""
    if gap in ("-", "'"):
        return "none"
    present = {_MARK_KINDS[ch] for ch in gap if ch in _MARK_KINDS}
    return next((kind for kind in BOUNDARY_KINDS if kind in present), "none")


@dataclass(frozen=True)
class Token:
    """A written word of the text handed to the builder: its character span, and the kind of boundary after it."""

    begin: int
    end: int
    kind: str


def _distinct_spans(spans: Sequence[tuple[int, int]]) -> tuple[list[tuple[int, int]], list[int]]:
    """The distinct consecutive spans (words sharing a span are one token) and the index of each one's last word."""
    distinct: list[tuple[int, int]] = []
    last_word: list[int] = []
    for w, span in enumerate(spans):
        if not distinct or tuple(span) != distinct[-1]:
            distinct.append((int(span[0]), int(span[1])))
            last_word.append(w)
        last_word[-1] = w
    return distinct, last_word


def tokens_of(text: str, spans: Sequence[tuple[int, int]], labelled: Sequence[bool] | None = None) -> list[Token]:
    """The distinct spans of ``spans`` in order (words that share a span, "1,000" -> "one thousand", are one
    token), each with the kind of boundary that follows it (the text after the last token for the last).

    ``labelled`` (per word, optional): whether the word's label is a mark; where it is not, the text after it
    holds no mark that ends a phrase (the dot of "Mr."), only a dash or nothing."""
    distinct, last_word = _distinct_spans(spans)
    tokens = []
    for i, (begin, end) in enumerate(distinct):
        gap_end = distinct[i + 1][0] if i + 1 < len(distinct) else len(text)
        kind = boundary_kind(text[end:gap_end])
        if labelled is not None and not labelled[last_word[i]] and kind != "dash":
            kind = "none"
        tokens.append(Token(begin, end, kind))
    return tokens


@dataclass
class ProsodyPlan:
    """Per token: the silence after it (seconds; 0: none) and whether it ends with a question rise."""

    kinds: list[str]
    pauses: list[float]
    rises: list[bool]


def draw_plan(kinds: Sequence[str], model: PauseModel, rng: np.random.Generator) -> ProsodyPlan:
    """Pauses and rises for tokens followed by boundaries of ``kinds`` (the last one ends the text: it takes
    no pause, but a question there may rise).  Three numbers are drawn per boundary whatever the outcome,
    so a change of one probability does not shift the other boundaries' draws."""
    uniform = rng.random((len(kinds), 2))
    normal = rng.standard_normal(len(kinds))
    pauses, rises = [], []
    for i, kind in enumerate(kinds):
        pauses_here = model.at(kind)
        pause = 0.0
        if i + 1 < len(kinds) and uniform[i, 0] < pauses_here.probability:
            pause = pauses_here.median_ms * math.exp(pauses_here.log_sd * normal[i]) / 1000.0
        pauses.append(pause)
        rises.append(bool(kind == "question" and uniform[i, 1] < model.question_rise))
    return ProsodyPlan(list(kinds), pauses, rises)


def plan_for(
    prosody: str, tokens: Sequence[Token], model: PauseModel | None, rng: np.random.Generator | None
) -> ProsodyPlan | None:
    """The plan of ``prosody`` (None for ``marks``: the text is spoken as written)."""
    check_prosody(prosody)
    kinds = [t.kind for t in tokens]
    if prosody == "marks":
        return None
    if prosody == "none":
        return ProsodyPlan(kinds, [0.0] * len(kinds), [False] * len(kinds))
    if model is None or rng is None:
        raise ValueError("prosody 'natural' needs a PauseModel and a random generator")
    return draw_plan(kinds, model, rng)


@dataclass
class _Phrase:
    tokens: list[int] = field(default_factory=list)
    rise: bool = False
    pause_after: float = 0.0


def phrases_of(plan: ProsodyPlan) -> list[_Phrase]:
    """Runs of tokens between breaks: a break follows a token with a pause or a rise."""
    phrases = [_Phrase()]
    for i, (pause, rise) in enumerate(zip(plan.pauses, plan.rises)):
        phrases[-1].tokens.append(i)
        if (pause > 0 or rise) and i + 1 < len(plan.pauses):
            phrases[-1].rise, phrases[-1].pause_after = rise, pause
            phrases.append(_Phrase())
        elif i + 1 == len(plan.pauses):
            phrases[-1].rise = rise
    return [p for p in phrases if p.tokens]


def speak(
    engine: Espeak,
    text: str,
    spans: Sequence[tuple[int, int]],
    voice: Voice,
    prosody: str = "marks",
    model: PauseModel | None = None,
    rng: np.random.Generator | None = None,
    labelled: Sequence[bool] | None = None,
) -> tuple[Synthesis, ProsodyPlan | None]:
    """``text`` (whose words are at ``spans``; ``labelled``: see :func:`tokens_of`) spoken with ``prosody``.

    The synthesis' word and phoneme events carry character offsets into ``text`` and seconds from the start,
    as :meth:`Espeak.synthesize` gives them for ``text`` itself; the plan (per token) says where pauses were
    drawn."""
    tokens = tokens_of(text, spans, labelled)
    plan = plan_for(prosody, tokens, model, rng)
    if plan is None or not tokens:
        return engine.synthesize(text, voice), plan
    audio: list[np.ndarray] = []
    words: list[WordEvent] = []
    phonemes: list[PhonemeEvent] = []
    position = 0  # samples so far
    sample_rate = engine.sample_rate
    for phrase in phrases_of(plan):
        phrase_text, starts = _phrase_text(text, [tokens[i] for i in phrase.tokens], phrase.rise)
        synth = engine.synthesize(phrase_text, voice)
        offset = position / sample_rate
        origins = [tokens[i].begin for i in phrase.tokens]
        lengths = [tokens[i].end - tokens[i].begin for i in phrase.tokens]
        to_text = _offset_map(starts, origins, lengths)
        words += [WordEvent(to_text(e.offset), e.length, offset + e.start) for e in synth.words]
        phonemes += [PhonemeEvent(to_text(p.offset), offset + p.start, p.name) for p in synth.phonemes]
        silence = np.zeros(int(round(phrase.pause_after * sample_rate)), np.float32)
        audio += [synth.audio, silence]
        position += len(synth.audio) + len(silence)
    return Synthesis(np.concatenate(audio), sample_rate, words, phonemes), plan


def _phrase_text(text: str, tokens: Sequence[Token], rise: bool) -> tuple[str, list[int]]:
    """The phrase as espeak reads it (the tokens' own characters, one space apart, ``?`` for a rise) and the
    offset of each token in it."""
    parts, starts, position = [], [], 0
    for token in tokens:
        starts.append(position)
        parts.append(text[token.begin : token.end])
        position += token.end - token.begin + 1
    return " ".join(parts) + ("?" if rise else ""), starts


def _offset_map(starts: Sequence[int], origins: Sequence[int], lengths: Sequence[int]):
    """Phrase offset -> offset in the whole text: within token k, the same place in its span; in the space after
    it (or a final ``?``), its end."""

    def to_text(offset: int) -> int:
        k = int(np.searchsorted(starts, offset, side="right")) - 1
        if k < 0:
            return origins[0]
        return origins[k] + min(offset - starts[k], lengths[k])

    return to_text


# The natural prosody draws from its own stream, seeded by the builder's key of a talk (sitting) and this
# constant: the other draws of a corpus (voices, gaps, noise) stay those of its marks corpus.
PROSODY_STREAM = 7


def prosody_rng(key: Sequence[int]) -> np.random.Generator:
    """The natural prosody's generator for the builder's random key ``key`` (e.g. seed, split, talk)."""
    return np.random.default_rng([int(k) for k in key] + [PROSODY_STREAM])


def resolve_prosody(prosody: str, pauses: PauseModel | None) -> PauseModel | None:
    """The pause model a builder records: the given (or default) model for ``natural``; None otherwise."""
    check_prosody(prosody)
    if prosody != "natural":
        if pauses is not None:
            raise ValueError(f"a pause model is used by the natural prosody only, not by {prosody!r}")
        return None
    return pauses if pauses is not None else PauseModel()


def pauses_per_word(plan: ProsodyPlan | None, spans: Sequence[tuple[int, int]]) -> list[float] | None:
    """The plan's silences per word of ``spans`` (a token's pause goes to its last word); None for ``marks``."""
    if plan is None:
        return None
    pauses = [0.0] * len(spans)
    for token, word in enumerate(_distinct_spans(spans)[1]):
        pauses[word] = plan.pauses[token]
    return pauses
