"""espeak-ng speech synthesis through ``libespeak-ng.so.1`` (ctypes), with word timings.

The mini corpora are spoken by eSpeak NG.  Calling the C library instead of the command line
gives, besides the audio, the synthesizer's own *word events*: for each word the character
offset in the input text and the sample at which it starts.  They are the reference against
which forced alignment can be measured.

Quirks handled here (see shared/REFERENCE.md):
  * rate, pitch and voice persist across calls: every :meth:`Espeak.synthesize` sets all of them;
  * the variants with breath (f2, f3 and f5 in espeak-ng 1.51) draw their breath noise from the C library's
    ``rand()``, whose state belongs to the whole process and is inherited by a forked child: a builder puts it
    back at its start value with :meth:`Espeak.reset_noise` before each talk, so that the audio does not depend on
    what else called ``rand()`` before (one training talk of a mini corpus build once came out with other noise);
  * some word events are spurious (zero length) and some word pairs are merged into one event:
    :func:`word_starts_for_spans` maps events to the caller's words and says when it cannot.

Used by the English builder (``punct.corpora.mini_english``) and meant to be reused by other
languages' builders (e.g. Czech with voice ``cs``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from math import gcd

import numpy as np
from scipy.signal import resample_poly  # imported here, not in each forked synthesis process

# espeak_AUDIO_OUTPUT / espeak_EVENT_TYPE / espeak_PARAMETER values from speak_lib.h.
_AUDIO_OUTPUT_SYNCHRONOUS = 2
_INITIALIZE_DONT_EXIT = 0x8000
_INITIALIZE_PHONEME_EVENTS = 0x0001
_EVENT_PHONEME = 7
_EVENT_LIST_TERMINATED = 0
_EVENT_WORD = 1
_CHARS_UTF8 = 1
_POS_CHARACTER = 1
_PARAM_RATE = 1
_PARAM_VOLUME = 2
_PARAM_PITCH = 3
_PARAM_RANGE = 4
_PARAM_PUNCTUATION = 5
_PARAM_CAPITALS = 6
_PARAM_WORDGAP = 7


class _EventId(ctypes.Union):
    _fields_ = [("number", ctypes.c_int), ("name", ctypes.c_char_p), ("string", ctypes.c_char * 8)]


class _Event(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("unique_identifier", ctypes.c_uint),
        ("text_position", ctypes.c_int),  # 1-based character offset in the input text
        ("length", ctypes.c_int),  # characters of the word
        ("audio_position", ctypes.c_int),  # milliseconds since the start of this synthesis
        ("sample", ctypes.c_int),
        ("user_data", ctypes.c_void_p),
        ("id", _EventId),
    ]


_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.POINTER(_Event))


@dataclass(frozen=True)
class Voice:
    """One synthetic speaker: espeak voice name (+variant), pitch 0-99, rate in words per minute."""

    name: str = "en-us"  # e.g. "en-us", "en-gb-x-rp", "cs"
    variant: str = ""  # e.g. "m3", "f2", "klatt2"; empty for the voice's default
    pitch: int = 50
    rate: int = 175
    pitch_range: int = 50

    @property
    def spec(self) -> str:
        return f"{self.name}+{self.variant}" if self.variant else self.name


@dataclass(frozen=True)
class WordEvent:
    """A word event: 0-based character offset and length in the text, start in seconds."""

    offset: int
    length: int
    start: float


@dataclass(frozen=True)
class PhonemeEvent:
    """A phoneme event: 0-based character offset of its word event, start in seconds, eSpeak phoneme name."""

    offset: int
    start: float
    name: str

    @property
    def is_pause(self) -> bool:
        return self.name.startswith("_")


@dataclass
class Synthesis:
    audio: np.ndarray  # float32 in [-1, 1], mono, ``sample_rate`` Hz
    sample_rate: int
    words: list[WordEvent]
    phonemes: list[PhonemeEvent] = field(default_factory=list)


class Espeak:
    """The espeak-ng library, initialised once per process (the library is not re-entrant)."""

    _lock = threading.Lock()
    _instance: Espeak | None = None

    def __init__(self, library: str | None = None) -> None:
        name = library or ctypes.util.find_library("espeak-ng") or "libespeak-ng.so.1"
        try:
            self._lib = ctypes.CDLL(name)
        except OSError as e:
            raise RuntimeError(
                f"cannot load the espeak-ng library {name!r} ({e}); install the Debian packages "
                "espeak-ng and libespeak-ng1 (install.sh does)"
            ) from None
        lib = self._lib
        lib.espeak_Initialize.restype = ctypes.c_int
        lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        lib.espeak_SetVoiceByName.restype = ctypes.c_int
        lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
        lib.espeak_SetParameter.restype = ctypes.c_int
        lib.espeak_Synth.argtypes = [
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.c_uint,
            ctypes.c_int,
            ctypes.c_uint,
            ctypes.c_uint,
            ctypes.POINTER(ctypes.c_uint),
            ctypes.c_void_p,
        ]
        lib.espeak_Synth.restype = ctypes.c_int
        lib.espeak_SetSynthCallback.argtypes = [_CALLBACK]
        lib.espeak_TextToPhonemes.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_int]
        lib.espeak_TextToPhonemes.restype = ctypes.c_char_p
        self.sample_rate = lib.espeak_Initialize(
            _AUDIO_OUTPUT_SYNCHRONOUS, 0, None, _INITIALIZE_DONT_EXIT | _INITIALIZE_PHONEME_EVENTS
        )
        if self.sample_rate <= 0:
            raise RuntimeError(f"espeak_Initialize failed ({self.sample_rate})")
        self._chunks: list[np.ndarray] = []
        self._events: list[tuple[int, int, int]] = []
        self._phonemes: list[tuple[int, int, str]] = []
        self._libc = ctypes.CDLL(None)  # the process' own C library, whose rand() espeak-ng calls
        self._callback = _CALLBACK(self._on_audio)  # keep a reference: the library holds the pointer
        lib.espeak_SetSynthCallback(self._callback)

    @classmethod
    def get(cls) -> Espeak:
        with cls._lock:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance

    def _on_audio(self, wav, num_samples, events) -> int:
        if num_samples > 0 and wav:
            self._chunks.append(np.ctypeslib.as_array(wav, shape=(num_samples,)).copy())
        i = 0
        while events[i].type != _EVENT_LIST_TERMINATED:
            e = events[i]
            if e.type == _EVENT_WORD:
                self._events.append((e.text_position, e.length, e.sample))
            elif e.type == _EVENT_PHONEME:
                name = bytes(e.id.string).split(b"\0")[0].decode("ascii", "replace")
                self._phonemes.append((e.text_position, e.sample, name))
            i += 1
        return 0  # continue synthesis

    def reset_noise(self) -> None:
        """The C library's ``rand()`` back at the state of a process that never called it (``srand(1)``): the breath
        noise of the next synthesis is then that of a fresh process."""
        with self._lock:
            self._libc.srand(1)

    def synthesize(self, text: str, voice: Voice) -> Synthesis:
        """Speaks ``text`` (plain text, not SSML) with ``voice``; word events are in seconds from the start."""
        lib = self._lib
        with self._lock:
            if lib.espeak_SetVoiceByName(voice.spec.encode()) != 0:
                raise ValueError(f"espeak-ng has no voice {voice.spec!r}")
            # Every parameter, every call: the library keeps them between calls.
            for param, value in (
                (_PARAM_RATE, voice.rate),
                (_PARAM_PITCH, voice.pitch),
                (_PARAM_RANGE, voice.pitch_range),
                (_PARAM_VOLUME, 100),
                (_PARAM_PUNCTUATION, 0),
                (_PARAM_CAPITALS, 0),
                (_PARAM_WORDGAP, 0),
            ):
                lib.espeak_SetParameter(param, int(value), 0)
            self._chunks, self._events, self._phonemes = [], [], []
            data = text.encode("utf-8") + b"\0"
            buf = ctypes.create_string_buffer(data)
            status = lib.espeak_Synth(buf, len(data), 0, _POS_CHARACTER, 0, _CHARS_UTF8, None, None)
            if status != 0:
                raise RuntimeError(f"espeak_Synth failed with status {status} for text {text[:60]!r}")
            audio = np.concatenate(self._chunks) if self._chunks else np.zeros(0, np.int16)
            raw_events, self._chunks, self._events = self._events, [], []
            raw_phonemes, self._phonemes = self._phonemes, []
        words = [
            WordEvent(offset=pos - 1, length=length, start=sample / self.sample_rate)
            for pos, length, sample in raw_events
        ]
        phonemes = [
            PhonemeEvent(offset=pos - 1, start=sample / self.sample_rate, name=name)
            for pos, sample, name in raw_phonemes
        ]
        return Synthesis(
            audio=audio.astype(np.float32) / 32768.0, sample_rate=self.sample_rate, words=words, phonemes=phonemes
        )

    def phoneme_count(self, word: str, voice: Voice) -> int:
        """Number of phonemes eSpeak gives ``word`` on its own (stress marks not counted)."""
        lib = self._lib
        with self._lock:
            lib.espeak_SetVoiceByName(voice.spec.encode())
            buf = ctypes.create_string_buffer(word.encode("utf-8") + b"\0")
            ptr = ctypes.c_void_p(ctypes.addressof(buf))
            # phonememode bits 8-23: a separator character between phoneme names.
            out = lib.espeak_TextToPhonemes(ctypes.byref(ptr), _CHARS_UTF8, ord("|") << 8) or b""
        names = [n.strip("'," + "%=") for n in out.decode("utf-8", "replace").replace(" ", "|").split("|")]
        return sum(1 for n in names if n and not n.startswith("_"))


def resample(audio: np.ndarray, from_rate: int, to_rate: int) -> np.ndarray:
    """Polyphase resampling (espeak's 22050 Hz -> 16 kHz)."""
    if from_rate == to_rate:
        return audio
    g = gcd(from_rate, to_rate)
    return resample_poly(audio, to_rate // g, from_rate // g).astype(np.float32)


def word_starts_for_spans(
    events: Sequence[WordEvent],
    spans: Sequence[tuple[int, int]],
    phonemes: Sequence[PhonemeEvent] = (),
    phoneme_count: Callable[[int], int] | None = None,
) -> list[float] | None:
    """Start time of each word given as a character span ``(begin, end)`` of the synthesized text.

    A word takes the first event that starts after the previous word's end and before its own end
    (an event may point at the punctuation before its word; espeak may split a word such as
    "1,000" into two events, and the second is then skipped).  Zero-length events are ignored.

    espeak merges some word pairs into one event ("not a", "in the").  With ``phonemes`` and
    ``phoneme_count(word_index)`` (the word's phoneme count when spoken alone), such a group is
    split by its phoneme events when the counts add up exactly; otherwise, or without them, the
    result is None and the caller leaves the segment out of the word-time file.
    """
    usable = sorted((e for e in events if e.length > 0), key=lambda e: e.offset)
    own: list[WordEvent | None] = []
    j = 0
    prev_end = 0
    for begin, end in spans:
        while j < len(usable) and usable[j].offset < prev_end:
            j += 1
        if j < len(usable) and usable[j].offset < end:
            own.append(usable[j])
            j += 1
        else:
            own.append(None)
        prev_end = max(end, begin)
    starts: list[float] = []
    i = 0
    while i < len(spans):
        event = own[i]
        if event is None:
            return None  # the first word of a group has no event: nothing to split
        k = i + 1
        while k < len(spans) and own[k] is None:
            k += 1
        if k == i + 1:
            starts.append(event.start)
        else:
            split = _split_group(event, list(range(i, k)), spans[k - 1][1], phonemes, phoneme_count)
            if split is None:
                return None
            starts.extend(split)
        i = k
    if any(b < a for a, b in zip(starts, starts[1:])):
        return None
    return starts


def _split_group(
    event: WordEvent,
    words: list[int],
    end: int,
    phonemes: Sequence[PhonemeEvent],
    phoneme_count: Callable[[int], int] | None,
) -> list[float] | None:
    """Starts of ``words`` (indices), which share ``event``; their text ends at character ``end``."""
    if phoneme_count is None or not phonemes:
        return None
    # Phoneme events carry the text position of the word event they belong to (sometimes of the word itself).
    group = [p for p in phonemes if event.offset <= p.offset < end and not p.is_pause]
    counts = [phoneme_count(w) for w in words]
    if sum(counts) != len(group) or any(c <= 0 for c in counts):
        return None
    starts, index = [], 0
    for c in counts:
        starts.append(event.start if index == 0 else group[index].start)
        index += c
    return starts
