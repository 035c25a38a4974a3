"""The words of an utterance as the pipeline reads them: a transcript's (:func:`transcript_words`), a recogniser's
timed tokens' (:func:`ctm_words`), and the same words as the acoustic model aligns them (:func:`folded_words`)."""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Mapping, Sequence

import numpy as np

from punct.am.alignable import FoldedWords, fold_words
from punct.am.viterbi import AlignmentError
from punct.inference.inputs import UtteranceError
from punct.labels import TimedWord
from punct.text.normalize import NormalizeConfig, normalize

CharSpans = list[tuple[int, int]]


def transcript_words(transcript: str, config: NormalizeConfig) -> tuple[str, list[str], CharSpans]:
    """(the transcript in NFKC, its words normalised as the recipe's text is, their character spans in it);
    UtteranceError when a token cannot be said as words or no word is left."""
    normalized = normalize(transcript, config)
    if normalized.unspeakable:
        raise UtteranceError(
            "unspeakable token",
            f"{', '.join(normalized.unspeakable)} in the transcript cannot be "
            "said as words (punct.text.numbers); write it out or remove it",
        )
    if not normalized.words:
        raise UtteranceError("empty transcript", f"transcript {transcript!r} has no words")
    return unicodedata.normalize("NFKC", transcript), list(normalized.words), list(normalized.spans)


def folded_words(utt_id: str, words: Sequence[str], char_ids: Mapping[str, int]) -> FoldedWords:
    """The words as the AM aligns them (``punct.am.alignable.fold_words``: letters its token table lacks folded,
    a word with none left placed between its neighbours), logged in one line when any changed; UtteranceError
    when no word can be aligned."""
    try:
        folded = fold_words(words, char_ids)
    except AlignmentError as e:
        raise UtteranceError("unknown characters", f"utterance {utt_id}: {e}; nothing to align") from e
    if folded.changed:
        logging.warning("%s: %s", utt_id, folded.summary())
    return folded


def ctm_words(
    utt_id: str, word_times: Sequence[TimedWord], config: NormalizeConfig
) -> tuple[str, list[str], CharSpans, list[TimedWord]]:
    """(text, normalised words, their character spans, their times) of a recogniser's timed words: the
    tokens' texts (:func:`ctm_token_words`) joined by spaces."""
    if not word_times:
        raise UtteranceError("empty transcript", f"no CTM words for {utt_id}")
    texts: list[str] = []
    words: list[str] = []
    char_spans: CharSpans = []
    times: list[TimedWord] = []
    offset = 0
    for token in word_times:
        text, token_words, spans, token_times = ctm_token_words(token, config)
        texts.append(text)
        words.extend(token_words)
        char_spans.extend((a + offset, b + offset) for a, b in spans)
        times.extend(token_times)
        offset += len(text) + 1
    if not words:
        raise UtteranceError("empty transcript", f"the CTM words of {utt_id} have no word to say")
    return " ".join(texts), words, char_spans, times


def ctm_token_words(token: TimedWord, config: NormalizeConfig) -> tuple[str, list[str], CharSpans, list[TimedWord]]:
    """One recogniser token -> (its text (NFKC), its words normalised as a transcript's are, their character
    spans in that text, their times).  A token said as several words ("2008", "twenty-one") shares its time
    span among them by their lengths; one said as no word (a lone mark) gives none."""
    text = unicodedata.normalize("NFKC", token.word)
    normalized = normalize(text, config)
    if normalized.unspeakable:
        raise UtteranceError(
            "unspeakable token",
            f"{', '.join(normalized.unspeakable)} in the CTM cannot be said as words (punct.text.numbers)",
        )
    words = list(normalized.words)
    edges = np.cumsum([0] + [len(w) for w in words]) / max(1, sum(len(w) for w in words))
    duration = token.end - token.start
    times = [
        TimedWord(w, token.start + a * duration, token.start + b * duration)
        for w, a, b in zip(words, edges[:-1], edges[1:])
    ]
    return text, words, list(normalized.spans), times
