"""The English mini corpus: text handling and a real (small) build read back by the MuST-C reader (espeak word
timings: tests/synthesis/test_tts.py)."""

from __future__ import annotations

import ctypes
import hashlib
import json
import multiprocessing
import os
import re
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from punct.corpora.mini_english import (
    ENGLISH_VOICES,
    EXTRA_TEXT_BLOCK_SENTENCES,
    EXTRA_TEXT_FILE,
    SAMPLE_RATE,
    MiniCorpusConfig,
    SplitSize,
    Talk,
    TalkSegment,
    _synthesize_job,
    balanced_voice_names,
    build_mini_corpus,
    config_for_size,
    extra_text_paragraphs,
    load_austen,
    paragraphs_from_lines,
    plan_talks,
    split_long,
    split_sentences,
    split_sources,
)
from punct.corpora.mustc import prepare_mustc
from punct.labels import WordLabels
from punct.synthesis.build_record import (
    audio_digest,
    config_changes,
    corpora_digest,
    digest_of,
    reuse_built_corpus,
    wav_md5s,
)
from punct.synthesis.prosody import PauseModel
from punct.synthesis.tts import Voice
from punct.text.normalize import NormalizeConfig, normalize


def supervision_words(sup):
    """``(words, punct)`` lists of a supervision, validated by :class:`WordLabels`."""
    labelled = WordLabels.from_supervision(sup)
    return list(labelled.words), list(labelled.punct)


SUBJECTS = ["The old man", "My sister", "Our neighbour", "The young doctor", "Her father", "The captain"]
VERBS = [
    "walked to the village",
    "wrote a long letter",
    "waited by the window",
    "spoke of the weather",
    "read the morning paper",
    "played the piano",
]
TAILS = ["before dinner", "in the evening", "with great care", "after the rain", "without a word"]


def make_text(n_paragraphs: int = 120, seed: int = 0) -> str:
    """Paragraphs of simple English sentences; about one sentence in five is a question."""
    rng = np.random.default_rng(seed)
    paragraphs = []
    for _ in range(n_paragraphs):
        sentences = []
        for _ in range(int(rng.integers(1, 4))):
            s, v, t = rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(TAILS)
            if rng.random() < 0.2:
                sentences.append(f"Why had {s.lower()} {v.split()[0]} {' '.join(v.split()[1:])} {t}?")
            elif rng.random() < 0.5:
                sentences.append(f"{s}, as usual, {v} {t}.")
            else:
                sentences.append(f"{s} {v}; then {rng.choice(SUBJECTS).lower()} {rng.choice(VERBS)}.")
        paragraphs.append(" ".join(sentences))
    return "\n\n".join(paragraphs)


def small_config(seed: int = 7, extra_text_words: int = 300) -> MiniCorpusConfig:
    return MiniCorpusConfig(
        size="test",
        seed=seed,
        extra_text_words=extra_text_words,
        splits={"train": SplitSize(2, 12.0), "dev": SplitSize(1, 8.0), "tst-COMMON": SplitSize(1, 8.0)},
    )


# ------------------------------------------------------------------------------------------------
# Text


def test_paragraphs_drop_headings_and_emphasis():
    lines = ["CHAPTER I", "", "", "It was a _very_ fine", "day indeed.", "", "VOLUME II", "", "Yes, it was."]
    assert paragraphs_from_lines(lines) == ["It was a very fine day indeed.", "Yes, it was."]


def test_sentence_split_respects_abbreviations_and_lowercase_continuations():
    text = '"Oh! can it be really so! Yet now I must." Mr. Darcy said so. Is it? "Yes." Then'
    assert split_sentences(text) == [
        '"Oh! can it be really so!',
        'Yet now I must."',
        "Mr. Darcy said so.",
        "Is it?",
        '"Yes."',
        "Then",
    ]


def test_long_sentences_are_cut_after_clauses():
    sentence = "one two three, four five six seven; eight nine ten eleven twelve thirteen fourteen fifteen"
    pieces = split_long(sentence, 6)
    assert " ".join(pieces) == sentence
    assert pieces[0] == "one two three,"
    assert all(len(p.split()) <= 6 for p in pieces[:-1])
    assert split_long("short one.", 6) == ["short one."]


def test_sources_are_disjoint_between_splits():
    books = {"a": make_text(50, 1).splitlines(), "b": make_text(50, 2).splitlines()}
    parts = split_sources(books)
    assert set(parts) == {"train", "dev", "tst-COMMON"}
    assert all(parts[s] for s in parts)
    total = sum(len(v) for v in parts.values())
    assert len(parts["train"]) > 0.7 * total


# ------------------------------------------------------------------------------------------------
# A real build


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("mini")
    books = {"text": make_text().splitlines()}
    summary = build_mini_corpus(root / "corpus", small_config(), books)
    return root / "corpus", books, summary


def test_build_layout_and_contents(built):
    corpus, _, summary = built
    assert (corpus / ".done").exists() and (corpus / "labels.txt").exists() and (corpus / "build.json").exists()
    for split in ("train", "dev", "tst-COMMON"):
        txt = corpus / "data" / split / "txt"
        yaml_lines = (txt / f"{split}.yaml").read_text().splitlines()
        en_lines = (txt / f"{split}.en").read_text().splitlines()
        assert len(yaml_lines) == len(en_lines) == summary[split]["segments"] > 0
        assert (txt / f"{split}.de").read_text().splitlines() == en_lines
        ends = {}
        for line in yaml_lines:
            m = re.fullmatch(
                r"- \{duration: ([\d.]+), offset: ([\d.]+), speaker_id: spk\.(\d+), wav: ted_(\d+)\.wav\}", line
            )
            assert m, line
            assert m.group(3) == m.group(4)
            ends[m.group(4)] = max(ends.get(m.group(4), 0.0), float(m.group(1)) + float(m.group(2)))
        for talk, end in ends.items():
            info = sf.info(str(corpus / "data" / split / "wav" / f"ted_{talk}.wav"))
            assert info.samplerate == 16000 and info.channels == 1 and info.duration > end
    table = (corpus / "labels.txt").read_text()
    assert all(c in table.splitlines()[0] for c in ("NP", ",", ".", "?"))
    assert summary["dev"]["labels"].get("?", 0) > 0 and summary["tst-COMMON"]["labels"].get("?", 0) > 0


def test_extra_text_is_training_text_only(built):
    corpus, books, _ = built
    paragraphs = (corpus / EXTRA_TEXT_FILE).read_text(encoding="utf-8").strip().split("\n\n")
    train = split_sources(books)["train"]
    words = sum(len(p.split()) for p in paragraphs)
    assert 300 <= words < 300 + 20 * 40 and len(paragraphs) >= 2
    # every paragraph is a block of consecutive training sentences (no dev or test text), the first one first
    size = EXTRA_TEXT_BLOCK_SENTENCES
    blocks = [" ".join(train[i : i + size]) for i in range(0, len(train) - size + 1, size)]
    assert paragraphs[0] == blocks[0] and all(p in blocks for p in paragraphs)
    assert len(set(paragraphs)) == len(paragraphs)
    assert json.loads((corpus / "build.json").read_text())["extra_text"] == {
        "paragraphs": len(paragraphs),
        "words": words,
    }


def test_extra_text_blocks_spread_over_the_text():
    sentences = [f"w{i} x y z." for i in range(1000)]  # 4 words each, 80 per block of 20
    paragraphs = extra_text_paragraphs(sentences, 400, block_sentences=20)
    assert len(paragraphs) == 5 and sum(len(p.split()) for p in paragraphs) == 400
    firsts = [int(p.split()[0][1:]) for p in paragraphs]
    assert firsts == [0, 240, 480, 740, 980]  # blocks 0, 12, 24, 37, 49 of 50: the whole text, evenly
    assert extra_text_paragraphs(sentences, 0) == [] and extra_text_paragraphs([], 100) == []
    assert sum(len(p.split()) for p in extra_text_paragraphs(sentences, 10**6)) == 4000  # all of it


def test_no_extra_text_file_without_extra_words(tmp_path):
    corpus = tmp_path / "corpus"
    build_mini_corpus(corpus, small_config(extra_text_words=0), {"text": make_text().splitlines()})
    assert not (corpus / EXTRA_TEXT_FILE).exists()
    assert json.loads((corpus / "build.json").read_text())["extra_text"] == {}


def test_voices_differ_between_talks(built):
    _, _, summary = built
    voices = [tuple(v.values()) for s in summary.values() for v in s["voices"]]
    assert len(set(voices)) == len(voices) == 4


@pytest.mark.parametrize("num_talks", [4, 6, 16, 32])
def test_balanced_voice_names_share_the_voices_evenly(num_talks):
    names = balanced_voice_names(num_talks, np.random.default_rng(num_talks))
    counts = Counter(names)
    assert len(names) == num_talks and set(counts) <= set(ENGLISH_VOICES)
    assert len(counts) == min(num_talks, len(ENGLISH_VOICES))
    assert max(counts.values()) - min(counts.values()) <= 1


def test_training_talks_share_the_voices_and_keep_the_random_text():
    sentences = split_sentences(make_text(400))
    size = SplitSize(12, 20.0)

    def plan(split: str, balanced: bool):
        cfg = MiniCorpusConfig(size="test", balanced_train_voices=balanced)
        return plan_talks(sentences, split, 1, size, cfg, np.random.default_rng(5))

    balanced, drawn = plan("train", True), plan("train", False)
    assert Counter(t.voice.name for t in balanced) == Counter({v: 2 for v in ENGLISH_VOICES})
    # only the voice name changes: text, rate, pitch and noise are the random draw's
    for a, b in zip(balanced, drawn):
        assert [s.text for s in a.segments] == [s.text for s in b.segments]
        assert (a.voice.variant, a.voice.rate, a.voice.pitch, a.noise_dbfs) == (
            b.voice.variant,
            b.voice.rate,
            b.voice.pitch,
            b.noise_dbfs,
        )
    assert [t.voice for t in plan("dev", True)] == [t.voice for t in plan("dev", False)]


def test_build_is_read_by_the_mustc_reader_and_word_times_match(built, tmp_path):
    corpus, _, summary = built
    manifests, stats = prepare_mustc(corpus, tmp_path / "manifests")
    assert stats["dev"].segments == summary["dev"]["segments"]
    sups = {s.id: s for split in manifests.values() for s in split["supervisions"]}
    mapped = 0
    for split in ("train", "dev", "tst-COMMON"):
        lines = (corpus / "data" / split / "txt" / f"{split}.word_times.jsonl").read_text().splitlines()
        assert len(lines) + summary[split]["word_times_omitted"] == summary[split]["segments"]
        for line in lines:
            entry = json.loads(line)
            sup = sups[entry["id"]]
            assert entry["words"] == supervision_words(sup)[0]
            assert len(entry["starts"]) == len(entry["words"])
            assert entry["starts"][0] >= 0.0 and entry["starts"][-1] < sup.duration
            assert all(b >= a for a, b in zip(entry["starts"], entry["starts"][1:]))
            mapped += 1
    assert mapped > 0


def test_build_is_deterministic_and_never_silently_overwritten(built, tmp_path):
    corpus, books, _ = built
    with pytest.raises(FileExistsError, match="--overwrite"):
        build_mini_corpus(corpus, small_config(), books)
    other = tmp_path / "again"
    build_mini_corpus(other, small_config(), books)
    for split in ("dev",):
        rel = Path("data") / split / "txt" / f"{split}.yaml"
        assert (other / rel).read_text() == (corpus / rel).read_text()
        wav = Path("data") / split / "wav" / "ted_2001.wav"
        assert np.array_equal(sf.read(other / wav)[0], sf.read(corpus / wav)[0])
    build_mini_corpus(other, small_config(seed=8), books, overwrite=True)
    rel = Path("data") / "dev" / "txt" / "dev.yaml"
    assert (other / rel).read_text() != (corpus / rel).read_text()
    assert not list(tmp_path.glob(".again*"))  # no temporary folder left behind


def test_natural_prosody_is_deterministic_and_keeps_the_voices_and_text(built, tmp_path):
    corpus, books, _ = built
    natural = replace(small_config(), prosody="natural", pauses=PauseModel())
    first, again = tmp_path / "natural", tmp_path / "natural_again"
    build_mini_corpus(first, natural, books, num_jobs=2)
    build_mini_corpus(again, natural, books)
    assert audio_digest(first) == audio_digest(again) != audio_digest(corpus)
    built_config = json.loads((first / "build.json").read_text())["config"]
    assert built_config["prosody"] == "natural" and built_config["pauses"]["comma"]["probability"] == 0.55
    for split in ("train", "dev"):
        rel = Path("data") / split / "txt" / f"{split}.en"
        assert (first / rel).read_text() == (corpus / rel).read_text()  # the same text, voices drawn alike
        times = [json.loads(x) for x in (first / "data" / split / "txt" / f"{split}.word_times.jsonl").open()]
        assert times and all(len(t["pauses"]) == len(t["words"]) for t in times)
        assert any(p > 0 for t in times for p in t["pauses"])
    marks_times = (corpus / "data" / "dev" / "txt" / "dev.word_times.jsonl").read_text()
    assert '"pauses"' not in marks_times  # the marks corpus' files as before the option


def _speak_after_rand_calls(job, calls: int) -> str:
    """Runs a synthesis job after ``calls`` calls of the C library's ``rand()`` (as if some library had used it)."""
    libc = ctypes.CDLL(None)
    for _ in range(calls):
        libc.rand()
    _synthesize_job(job)
    return hashlib.md5(Path(job[4]).read_bytes()).hexdigest()


def test_talk_audio_does_not_depend_on_the_c_random_state(tmp_path):
    # variant f2 has breath, whose noise espeak-ng draws from rand(): without the reset, each history gives
    # another wav (the mini corpus once came out with one training talk different)
    talk = Talk(9001, Voice("en", "f2", 60, 180, 40), [TalkSegment("Had she ever walked to the village, then?")], -60.0)
    hashes, lengths = [], []
    for calls in (0, 3, 0):
        wav = tmp_path / f"after_{calls}_{len(hashes)}.wav"
        job = (talk, (7, 0, 0), small_config(), NormalizeConfig(), str(wav))
        with multiprocessing.get_context("fork").Pool(1, maxtasksperchild=1) as pool:
            hashes.append(pool.apply(_speak_after_rand_calls, (job, calls)))
        lengths.append(sf.info(wav).frames)
    assert lengths[0] > SAMPLE_RATE  # real speech
    assert hashes[0] == hashes[1] == hashes[2]


def test_build_json_keeps_each_wav_files_md5(built):
    corpus, _, _ = built
    md5s = json.loads((corpus / "build.json").read_text())["wav_md5"]
    wavs = sorted(str(p.relative_to(corpus)) for p in corpus.rglob("*.wav"))
    assert sorted(md5s) == wavs and any(w.startswith("data/train/wav/") for w in wavs)
    assert all(md5s[name] == hashlib.md5((corpus / name).read_bytes()).hexdigest() for name in md5s)


def test_audio_digest_changes_with_any_wav_file(built, tmp_path):
    corpus, _, _ = built
    digest = audio_digest(corpus)
    assert re.fullmatch(r"[0-9a-f]{12}", digest) and digest == digest_of(wav_md5s(corpus))
    build = json.loads((corpus / "build.json").read_text())
    other = tmp_path / "other"
    other.mkdir()
    build["wav_md5"]["data/dev/wav/ted_2001.wav"] = "0" * 32
    (other / "build.json").write_text(json.dumps(build))
    assert audio_digest(other) not in (None, digest)
    del build["wav_md5"]["data/dev/wav/ted_2001.wav"]
    (other / "build.json").write_text(json.dumps(build))
    assert audio_digest(other) not in (None, digest)  # a file less
    assert corpora_digest([corpus, tmp_path / "no_corpus"]) == f"{corpus.name}:{digest}"
    del build["wav_md5"]
    (other / "build.json").write_text(json.dumps(build))
    assert audio_digest(other) is None and corpora_digest([other]) == ""


def test_a_built_corpus_is_reused_only_with_the_config_it_was_built_from(built, tmp_path):
    corpus, _, _ = built
    assert config_changes(corpus, small_config()) == []
    assert reuse_built_corpus(corpus, small_config(), overwrite=False)
    assert not reuse_built_corpus(corpus, small_config(), overwrite=True)
    assert not reuse_built_corpus(tmp_path / "missing", small_config(), overwrite=False)
    more_dev = MiniCorpusConfig(
        size="test",
        seed=7,
        extra_text_words=300,
        splits={"train": SplitSize(2, 12.0), "dev": SplitSize(3, 8.0), "tst-COMMON": SplitSize(1, 8.0)},
    )
    changes = config_changes(corpus, more_dev)
    assert len(changes) == 1 and changes[0].startswith("splits:") and "'talks': 3" in changes[0]
    with pytest.raises(ValueError, match=r"built with another config \(seed: built 7, asked 8\)"):
        reuse_built_corpus(corpus, small_config(seed=8), overwrite=False)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / ".done").write_text("")
    (tmp_path / "broken" / "build.json").write_text("{}")
    with pytest.raises(ValueError, match="broken/build.json: no readable build config"):
        reuse_built_corpus(tmp_path / "broken", small_config(), overwrite=False)


def test_sizes():
    tiny, mini = config_for_size("tiny"), config_for_size("mini")
    seconds = lambda cfg: sum(s.talks * s.talk_seconds for s in cfg.splits.values())  # noqa: E731
    assert 120 <= seconds(tiny) <= 600 and 4500 <= seconds(mini) <= 6000
    with pytest.raises(ValueError, match="unknown mini corpus size"):
        config_for_size("huge")


def test_austen_text_when_cached():
    """Reads the real Debian package if it was fetched already (the recipe fetches it)."""
    cache = Path(os.environ.get("PUNCT_CACHE", Path.home() / ".cache" / "punct"))
    if not (cache / "janeaustenr_books.json").exists() and not list(cache.glob("r-cran-janeaustenr_*.deb")):
        pytest.skip(f"r-cran-janeaustenr not in {cache}")
    books = load_austen(cache)
    assert sorted(books) == [
        "emma",
        "mansfieldpark",
        "northangerabbey",
        "persuasion",
        "prideprejudice",
        "sensesensibility",
    ]
    assert books["emma"][14].startswith("Emma Woodhouse, handsome, clever, and rich")
    parts = split_sources(books)
    counts = Counter()
    for s in parts["dev"][:2000]:
        counts.update(normalize(s).labels)
    assert counts["?"] > 0 and counts[","] > counts["?"]
