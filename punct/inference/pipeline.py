"""Offline ``punctuate``: utterances in, a :class:`Result` or a :class:`Failure` out per utterance, in order.

:class:`Punctuator` is the recipe's chain (:class:`punct.inference.chain.Chain`: its models, settings and steps) with
the offline driver on top: it computes the features of all the utterances given (CMVN per speaker over them), then
aligns, reads with BERT, runs the TDNN and the ensemble a group of ``group_size`` utterances at a time
(:meth:`Punctuator.run`).  An utterance longer than ``long_form_config.long_form_above`` (or any, with
``long_form="always"``, or with word times from a CTM) is a whole recording: the long-form driver
(``punct.inference.long_form.LongForm``) aligns it in chunks and decides its stretches, and it is classified alone.

Given the whole test split of a trained recipe, the posteriors equal stage 7/8's
(``tests/e2e/test_mustc_recipe.py``).  A problem with one utterance raises :class:`UtteranceError` in the chain;
:meth:`Punctuator.run` yields a :class:`Failure` for it and goes on with the others.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cached_property

from punct.inference.acoustic import Prepared
from punct.inference.chain import Chain
from punct.inference.inputs import Request, UtteranceError
from punct.inference.long_form import LongForm
from punct.inference.outputs import Failure, Result, render_text
from punct.labels import PUNCT4, TimedWord
from punct.models.text.data import Utterance
from punct.models.text.infer import WordOutputs


class Punctuator(Chain):
    """Punctuates utterances with a trained recipe's models (the arguments of :class:`Chain`), offline."""

    @cached_property
    def long_form(self) -> LongForm:
        """The long-form driver on this chain (whole recordings: aligned in chunks, then stretch by stretch)."""
        return LongForm(self)

    def classify(self, prepared: Sequence[Prepared]) -> list[Result]:
        """BERT, TDNN and the ensemble over a group of prepared utterances."""
        if not prepared:
            return []
        with self.timer("bert"):
            outputs = self.bert_outputs(prepared)
        if len(prepared) == 1 and prepared[0].long_form:
            p_tdnn = [self.long_form.tdnn_posteriors(prepared[0], outputs[0])]
        else:
            with self.timer("tdnn"):
                p_tdnn = self.tdnn_posteriors(self.tdnn_inputs(prepared, outputs))
        results = []
        with self.timer("ensemble"):
            for p, out, pt in zip(prepared, outputs, p_tdnn):
                pb = out.posteriors[self.head]
                pe, labels = self.ensemble_labels(pt, pb)
                results.append(
                    Result(
                        p.request.id,
                        render_text(p.text, p.char_spans, labels),
                        p.words,
                        labels,
                        [(s.start, s.end) for s in p.spans],
                        pt,
                        pb,
                        pe,
                        self.alpha,
                        p.transcript_from,
                        p.duration,
                        p.long_form,
                    )
                )
        return results

    def bert_outputs(self, prepared: Sequence[Prepared]) -> list[WordOutputs]:
        """Per-word BERT posteriors of each prepared utterance, and the word vectors the TDNN fuses (stage 6's); a
        whole recording's from the long-form driver (``LongForm.text_outputs``)."""
        if len(prepared) == 1 and prepared[0].long_form:
            return [self.long_form.text_outputs(prepared[0])]
        return self.text_outputs([Utterance(p.request.id, p.words, [PUNCT4.none] * len(p.words)) for p in prepared])

    def run(
        self, requests: Sequence[Request], word_times: dict[str, list[TimedWord]] | None = None
    ) -> Iterator[Result | Failure]:
        """Yields a Result or a Failure per request, in order.  ``word_times``: each request's words with times
        (seconds from the start of its audio) from an external recogniser, instead of its transcript and
        an alignment (``punct.am.ctm.read_ctm``); a request missing from it fails."""
        ids = [r.id for r in requests]
        if len(set(ids)) != len(ids):
            dup = sorted({i for i in ids if ids.count(i) > 1})
            raise ValueError(f"duplicate utterance ids {dup[:5]}: ids must be unique")
        durations: dict[str, float] = {}
        feats = self.features(requests, durations)
        for g in range(0, len(requests), self.group_size):
            group = requests[g : g + self.group_size]
            outcome: dict[str, Prepared | Result | Failure] = {}
            for req in group:
                f = feats[req.id]
                try:
                    if isinstance(f, UtteranceError):
                        raise f
                    duration = durations.get(req.id, f.shape[0] * self.frame_shift)
                    if word_times is not None or self.long_form_config.is_long(duration):
                        times = None if word_times is None else word_times.get(req.id, [])
                        # one whole recording at a time: its own BERT and TDNN pass, nothing else held
                        outcome[req.id] = self.classify([self.long_form.prepare(req, f, duration, times)])[0]
                    else:
                        outcome[req.id] = self.acoustic(req, f, duration)
                except UtteranceError as e:
                    outcome[req.id] = Failure(req.id, e.reason, str(e))
            ready = [o for o in outcome.values() if isinstance(o, Prepared)]
            done = {r.id: r for r in self.classify(ready)}
            for req in group:
                yield done.get(req.id) or outcome[req.id]
