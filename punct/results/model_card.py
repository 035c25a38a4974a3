"""The model card of an exported folder (``README.md``, in Hugging Face's layout: a YAML header, then markdown), made
from what the recipe measured: stage 8's results.json (F1 per mark on dev and test, beside the pause-only baseline),
the corpus' hours per split, the recipe command and commit, and the speed ``punct-export`` measured on the folder.

Nothing on a card is typed by hand: every number comes from the files named in :class:`CardFacts`.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from punct.results.punct_systems import system_key
from punct.results.tables import markdown_table, number
from punct.utils.pathlike import Pathlike

# results.json's systems (punct.results.punct_systems.system_key's names), in the card's order, as the card names them
SYSTEM_ROWS = (("TDNN", "TDNN (speech + text)"), ("Ensemble", "Ensemble"), ("BERT only", "BERT only (text)"))
PAUSE_ONLY = "Pause only"


@dataclass
class Speed:
    """``punctuate`` timed on the exported folder (``punct.bin.export_model.measure_speed``)."""

    utterances: int
    audio_seconds: float
    wall_seconds: float
    threads: int
    cpu: str  # model name
    cpu_kind: str  # punct.inference.precision.cpu_kind: AMX / AVX512-BF16 / VNNI
    device: str

    @property
    def rtf(self) -> float:
        return self.wall_seconds / max(self.audio_seconds, 1e-9)


@dataclass
class CardFacts:
    """What a card says, each value from a file of the recipe (or an option of ``punct-export``)."""

    title: str
    language: str
    recipe: str  # e.g. egs/mustc
    command: str  # the recipe command that trained the models
    commit: str  # the punct commit of the recipe (git describe), or "unknown"
    corpus: str
    corpus_licence: str
    synthetic: bool  # the mini corpora: speech synthesised by espeak-ng
    prosody: str  # the mini corpus' prosody (natural, marks, none); empty for a real corpus
    hours: dict[str, float]  # per split
    text_model: str  # the encoder stage 5 fine-tuned (folder or hub name)
    text_model_licence: str
    results: dict  # stage 8's results.json
    size_bytes: int = 0
    speed: Speed | None = None
    versions: dict[str, str] = field(default_factory=dict)  # punct, torch
    tags: tuple[str, ...] = ("efficientpunct",)


def percent(value: float | None) -> str:
    return number(None if value is None else 100 * value)


def system_name(systems: dict, model: str) -> str | None:
    """The results.json key of ``model`` (:func:`punct.results.punct_systems.system_key`), or None when the run
    lacks it."""
    try:
        return system_key(systems, model)
    except KeyError:
        return None


def f1_table(results: dict, split: str) -> list[str]:
    """Per-mark F1 (and overall, micro over the marks) of the recipe's systems and the pause-only baseline."""
    systems = results["systems"][split]
    marks = [c for c in results["classes"][1:]]
    rows = []
    for key, label in (*SYSTEM_ROWS, (PAUSE_ONLY, "Pause only (baseline)")):
        name = system_name(systems, key)
        if name is None:
            continue
        scores = systems[name]
        cells = [percent(scores["per_class"][m]["f1"]) for m in marks]
        rows.append([label, *cells, percent(scores["overall"]["f1"])])
    return markdown_table(["system", *[f"`{m}`" for m in marks], "overall"], rows, text_columns=1)


def yaml_header(facts: CardFacts, metrics: list[dict]) -> dict:
    """The card's metadata (Hugging Face's keys; ``model-index`` holds the test ``metrics``)."""
    return {
        "language": facts.language,
        "license": "other",
        "library_name": "punct",
        "tags": ["punctuation-restoration", "speech", *facts.tags, *(["synthetic-speech"] * facts.synthetic)],
        "base_model": facts.text_model,
        "model-index": [
            {
                "name": facts.title,
                "results": [
                    {
                        "task": {"type": "token-classification", "name": "Punctuation restoration"},
                        "dataset": {"name": facts.corpus, "type": facts.corpus, "split": "test"},
                        "metrics": metrics,
                    }
                ],
            }
        ],
    }


def corpus_lines(facts: CardFacts) -> list[str]:
    hours = ", ".join(f"{split} {h:.2f} h" for split, h in facts.hours.items())
    lines = [f"- Corpus: {facts.corpus} ({hours}); licence: {facts.corpus_licence}."]
    if facts.synthetic:
        lines.append(
            f"- **Synthetic speech.** The audio is espeak-ng speaking packaged text (prosody `{facts.prosody}`): the "
            "pauses and pitch the models learnt from are the synthesiser's, drawn by the recipe. The numbers "
            "below say how well the pipeline works, not how well it punctuates real speakers; train on your "
            "own corpus for that."
        )
    return lines


def speed_lines(facts: CardFacts) -> list[str]:
    if facts.speed is None:
        return ["Not measured at export; see the recipe's README for the speed and latency of its models."]
    s = facts.speed
    threads = "1 thread" if s.threads == 1 else f"{s.threads} threads"
    return [
        f"`punctuate` with this folder on {s.utterances} dev utterances ({s.audio_seconds:.1f} s of audio), "
        f"{threads} on {s.device} ({s.cpu}; {s.cpu_kind}), models loaded: real-time factor "
        f"**{s.rtf:.4f}** ({s.wall_seconds:.2f} s). Live captions (`--stream`) cost more; see the recipe's "
        "README for their latency and speed."
    ]


def training_lines(facts: CardFacts) -> list[str]:
    return [
        "## Training",
        "",
        *corpus_lines(facts),
        f"- Recipe: `{facts.recipe}`, punct commit `{facts.commit}`:",
        "",
        "```bash",
        facts.command,
        "```",
        "",
        f"- Text model: fine-tuned from `{facts.text_model}` (licence: {facts.text_model_licence}).",
    ]


def files_lines(facts: CardFacts) -> list[str]:
    return [
        "## Files and licences",
        "",
        f"{facts.size_bytes / 1e6:.1f} MB: `punct_export.json` lists every file with its sha256. Exported by "
        f"punct {facts.versions.get('punct', '?')} with torch {facts.versions.get('torch', '?')}. "
        f"Licences: the text model's ({facts.text_model_licence}) and the corpus' ({facts.corpus_licence}) apply "
        "to the weights trained from them; this card's `license: other` says so.",
        "",
    ]


def front_matter(header: dict) -> list[str]:
    return ["---", yaml.safe_dump(header, sort_keys=False, allow_unicode=True).rstrip(), "---", ""]


def render_card(facts: CardFacts) -> str:
    """The README.md of an exported EfficientPunct folder (egs/mustc)."""
    results = facts.results
    wer = (results.get("acoustic_model") or {}).get("wer") or {}
    alpha = results.get("chosen_alpha")
    lines = [
        *front_matter(yaml_header(facts, ensemble_metrics(results))),
        f"# {facts.title}",
        "",
        "Speech-informed punctuation restoration (EfficientPunct): MFCC features, a TDNN acoustic model (CTC) whose "
        "layer-12 frames are fused with BERT word vectors in a punctuation TDNN, and a TDNN + BERT ensemble "
        f"(weight of the TDNN alpha = {alpha}, chosen on dev). Marks: "
        + ", ".join(f"`{c}`" for c in results["classes"][1:])
        + " after a word, or none.",
        "",
        "## Use",
        "",
        "```bash",
        "pip install -c constraints.txt .   # in a checkout of punct (or ./install.sh)",
        'punct-punctuate --model THIS_FOLDER --wav talk.wav --transcript "so what did we learn" --out-dir out',
        "```",
        "",
        "`--model` reads only this folder; it gives what the recipe's stages computed and scored for the same audio "
        "and words. See `punct-punctuate --help` for Kaldi data dirs, lhotse cuts, long recordings and live captions "
        "(`--stream --cmvn train`).",
        "",
        *training_lines(facts),
        f"- Acoustic model: greedy CTC WER {wer.get('dev', 'n/a')} % on dev, {wer.get('test', 'n/a')} % on test.",
        "",
        "## Results",
        "",
        "F1 (%) per mark, and overall (micro over the marks), on the recipe's dev split (where alpha and every "
        "other value were chosen) and test split (scored once). The pause-only baseline labels a word from its "
        "pauses and duration alone: speech helps only where the TDNN beats it and BERT alone.",
        "",
    ]
    for split in ("dev", "test"):
        if split in results["systems"]:
            lines += [f"**{split}** ({results['systems'][split]['TDNN']['num_words']} words)", ""]
            lines += f1_table(results, split) + [""]
    lines += ["## Speed", "", *speed_lines(facts), ""]
    return "\n".join(lines + files_lines(facts))


def itn_table(results: dict, split: str, systems: dict[str, str]) -> list[str]:
    """Per-mark F1, capitalisation F1 and macro F1 of every scored model; ``systems``: results row name -> the
    folder's system name, for the rows this folder holds."""
    marks = results["classes"]
    rows = []
    for model in results["models"]:
        scores = model["scores"].get(split)
        if scores is None:
            continue
        name = model["name"] + (f" (`--system {systems[model['name']]}`)" if model["name"] in systems else "")
        cells = [percent(scores["punct_f1"][m]["value"]) for m in marks]
        rows.append([name, *cells, percent(scores["cap_f1"]["value"]), percent(scores["macro_f1"]["value"])])
    return markdown_table(["model", *[f"`{m}`" for m in marks], "capital", "macro"], rows, text_columns=1)


def render_itn_card(facts: CardFacts, systems: dict[str, str], default_system: str) -> str:
    """The README.md of an exported speech-informed ITN folder (egs/parczech); ``systems``: results row name -> the
    folder's system name."""
    results = facts.results
    default_row = next(row for row, system in systems.items() if system == default_system)
    metrics = []
    for model in results["models"]:
        test = model["scores"].get("test")
        if model["name"] == default_row and test is not None:
            value = round(100 * test["macro_f1"]["value"], 1)
            metrics.append({"type": "f1", "name": f"{model['name']} macro F1 (test)", "value": value})
    lines = [
        *front_matter(yaml_header(facts, metrics)),
        f"# {facts.title}",
        "",
        "Speech-informed inverse text normalisation: punctuation (9 marks) and capitalisation of recognised words "
        f"from their text and audio. Models: {', '.join(f'`{s}`' for s in systems.values())}; "
        f"`--system {default_system}` ({default_row}) by default, the best dev macro F1 of them.",
        "",
        "## Use",
        "",
        "```bash",
        "punct-punctuate-itn --model THIS_FOLDER --wav sitting.wav --ctm sitting.ctm  # a recogniser's timed words",
        "```",
        "",
        *training_lines(facts),
        "",
        "## Results",
        "",
        "F1 (%) per mark, capitalisation F1 and macro F1 (marks and capitalisation), on the recipe's dev split "
        "(where every value was chosen) and test split (scored once); the pause-only row labels a word from its "
        "pauses and duration alone.",
        "",
    ]
    for split in ("dev", "test"):
        lines += [f"**{split}** ({results['splits'].get(split, {}).get('words', 'n/a')} words)", ""]
        lines += itn_table(results, split, systems) + [""]
    lines += ["## Speed", "", *speed_lines(facts), ""]
    return "\n".join(lines + files_lines(facts))


def ensemble_metrics(results: dict) -> list[dict]:
    """model-index metrics of an EfficientPunct card: the TDNN's and the ensemble's overall test F1."""
    metrics = []
    test = results["systems"].get("test", {})
    for key, label in SYSTEM_ROWS[:2]:
        name = system_name(test, key)
        if name is not None:
            value = round(100 * test[name]["overall"]["f1"], 1)
            metrics.append({"type": "f1", "name": f"{label} overall F1 (test)", "value": value})
    return metrics


# ---- where the facts come from ------------------------------------------------------------------------------


def split_hours(supervisions: dict[str, Pathlike]) -> dict[str, float]:
    """Hours of speech per split, summed over the supervisions of each split's lhotse manifest."""
    from lhotse import load_manifest_lazy

    return {split: sum(s.duration for s in load_manifest_lazy(path)) / 3600.0 for split, path in supervisions.items()}


def card_licence(model: str) -> str:
    """The ``license`` of a local model folder's own card (its README.md's YAML header); for a hub name or a folder
    without one, where to look."""
    readme = Path(model) / "README.md"
    if readme.is_file():
        text = readme.read_text(encoding="utf-8")
        if text.startswith("---"):
            header = yaml.safe_load(text.split("---", 2)[1]) or {}
            if header.get("license"):
                return str(header["license"])
    return f"not recorded here: see the model card of {model}"


def source_commit(where: Pathlike) -> str:
    """``git describe --always --dirty`` of the checkout holding ``where``, or "unknown" outside one."""
    try:
        out = subprocess.run(
            ["git", "-C", str(where), "describe", "--always", "--dirty"], capture_output=True, text=True, timeout=30
        )
    except OSError:
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"
