"""What a run's files say besides its scores: the acoustic model's WER and alignment error, and the parameters
of the embedding and inference networks (EfficientPunct's Table 5); a count that could not be read is None.
"""

from __future__ import annotations

import json
import re
from pathlib import Path


def acoustic_model_health(am_dir: Path, splits: list[str]) -> dict[str, dict[str, float]]:
    """The AM's greedy WER (``wer_<split>.txt``) and forced-alignment word-start error against the
    synthesizer (``ali/<split>.ali_error.json``, mini corpus only) where stages 2-3 wrote them."""
    health: dict[str, dict[str, float]] = {}
    for split in splits:
        wer_file, ali_file = am_dir / f"wer_{split}.txt", am_dir / "ali" / f"{split}.ali_error.json"
        if wer_file.exists():
            match = re.search(r"%WER ([0-9.]+)", wer_file.read_text(encoding="utf-8"))
            if match:
                health.setdefault("wer", {})[split] = float(match.group(1))
        if ali_file.exists():
            ali = json.loads(ali_file.read_text(encoding="utf-8"))
            if "median_abs_ms" in ali:
                health.setdefault("alignment_median_ms", {})[split] = ali["median_abs_ms"]
    return health


def find_am_checkpoint(am_dir: Path) -> Path | None:
    """The acoustic model checkpoint stage 2 (``punct.am.train``) selects (``best-valid-loss.pt``), else its newest
    ``epoch-N.pt``."""
    from punct.am.checkpoint import BEST_CHECKPOINT
    from punct.training.loop import latest_checkpoint

    best = am_dir / BEST_CHECKPOINT
    return best if best.exists() else latest_checkpoint(am_dir)


def am_parameters_to_layer(checkpoint_path: Path, layer: int = 12) -> int:
    """Parameters of the acoustic model up to layer ``layer``, counted by the model itself."""
    from punct.am.checkpoint import load_model

    model, _ = load_model(checkpoint_path)
    return model.parameters_to_layer(layer)


def safetensors_numel(path: Path) -> int:
    """Values in a safetensors file, from its header (no tensor is read)."""
    from safetensors import safe_open

    total = 0
    with safe_open(str(path), framework="pt") as f:
        for key in f.keys():  # noqa: SIM118 (safe_open has keys(), no __iter__)
            numel = 1
            for size in f.get_slice(key).get_shape():
                numel *= size
            total += numel
    return total


def bert_parameters(bert_dir: Path) -> tuple[int, int]:
    """(encoder, heads) parameters of a saved PunctBert folder: from the safetensors headers where it has them
    (transformers saves parameters only), else counted by the loaded model (the older ``.bin`` layout).  The
    headers take milliseconds; loading the model took ~4.5 s of stage 8 (transformers' import and the weights)."""
    from punct.models.text.model import HEADS_FILE

    encoder_file, heads_file = bert_dir / "model.safetensors", bert_dir / HEADS_FILE
    if encoder_file.exists() and heads_file.exists():
        return safetensors_numel(encoder_file), safetensors_numel(heads_file)
    from punct.models.text.model import PunctBert

    bert = PunctBert.from_pretrained(bert_dir)
    return sum(p.numel() for p in bert.encoder.parameters()), sum(p.numel() for p in bert.heads.parameters())


def parameter_breakdown(am_dir: Path | None, bert_dir: Path | None, tdnn_checkpoint: Path | None) -> dict:
    """Table 5: {"embedding": {...}, "inference": {...}, "notes": [...]}; unreadable counts are None."""
    notes: list[str] = []
    am = bert_encoder = bert_head = tdnn = None
    if am_dir is not None:
        ckpt = find_am_checkpoint(Path(am_dir)) if Path(am_dir).is_dir() else None
        if ckpt is None:
            notes.append(f"no acoustic model checkpoint in {am_dir}: its count is n/a")
        else:
            try:
                am = am_parameters_to_layer(ckpt)
                notes.append(f"acoustic model counted from {ckpt} (input, tdnn1, tdnnf2..tdnnf12)")
            except Exception as e:  # noqa: BLE001 - the report still gets written, with the reason
                notes.append(f"acoustic model count failed ({e})")
    if bert_dir is not None and not Path(bert_dir).exists():
        notes.append(f"no BERT folder {bert_dir}: its counts are n/a")
    elif bert_dir is not None:
        try:
            bert_encoder, bert_head = bert_parameters(Path(bert_dir))
            notes.append(f"BERT encoder and head counted from {bert_dir}")
        except Exception as e:  # noqa: BLE001
            notes.append(f"BERT count failed for {bert_dir} ({type(e).__name__}: {e})")
    if tdnn_checkpoint is not None and not Path(tdnn_checkpoint).exists():
        notes.append(f"no TDNN checkpoint {tdnn_checkpoint}: its count is n/a")
    elif tdnn_checkpoint is not None:
        from punct.models.punct_tdnn.checkpoint import load_model
        from punct.models.punct_tdnn.tdnn import count_parameters

        tdnn = count_parameters(load_model(tdnn_checkpoint))
    return {
        "embedding": {"acoustic model up to layer 12": am, "BERT encoder": bert_encoder},
        "inference": {"punctuation TDNN": tdnn, "BERT head": bert_head},
        "notes": notes,
    }
