"""Randomly initialised models of any size, saved in a trained recipe's formats.

Used by the benchmarks (paper-size and mini-size models, whose speed does not depend on their weights:
``common.random_models``) and by the inference tests (tiny models in a temporary recipe directory).  It lives with
the benchmarks, not the package, because neither a recipe nor ``punctuate`` runs it; the tests import it from here
(they test the benchmarks' code too), so that a benchmark's models never depend on a test helper.  The files are
written by the components' own savers: ``punct.am.checkpoint.save_checkpoint``, ``PunctBert.save_pretrained``,
``punct.models.punct_tdnn.checkpoint.save_checkpoint``.
"""

from __future__ import annotations

import dataclasses
import json
import string
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
import yaml
from lhotse.utils import Pathlike

from punct.am.model import AmModelConfig, TdnnAcousticModel
from punct.am.tokens import BLANK, SPACE, TokenTable
from punct.models.punct_tdnn.tdnn import PunctTdnn
from punct.models.punct_tdnn.tdnn import TdnnConfig as PunctTdnnConfig
from punct.models.text.model import HeadSpec, PunctBert

# The characters of the mini corpus' words: lowercase letters, digits, apostrophe.
DEFAULT_CHARACTERS = tuple(string.ascii_lowercase + string.digits + "'")

# Kaldi TED-LIUM hires MFCC (the EfficientPunct recipe's conf/mfcc.yaml).
MFCC_YAML = {
    "kind": "mfcc",
    "norm_vars": True,
    "options": {
        "sampling_rate": 16000,
        "frame_length_ms": 25.0,
        "frame_shift_ms": 10.0,
        "num_ceps": 40,
        "num_mel_bins": 40,
        "low_freq": 40.0,
        "high_freq": -200.0,
        "dither": 0.0,
        "snip_edges": True,
    },
}


@dataclass
class RandomModels:
    am: TdnnAcousticModel
    tokens: TokenTable
    bert: PunctBert
    tdnn: PunctTdnn


def token_table(characters: Sequence[str] = DEFAULT_CHARACTERS) -> TokenTable:
    return TokenTable([BLANK, SPACE] + sorted(set(characters)))


def make_tokenizer(folder: Pathlike, words: Sequence[str]):
    """A WordPiece tokenizer over ``words`` (plus the special tokens and single letters)."""
    from transformers import BertTokenizerFast

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(set(words) | set(string.ascii_lowercase))
    vocab += ["##" + c for c in string.ascii_lowercase]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    return BertTokenizerFast(vocab_file=str(folder / "vocab.txt"), do_lower_case=True)


def random_models(
    *,
    am_config: AmModelConfig,
    bert_config,
    tokenizer,
    tdnn_config: PunctTdnnConfig,
    characters: Sequence[str] = DEFAULT_CHARACTERS,
    seed: int = 0,
) -> RandomModels:
    """Random AM (``am_config``; num_tokens from the characters), BERT encoder (a transformers
    ``BertConfig``) with an EfficientPunct head, and TDNN (input_dim = BERT hidden + AM dim), in eval mode.
    BatchNorm running statistics are randomised too, so that eval mode is not an identity map."""
    from transformers import BertModel

    torch.manual_seed(seed)
    tokens = token_table(characters)
    am = TdnnAcousticModel(dataclasses.replace(am_config, num_tokens=len(tokens)))
    bert_config.vocab_size = max(bert_config.vocab_size, len(tokenizer))
    bert = PunctBert(BertModel(bert_config), tokenizer, (HeadSpec(),))
    tdnn = PunctTdnn(dataclasses.replace(tdnn_config, input_dim=bert_config.hidden_size + am_config.dim))
    for model in (am, tdnn):
        for module in model.modules():
            if isinstance(module, torch.nn.BatchNorm1d):
                module.running_mean.uniform_(-0.1, 0.1)
                module.running_var.uniform_(0.5, 1.5)
    return RandomModels(am.eval(), tokens, bert.eval(), tdnn.eval())


def save_recipe(
    recipe_dir: Pathlike,
    models: RandomModels,
    alpha: float | None = 0.4,
    compression: str = "none",
    word_vectors: str = "fine-tuned",
) -> dict[str, Path]:
    """Writes conf/mfcc.yaml, exp/am/best-valid-loss.pt, exp/bert/best-valid-f1/, exp/tdnn/best-valid-f1.pt
    and (unless alpha is None) exp/results/results.json, as stages 1-8 would; the TDNN records that its
    inputs were layer 12 of this AM (stage-4 shards with ``compression``) and ``word_vectors`` of this BERT."""
    import dataclasses

    from punct.am.checkpoint import AmTrainState
    from punct.am.checkpoint import save_checkpoint as save_am
    from punct.am.config import AmConfig
    from punct.io.sources import AcousticSource, WordVectorSource, file_sha256, files_sha256
    from punct.models.punct_tdnn.checkpoint import save_checkpoint as save_tdnn
    from punct.models.punct_tdnn.config import TrainTdnnConfig
    from punct.models.text.model import weight_files
    from punct.training.loop import TrainState

    recipe = Path(recipe_dir)
    (recipe / "conf").mkdir(parents=True, exist_ok=True)
    (recipe / "conf" / "mfcc.yaml").write_text(yaml.safe_dump(MFCC_YAML), encoding="utf-8")
    am_ckpt = recipe / "exp" / "am" / "best-valid-loss.pt"
    am_ckpt.parent.mkdir(parents=True, exist_ok=True)
    am_cfg = AmConfig(model=models.am.config, ctc_subsample=models.am.config.frame_subsample)
    save_am(am_ckpt, model=models.am, optimizer=None, state=AmTrainState(), config=am_cfg, tokens=models.tokens)
    bert_dir = recipe / "exp" / "bert" / "best-valid-f1"
    models.bert.save_pretrained(bert_dir)
    tdnn_ckpt = recipe / "exp" / "tdnn" / "best-valid-f1.pt"
    tdnn_ckpt.parent.mkdir(parents=True, exist_ok=True)
    inputs = {
        "acoustic": dataclasses.asdict(
            AcousticSource(
                str(am_ckpt),
                file_sha256(am_ckpt),
                12,
                compression,
                bool(MFCC_YAML.get("norm_vars", False)),
                models.am.config.frame_subsample,
            )
        ),
        "word_vectors": dataclasses.asdict(
            WordVectorSource(str(bert_dir), files_sha256(weight_files(bert_dir)), word_vectors)
        ),
    }
    save_tdnn(tdnn_ckpt, models.tdnn, None, TrainState(), TrainTdnnConfig(model=models.tdnn.config), inputs)
    paths = {"am": am_ckpt, "bert": bert_dir, "tdnn": tdnn_ckpt}
    if alpha is not None:
        results = recipe / "exp" / "results" / "results.json"
        results.parent.mkdir(parents=True, exist_ok=True)
        results.write_text(json.dumps({"chosen_alpha": alpha, "paper_alpha": 0.4}), encoding="utf-8")
        paths["results"] = results
    return paths
