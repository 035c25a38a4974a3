"""espeak-ng speech synthesis through ``libespeak-ng.so.1`` (ctypes), with word timings.

The mini corpora are spoken by eSpeak NG.  Calling the C library instead of the command line
gives, besides the audio, the synthesizer's own *word events*: for each word the character
offset in the input text and the sample at which it starts.  They are the reference against
which forced alignment can be measured.

Quirks handled here (see shared/REFERENCE.md):
  * rate, pitch and voice persist across calls: every :meth:`Espeak.synthesize` sets all of them;
  * some word events are spurious (zero length) and some word pairs are merged into one event:
    :func:`word_starts_for_spans` maps events to the caller's words and says when it cannot.

Used by the English builder (``punct.data.mini_corpus``) and meant to be reused by other
languages' builders (e.g. Czech with voice ``cs``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np

# espeak_AUDIO_OUTPUT / espeak_EVENT_TYPE / espeak_PARAMETER values from speak_lib.h.
_AUDIO_OUTPUT_SYNCHRONOUS = 2
_INITIALIZE_DONT_EXIT = 0x8000
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


@dataclass
class Synthesis:
    audio: np.ndarray  # float32 in [-1, 1], mono, ``sample_rate`` Hz
    sample_rate: int
    words: List[WordEvent]


class Espeak:
    """The espeak-ng library, initialised once per process (the library is not re-entrant)."""

    _lock = threading.Lock()
    _instance: Optional["Espeak"] = None

    def __init__(self, library: Optional[str] = None) -> None:
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
            ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint, ctypes.c_int, ctypes.c_uint,
            ctypes.c_uint, ctypes.POINTER(ctypes.c_uint), ctypes.c_void_p,
        ]
        lib.espeak_Synth.restype = ctypes.c_int
        lib.espeak_SetSynthCallback.argtypes = [_CALLBACK]
        self.sample_rate = lib.espeak_Initialize(_AUDIO_OUTPUT_SYNCHRONOUS, 0, None, _INITIALIZE_DONT_EXIT)
        if self.sample_rate <= 0:
            raise RuntimeError(f"espeak_Initialize failed ({self.sample_rate})")
        self._chunks: List[np.ndarray] = []
        self._events: List[Tuple[int, int, int]] = []
        self._callback = _CALLBACK(self._on_audio)  # keep a reference: the library holds the pointer
        lib.espeak_SetSynthCallback(self._callback)

    @classmethod
    def get(cls) -> "Espeak":
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
            i += 1
        return 0  # continue synthesis

    def synthesize(self, text: str, voice: Voice) -> Synthesis:
        """Speaks ``text`` (plain text, not SSML) with ``voice``; word events are in seconds from the start."""
        lib = self._lib
        with self._lock:
            if lib.espeak_SetVoiceByName(voice.spec.encode()) != 0:
                raise ValueError(f"espeak-ng has no voice {voice.spec!r}")
            # Every parameter, every call: the library keeps them between calls.
            for param, value in (
                (_PARAM_RATE, voice.rate), (_PARAM_PITCH, voice.pitch), (_PARAM_RANGE, voice.pitch_range),
                (_PARAM_VOLUME, 100), (_PARAM_PUNCTUATION, 0), (_PARAM_CAPITALS, 0), (_PARAM_WORDGAP, 0),
            ):
                lib.espeak_SetParameter(param, int(value), 0)
            self._chunks, self._events = [], []
            data = text.encode("utf-8") + b"\0"
            buf = ctypes.create_string_buffer(data)
            status = lib.espeak_Synth(buf, len(data), 0, _POS_CHARACTER, 0, _CHARS_UTF8, None, None)
            if status != 0:
                raise RuntimeError(f"espeak_Synth failed with status {status} for text {text[:60]!r}")
            audio = np.concatenate(self._chunks) if self._chunks else np.zeros(0, np.int16)
            raw_events, self._chunks, self._events = self._events, [], []
        words = [
            WordEvent(offset=pos - 1, length=length, start=sample / self.sample_rate)
            for pos, length, sample in raw_events
        ]
        return Synthesis(audio=audio.astype(np.float32) / 32768.0, sample_rate=self.sample_rate, words=words)


def resample(audio: np.ndarray, from_rate: int, to_rate: int) -> np.ndarray:
    """Polyphase resampling (espeak's 22050 Hz -> 16 kHz)."""
    if from_rate == to_rate:
        return audio
    from math import gcd

    from scipy.signal import resample_poly

    g = gcd(from_rate, to_rate)
    return resample_poly(audio, to_rate // g, from_rate // g).astype(np.float32)


def word_starts_for_spans(events: Sequence[WordEvent], spans: Sequence[Tuple[int, int]]) -> Optional[List[float]]:
    """Start time of each word given as a character span ``(begin, end)`` of the synthesized text.

    A word takes the event that starts inside its span (the first, if several: espeak may split a
    word such as "twenty-one" into two events).  Zero-length events are ignored.  Returns None when
    some word has no event of its own (e.g. two words merged into one event), or when the starts
    are not increasing: the caller then leaves the segment out of the word-time file.
    """
    usable = sorted((e for e in events if e.length > 0), key=lambda e: e.offset)
    starts: List[float] = []
    j = 0
    for begin, end in spans:
        while j < len(usable) and usable[j].offset < begin:
            j += 1
        if j == len(usable) or usable[j].offset >= end:
            return None
        starts.append(usable[j].start)
    if any(b < a for a, b in zip(starts, starts[1:])):
        return None
    return starts
