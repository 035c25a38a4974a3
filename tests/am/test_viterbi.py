"""CTC Viterbi forced alignment: planted alignments, exhaustive search on small cases, failures, speed."""

import itertools
import time

import numpy as np
import pytest

from punct.am.viterbi import AlignmentError, ctc_forced_align, encode_for_alignment, min_frames, word_spans


def _planted(tokens, rng, vocab, blank_between=(0, 4), token_frames=(1, 3)):
    """A random CTC path for ``tokens``: per-frame token index (-1 blank) and symbol ids."""
    index, symbols = [], []
    for j, tok in enumerate(tokens):
        gap = int(rng.integers(*blank_between))
        if j and tokens[j - 1] == tok:
            gap = max(gap, 1)
        index += [-1] * gap
        symbols += [0] * gap
        n = int(rng.integers(*token_frames))
        index += [j] * n
        symbols += [tok] * n
    tail = int(rng.integers(0, 4))
    index += [-1] * tail
    symbols += [0] * tail
    return np.array(index), np.array(symbols)


@pytest.mark.parametrize("seed", range(5))
def test_recovers_a_planted_alignment(seed):
    rng = np.random.default_rng(seed)
    vocab = 12
    tokens = list(rng.integers(1, vocab, size=40))
    tokens[5] = tokens[4]  # a repeated token needs a blank in between
    index, symbols = _planted(tokens, rng, vocab)
    # posteriors peaked on the planted symbol, noisy elsewhere
    logits = rng.normal(0, 1, (len(symbols), vocab))
    logits[np.arange(len(symbols)), symbols] += 6.0
    log_probs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    found, score = ctc_forced_align(log_probs, tokens)
    assert np.array_equal(found, index)
    assert score == pytest.approx(log_probs[np.arange(len(symbols)), symbols].sum())


def _all_paths(T, tokens):
    """Every frame labelling that collapses to ``tokens`` (brute force), as token-index arrays."""
    L = len(tokens)
    for labels in itertools.product(range(-1, L), repeat=T):
        seq = list(labels)
        # must be non-decreasing over non-blank frames, cover every index, and collapse correctly
        nonblank = [label for label in seq if label >= 0]
        if sorted(set(nonblank)) != list(range(L)) or nonblank != sorted(nonblank):
            continue
        ok = True
        for a, b in zip(seq, seq[1:]):
            # a blank-free change between equal tokens would merge them
            if a >= 0 and b >= 0 and a != b and tokens[a] == tokens[b]:
                ok = False
        if ok:
            yield np.array(seq)


@pytest.mark.parametrize("tokens,T", [([1, 2], 4), ([1, 1], 4), ([2, 1, 2], 5), ([1], 3)])
def test_viterbi_score_is_the_best_over_all_paths(tokens, T):
    rng = np.random.default_rng(len(tokens) * 10 + T)
    logits = rng.normal(0, 2, (T, 3))
    log_probs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    symbols = lambda idx: np.where(idx >= 0, np.array(tokens)[np.maximum(idx, 0)], 0)  # noqa: E731
    best = max(log_probs[np.arange(T), symbols(p)].sum() for p in _all_paths(T, tokens))
    index, score = ctc_forced_align(log_probs, tokens)
    assert score == pytest.approx(best)
    assert log_probs[np.arange(T), symbols(index)].sum() == pytest.approx(best)


def test_ties_go_to_the_earliest_path():
    """Among equally likely paths (stay, step and skip tie), the backtrace stays longest in the later states:
    the tokens take the first frames they can.  Stage 3 and punctuate get the same path as before the
    four-operation forward pass (which recomputes each choice instead of storing it)."""
    uniform = np.log(np.full((6, 3), 1 / 3))
    index, _ = ctc_forced_align(uniform, [1, 2])
    assert index.tolist() == [0, 1, -1, -1, -1, -1]
    index, _ = ctc_forced_align(uniform, [1, 1])  # equal tokens: a blank between them
    assert index.tolist() == [0, -1, 1, -1, -1, -1]
    index, _ = ctc_forced_align(uniform, [1, 2], open_end=True)  # the prefix alignment ends in the first blank
    assert index.tolist() == [-1] * 6


def test_too_few_frames_and_empty_transcripts_fail_with_a_reason():
    lp = np.log(np.full((4, 3), 1 / 3))
    assert min_frames([1, 1, 2]) == 4
    ctc_forced_align(lp, [1, 1, 2])  # exactly enough
    with pytest.raises(AlignmentError) as e:
        ctc_forced_align(lp, [1, 1, 2, 2])
    assert e.value.reason == "too few frames"
    with pytest.raises(AlignmentError) as e:
        ctc_forced_align(lp, [])
    assert e.value.reason == "empty transcript"


def test_word_spans_and_unknown_characters():
    ids = {"a": 1, "b": 2, "c": 3}
    tokens, word_of_token = encode_for_alignment(["ab", "c"], ids, space_id=4)
    assert tokens == [1, 2, 4, 3] and word_of_token == [0, 0, -1, 1]
    #            frame: 0   1  2  3  4   5  6  7  8
    index = np.array([-1, 0, 0, 1, -1, 2, -1, 3, -1])
    spans = word_spans(index, ["ab", "c"], word_of_token)
    assert [(s.word, s.start, s.end) for s in spans] == [("ab", 1, 4), ("c", 7, 8)]
    with pytest.raises(AlignmentError) as e:
        encode_for_alignment(["ax"], ids, 4)
    assert e.value.reason == "unknown character"


def test_speed_for_a_long_utterance():
    rng = np.random.default_rng(0)
    T, V, L = 3000, 30, 300
    log_probs = np.log(rng.dirichlet(np.ones(V), size=T))
    tokens = list(rng.integers(1, V, size=L))
    start = time.process_time()
    index, _ = ctc_forced_align(log_probs, tokens)
    elapsed = time.process_time() - start
    assert sorted(set(index[index >= 0])) == list(range(L))
    assert elapsed < 2.0, elapsed  # ~0.1 s on an idle core
