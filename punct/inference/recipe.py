"""A trained recipe's directory as ``punctuate`` reads it: where its configs and models are (``recipe_paths``,
any of them overridable), the alpha stage 8 chose, and the models themselves (``load_recipe_models``), loaded
through each model's own checkpoint module and refused unless the TDNN's checkpoint says that this AM, BERT and
CMVN mode made its inputs (``tdnn_inputs_of``).

:meth:`punct.inference.pipeline.Punctuator.from_recipe` puts these together; the ONNX export reads the same paths.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

import torch

from punct.am.checkpoint import load_model as load_am
from punct.am.model import EMBEDDING_LAYER, TdnnAcousticModel
from punct.am.tokens import TokenTable
from punct.features import FeatureConfig
from punct.io.sources import AcousticSource, WordVectorSource, files_sha256
from punct.models.punct_tdnn.checkpoint import checkpoint_inputs
from punct.models.punct_tdnn.checkpoint import load_model as load_tdnn
from punct.models.punct_tdnn.tdnn import PunctTdnn
from punct.models.text.model import PunctBert, pretrained_encoder_model, weight_files
from punct.scoring.ensemble import PAPER_ALPHA
from punct.text.normalize import NormalizeConfig
from punct.utils.config import load_config


def recipe_paths(recipe: Path, **overrides) -> dict[str, Path]:
    """The recipe's default model paths (relative to the recipe directory), with overrides."""
    defaults = {
        "feat_config": recipe / "conf" / "mfcc.yaml",
        "normalize_config": recipe / "conf" / "normalize.yaml",
        "am_checkpoint": recipe / "exp" / "am" / "best-valid-loss.pt",
        "bert_dir": recipe / "exp" / "bert" / "best-valid-f1",
        "tdnn_checkpoint": recipe / "exp" / "tdnn" / "best-valid-f1.pt",
        "results_json": recipe / "exp" / "results" / "results.json",
    }
    return {k: Path(overrides[k]) if overrides.get(k) is not None else v for k, v in defaults.items()}


def check_recipe_files(paths: dict[str, Path], recipe: Path) -> None:
    """FileNotFoundError naming the first of the feature config and the three models that ``paths`` lacks."""
    for name in ("feat_config", "am_checkpoint", "bert_dir", "tdnn_checkpoint"):
        if not paths[name].exists():
            raise FileNotFoundError(f"{paths[name]}: no such file ({name}; is {recipe} a trained recipe directory?)")


def read_recipe_configs(paths: dict[str, Path]) -> tuple[FeatureConfig, NormalizeConfig]:
    """The recipe's feature config and its text normalisation (the default one when it has no file)."""
    feature_config = load_config(FeatureConfig, paths["feat_config"])
    norm = NormalizeConfig()
    if paths["normalize_config"].exists():
        norm = load_config(NormalizeConfig, paths["normalize_config"])
    return feature_config, norm


def read_chosen_alpha(results_json: Path) -> float:
    """Stage 8's alpha (chosen on dev) from exp/results/results.json; the paper's 0.4 when absent."""
    if not Path(results_json).is_file():
        logging.warning("%s: no such file (stage 8 not run?); using the paper's alpha %.1f", results_json, PAPER_ALPHA)
        return PAPER_ALPHA
    try:
        return float(json.loads(Path(results_json).read_text(encoding="utf-8"))["chosen_alpha"])
    except (ValueError, KeyError) as e:
        raise ValueError(f"{results_json}: no readable 'chosen_alpha' ({e})") from e


@dataclass(frozen=True)
class TdnnInputs:
    """How a recipe's TDNN inputs were made (its checkpoint's record, checked against the recipe's models)."""

    layer: int
    compression: str
    word_vectors: str  # fine-tuned or pretrained


def tdnn_inputs_of(paths: dict[str, Path], feature_config: FeatureConfig) -> TdnnInputs:
    """What the TDNN at ``paths["tdnn_checkpoint"]`` was trained on, after checking that the AM, BERT and CMVN
    mode of ``paths`` / ``feature_config`` are the ones that made its inputs (ValueError naming the files
    otherwise).  A checkpoint saved before the record existed gets layer 12, unquantised embeddings and the
    fine-tuned BERT's vectors, with a warning that nothing could be checked."""
    tdnn = paths["tdnn_checkpoint"]
    recorded = checkpoint_inputs(tdnn) or {}
    layer, compression, word_vectors = EMBEDDING_LAYER, "none", "fine-tuned"
    if recorded.get("acoustic") is not None:
        acoustic = AcousticSource(**recorded["acoustic"])
        acoustic.check_model(paths["am_checkpoint"], tdnn)
        if acoustic.norm_vars != feature_config.norm_vars:
            raise ValueError(
                f"{tdnn} was trained on features with CMVN norm_vars={acoustic.norm_vars}, but "
                f"{paths['feat_config']} says norm_vars={feature_config.norm_vars}"
            )
        layer, compression = acoustic.layer, acoustic.compression
    else:
        logging.warning(
            "%s does not record its acoustic inputs (trained before they were recorded): assuming "
            "AM layer %d, unquantised, and not checking the AM",
            tdnn,
            layer,
        )
    if recorded.get("word_vectors") is not None:
        vectors = WordVectorSource(**recorded["word_vectors"])
        vectors.check_model(files_sha256(weight_files(paths["bert_dir"])), paths["bert_dir"], tdnn)
        word_vectors = vectors.word_vectors
    else:
        logging.warning(
            "%s does not record its word vectors (trained before they were recorded): assuming the "
            "fine-tuned BERT's, and not checking %s",
            tdnn,
            paths["bert_dir"],
        )
    return TdnnInputs(layer, compression, word_vectors)


@dataclass
class RecipeModels:
    """A trained recipe's models as :meth:`Punctuator.from_recipe` reads them."""

    am: TdnnAcousticModel
    tokens: TokenTable
    bert: PunctBert
    tdnn: PunctTdnn
    inputs: TdnnInputs  # what the TDNN was trained on, checked against the AM and BERT
    word_vector_model: PunctBert | None  # the encoder of the TDNN's word vectors when not ``bert`` itself

    def log(self, paths: dict[str, Path], alpha: float) -> None:
        logging.info(
            "models: AM %s (%d tokens; layer %d, shards %s), BERT %s (%s word vectors), TDNN %s; alpha %.2f",
            paths["am_checkpoint"],
            len(self.tokens),
            self.inputs.layer,
            self.inputs.compression,
            paths["bert_dir"],
            self.inputs.word_vectors,
            paths["tdnn_checkpoint"],
            alpha,
        )


def load_recipe_models(
    paths: dict[str, Path], feature_config: FeatureConfig, device: torch.device, base_encoder: Path | None = None
) -> RecipeModels:
    """The AM, BERT and TDNN of ``paths``, once the TDNN's record says they made its inputs (``tdnn_inputs_of``);
    ``base_encoder``: where the encoder of pretrained word vectors is (default: the one BERT's folder names)."""
    am, tokens = load_am(paths["am_checkpoint"], device)
    bert = PunctBert.from_pretrained(paths["bert_dir"])
    tdnn = load_tdnn(paths["tdnn_checkpoint"], device)
    inputs = tdnn_inputs_of(paths, feature_config)
    word_vector_model = pretrained_encoder_model(bert, base_encoder) if inputs.word_vectors == "pretrained" else None
    return RecipeModels(am, tokens, bert, tdnn, inputs, word_vector_model)
