"""A word n-gram language model for CTC beam search (the thesis' KenLM, 4.2.2, written here).

``estimate_word_lm`` counts n-grams over word sequences and estimates an interpolated
absolute-discounting model (discount per order D = n1 / (n1 + 2 n2), the Ney et al. estimate),
stored in backoff form so that it reads and writes as an ARPA file: an ARPA file of KenLM
(``lmplz``) or any other toolkit can be used in its place.  Each text is one stream
``<s> w1 ... wn </s>``; the unigram distribution gives the discounted mass to ``<unk>``.

``WordNgramLm.log_prob(history, word)`` is the natural-log probability with the usual backoff
(an unseen word is ``<unk>``); ``is_prefix`` tells the beam search whether a partial word can
still become a word of the vocabulary.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from lhotse.utils import Pathlike

from punct.utils.atomic import atomic_write_text

BOS, EOS, UNK = "<s>", "</s>", "<unk>"
LN10 = math.log(10.0)

Ngram = tuple[str, ...]


class WordNgramLm:
    """A backoff n-gram model: ``log_probs[ngram]`` and ``backoffs[context]``, natural logs."""

    def __init__(self, order: int, log_probs: dict[Ngram, float], backoffs: dict[Ngram, float]) -> None:
        if order < 1:
            raise ValueError(f"n-gram order must be >= 1, got {order}")
        if (UNK,) not in log_probs:
            raise ValueError(f"the model has no {UNK} unigram: an unseen word would have no probability")
        self.order = order
        self.log_probs = log_probs
        self.backoffs = backoffs
        self.vocab: frozenset[str] = frozenset(g[0] for g in log_probs if len(g) == 1) - {BOS, EOS, UNK}
        self.prefixes: frozenset[str] = frozenset(w[:i] for w in self.vocab for i in range(1, len(w) + 1))

    def is_prefix(self, partial: str) -> bool:
        """True if ``partial`` begins (or is) a word of the vocabulary."""
        return partial in self.prefixes

    def log_prob(self, history: Sequence[str], word: str) -> float:
        """ln p(word | the last order-1 words of history)."""
        if word not in self.vocab and word != EOS:
            word = UNK
        context = tuple(history[len(history) - self.order + 1 :]) if self.order > 1 else ()
        backoff = 0.0
        while True:
            lp = self.log_probs.get(context + (word,))
            if lp is not None:
                return backoff + lp
            backoff += self.backoffs.get(context, 0.0)
            context = context[1:]  # the unigram (context ()) always has <unk>

    def to_arpa(self) -> str:
        by_order: dict[int, list[Ngram]] = defaultdict(list)
        for g in self.log_probs:
            by_order[len(g)].append(g)
        lines = ["\\data\\"] + [f"ngram {n}={len(by_order[n])}" for n in range(1, self.order + 1)] + [""]
        for n in range(1, self.order + 1):
            lines.append(f"\\{n}-grams:")
            for g in sorted(by_order[n]):
                row = f"{self.log_probs[g] / LN10:.6f}\t{' '.join(g)}"
                if n < self.order and g in self.backoffs:
                    row += f"\t{self.backoffs[g] / LN10:.6f}"
                lines.append(row)
            lines.append("")
        lines.append("\\end\\")
        return "\n".join(lines) + "\n"

    def write_arpa(self, path: Pathlike) -> None:
        atomic_write_text(path, self.to_arpa())

    @classmethod
    def read_arpa(cls, path: Pathlike) -> WordNgramLm:
        """An ARPA file (log10 values, as KenLM writes them); errors name the file and line."""
        log_probs: dict[Ngram, float] = {}
        backoffs: dict[Ngram, float] = {}
        order, section = 0, None
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, start=1):
                line = line.strip()
                if not line:
                    continue
                if line == "\\data\\" or line == "\\end\\":
                    section = "data" if line == "\\data\\" else None
                elif line.startswith("\\") and line.endswith("-grams:"):
                    section = int(line[1 : -len("-grams:")])
                    order = max(order, section)
                elif section == "data":
                    if not line.startswith("ngram "):
                        raise ValueError(f"{path}:{n}: expected 'ngram N=count' in the \\data\\ section, got {line!r}")
                elif isinstance(section, int):
                    cols = line.split()
                    words = tuple(cols[1 : 1 + section])
                    if len(words) != section or len(cols) > section + 2:
                        raise ValueError(f"{path}:{n}: not an ARPA {section}-gram line: {line!r}")
                    try:
                        log_probs[words] = float(cols[0]) * LN10
                        if len(cols) == section + 2:
                            backoffs[words] = float(cols[-1]) * LN10
                    except ValueError:
                        raise ValueError(f"{path}:{n}: not an ARPA {section}-gram line: {line!r}") from None
                else:
                    raise ValueError(f"{path}:{n}: unexpected line outside the ARPA sections: {line!r}")
        if order == 0:
            raise ValueError(f"{path}: no n-gram sections (not an ARPA file)")
        return cls(order, log_probs, backoffs)


def _discount(counts: Counter) -> float:
    n1 = sum(1 for c in counts.values() if c == 1)
    n2 = sum(1 for c in counts.values() if c == 2)
    return n1 / (n1 + 2 * n2) if n1 > 0 else 0.5


def estimate_word_lm(texts: Iterable[Sequence[str]], order: int = 3) -> WordNgramLm:
    """Interpolated absolute discounting over word sequences, in backoff form."""
    if order < 1:
        raise ValueError(f"n-gram order must be >= 1, got {order}")
    counts: list[Counter] = [Counter() for _ in range(order + 1)]  # counts[n][ngram]
    for words in texts:
        stream = (BOS,) + tuple(words) + (EOS,)
        counts[1].update((w,) for w in stream[1:])  # <s> is a context, never predicted
        for n in range(2, order + 1):
            counts[n].update(stream[i : i + n] for i in range(len(stream) - n + 1))
    if not counts[1]:
        raise ValueError("no words to estimate a language model from")
    # unigrams (<s> is never predicted): discounted counts + the freed mass spread over the vocabulary and <unk>
    total = sum(counts[1].values())
    d1 = _discount(counts[1])
    uniform = d1 * len(counts[1]) / total / (len(counts[1]) + 1)
    probs: dict[Ngram, float] = {g: (c - d1) / total + uniform for g, c in counts[1].items()}
    probs[(UNK,)] = uniform
    log_probs: dict[Ngram, float] = {g: math.log(p) for g, p in probs.items()}
    log_probs[(BOS,)] = -99.0 * LN10  # KenLM's convention: <s> is a context only
    backoffs: dict[Ngram, float] = {}
    lower = WordNgramLm(1, log_probs, backoffs)  # shares the dicts: order n adds only keys it never reads
    for n in range(2, order + 1):
        d = _discount(counts[n])
        by_context: dict[Ngram, dict[str, int]] = defaultdict(dict)
        for g, c in counts[n].items():
            by_context[g[:-1]][g[-1]] = c
        for context, followers in by_context.items():
            context_total = sum(followers.values())
            freed = d * len(followers) / context_total
            seen_mass, seen_lower = 0.0, 0.0
            for w, c in followers.items():
                p_lower = math.exp(lower.log_prob(context[1:], w))
                p = (c - d) / context_total + freed * p_lower
                log_probs[context + (w,)] = math.log(p)
                seen_mass += p
                seen_lower += p_lower
            backoffs[context] = math.log(max(1.0 - seen_mass, 1e-12) / max(1.0 - seen_lower, 1e-12))
        lower = WordNgramLm(n, log_probs, backoffs)
    return WordNgramLm(order, log_probs, backoffs)


def read_word_lm(path: Pathlike) -> WordNgramLm:
    if not Path(path).is_file():
        raise FileNotFoundError(f"{path}: no such file (an ARPA word n-gram model)")
    return WordNgramLm.read_arpa(path)
