"""Label sets and the words/labels record every stage reads from a supervision.

Label sets
  Every model predicts, for every word, the mark that follows it (and, with a case head, whether the
  word starts with a capital).  A :class:`LabelSet` is the class names in index order (models, shards of
  posteriors, metrics all use this order); class :data:`NO_MARK` (index 0) is always "no mark".  Code
  refers to it as ``label_set.none`` and never spells it: the spelling is each set's on-disk name, kept
  as the manifests, decode files and ``results.json`` already hold it ("NP" in ``punct4``, "blank" in
  ``punct9`` and ``case``).

  * ``punct4``: no mark , . ?   (EfficientPunct, Liu & Beigi 2023)
  * ``punct9``: no mark , . ! ? : - " ;   (speech-informed ITN, Stankov 2024, thesis Table 3.5)
  * ``case``:   no mark, cap   (first character upper case)

  A *scheme* (:data:`LABEL_SCHEMES`) is what a model is trained on: a punctuation set and an optional
  case set (``punct4`` alone; ``itn`` = ``punct9`` + ``case``).

The data contract
  Data preparation stores the words and their labels on each supervision's ``custom``:
  ``custom["words"]`` (model input words), ``custom["punct"]`` (one class name per word) and, with case
  labels, ``custom["case"]``.  :class:`WordLabels` is that record: :meth:`WordLabels.from_supervision`
  reads and validates it (the one place that does), :meth:`WordLabels.to_custom` writes it, and
  :meth:`WordLabels.word_fields` reads any further per-word lists a corpus stores beside them.

Words with times
  A word with its start and end in seconds is a :class:`TimedWord` (recognised words, the synthesizer's
  words, aligned words).  On a supervision the word times are lhotse's ``alignment["word"]`` (one
  ``AlignmentItem`` per word, times relative to the recording); :func:`aligned_words` is the one reader.
  In a words file (``<recording id>.words.tsv``: recognised words, a synthesized corpus' ``synth/``) they are
  ``word<TAB>start<TAB>end`` lines: :func:`read_recognised_words`, :func:`write_recognised_words`.

The first word of a segment (``first_word``: ``include`` or ``exclude``)
  ParCzech segments (Stankov 2024) start anywhere in a sentence, so nothing in the segment says whether
  its first word opens a sentence.  The thesis neither trains nor scores the first word's labels, i.e.
  both labels of that word: its punctuation (the mark that follows it) and its case; its predictions show
  them "copied from the data" (section 5.9, the paragraph before Figure 5.34: "the models were not
  trained to predict punctuation or casing after the first word; hence, the true punctuation is simply
  copied from the data", and the caption of Figure 5.34: "The first punctuation marks or capitalization
  were not used in training and is copied from the data").  Section 3.3.3 likewise ignores a capital "in
  the initial position" when it filters segments (:mod:`punct.align.segments`, filter d).
  ``exclude`` does the same here, in one place for every model and scorer: :func:`mask_first_word` gives
  the training targets (the first word's labels ignored by the loss), :func:`copy_first_word` the written
  predictions (the first word's reference labels), :func:`scored_mask` the words that are scored.
  ``include`` (the default: EfficientPunct on MuST-C) trains and scores every word.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

import numpy as np

from punct.utils.atomic import atomic_write_text
from punct.utils.pathlike import Pathlike

NO_MARK = 0  # index of "no mark" in every label set
IGNORE_INDEX = -100  # a training target the loss skips (torch's cross-entropy default)


@dataclass(frozen=True)
class LabelSet:
    """Named class names in index order; ``classes[NO_MARK]`` is "no mark" in this set's on-disk spelling."""

    name: str
    classes: tuple[str, ...]

    @property
    def none(self) -> str:
        """The set's name of "no mark" (as written in manifests and outputs)."""
        return self.classes[NO_MARK]

    @property
    def marks(self) -> tuple[str, ...]:
        """Every class but "no mark"."""
        return self.classes[NO_MARK + 1 :]

    def __len__(self) -> int:
        return len(self.classes)

    def index(self) -> dict[str, int]:
        return class_index(self.classes)

    def encode(self, labels: Sequence[str]) -> list[int]:
        return encode_labels(labels, self.classes)


PUNCT4 = LabelSet("punct4", ("NP", ",", ".", "?"))
PUNCT9 = LabelSet("punct9", ("blank", ",", ".", "!", "?", ":", "-", '"', ";"))
CASE = LabelSet("case", ("blank", "cap"))
CAP = CASE.classes[1]
QUOTE = '"'
LABEL_SETS: dict[str, LabelSet] = {s.name: s for s in (PUNCT4, PUNCT9, CASE)}

# scheme -> (punctuation set, case set or None)
LABEL_SCHEMES: dict[str, tuple[LabelSet, LabelSet | None]] = {
    "punct4": (PUNCT4, None),
    "itn": (PUNCT9, CASE),
}


def label_scheme(name: str) -> tuple[LabelSet, LabelSet | None]:
    """``(punctuation set, case set or None)`` of a scheme name; an unknown name is an error listing them."""
    if name not in LABEL_SCHEMES:
        raise ValueError(f"label_set must be one of {sorted(LABEL_SCHEMES)}, got {name!r}")
    return LABEL_SCHEMES[name]


def class_index(classes: Sequence[str]) -> dict[str, int]:
    return {name: i for i, name in enumerate(classes)}


def encode_labels(labels: Sequence[str], classes: Sequence[str] = PUNCT4.classes) -> list[int]:
    """Label names -> class indices; an unknown name is an error that names it."""
    index = class_index(classes)
    try:
        return [index[label] for label in labels]
    except KeyError as e:
        raise ValueError(f"unknown punctuation label {e.args[0]!r}; classes are {list(classes)}") from None


def _unknown(labels: Sequence[str], classes: Sequence[str] | None) -> list[str]:
    """The labels not among ``classes``, sorted (none when ``classes`` is None: not checked)."""
    return [] if classes is None else sorted(set(labels) - set(classes))


def _id_and_custom(sup: Any) -> tuple[str | None, Mapping[str, Any] | None]:
    """``(id, custom)`` of a lhotse ``SupervisionSegment`` or of its JSON dict."""
    return (sup.get("id"), sup.get("custom")) if isinstance(sup, Mapping) else (sup.id, sup.custom)


@dataclass(frozen=True)
class WordLabels:
    """The words of one supervision and their per-word labels (the ``custom`` data contract).

    ``punct`` and ``case`` hold class names, one per word; ``case`` is None when the supervision has
    no case labels (or they were not asked for).
    """

    id: str
    words: tuple[str, ...]
    punct: tuple[str, ...]
    case: tuple[str, ...] | None = None

    @classmethod
    def from_supervision(
        cls,
        sup: Any,
        punct_set: LabelSet | Sequence[str] | None = PUNCT4,
        case_set: LabelSet | Sequence[str] | None = None,
        *,
        where: str = "",
    ) -> WordLabels:
        """Reads and validates ``custom["words"/"punct"]`` (and ``"case"`` when ``case_set`` is given).

        Args:
          sup: a lhotse ``SupervisionSegment`` or its JSON dict (``{"id": ..., "custom": {...}}``).
          punct_set: the classes ``punct`` must come from (None: not checked).
          case_set: read ``custom["case"]`` too, and check it against these classes.
          where: prefix of error messages (e.g. ``"file.jsonl.gz:3"``); default ``"supervision"``.
        Raises:
          ValueError naming the supervision: a field missing, lengths that differ, an unknown label.
        """
        sid, custom = _id_and_custom(sup)
        prefix = f"{where}: {sid}" if where else f"supervision {sid}"
        custom = custom or {}
        need = ("words", "punct", "case") if case_set is not None else ("words", "punct")
        missing = [k for k in need if k not in custom]
        if sid is None or missing:
            raise ValueError(
                f"{prefix}: no custom {missing} (data contract: custom {list(need)} and an id); "
                "prepare it with the data stage"
            )
        words, punct = tuple(custom["words"]), tuple(custom["punct"])
        case = tuple(custom["case"]) if case_set is not None else None
        if len(words) != len(punct):
            raise ValueError(f"{prefix}: {len(words)} words but {len(punct)} labels")
        if case is not None and len(case) != len(words):
            raise ValueError(f"{prefix}: {len(words)} words but {len(case)} case labels")
        for labels, label_set in ((punct, punct_set), (case, case_set)):
            classes = label_set.classes if isinstance(label_set, LabelSet) else label_set
            unknown = _unknown(labels or (), classes)
            if unknown:
                raise ValueError(f"{prefix}: unknown labels {unknown}; classes are {list(classes)}")
        return cls(sid, words, punct, case)

    @staticmethod
    def words_of(sup: Any) -> list[str]:
        """``custom["words"]`` alone (an acoustic model's transcript needs no labels)."""
        sid, custom = _id_and_custom(sup)
        words = (custom or {}).get("words")
        if words is None:
            raise ValueError(f"supervision {sid} has no custom['words'] (prepare it with the data stage)")
        return list(words)

    @staticmethod
    def word_fields(sup: Any, keys: Sequence[str], num_words: int) -> dict[str, list[Any]]:
        """Further per-word lists of ``custom`` (e.g. a corpus' word ids), each checked to hold ``num_words``
        items; a ValueError naming the supervision when one is missing or of another length."""
        sid, custom = _id_and_custom(sup)
        custom = custom or {}
        missing = [k for k in keys if k not in custom]
        if missing:
            raise ValueError(f"supervision {sid}: custom lacks {missing}; re-run stage 0")
        if any(len(custom[k]) != num_words for k in keys):
            raise ValueError(f"supervision {sid}: custom lists differ in length")
        return {k: list(custom[k]) for k in keys}

    def to_custom(self) -> dict[str, list[str]]:
        """The ``custom`` fields of the data contract (lists, as lhotse writes them)."""
        custom = {"words": list(self.words), "punct": list(self.punct)}
        if self.case is not None:
            custom["case"] = list(self.case)
        return custom

    def __len__(self) -> int:
        return len(self.words)


# ---- words with times -------------------------------------------------------------------------------


class TimedWord(NamedTuple):
    """A word with its times in seconds (from the start of the recording, unless a caller says otherwise)."""

    word: str
    start: float
    end: float
    score: float = 0.0  # the aligner's confidence (CTC segmentation: log domain, higher is better)

    @property
    def centre(self) -> float:
        return 0.5 * (self.start + self.end)

    def shifted(self, offset: float) -> TimedWord:
        return self._replace(start=self.start + offset, end=self.end + offset)


def aligned_words(sup: Any) -> list[TimedWord] | None:
    """The supervision's ``alignment["word"]`` as TimedWords (times relative to the recording, ``end`` =
    ``start + duration``); None when it has no word alignment.

    ``sup`` is a lhotse ``SupervisionSegment`` (items are ``AlignmentItem``) or its JSON dict (items are
    ``[symbol, start, duration, score]`` lists, or dicts as lhotse wrote them before v1.8)."""
    alignment = sup.get("alignment") if isinstance(sup, Mapping) else sup.alignment
    items = (alignment or {}).get("word")
    if items is None:
        return None
    out = []
    for item in items:
        symbol, start, duration, score = (
            (item["symbol"], item["start"], item["duration"], item.get("score"))
            if isinstance(item, Mapping)
            else (item[0], item[1], item[2], item[3] if len(item) > 3 else None)
        )
        out.append(
            TimedWord(symbol, float(start), float(start) + float(duration), 0.0 if score is None else float(score))
        )
    return out


def read_recognised_words(path: Pathlike) -> list[TimedWord]:
    """``word<TAB>start<TAB>end`` lines -> TimedWords; bad lines name the file and line."""
    out: list[TimedWord] = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            if not line.strip():
                continue
            cols = line.rstrip("\n").split("\t")
            if len(cols) != 3 or not cols[0]:
                raise ValueError(f"{path}:{n}: expected word<TAB>start<TAB>end, got {line.rstrip()!r}")
            try:
                start, end = float(cols[1]), float(cols[2])
            except ValueError:
                raise ValueError(f"{path}:{n}: start/end are not numbers: {line.rstrip()!r}") from None
            if end < start:
                raise ValueError(f"{path}:{n}: end {end} before start {start}")
            out.append(TimedWord(cols[0], start, end))
    return out


def write_recognised_words(path: Pathlike, words: Sequence[TimedWord]) -> None:
    atomic_write_text(path, "".join(f"{w.word}\t{w.start:.3f}\t{w.end:.3f}\n" for w in words))


# ---- the first word of a segment (see the module docstring) ----------------------------------------

FIRST_WORD_RULES: tuple[str, ...] = ("include", "exclude")
T = TypeVar("T")


def check_first_word(rule: str) -> str:
    """``rule`` if it is one of :data:`FIRST_WORD_RULES`; a ValueError naming them otherwise."""
    if rule not in FIRST_WORD_RULES:
        raise ValueError(f"first_word must be one of {list(FIRST_WORD_RULES)}, got {rule!r}")
    return rule


def first_scored(rule: str) -> int:
    """Index of the first word of a segment whose labels are trained and scored (0: include, 1: exclude)."""
    return 1 if check_first_word(rule) == "exclude" else 0


def mask_first_word(labels: Sequence[Any], rule: str, ignore: int = IGNORE_INDEX) -> np.ndarray:
    """A segment's training targets: class ids (W,) or (W, heads) as int64, the first word's row set to
    ``ignore`` when ``rule`` is exclude (a copy; ``labels`` is not changed)."""
    out = np.array(labels, dtype=np.int64)
    out[: first_scored(rule)] = ignore
    return out


def copy_first_word(hyp: Sequence[T], ref: Sequence[T], rule: str) -> list[T]:
    """A segment's written predictions: ``hyp`` with the first word's label taken from ``ref`` when
    ``rule`` is exclude (the thesis' output), so the output stays complete."""
    if len(hyp) != len(ref):
        raise ValueError(f"{len(hyp)} predictions for {len(ref)} reference labels")
    start = first_scored(rule)
    return list(ref[:start]) + list(hyp[start:])


def scored_mask(lengths: Sequence[int], rule: str) -> np.ndarray:
    """(sum(lengths),) bool over the words of consecutive segments of ``lengths`` words: True where a
    word's labels are trained and scored (every word but each segment's first with exclude)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    position = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return position >= first_scored(rule)
