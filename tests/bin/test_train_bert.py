"""End to end on a tiny random BERT: train (ce/scl/focal), resume, dump shards, score."""

from __future__ import annotations

import importlib
import json
import random
import re

import numpy as np
import pytest
import torch

from punct.io.shards import MatrixReader, merge_scps
from punct.models.text.model import PunctBert
from tests.helpers.text_model import make_encoder, make_tokenizer

# A lexical rule a tiny model learns quickly: "cat" takes a comma, sentences end in "sat" (".")
# or "ran" ("?"), every other word has no punctuation.
WORDS = ["the", "cat", "on", "mat", "a", "dog", "so", "and", "why", "did", "it"]


def make_sentence(rng):
    words, labels = [], []
    for _ in range(rng.randint(1, 3)):
        body = [rng.choice(WORDS) for _ in range(rng.randint(2, 6))]
        words += body + [rng.choice(["sat", "ran"])]
        labels += ["," if w == "cat" else "NP" for w in body] + ["." if words[-1] == "sat" else "?"]
    return words, labels


def write_manifest(path, n, seed):
    from lhotse import SupervisionSegment, SupervisionSet

    rng = random.Random(seed)
    sups = []
    for i in range(n):
        words, labels = make_sentence(rng)
        sups.append(
            SupervisionSegment(
                id=f"ted_{seed}_{i}",
                recording_id=f"ted_{seed}",
                start=float(i),
                duration=1.0,
                channel=0,
                speaker=f"ted_{seed}",
                language="English",
                text=" ".join(words),
                custom={"words": words, "punct": labels},
            )
        )
    SupervisionSet.from_segments(sups).to_file(path)


def run(module, *args):
    """Runs an entry point in this process (saves the interpreter start-up of a subprocess)."""
    importlib.import_module(module).main([str(a) for a in args])


def train_args(root, *extra) -> list[str]:
    """punct.bin.train_bert's options over the module's tiny encoder, config and manifests, then ``extra``."""
    return [
        "--config",
        str(root / "bert_tiny.yaml"),
        "--bert-model",
        str(root / "tiny-bert"),
        "--train",
        str(root / "sups_train.jsonl.gz"),
        "--dev",
        str(root / "sups_dev.jsonl.gz"),
        "--device",
        "cpu",
        *map(str, extra),
    ]


def dump(model_dir, supervisions, out_dir, job: int = 1, nj: int = 1, *extra) -> None:
    """punct.bin.dump_bert of job ``job`` of ``nj`` on the CPU, with ``extra`` options."""
    run(
        "punct.bin.dump_bert",
        "--model-dir",
        str(model_dir),
        "--supervisions",
        str(supervisions),
        "--out-dir",
        str(out_dir),
        "--job",
        str(job),
        "--nj",
        str(nj),
        "--device",
        "cpu",
        *map(str, extra),
    )


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("bert")
    tokenizer = make_tokenizer(root)
    encoder = make_encoder(max_positions=128)
    encoder.save_pretrained(root / "tiny-bert")
    tokenizer.save_pretrained(root / "tiny-bert")
    for split, n, seed in (("train", 120, 1), ("dev", 20, 2), ("test", 15, 3)):
        write_manifest(root / f"sups_{split}.jsonl.gz", n, seed)
    config = root / "bert_tiny.yaml"
    config.write_text(
        "lr: 3.0e-3\nbatch_size: 16\nmax_length: 24\ninfer_max_length: 32\ncontext: 4\nnum_epochs: 3\n"
        "head_hidden: 32\nnum_threads: 1\nlog_interval: 5\nwarmup_steps: 5\nkeep_last_epochs: 1\n"
    )
    return root


@pytest.mark.parametrize("loss", ["ce", "scl", "focal"])
def test_train_losses(setup, loss):
    root = setup
    exp = root / f"exp_{loss}"
    run("punct.bin.train_bert", *train_args(root, "--exp-dir", exp, "--loss", loss, "--num-epochs", 2, "--seed", 7))
    assert (exp / ".done").exists()
    assert (exp / "epoch-2.pt").exists() and not (exp / "epoch-1.pt").exists()  # keep_last_epochs: 1
    history = json.loads((exp / "history.json").read_text())
    assert [h["epoch"] for h in history] == [1, 2]
    best = json.loads((exp / "best-valid-f1.json").read_text())
    assert best["dev"]["overall"]["f1"] == max(h["dev_f1"] for h in history)
    assert "loss" in (exp / "config.yaml").read_text() and f"loss: {loss}" in (exp / "config.yaml").read_text()
    model = PunctBert.from_pretrained(exp / "best-valid-f1")
    assert model.head_specs[0].classes == ("NP", ",", ".", "?")


def test_train_resume_dump_and_score(setup, capfd):
    root = setup
    exp = root / "exp"
    common = train_args(root, "--exp-dir", exp, "--loss", "ce")
    run("punct.bin.train_bert", *common, "--num-epochs", "2")
    (exp / ".done").unlink()
    run("punct.bin.train_bert", *common, "--resume")  # config: 3 epochs -> one more
    assert any("resumed from" in log.read_text() for log in (exp / "log").glob("log-train-*"))
    history = json.loads((exp / "history.json").read_text())
    assert [h["epoch"] for h in history] == [1, 2, 3]
    assert torch.load(exp / "epoch-3.pt", weights_only=True)["state"]["epoch"] == 3  # plain values only
    # the rule is easy: a 2-layer random BERT learns it well within 3 epochs at lr 1e-3
    assert max(h["dev_f1"] for h in history) > 0.8

    model_dir = exp / "best-valid-f1"
    out = root / "emb_bert" / "test"
    for job in (1, 2):
        dump(model_dir, root / "sups_test.jsonl.gz", out, job, 2, "--max-length", 16, "--context", 3)
    for name in ("vec", "post"):
        assert merge_scps([out / f"{name}.1.scp", out / f"{name}.2.scp"], out / f"{name}.scp") == 15
    capfd.readouterr()
    dump(model_dir, root / "sups_test.jsonl.gz", out, 1, 2)
    assert "skipping" in capfd.readouterr().err

    from lhotse import SupervisionSet

    sups = SupervisionSet.from_file(root / "sups_test.jsonl.gz")
    vec, post = MatrixReader(out / "vec.scp"), MatrixReader(out / "post.scp")
    model = PunctBert.from_pretrained(model_dir).eval()
    for sup in sups:
        words = sup.custom["words"]
        assert vec[sup.id].shape == (len(words), 32)
        assert post[sup.id].shape == (len(words), 4)
        assert np.allclose(post[sup.id].sum(axis=1), 1.0, atol=1e-5)
    # a short utterance: the vectors are the encoder's states at the last sub-tokens
    sup = next(s for s in sups if len(s.custom["words"]) <= 10)
    ids = (
        [model.tokenizer.cls_token_id]
        + model.tokenizer.convert_tokens_to_ids(sup.custom["words"])
        + [model.tokenizer.sep_token_id]
    )
    with torch.no_grad():
        hidden = model.encoder(input_ids=torch.tensor([ids])).last_hidden_state[0, 1:-1].numpy()
    assert np.allclose(vec[sup.id], hidden, atol=1e-4)

    # --word-vectors pretrained: the vectors of the encoder before fine-tuning, the fine-tuned posteriors
    assert model.base_encoder == str((root / "tiny-bert").resolve())
    pre = root / "emb_bert_pretrained" / "test"
    dump(
        model_dir,
        root / "sups_test.jsonl.gz",
        pre,
        1,
        1,
        "--max-length",
        16,
        "--context",
        3,
        "--word-vectors",
        "pretrained",
    )
    from transformers import AutoModel

    base = AutoModel.from_pretrained(root / "tiny-bert").eval()
    with torch.no_grad():
        base_hidden = base(input_ids=torch.tensor([ids])).last_hidden_state[0, 1:-1].numpy()
    pre_vec, pre_post = MatrixReader(pre / "vec.1.scp"), MatrixReader(pre / "post.1.scp")
    assert np.allclose(pre_vec[sup.id], base_hidden, atol=1e-4)
    assert not np.allclose(pre_vec[sup.id], hidden, atol=1e-2)  # fine-tuning moved the states
    for s in sups:
        np.testing.assert_allclose(pre_post[s.id], post[s.id], atol=1e-5)
    json_path = model_dir / "punct_model.json"
    saved = json.loads(json_path.read_text())
    del saved["base_encoder"]  # a folder saved before the base encoder was recorded
    json_path.write_text(json.dumps(saved))
    with pytest.raises(ValueError, match="does not record the encoder it was fine-tuned from"):
        dump(model_dir, root / "sups_test.jsonl.gz", root / "emb_none", 1, 1, "--word-vectors", "pretrained")

    run(
        "punct.bin.score_text",
        "--posteriors",
        str(out / "post.scp"),
        "--supervisions",
        str(root / "sups_test.jsonl.gz"),
        "--out",
        str(root / "results-test"),
    )
    scores = json.loads((root / "results-test.json").read_text())
    assert scores["num_words"] == sum(len(s.custom["words"]) for s in sups)
    assert scores["overall"]["f1"] > 0.8
    assert "overall (micro)" in (root / "results-test.md").read_text()


def test_bad_manifest_names_file_and_line(tmp_path):
    import gzip

    from punct.models.text.data import read_utterances

    path = tmp_path / "bad.jsonl.gz"
    with gzip.open(path, "wt") as f:
        f.write(json.dumps({"id": "a", "custom": {"words": ["x"], "punct": ["NP"]}}) + "\n")
        f.write(json.dumps({"id": "b", "custom": {"words": ["x", "y"], "punct": ["NP"]}}) + "\n")
    with pytest.raises(ValueError, match=r"bad.jsonl.gz:2: b: 2 words but 1 labels"):
        read_utterances(path)
    with gzip.open(path, "wt") as f:
        f.write(json.dumps({"id": "a", "custom": {"words": ["x"], "punct": ["!"]}}) + "\n")
    with pytest.raises(ValueError, match=r"bad.jsonl.gz:1: a: unknown label"):
        read_utterances(path)


def test_extra_text_pseudo_utterances(tmp_path):
    from punct.models.text.data import read_extra_text

    path = tmp_path / "prose.txt"
    path.write_text("The cat sat, and the dog ran.\nWhy did it?\n\nSo it sat on\nthe mat.\n", encoding="utf-8")
    utts = read_extra_text(path, words_per_utterance=5)
    words = [w for u in utts for w in u.words]
    labels = [label for u in utts for label in u.labels]
    assert words == [
        "the",
        "cat",
        "sat",
        "and",
        "the",
        "dog",
        "ran",
        "why",
        "did",
        "it",
        "so",
        "it",
        "sat",
        "on",
        "the",
        "mat",
    ]
    assert labels == ["NP", "NP", ",", "NP", "NP", "NP", ".", "NP", "NP", "?", "NP", "NP", "NP", "NP", "NP", "."]
    assert [len(u.words) for u in utts] == [5, 5, 5, 1]
    assert len({u.id for u in utts}) == 4
    assert [len(u.words) for u in read_extra_text(path, 5, max_words=7)] == [5, 2]


def test_extra_text_takes_the_corpus_mark_mapping(setup):
    """--normalize-config labels the extra text as the corpus preparation did (here "!" -> "?", ":" -> ".")."""
    root = setup
    prose = root / "prose_marks.txt"
    prose.write_text("Stop it now! Listen: the cat sat. Why?\n\nGo away! Look: a dog.\n", encoding="utf-8")
    mapping = root / "normalize_marks.yaml"
    mapping.write_text("exclamation: '?'\ncolon: '.'\n", encoding="utf-8")
    common = train_args(root, "--num-epochs", 1, "--extra-text", prose)

    def extra_labels(exp):
        log = "".join(p.read_text() for p in (exp / "log").glob("log-train-*"))
        return re.search(r"prose_marks\.txt: \d+ extra pseudo-utterances, 13 words, labels (.*)", log).group(1)

    run("punct.bin.train_bert", *common, "--exp-dir", root / "exp_marks_default")
    run("punct.bin.train_bert", *common, "--exp-dir", root / "exp_marks_mapped", "--normalize-config", mapping)
    assert extra_labels(root / "exp_marks_default") == "NP=6 ,=2 .=4 ?=1"
    assert extra_labels(root / "exp_marks_mapped") == "NP=6 ,=0 .=4 ?=3"


def test_resume_with_other_loss_is_refused(setup):
    root = setup
    exp = root / "exp_refuse"
    common = train_args(root, "--exp-dir", exp, "--num-epochs", 1)
    run("punct.bin.train_bert", *common, "--loss", "ce")
    with pytest.raises(ValueError, match=r"other values of \['loss'\]"):
        run("punct.bin.train_bert", *common, "--loss", "focal", "--resume", "--num-epochs", "2")


def test_resume_of_a_linear_schedule_with_other_epochs_is_refused(setup):
    """A linear schedule's slope follows num_epochs: the updates already made would not be those of the new value.
    Under the constant schedule more epochs resume (test_train_resume_dump_and_score)."""
    root = setup
    exp = root / "exp_refuse_linear"
    common = train_args(root, "--exp-dir", exp, "--lr-schedule", "linear")
    run("punct.bin.train_bert", *common, "--num-epochs", 1)
    with pytest.raises(ValueError, match=r"other values of \['num_epochs'\]"):
        run("punct.bin.train_bert", *common, "--resume", "--num-epochs", "2")


def write_position_manifest(path, n, seed):
    """Utterances of random words whose last word takes "." (a cue of position only) and "cat" ","."""
    from lhotse import SupervisionSegment, SupervisionSet

    rng = random.Random(seed)
    sups = []
    for i in range(n):
        words = [rng.choice(WORDS) for _ in range(rng.randint(3, 12))]
        labels = ["," if w == "cat" else "NP" for w in words[:-1]] + ["."]
        sup = SupervisionSegment(f"pos_{seed}_{i}", f"pos_{seed}", float(i), 1.0, channel=0, text=" ".join(words))
        sups.append(sup.with_custom("words", words).with_custom("punct", labels))
    SupervisionSet.from_segments(sups).to_file(path)


def test_right_truncation_unlearns_the_full_stop_before_the_end_of_the_input(setup):
    """Trained on whole utterances only, BERT puts "." on the last word it sees, so on text cut mid-sentence (what
    a stream shows it) it ends a sentence that goes on.  With every training chunk cut after a random word
    (right_truncation: 1) that cue is gone: the cut's last word takes "." far less often, and "cat" keeps its
    comma."""
    from punct.models.text.data import Utterance, read_utterances
    from punct.models.text.infer import predict_words

    root = setup
    for split, n, seed in (("train", 200, 11), ("dev", 30, 12), ("test", 40, 13)):
        write_position_manifest(root / f"pos_{split}.jsonl.gz", n, seed)
    test = read_utterances(root / "pos_test.jsonl.gz")
    # each test utterance cut two words before its end: the reference of the cut's last word is no mark (or ",")
    cut = [Utterance(u.id, u.words[:-2], u.labels[:-2]) for u in test if len(u.words) >= 4]
    stops, commas = {}, {}
    for share in (0.0, 1.0):
        exp = root / f"exp_truncation_{share:g}"
        args = train_args(root, "--exp-dir", exp, "--num-epochs", 6, "--seed", 3, "--right-truncation", share)
        args[args.index("--train") + 1] = str(root / "pos_train.jsonl.gz")
        args[args.index("--dev") + 1] = str(root / "pos_dev.jsonl.gz")
        run("punct.bin.train_bert", *args)
        model = PunctBert.from_pretrained(exp / "best-valid-f1").eval()
        outputs = list(predict_words(model, cut, 32, 4, 16, torch.device("cpu")))
        predicted = [out.posteriors["punct"].argmax(axis=1) for out in outputs]
        stops[share] = np.mean([p[-1] == 2 for p in predicted])  # "." is class 2 of NP , . ?
        cat = [
            (p[k], u.labels[k]) for p, u in zip(predicted, cut) for k in range(len(u.words) - 1) if u.words[k] == "cat"
        ]
        commas[share] = np.mean([pred == 1 for pred, _ in cat])
    assert stops[0.0] > 0.5, stops  # measured: 0.72 and 0.0
    assert stops[1.0] < 0.2, stops
    assert min(commas.values()) > 0.8, commas
