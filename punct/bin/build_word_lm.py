"""egs/parczech stage 2: a word n-gram LM (ARPA) from the official transcripts, for beam search.

  python -m punct.bin.build_word_lm --order 3 data/manifests/parczech_supervisions_all.jsonl.gz exp/asr/lm/words.arpa

As the thesis' KenLM (4.2.2: the complete official transcripts of ParCzech and the training transcripts), the LM
is estimated from every official transcript of the corpus: each supervision's words (``custom`` words of the data
contract, ``punct.labels.WordLabels``) in the form recognised words are compared in (lower case, marks stripped:
``punct.text.token_labels.normalise_word``), one ``<s> ... </s>`` stream per supervision.  Interpolated absolute
discounting in backoff form (``punct.recognition.word_lm``).  The ARPA file is written atomically, and only when its
text changed.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

from lhotse import load_manifest_lazy

from punct.labels import WordLabels
from punct.recognition.word_lm import estimate_word_lm
from punct.text.token_labels import normalise_word
from punct.utils.atomic import atomic_write_text
from punct.utils.logging import setup_logging


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("supervisions", type=Path, nargs="+", help="lhotse supervision manifests with custom words")
    parser.add_argument("out", type=Path, help="the ARPA file to write")
    parser.add_argument("--order", type=int, default=3, help="n-gram order (thesis: 3)")
    return parser


def transcript_words(paths: list[Path]) -> Iterator[list[str]]:
    for path in paths:
        for n, sup in enumerate(load_manifest_lazy(path), start=1):
            words = WordLabels.from_supervision(sup, None, where=f"{path}:{n}").words
            yield [w for w in (normalise_word(word) for word in words) if w]


def main(argv=None) -> int:
    args = get_parser().parse_args(argv)
    setup_logging()
    for path in args.supervisions:
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such file")
    texts = list(transcript_words(args.supervisions))
    lm = estimate_word_lm(texts, args.order)
    text = lm.to_arpa()
    if args.out.is_file() and args.out.read_text(encoding="utf-8") == text:
        logging.info("%s: unchanged, kept (its time stamp tells recognition its outputs are current)", args.out)
    else:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(args.out, text)
    counts = ", ".join(f"{n}-grams {sum(1 for g in lm.log_probs if len(g) == n)}" for n in range(1, lm.order + 1))
    logging.info(
        "%s: %d transcripts, %d words, vocabulary %d; %s",
        args.out,
        len(texts),
        sum(map(len, texts)),
        len(lm.vocab),
        counts,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
