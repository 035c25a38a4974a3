"""The EfficientPunct chain, written once: the steps that take a stretch of speech to punctuation, as public
methods of one object (:class:`Chain`) built from the loaded models.

  features   stage 1's frames (kaldi-native-fbank, then the lilcom rounding of the stage-1 archive:
             :meth:`Chain.as_stored`) and CMVN, per speaker (:meth:`Chain.features`) or fixed (:meth:`Chain.fixed_cmvn`)
  AM         layer 12 and the CTC log-posteriors in one pass (:meth:`Chain.am_pass`), or layer 12 alone
             (:meth:`Chain.am_embedding`), quantised as the stage-4 shards were (:meth:`Chain.stored_embedding`)
  alignment  a transcript's (or the AM's own) words and their frames (:meth:`Chain.acoustic`: a ``Prepared``)
  text side  BERT's posteriors and the TDNN's word vectors (:meth:`Chain.text_outputs`, stage 6's)
  TDNN       the fully convolutional TDNN's posteriors (:meth:`Chain.tdnn_posteriors`, stage 8's; of one stretch's
             stored layer 12: :meth:`Chain.embedding_tdnn`)
  ensemble   the TDNN and BERT posteriors mixed at alpha, and their labels (:meth:`Chain.ensemble_labels`)

An utterance goes through them as a :class:`punct.inference.acoustic.Prepared` (offline: a group at a time), a stretch
of a whole recording or of a live stream as a :class:`Stretch`, which the steps fill in: its stored layer-12 frames,
its text side (:meth:`Chain.read_stretches`), its TDNN posteriors (:meth:`Chain.stretch_tdnn`).

Every step is the recipe's own code: ``punct.features`` (kaldi-native MFCC, per-speaker CMVN), ``punct.am`` (the
TDNN acoustic model and its token table), ``punct.am.viterbi`` (CTC Viterbi), ``punct.models.text.infer``
(per-word BERT vectors and posteriors), ``punct.models.punct_tdnn`` (the TDNN fully convolutional, with the text
part of its fusion layer once per word: ``WordFactoredTdnn``, equal to the windowed TDNN in eval mode) and
``punct.scoring.ensemble``.  :meth:`Chain.use_onnx` runs the AM and the TDNN's conv stack in ONNX Runtime instead
(float32 or static int8, ``punct.inference.onnx_runtime``).

The drivers decide which stretch of speech is ready and what to keep, and call these steps; none calls another's
members: offline ``punctuate`` (``punct.inference.pipeline.Punctuator``, a Chain with its ``run``), whole
recordings (``punct.inference.long_form.LongForm``) and live captions
(``punct.inference.streaming.StreamingPunctuator``).

One path: what ``punctuate`` computes for an utterance is what the recipe's stages computed and scored for it.
The features are stage 1's; CMVN per speaker over the utterances given (``utt2spk`` / the cut's speaker; without
speakers each utterance is normalised on its own), as stage 1 computes every split's stats on that split; the
layer-12 output is quantised as the stage-4 shards were (``stored_matrix``); the word vectors come from the
encoder stage 6 used (the fine-tuned BERT's or the one it started from); the TDNN posteriors from
``punct.models.punct_tdnn.infer.word_posteriors``, as stage 8's.  The TDNN checkpoint records what its inputs were
made from (``punct.io.sources``), and :meth:`Chain.from_recipe` refuses a recipe whose AM or BERT is not the one
its TDNN was trained with.

The acoustic model runs once per utterance: ``forward_with_tap`` takes the layer-12 output on the way while the
same pass produces the CTC log-posteriors that the aligner needs.

A problem with one utterance (missing/unreadable audio, audio shorter than one window, empty transcript, no word
with a letter the AM has, too few frames for the transcript) raises :class:`UtteranceError` for that utterance
only.  Letters the AM's token table lacks are folded for the alignment only (``punct.am.alignable``, as stage 3
folds them: é -> e, ß -> ss), and a word with none left is placed between its neighbours; the outputs keep the
transcript's words.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np
import torch
from lhotse.utils import Pathlike

from punct.am.alignable import align_folded
from punct.am.decode import greedy_ids
from punct.am.infer import run_model
from punct.am.model import TdnnAcousticModel
from punct.am.tokens import BLANK, SPACE, TokenTable
from punct.am.viterbi import AlignmentError, WordSpan
from punct.features import FeatureConfig
from punct.features.cmvn import CmvnStats, SpeakerCmvn
from punct.features.compute import stored_features
from punct.inference.acoustic import Prepared, am_forward, resample
from punct.inference.inputs import Request, UtteranceError
from punct.inference.model_folder import base_encoder_dir, efficientpunct_paths, read_model_folder
from punct.inference.outputs import spaced_text
from punct.inference.precision import bf16_linear_twin, check_bf16
from punct.inference.recipe import (
    check_recipe_files,
    load_recipe_models,
    read_chosen_alpha,
    read_recipe_configs,
    recipe_paths,
)
from punct.inference.stretches import LongFormConfig
from punct.inference.timing import StageTimer
from punct.inference.words import folded_words, transcript_words
from punct.io.shards import compression_method, stored_matrix
from punct.labels import PUNCT4
from punct.models.punct_tdnn.infer import TdnnInput, tdnn_input, word_block, word_posteriors
from punct.models.punct_tdnn.tdnn import PunctTdnn, WordFactoredTdnn, pad_utterance, word_slices
from punct.models.text.data import Utterance
from punct.models.text.infer import WordOutputs, word_outputs
from punct.models.text.model import PunctBert
from punct.scoring.ensemble import PAPER_ALPHA, ensemble
from punct.text.normalize import NormalizeConfig

C = TypeVar("C", bound="Chain")


@dataclass
class Stretch:
    """A stretch of speech as the chain's steps take it (a piece of a whole recording, or of a live stream): its id,
    its words and each word's frames from the stretch's first frame; the steps add its layer-12 frames, stored as
    stage 4 stored them (:meth:`Chain.stored_embedding`), and its text side (:meth:`Chain.read_stretches`)."""

    id: str
    words: list[str]
    spans: list[WordSpan]
    embedding: np.ndarray | None = None  # (T, Da)
    text: WordOutputs | None = None  # BERT's posteriors and the word vectors the TDNN fuses

    def utterance(self) -> Utterance:
        """The stretch as BERT reads it (as the recipe's segments: no reference marks)."""
        return Utterance(self.id, self.words, [PUNCT4.none] * len(self.words))


def _chunk_lengths(bert: PunctBert, max_length: int, context: int) -> tuple[int, int]:
    """BERT's input length and context when long transcripts are chunked as in training (0 / -1: the model's
    training values); the encoder's position table bounds the chunk length; the context must leave room to
    predict."""
    max_length, context = bert.inference_chunking(max_length, context)
    max_length = min(max_length, int(getattr(bert.encoder.config, "max_position_embeddings", max_length)))
    return max_length, min(context, (max_length - 2) // 2 - 1)


def batch_tdnn_inputs(inputs: Sequence[TdnnInput], context: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Utterances padded by ``context`` frames each side, then to the longest: (B, L, Da) acoustic frames,
    all word vectors (sum W, Dt), (B, L) word rows offset into them (-1: padding or before the first word)."""
    padded = [pad_utterance(x.acoustic, x.word_index, context) for x in inputs]
    length = max(a.shape[0] for a, _ in padded)
    offsets = np.cumsum([0] + [len(x.word_vectors) for x in inputs])[:-1]
    acoustic = torch.stack([torch.nn.functional.pad(a, (0, 0, 0, length - a.shape[0])) for a, _ in padded])
    index = torch.stack(
        [
            torch.nn.functional.pad(torch.where(i >= 0, i + int(o), i), (0, length - i.shape[0]), value=-1)
            for (_, i), o in zip(padded, offsets)
        ]
    )
    return acoustic, torch.cat([x.word_vectors for x in inputs]), index


class Chain:
    """A trained recipe's models and settings, and the steps of the chain as public methods (module docstring).

    Args:
      feature_config: the recipe's conf/mfcc.yaml.
      am, tokens: the acoustic model and its token table (``punct.am.checkpoint.load_model``).
      bert: the fine-tuned text branch (``PunctBert.from_pretrained(exp/bert/best-valid-f1)``).
      tdnn: the punctuation TDNN (``punct.models.punct_tdnn.checkpoint.load_model``).
      alpha: ensemble weight of the TDNN (stage 8's choice on dev).
      layer: acoustic layer the TDNN was trained on (12).
      group_size: utterances per BERT / TDNN batch.
      global_cmvn: CMVN stats applied to every utterance (e.g. all training speakers' stats merged, for
        single short utterances); None: per speaker over the utterances given.
      tdnn_batch: run the TDNN over a zero-padded batch of utterances (same numbers; on one CPU thread the
        padding costs about what batching saves, so one utterance at a time is the default).
      bert_bf16: run BERT under bfloat16 autocast (matrix products in bf16, norms and softmax in float32);
        on CPUs with AVX-512 BF16 or AMX about 1.6-1.9x faster (benchmarks/README.md).
      word_vector_model: the encoder whose word vectors the TDNN fuses, when not ``bert`` itself (stage 6's
        ``--word-vectors pretrained``: ``pretrained_encoder_model(bert)``); the posteriors are ``bert``'s.
      embedding_compression: the kaldiio compression of the stage-4 shards the TDNN was trained and scored
        on; the layer-12 output is quantised the same way.
      vectorised_features: the NumPy feature extractor (``punct.features.vectorised``, 3-7x faster:
        benchmarks/README.md) instead of stage 1's kaldi-native-fbank: equal to 1e-3, but no longer
        bit-identical to what the recipe scored.
      long_form_config: when and how an utterance is punctuated as one whole recording (``punct.inference.long_form``).
    """

    onnx = None  # OnnxModels once use_onnx() was called
    _bf16_twins = None  # ((BERT, the word-vector encoder), their bf16_linear_twin copies)

    def __init__(
        self,
        *,
        feature_config: FeatureConfig,
        am: TdnnAcousticModel,
        tokens: TokenTable,
        bert: PunctBert,
        tdnn: PunctTdnn,
        alpha: float = PAPER_ALPHA,
        layer: int = 12,
        device: torch.device = torch.device("cpu"),
        normalize_config: NormalizeConfig = NormalizeConfig(),
        max_length: int = 0,
        context: int = -1,
        bert_batch_size: int = 32,
        group_size: int = 16,
        tdnn_batch: bool = False,
        head: str = "punct",
        global_cmvn: CmvnStats | None = None,
        bert_bf16: bool = False,
        word_vector_model: PunctBert | None = None,
        embedding_compression: str = "none",
        vectorised_features: bool = False,
        long_form_config: LongFormConfig = LongFormConfig(),
    ) -> None:
        classes = self._check_models(
            am=am, bert=bert, tdnn=tdnn, alpha=alpha, layer=layer, head=head, word_vector_model=word_vector_model
        )
        compression_method(embedding_compression)  # fails early on an unknown name
        self.feature_config = feature_config
        self.extractor = feature_config.extractor(vectorised=vectorised_features)
        self.frame_shift = feature_config.extractor().frame_shift
        self.sampling_rate = int(feature_config.options.get("sampling_rate", 16000))
        self.am = am.to(device).eval()
        self.tokens = tokens
        self.char_ids = {s: i for s, i in tokens.ids.items() if s not in (BLANK, SPACE)}
        self.bert = bert.to(device).eval()
        self.word_vector_model = None if word_vector_model is None else word_vector_model.to(device).eval()
        self.embedding_compression = embedding_compression
        self.tdnn = tdnn.to(device).eval()
        self.factored = WordFactoredTdnn(self.tdnn, bert.hidden_size).to(device).eval()
        self.alpha = float(alpha)
        self.layer = layer
        self.device = device
        self.normalize_config = normalize_config
        self.max_length, self.context = _chunk_lengths(bert, max_length, context)
        self.bert_batch_size = bert_batch_size
        self.group_size = max(1, group_size)
        self.tdnn_batch = tdnn_batch
        self.head = head
        self.classes = classes
        self.global_cmvn = global_cmvn
        if bert_bf16:
            check_bf16(device)
        self.bert_bf16 = bert_bf16
        self.long_form_config = long_form_config
        self.timer = StageTimer()

    @staticmethod
    def _check_models(
        *,
        am: TdnnAcousticModel,
        bert: PunctBert,
        tdnn: PunctTdnn,
        alpha: float,
        layer: int,
        head: str,
        word_vector_model: PunctBert | None,
    ) -> tuple[str, ...]:
        """The classes of BERT's ``head``, once the models are known to fit together (ValueError if not)."""
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must be in [0, 1], got {alpha}")
        classes = tuple(bert.head_spec(head).classes)
        if classes != PUNCT4.classes or tdnn.config.num_classes != len(classes):
            raise ValueError(
                f"class mismatch: BERT head {classes}, TDNN {tdnn.config.num_classes} classes, "
                f"expected {PUNCT4.classes}"
            )
        am_dim = am.config.dim
        if bert.hidden_size + am_dim != tdnn.config.input_dim:
            raise ValueError(
                f"the TDNN expects {tdnn.config.input_dim}-dim frames but BERT ({bert.hidden_size}) + "
                f"AM layer {layer} ({am_dim}) give {bert.hidden_size + am_dim}: models from different recipes?"
            )
        if word_vector_model is not None and word_vector_model.hidden_size != bert.hidden_size:
            raise ValueError(f"word vectors of {word_vector_model.hidden_size} dims, BERT has {bert.hidden_size}")
        return classes

    # ---- construction from a recipe directory ------------------------------------------------

    @classmethod
    def from_recipe(
        cls: type[C],
        recipe_dir: Pathlike = ".",
        *,
        feat_config: Pathlike | None = None,
        am_checkpoint: Pathlike | None = None,
        bert_dir: Pathlike | None = None,
        tdnn_checkpoint: Pathlike | None = None,
        results_json: Pathlike | None = None,
        normalize_config: Pathlike | None = None,
        alpha: float | None = None,
        device: torch.device = torch.device("cpu"),
        **kwargs,
    ) -> C:
        """Loads the models of a trained recipe (the EfficientPunct recipe after stages 1-8); any path may be
        overridden."""
        recipe = Path(recipe_dir)
        paths = recipe_paths(
            recipe,
            feat_config=feat_config,
            am_checkpoint=am_checkpoint,
            bert_dir=bert_dir,
            tdnn_checkpoint=tdnn_checkpoint,
            results_json=results_json,
            normalize_config=normalize_config,
        )
        check_recipe_files(paths, recipe)
        if alpha is None:
            alpha = read_chosen_alpha(paths["results_json"])
        return cls.from_paths(paths, alpha, device=device, **kwargs)

    @classmethod
    def from_model_dir(
        cls: type[C],
        model_dir: Pathlike,
        *,
        alpha: float | None = None,
        device: torch.device = torch.device("cpu"),
        **kwargs,
    ) -> C:
        """Loads an exported model folder (``punct-export``; :mod:`punct.inference.model_folder`): the same models
        as :meth:`from_recipe` on the recipe it was exported from, and the alpha stage 8 chose unless ``alpha``."""
        model = read_model_folder(model_dir, kind="efficientpunct")
        alpha = float(model.info["alpha"]) if alpha is None else alpha
        return cls.from_paths(
            efficientpunct_paths(model), alpha, device=device, base_encoder=base_encoder_dir(model), **kwargs
        )

    @classmethod
    def from_paths(
        cls: type[C],
        paths: dict[str, Path],
        alpha: float,
        *,
        device: torch.device = torch.device("cpu"),
        base_encoder: Path | None = None,
        **kwargs,
    ) -> C:
        """The models at ``paths`` (the keys of :func:`punct.inference.recipe.recipe_paths`), checked against the
        TDNN's record of its inputs; ``base_encoder``: the encoder of pretrained word vectors, if not the one
        BERT's folder names."""
        feature_config, norm = read_recipe_configs(paths)
        models = load_recipe_models(paths, feature_config, device, base_encoder)
        models.log(paths, alpha)
        return cls(
            feature_config=feature_config,
            am=models.am,
            tokens=models.tokens,
            bert=models.bert,
            tdnn=models.tdnn,
            alpha=alpha,
            layer=models.inputs.layer,
            device=device,
            normalize_config=norm,
            word_vector_model=models.word_vector_model,
            embedding_compression=models.inputs.compression,
            **kwargs,
        )

    def quantize(self: C, parts: Sequence[str] = ("bert",)) -> C:
        """Dynamic int8 quantisation of the Linear layers of ``parts`` ("bert", "tdnn"; CPU only); returns self.

        BERT only by default: on the TDNN the per-call quantisation of the (frames x 1792) activations
        costs more than the int8 matrix product saves (benchmarks/README.md).

        Raises ValueError on a GPU: torch's dynamic int8 kernels exist for the CPU only, so quantised layers
        of a CUDA model would fail at the first forward pass."""
        import warnings

        from torch.ao.quantization import quantize_dynamic

        if self.device.type != "cpu":
            raise ValueError(
                f"--quantize: dynamic int8 quantisation runs on the CPU only, but the models are on "
                f"{self.device}; use --device cpu, or --bert-bf16 on the GPU"
            )
        unknown = set(parts) - {"bert", "tdnn"}
        if unknown:
            raise ValueError(f"quantize: unknown parts {sorted(unknown)}; choose bert, tdnn")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's deprecation notice of quantized tensor creation
            if "bert" in parts:
                self.bert = quantize_dynamic(self.bert, {torch.nn.Linear}, dtype=torch.qint8)
            if "tdnn" in parts:
                self.factored = quantize_dynamic(self.factored, {torch.nn.Linear}, dtype=torch.qint8)
        return self

    def use_onnx(
        self: C,
        folder: Pathlike,
        precision: str = "int8",
        threads: int = 1,
        am_checkpoint: Pathlike | None = None,
        tdnn_checkpoint: Pathlike | None = None,
    ) -> C:
        """Runs the AM and the TDNN's conv stack in ONNX Runtime from an export folder
        (``punct.bin.export_onnx``); CPU only. With the checkpoints given, checks the export was made from them.
        int8 graphs are not the recipe's numbers: they quantise their inputs, and the storage rounding before them
        is skipped (:meth:`_int8_graph`)."""
        from punct.inference.onnx_runtime import load_sessions

        if self.device.type != "cpu":
            raise ValueError(f"the ONNX Runtime backend runs on the CPU; use the PyTorch models on {self.device}")
        models = load_sessions(folder, precision, threads, am_checkpoint, tdnn_checkpoint)
        if (models.info.layer, models.info.am_dim, models.info.text_dim) != (
            self.layer,
            self.am.config.dim,
            self.bert.hidden_size,
        ):
            raise ValueError(
                f"{folder}: exported for layer {models.info.layer}, AM dim {models.info.am_dim}, text dim "
                f"{models.info.text_dim}; these models have {self.layer}, {self.am.config.dim}, "
                f"{self.bert.hidden_size}"
            )
        self.onnx = models
        return self

    # ---- the pipeline ----------------------------------------------------------------------

    def features(
        self, requests: Sequence[Request], durations: dict[str, float] | None = None
    ) -> dict[str, np.ndarray | UtteranceError]:
        """CMVN-normalised features of each request (or its error); CMVN per speaker over ``requests``.
        ``durations``, when given, receives each readable utterance's audio duration in seconds."""
        raw: dict[str, np.ndarray | UtteranceError] = {}
        for req in requests:
            try:
                with self.timer("audio"):
                    try:
                        samples, rate = req.audio()
                    except UtteranceError:
                        raise
                    except Exception as e:  # a custom loader's own error: this utterance only
                        raise UtteranceError("unreadable audio", f"{req.source}: {type(e).__name__}: {e}") from e
                with self.timer("features"):
                    samples = resample(np.asarray(samples, dtype=np.float32), int(rate), self.sampling_rate)
                    feats = self.extractor.extract(samples, self.sampling_rate)
                if durations is not None:
                    durations[req.id] = len(samples) / self.sampling_rate
                raw[req.id] = self.as_stored(feats, len(samples), req.source)
            except UtteranceError as e:
                raw[req.id] = e
        if self.global_cmvn is not None:
            return {k: self.fixed_cmvn(v) if isinstance(v, np.ndarray) else v for k, v in raw.items()}
        with self.timer("features"):
            speaker_of = {r.id: r.speaker for r in requests}
            ok = [(speaker_of[k], v) for k, v in raw.items() if isinstance(v, np.ndarray)]
            cmvn = SpeakerCmvn.accumulate(ok, norm_vars=self.feature_config.norm_vars)
            return {k: cmvn.apply(speaker_of[k], v) if isinstance(v, np.ndarray) else v for k, v in raw.items()}

    def as_stored(self, feats: np.ndarray, num_samples: int, source: str) -> np.ndarray:
        """The extractor's frames of ``num_samples`` samples as stage 1 stored them, which the AM saw (unchanged for
        an int8 AM graph); UtteranceError when there is no frame."""
        if feats.shape[0] == 0:
            raise UtteranceError(
                "audio too short",
                f"{source}: {num_samples} samples ({num_samples / self.sampling_rate * 1000:.1f} ms) is shorter "
                "than one 25 ms analysis window",
            )
        with self.timer("features"):
            if self._int8_graph("am"):
                return feats
            return stored_features(feats, num_samples, self.frame_shift, self.sampling_rate)

    def fixed_cmvn(self, feats: np.ndarray) -> np.ndarray:
        """Stored features normalised with the fixed stats (``global_cmvn``), as :meth:`features` normalises them."""
        with self.timer("features"):
            cmvn = SpeakerCmvn({"<global>": self.global_cmvn}, norm_vars=self.feature_config.norm_vars)
            return cmvn.apply("<global>", feats)

    def am_pass(self, feats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(layer-``self.layer`` output (T, Da), CTC log-posteriors (T, V)) of CMVN-normalised features."""
        with self.timer("am"):
            if self.onnx is not None and self.onnx.am is not None:
                return self.onnx.am(feats)
            return am_forward(self.am, feats, self.layer, self.device)

    def acoustic(self, req: Request, feats: np.ndarray, duration: float | None = None) -> Prepared:
        """Layer-12 embeddings and word spans of one utterance."""
        if req.transcript is not None:
            text, words, char_spans = transcript_words(req.transcript, self.normalize_config)
            folded = folded_words(req.id, words, self.char_ids)  # checked before spending time on the AM
        emb, log_probs = self.am_pass(feats)
        emb = self.stored_embedding(emb)
        if req.transcript is None:
            with self.timer("align"):
                words = self.tokens.decode_words(greedy_ids(torch.from_numpy(log_probs), log_probs.shape[0]))
            if not words:
                raise UtteranceError("empty hypothesis", "the acoustic model recognised no word")
            text, char_spans = spaced_text(words)
            folded = folded_words(req.id, words, self.char_ids)  # the AM's own words: nothing to fold
        with self.timer("align"):
            try:
                spans = align_folded(log_probs, folded, self.tokens)
            except AlignmentError as e:
                raise UtteranceError(
                    e.reason,
                    f"forced alignment failed ({e}); {feats.shape[0]} frames "
                    f"({feats.shape[0] / 100:.2f} s) for {len(words)} words",
                ) from e
        return Prepared(
            req,
            text,
            words,
            char_spans,
            emb,
            spans,
            "given" if req.transcript is not None else "am",
            feats.shape[0] / 100.0 if duration is None else duration,
        )

    def am_embedding(self, feats: np.ndarray) -> np.ndarray:
        """Layer ``self.layer``'s (T, Da) output alone: the AM stops there (``run_model``, as stage 4 dumps it)."""
        with self.timer("am"):
            if self.onnx is not None and self.onnx.am is not None:
                return self.onnx.am(feats)[0]
            return run_model(self.am, feats, self.layer, self.device)

    def stored_embedding(self, embedding: np.ndarray) -> np.ndarray:
        """Layer-12 frames quantised as the stage-4 shards store an utterance's (the whole matrix at once), as the
        TDNN saw them; unchanged for an int8 TDNN graph, which quantises them to 8 bits itself."""
        if self._int8_graph("tdnn"):
            return embedding
        with self.timer("am"):
            return stored_matrix(embedding, self.embedding_compression)

    def _int8_graph(self, model: str) -> bool:
        """Whether ``model`` (am, tdnn) runs as a static int8 ONNX graph.  Its input is then quantised to 8 bits
        by the graph, and the rounding that the recipe's storage applied before it is skipped: lilcom's 1/32
        steps on the features (a median 1/7 of the AM graph's input step on a trained mini recipe) and the 16-bit
        layer-12 shards.  On that recipe this changed 9 of 4458 dev labels against the int8 pipeline with it,
        the ensemble F1 by -0.0001 (benchmarks/README.md)."""
        return self.onnx is not None and self.onnx.precision == "int8" and getattr(self.onnx, model) is not None

    def embedding_tdnn(
        self,
        embedding: np.ndarray,
        f0: int,
        spans: Sequence[WordSpan],
        vectors: np.ndarray,
        words: tuple[int, int] | None = None,
    ) -> np.ndarray:
        """TDNN posteriors of a stretch's words (``tdnn_input`` and ``word_posteriors``) from its stored layer-12
        frames; ``words`` = (first, last): those words' rows only, from the frames their windows cover."""
        starts = np.clip(np.array([s.start for s in spans]) - f0, 0, embedding.shape[0] - 1)
        ends = np.clip(np.array([s.end for s in spans]) - f0, starts + 1, embedding.shape[0])
        with self.timer("tdnn"):
            x = tdnn_input(embedding, vectors, starts, ends, self.tdnn.config.window_centre)
            if words is not None:
                x = word_block(x, words[0], words[1], self.tdnn.config.context)
            return self.tdnn_posteriors([x])[0]

    def read_stretches(self, stretches: Sequence[Stretch]) -> None:
        """The text side of each stretch (its ``text``: :meth:`text_outputs`, in one call for all)."""
        for stretch, out in zip(stretches, self.text_outputs([s.utterance() for s in stretches])):
            stretch.text = out

    def stretch_tdnn(self, stretch: Stretch, words: tuple[int, int] | None = None) -> np.ndarray:
        """TDNN posteriors of a stretch whose layer-12 frames and text side are in (:meth:`embedding_tdnn`);
        ``words`` = (first, last): those words' rows only."""
        return self.embedding_tdnn(stretch.embedding, 0, stretch.spans, stretch.text.vectors, words)

    def ensemble_labels(self, p_tdnn: np.ndarray, p_bert: np.ndarray) -> tuple[np.ndarray, list[str]]:
        """The (W, C) ensemble of the TDNN's and BERT's posteriors at ``alpha`` (stage 8's) and each word's label."""
        p_ensemble = ensemble(p_tdnn, p_bert, self.alpha)
        return p_ensemble, [self.classes[i] for i in p_ensemble.argmax(axis=1)]

    def text_outputs(self, utts: Sequence[Utterance]) -> list[WordOutputs]:
        """BERT's posteriors and the TDNN's word vectors of ``utts`` (stage 6's ``word_outputs``)."""
        bert, vector_model = self._text_models()
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.bert_bf16):
            return list(
                word_outputs(bert, utts, self.max_length, self.context, self.bert_batch_size, self.device, vector_model)
            )

    def _text_models(self) -> tuple[PunctBert, PunctBert | None]:
        """BERT and the word-vector encoder as :meth:`text_outputs` runs them: in bf16 their Linear weights
        rounded once (:func:`bf16_linear_twin`, the same numbers as autocast's), kept while the models are."""
        if not self.bert_bf16:
            return self.bert, self.word_vector_model
        models = (self.bert, self.word_vector_model)
        if self._bf16_twins is None or any(a is not b for a, b in zip(self._bf16_twins[0], models)):
            self._bf16_twins = (models, tuple(None if m is None else bf16_linear_twin(m) for m in models))
        return self._bf16_twins[1]

    def tdnn_inputs(self, prepared: Sequence[Prepared], outputs: Sequence[WordOutputs]) -> list[TdnnInput]:
        """The TDNN's inputs of each utterance: acoustic frames, word vectors, frame -> word, window centres."""
        return [
            tdnn_input(
                p.embedding,
                out.vectors,
                np.array([s.start for s in p.spans], dtype=np.int64),
                np.array([s.end for s in p.spans], dtype=np.int64),
                self.tdnn.config.window_centre,
            )
            for p, out in zip(prepared, outputs)
        ]

    @torch.inference_mode()
    def tdnn_posteriors(self, inputs: Sequence[TdnnInput]) -> list[np.ndarray]:
        """The TDNN's (W, C) posteriors of each utterance's inputs (stage 8's ``word_posteriors``); with
        ``tdnn_batch``, of a zero-padded batch of them (the same numbers)."""
        conv_stack = self.onnx.tdnn if self.onnx is not None else None  # None: the PyTorch conv stack
        if not self.tdnn_batch or len(inputs) == 1:
            return [
                word_posteriors(self.factored, x, self.device, conv_stack, self.long_form_config.tdnn_block_frames)
                for x in inputs
            ]
        acoustic, vectors, index = batch_tdnn_inputs(inputs, self.tdnn.config.context)
        conv = (conv_stack or self.factored)(acoustic.to(self.device), vectors.to(self.device), index.to(self.device))
        slices = torch.cat(
            [
                word_slices(conv[row], x.centres.to(self.device), self.tdnn.config.output_frames)
                for row, x in enumerate(inputs)
            ]
        )
        probs = torch.softmax(self.factored.tdnn.head(slices), -1).cpu().numpy()
        return np.split(probs, np.cumsum([len(x.centres) for x in inputs])[:-1])
