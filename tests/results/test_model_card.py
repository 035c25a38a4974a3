"""The model card of an exported folder (punct.results.model_card): its numbers are results.json's, its YAML header
parses as a Hugging Face card's, and what it says of the corpus follows the facts."""

from __future__ import annotations

import yaml

from punct.results.model_card import CardFacts, Speed, card_licence, render_card, render_itn_card

CLASSES = ["NP", ",", ".", "?"]


def scores(f1: dict[str, float], overall: float, words: int = 100) -> dict:
    return {
        "num_words": words,
        "per_class": {c: {"f1": f1.get(c, 0.9)} for c in CLASSES},
        "overall": {"f1": overall},
    }


def ensemble_results() -> dict:
    systems = {
        "BERT only": scores({",": 0.41, ".": 0.52, "?": 0.10}, 0.45),
        "TDNN": scores({",": 0.5123, ".": 0.70, "?": 0.20}, 0.601),
        "Ensemble (alpha=0.6, chosen on dev)": scores({",": 0.55, ".": 0.72, "?": 0.25}, 0.63),
        "Ensemble (alpha=0.4, paper)": scores({",": 0.54, ".": 0.71, "?": 0.24}, 0.62),
        "Pause only": scores({",": 0.0, ".": 0.61, "?": 0.0}, 0.33),
    }
    return {
        "classes": CLASSES,
        "chosen_alpha": 0.6,
        "systems": {"dev": systems, "test": systems},
        "acoustic_model": {"wer": {"dev": 40.1, "test": 41.2}},
    }


def facts(results: dict, **kw) -> CardFacts:
    values = dict(
        title="punct EfficientPunct",
        language="en",
        recipe="mustc",
        command="./run.sh",
        commit="abc123",
        corpus="mini corpus",
        corpus_licence="public domain",
        synthetic=True,
        prosody="natural",
        hours={"train": 0.7, "dev": 0.1},
        text_model="all-MiniLM-L6-v2",
        text_model_licence="apache-2.0",
        results=results,
        size_bytes=98_000_000,
        speed=Speed(20, 250.0, 1.5, 1, "Some CPU", "AMX, VNNI", "cpu"),
    )
    values.update(kw)
    return CardFacts(**values)


def header_of(card: str) -> dict:
    assert card.startswith("---\n")
    return yaml.safe_load(card.split("---\n")[1])


def test_the_ensemble_card_gives_results_json_numbers():
    card = render_card(facts(ensemble_results()))
    header = header_of(card)
    metrics = {m["name"]: m["value"] for m in header["model-index"][0]["results"][0]["metrics"]}
    assert metrics == {"TDNN (speech + text) overall F1 (test)": 60.1, "Ensemble overall F1 (test)": 63.0}
    assert header["language"] == "en" and "synthetic-speech" in header["tags"]
    assert "| TDNN (speech + text) | 51.2 | 70.0 | 20.0 | 60.1 |" in card
    assert "| Pause only (baseline) | 0.0 | 61.0 | 0.0 | 33.0 |" in card
    assert "alpha = 0.6, chosen on dev" in card and "real-time factor **0.0060**" in card
    assert "train 0.70 h, dev 0.10 h" in card and "**Synthetic speech.**" in card
    real = render_card(facts(ensemble_results(), synthetic=False, prosody="", speed=None))
    assert "Synthetic speech" not in real and "synthetic-speech" not in header_of(real)["tags"]
    assert "Not measured at export" in real


def test_the_itn_card_names_the_exported_systems():
    def model(name: str, folder: str, macro: float) -> dict:
        split = {
            "punct_f1": {m: {"value": 0.3} for m in (",", ".")},
            "cap_f1": {"value": 0.5},
            "macro_f1": {"value": macro},
        }
        return {"name": name, "dir": f"exp/{folder}", "scores": {"dev": split, "test": split}}

    results = {
        "kind": "itn",
        "classes": [",", "."],
        "splits": {"dev": {"words": 50}, "test": {"words": 60}},
        "models": [model("text-only", "text", 0.2), model("multimodal", "mm", 0.25), model("pause-only", "pause", 0.1)],
    }
    card = render_itn_card(facts(results, language="cs"), {"text-only": "text", "multimodal": "mm"}, "mm")
    metrics = header_of(card)["model-index"][0]["results"][0]["metrics"]
    assert metrics == [{"type": "f1", "name": "multimodal macro F1 (test)", "value": 25.0}]
    assert "| multimodal (`--system mm`) | 30.0 | 30.0 | 50.0 | 25.0 |" in card
    assert "| pause-only | 30.0 | 30.0 | 50.0 | 10.0 |" in card and "`--system mm` (multimodal) by default" in card


def test_licence_from_a_model_folders_own_card(tmp_path):
    (tmp_path / "README.md").write_text("---\nlanguage: en\nlicense: apache-2.0\n---\n# model\n")
    assert card_licence(str(tmp_path)) == "apache-2.0"
    assert card_licence("some/hub-name").startswith("not recorded here")
