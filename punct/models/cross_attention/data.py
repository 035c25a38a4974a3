"""Segments of the speech-informed ITN dataset (stage 3) as model inputs.

A segment is a supervision of ``data/segments/<prefix>_supervisions_<split>.jsonl.gz``:
``custom["words"]`` (lower-case words: the model input), ``custom["punct"]`` (9 classes),
``custom["case"]`` (blank/cap) and ``alignment["word"]`` (one item per word, times relative to
the recording); its audio is ``[start, start + duration)`` of the recording of
``<prefix>_recordings_<split>.jsonl.gz``.

Labels: every word's punctuation and case class ids; with ``first_word: exclude`` (the thesis, see
:mod:`punct.labels`) the first word's are :data:`punct.labels.IGNORE_INDEX` in the examples (not trained).

Text: the words are tokenised with :func:`punct.models.text.chunking.word_pieces` and read at their
last sub-token (``[CLS] pieces [SEP]``); a segment whose sub-tokens exceed ``max_length`` is
skipped and counted (segments are at most 15 s, so this does not happen with BERT's 512); the words
that hold the tokenizer's unknown token are counted in the log.
Audio (multimodal models only): the mel of :mod:`punct.models.cross_attention.features`, and each latent frame's
word (:meth:`punct.models.cross_attention.geometry.SoundGeometry.frame_words`) from the word times relative to the
segment start.  ``random_audio`` permutes the segment's samples (or mel frames,
``random_audio_unit``) with a seed derived from the config seed and the segment id, so the
corruption is the same in every epoch and run.
With ``sound_encoder: am`` the audio is the frozen acoustic model's pooled frames instead of the mel
(:mod:`punct.models.cross_attention.am_frames`; computed once per segment and kept, or read from a dump as
needed), with their words by :class:`punct.models.cross_attention.geometry.AmFrameGeometry`; random audio then puts
the permuted samples through the AM (``samples``) or permutes the AM frames (``frames``).  The recipe computes the
frames of all segments once for the models that read them, of the real audio and of the random-audio control's
(:mod:`punct.bin.dump_am_frames`, with :func:`model_am_frames`), and :meth:`ItnDataset.take_am_frames` has the
dataset read them from the dump's shards (a batch's segments at a time, none held) once the dump's
:data:`AM_FRAMES_INFO` says they are the model's own.

Batches: :func:`loader` (in order for predictions, or shuffled as one rank's share for training) of
:func:`collate`d examples.
"""

from __future__ import annotations

import functools
import json
import logging
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch
from lhotse.utils import Pathlike

from punct.io.jsonl import read_jsonl
from punct.io.shards import MatrixReader
from punct.labels import CASE, IGNORE_INDEX, PUNCT9, WordLabels, aligned_words, class_index, mask_first_word
from punct.models.cross_attention.am_frames import AmFrames, am_frames_of
from punct.models.cross_attention.config import MmConfig
from punct.models.cross_attention.features import MelSpectrogram
from punct.models.cross_attention.geometry import NO_WORD, SoundGeometry
from punct.models.cross_attention.model import CASE_HEAD, PUNCT_HEAD
from punct.models.text.chunking import special_ids, word_pieces
from punct.training.loop import DistInfo, RankBatchSampler


class ItnSegment(NamedTuple):
    id: str
    recording_id: str
    start: float  # seconds in the recording
    duration: float
    words: list[str]
    punct: list[int]  # PUNCT9.classes ids
    case: list[int]  # CASE.classes ids
    word_starts: list[float]  # seconds from the segment start
    word_ends: list[float]


def _segment(d: dict, where: str, p_index: dict[str, int], c_index: dict[str, int]) -> ItnSegment:
    labelled = WordLabels.from_supervision(d, PUNCT9, CASE, where=where)
    timed = aligned_words(d) or []
    words = list(labelled.words)
    if len(timed) != len(words):
        raise ValueError(f"{where}: {d['id']}: {len(words)} words but {len(timed)} word alignments")
    punct = [p_index[x] for x in labelled.punct]
    case = [c_index[x] for x in labelled.case]
    start = float(d["start"])
    starts = [w.start - start for w in timed]
    ends = [w.end - start for w in timed]
    return ItnSegment(d["id"], d["recording_id"], start, float(d["duration"]), words, punct, case, starts, ends)


def split_manifests(data_dir: Path, prefix: str, split: str) -> tuple[Path, Path]:
    """A split's segments and recordings in a stage-3 folder."""
    return data_dir / f"{prefix}_supervisions_{split}.jsonl.gz", data_dir / f"{prefix}_recordings_{split}.jsonl.gz"


def read_segments(path: Pathlike) -> list[ItnSegment]:
    """Stage-2 supervisions -> segments; a malformed record is an error naming file and line."""
    p_index, c_index = class_index(PUNCT9.classes), class_index(CASE.classes)
    return [_segment(d, where, p_index, c_index) for where, d in read_jsonl(path, "supervision manifest")]


def encode_text(tokenizer, words: Sequence[str], max_length: int):
    """``[CLS] pieces [SEP]`` ids, the last sub-token position of every word, and each token's
    word index (``NO_WORD`` for the special tokens); None if it does not fit ``max_length``."""
    cls_id, sep_id = special_ids(tokenizer)
    pieces = word_pieces(tokenizer, words, max_length - 2)
    if sum(len(p) for p in pieces.pieces) > max_length - 2:
        return None
    ids, positions, token_words = [cls_id], [], [NO_WORD]
    for w, p in enumerate(pieces.pieces):
        ids.extend(p)
        token_words.extend([w] * len(p))
        positions.append(len(ids) - 1)
    ids.append(sep_id)
    token_words.append(NO_WORD)
    return ids, positions, token_words


def permutation_seed(seed: int, segment_id: str) -> int:
    return (seed * 1_000_003 + zlib.crc32(segment_id.encode("utf-8"))) % (2**32)


def permute_audio(samples: np.ndarray, seed: int) -> np.ndarray:
    """The thesis' random-audio corruption (5.8): the samples (or, for a 2-D array, the frames =
    rows) in a random order."""
    return samples[np.random.default_rng(seed).permutation(samples.shape[0])]


def corrupt_samples(samples: np.ndarray, cfg: MmConfig, segment_id: str) -> np.ndarray:
    """A segment's samples as a model of ``cfg`` hears them: permuted for random audio over ``samples``."""
    if cfg.random_audio and cfg.random_audio_unit == "samples":
        return permute_audio(samples, permutation_seed(cfg.seed, segment_id))
    return samples


AM_FRAMES_INFO = "frames.json"  # beside a dump's <split>/frames.scp: which audio the frames are of


def am_frames_info(cfg: MmConfig) -> dict:
    """Which audio a model of ``cfg`` reads AM frames of, beyond the AM and its geometry (which the frames' shapes
    check): the real audio, or the random-audio control's permutation and its seed."""
    if not cfg.random_audio:
        return {"random_audio": False}
    return {"random_audio": True, "random_audio_unit": cfg.random_audio_unit, "seed": cfg.seed}


class ItnDataset(torch.utils.data.Dataset):
    """Segments -> model examples (text always, audio when ``with_audio``).

    Args:
      segments: from :func:`read_segments`.
      recordings: a lhotse RecordingSet holding every segment's recording (audio only).
      tokenizer: the text encoder's fast tokenizer.
      cfg: the model config (max_length, mel, conv geometry, random_audio, seed).
      with_audio: load audio and compute the mel and frame words.
      audio: a segment's samples at ``cfg.sample_rate`` (e.g. of a live stream) instead of ``recordings``.
      log_counts: log the count of words that hold the unknown token (False: a stream's many small inputs).
    """

    def __init__(
        self,
        segments: Sequence[ItnSegment],
        recordings,
        tokenizer,
        cfg: MmConfig,
        with_audio: bool,
        where: str = "data",
        audio: Callable[[ItnSegment], np.ndarray] | None = None,
        log_counts: bool = True,
    ) -> None:
        self.cfg, self.with_audio, self.recordings, self.audio = cfg, with_audio, recordings, audio
        self.segments: list[ItnSegment] = []
        self.text: list[tuple] = []
        skipped = unknown = 0
        for seg in segments:
            enc = encode_text(tokenizer, seg.words, cfg.max_length)
            if enc is None or not seg.words:
                skipped += 1
                continue
            self.segments.append(seg)
            self.text.append(enc)
            unknown += len({w for t, w in zip(enc[0], enc[2]) if t == tokenizer.unk_token_id})
        if skipped:
            logging.warning(
                "%s: skipped %d segment(s) without words or longer than %d sub-tokens", where, skipped, cfg.max_length
            )
        num_words = sum(len(s.words) for s in self.segments)
        logging.log(
            (logging.WARNING if unknown else logging.INFO) if log_counts else logging.DEBUG,
            "%s: %d of %d words hold the text tokenizer's unknown token",
            where,
            unknown,
            num_words,
        )
        if with_audio and audio is None:
            missing = sorted({s.recording_id for s in self.segments if s.recording_id not in recordings})
            if missing:
                raise ValueError(f"{where}: recordings not in the recordings manifest: {missing[:5]}")
        if cfg.random_audio_unit not in ("samples", "frames"):
            raise ValueError(f"random_audio_unit must be samples or frames, got {cfg.random_audio_unit!r}")
        self.mel = MelSpectrogram(cfg.sample_rate, cfg.win_length, cfg.hop_length, cfg.num_mel_bins, cfg.log_mel)
        self.geometry = SoundGeometry.from_config(cfg)
        self.am_frames: AmFrames | None = None
        self.am_cache: dict[int, np.ndarray] = {}  # segment index -> its computed (frames, dim) float16 AM frames
        self.am_dump: MatrixReader | None = None  # or a dump's frames, read as needed (take_am_frames)
        self.am_dump_path: Path | None = None
        if with_audio and cfg.sound_encoder == "am":
            self.am_frames = am_frames_of(cfg)
            self.geometry = self.am_frames.geometry
            if self.am_frames.sample_rate != cfg.sample_rate:
                raise ValueError(
                    f"{cfg.am_dir}: the AM reads {self.am_frames.sample_rate} Hz, sample_rate is {cfg.sample_rate}"
                )

    def __len__(self) -> int:
        return len(self.segments)

    def token_lengths(self) -> list[int]:
        """Each segment's sub-tokens (with [CLS]/[SEP]): what grouping batches by length sorts on."""
        return [len(ids) for ids, _, _ in self.text]

    def real_samples(self, seg: ItnSegment) -> np.ndarray:
        if self.audio is not None:
            return np.asarray(self.audio(seg), dtype=np.float32)
        return segment_samples(self.recordings, seg, self.cfg.sample_rate)

    def load_samples(self, seg: ItnSegment) -> np.ndarray:
        return corrupt_samples(self.real_samples(seg), self.cfg, seg.id)

    def segment_am_frames(self, i: int) -> torch.Tensor:
        """Segment ``i``'s (frames, dim) frozen-AM frames: read from the dump when given one
        (:meth:`take_am_frames`), else computed once and kept (:func:`model_am_frames`)."""
        if self.am_dump is not None:
            frames = self.dumped_am_frames(i)
        else:
            if i not in self.am_cache:
                seg = self.segments[i]
                self.am_cache[i] = model_am_frames(self.am_frames, self.real_samples(seg), self.cfg, seg.id)
            frames = self.am_cache[i]
        return torch.from_numpy(frames.astype(np.float32))

    def take_am_frames(self, scp: Pathlike) -> None:
        """Every segment's AM frames from a dump of :mod:`punct.bin.dump_am_frames` (keyed by segment id) instead
        of computing them: the same float16 frames, computed once for all the recipe's models, read from the ark
        shards when a batch needs them (the scp's index is held, not the frames).  The dump's
        :data:`AM_FRAMES_INFO` must name this model's audio (real, or random audio of its seed); the first
        segment's frames are checked now (a dump of another AM or geometry fails before training), every other's
        when it is read."""
        if self.am_frames is None:
            raise ValueError(f"{scp}: dumped AM frames are for sound_encoder am")
        check_am_frames_info(Path(scp), self.cfg)
        reader = MatrixReader(scp)
        missing = [seg.id for seg in self.segments if seg.id not in reader]
        if missing:
            raise ValueError(f"{scp}: no AM frames of {len(missing)} segment(s), e.g. {missing[:3]}")
        self.am_dump, self.am_dump_path = reader, Path(scp)
        self.am_cache.clear()
        if self.segments:
            self.dumped_am_frames(0)
        logging.info("%s: AM frames of %d segments, read as needed", scp, len(self.segments))

    def dumped_am_frames(self, i: int) -> np.ndarray:
        """Segment ``i``'s (frames, dim) float16 frames read from the dump, checked against the model's AM."""
        seg = self.segments[i]
        frames = self.am_dump[seg.id]
        num_samples = max(self.geometry.min_samples, round(seg.duration * self.cfg.sample_rate))
        expected = self.geometry.num_frames(num_samples)
        if frames.shape[1] != self.am_frames.dim or abs(frames.shape[0] - expected) > 1:  # +-1: sample rounding
            raise ValueError(
                f"{self.am_dump_path}: segment {seg.id} has {frames.shape[0]} x {frames.shape[1]} AM frames, the "
                f"model's AM ({self.cfg.am_dir}, layer {self.cfg.am_layer}, stride {self.cfg.am_frame_stride}) "
                f"gives {expected} x {self.am_frames.dim}: dumped with another AM or geometry"
            )
        return frames.astype(np.float16)

    def __getitem__(self, i: int) -> dict:
        seg = self.segments[i]
        ids, positions, token_words = self.text[i]
        # training targets: with first_word exclude the first word's labels are ignored (punct.labels)
        ex = {
            "index": i,
            "input_ids": ids,
            "word_positions": positions,
            "token_words": token_words,
            "punct": mask_first_word(seg.punct, self.cfg.first_word),
            "case": mask_first_word(seg.case, self.cfg.first_word),
        }
        if self.with_audio and self.am_frames is not None:
            frames = self.segment_am_frames(i)
            ex["am_frames"] = frames
            ex["frame_words"] = self.geometry.frame_words(seg.word_starts, seg.word_ends, frames.size(0))
        elif self.with_audio:
            samples = self.load_samples(seg)
            min_samples = self.cfg.win_length + (self.geometry.min_mel_frames - 1) * self.cfg.hop_length
            if len(samples) < min_samples:  # zero-pad a very short segment to one latent frame
                samples = np.pad(samples, (0, min_samples - len(samples)))
            with torch.no_grad():
                mel = self.mel(torch.from_numpy(samples))
            if self.cfg.random_audio and self.cfg.random_audio_unit == "frames":
                mel = torch.from_numpy(permute_audio(mel.numpy(), permutation_seed(self.cfg.seed, seg.id)))
            ex["mel"] = mel
            ex["frame_words"] = self.geometry.frame_words(
                seg.word_starts, seg.word_ends, self.geometry.num_latent(mel.size(0))
            )
        return ex


def segment_samples(recordings, seg: ItnSegment, sample_rate: int) -> np.ndarray:
    """The segment's samples, cut from its recording of ``recordings`` (a lhotse RecordingSet)."""
    rec = recordings[seg.recording_id]
    if rec.sampling_rate != sample_rate:
        raise ValueError(f"recording {rec.id}: {rec.sampling_rate} Hz, the model expects {sample_rate} Hz")
    audio = rec.load_audio(offset=seg.start, duration=min(seg.duration, rec.duration - seg.start))
    return np.asarray(audio[0], dtype=np.float32)


def segment_am_frames(am_frames: AmFrames, samples: np.ndarray) -> np.ndarray:
    """(frames, dim) float16 AM frames of a segment's samples; a very short segment is zero-padded to one frame."""
    if len(samples) < am_frames.geometry.min_samples:
        samples = np.pad(samples, (0, am_frames.geometry.min_samples - len(samples)))
    return am_frames(samples).astype(np.float16)


def model_am_frames(am_frames: AmFrames, samples: np.ndarray, cfg: MmConfig, segment_id: str) -> np.ndarray:
    """The (frames, dim) float16 AM frames a model of ``cfg`` reads for a segment of these (real) samples: with
    random audio, those of the permuted samples or the frames permuted (``random_audio_unit``)."""
    frames = segment_am_frames(am_frames, corrupt_samples(samples, cfg, segment_id))
    if cfg.random_audio and cfg.random_audio_unit == "frames":
        frames = permute_audio(frames, permutation_seed(cfg.seed, segment_id))
    return frames


def check_am_frames_info(scp: Path, cfg: MmConfig) -> None:
    """Refuses a dump (``<dir>/<split>/frames.scp``) whose ``<dir>/frames.json`` names other audio than ``cfg``'s."""
    path = scp.parent.parent / AM_FRAMES_INFO
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file: which audio the frames of {scp} are of is unknown (dump again)")
    dumped, wanted = json.loads(path.read_text(encoding="utf-8")), am_frames_info(cfg)
    if dumped != wanted:
        raise ValueError(f"{scp}: frames of {dumped} ({path}), the model reads frames of {wanted}")


def collate(examples: Sequence[dict], pad_id: int) -> dict[str, torch.Tensor]:
    """Pads a list of examples into a batch (see :class:`punct.models.cross_attention.model.CrossAttentionModel`)."""
    n = len(examples)
    max_t = max(len(e["input_ids"]) for e in examples)
    max_w = max(len(e["word_positions"]) for e in examples)
    batch = {
        "index": torch.tensor([e["index"] for e in examples], dtype=torch.long),
        "input_ids": torch.full((n, max_t), pad_id, dtype=torch.long),
        "attention_mask": torch.zeros((n, max_t), dtype=torch.long),
        "token_words": torch.full((n, max_t), NO_WORD, dtype=torch.long),
        "word_positions": torch.zeros((n, max_w), dtype=torch.long),
        f"labels_{PUNCT_HEAD}": torch.full((n, max_w), IGNORE_INDEX, dtype=torch.long),
        f"labels_{CASE_HEAD}": torch.full((n, max_w), IGNORE_INDEX, dtype=torch.long),
    }
    for i, e in enumerate(examples):
        t, w = len(e["input_ids"]), len(e["word_positions"])
        batch["input_ids"][i, :t] = torch.tensor(e["input_ids"])
        batch["attention_mask"][i, :t] = 1
        batch["token_words"][i, :t] = torch.tensor(e["token_words"])
        batch["word_positions"][i, :w] = torch.tensor(e["word_positions"])
        batch[f"labels_{PUNCT_HEAD}"][i, :w] = torch.tensor(e["punct"])
        batch[f"labels_{CASE_HEAD}"][i, :w] = torch.tensor(e["case"])
    if "am_frames" in examples[0]:
        batch["am_frames"], batch["am_lengths"] = pad_frames([e["am_frames"] for e in examples])
        batch["frame_words"] = pad_frame_words([e["frame_words"] for e in examples])
    if "mel" in examples[0]:
        max_m = max(e["mel"].size(0) for e in examples)
        max_f = max(len(e["frame_words"]) for e in examples)
        bins = examples[0]["mel"].size(1)
        batch["mel"] = torch.zeros((n, max_m, bins))
        batch["mel_lengths"] = torch.tensor([e["mel"].size(0) for e in examples], dtype=torch.long)
        batch["frame_words"] = torch.full((n, max_f), NO_WORD, dtype=torch.long)
        for i, e in enumerate(examples):
            batch["mel"][i, : e["mel"].size(0)] = e["mel"]
            batch["frame_words"][i, : len(e["frame_words"])] = torch.from_numpy(e["frame_words"])
    return batch


def pad_frames(frames: Sequence[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """(F_i, C) tensors -> (N, max F_i, C) zero-padded and the (N,) lengths."""
    lengths = torch.tensor([x.size(0) for x in frames], dtype=torch.long)
    out = torch.zeros((len(frames), int(lengths.max()), frames[0].size(1)))
    for i, x in enumerate(frames):
        out[i, : x.size(0)] = x
    return out, lengths


def pad_frame_words(frame_words: Sequence[np.ndarray]) -> torch.Tensor:
    out = torch.full((len(frame_words), max(len(w) for w in frame_words)), NO_WORD, dtype=torch.long)
    for i, w in enumerate(frame_words):
        out[i, : len(w)] = torch.from_numpy(w)
    return out


def load_split(
    supervisions: Pathlike,
    recordings: Pathlike | None,
    tokenizer,
    cfg: MmConfig,
    with_audio: bool,
    max_segments: int = 0,
) -> ItnDataset:
    """One split's dataset from its stage-2 manifests (``max_segments`` > 0: a seeded sample)."""
    segments = read_segments(supervisions)
    if max_segments and len(segments) > max_segments:
        rng = np.random.default_rng(cfg.seed)
        segments = [segments[i] for i in sorted(rng.choice(len(segments), max_segments, replace=False))]
    recs = None
    if with_audio:
        from lhotse import load_manifest

        if recordings is None or not Path(recordings).is_file():
            raise FileNotFoundError(f"{recordings}: no such recordings manifest")
        recs = load_manifest(recordings)
    logging.info("%s: %d segments, %d words", supervisions, len(segments), sum(len(s.words) for s in segments))
    return ItnDataset(segments, recs, tokenizer, cfg, with_audio, where=str(supervisions))


def to_device(batch: dict[str, torch.Tensor], device: torch.device) -> dict[str, torch.Tensor]:
    """A batch of :func:`collate` with every tensor on ``device``."""
    return {k: v.to(device, non_blocking=True) for k, v in batch.items()}


def loader(
    dataset: ItnDataset,
    batch_size: int,
    shuffle: bool,
    seed: int,
    pad_id: int,
    num_workers: int = 0,
    *,
    dist: DistInfo = DistInfo(),
    pin_memory: bool = False,
    by_length: bool = False,
    length_group: int = 0,
) -> torch.utils.data.DataLoader:
    """Batches of ``dataset``.  Shuffled: this rank's share of a seeded order (``batch_size`` per rank; one
    process gets the batches of ``DataLoader(shuffle=True)`` with the same seed), with ``by_length`` grouped by
    sub-token count (:class:`RankBatchSampler` with lengths, sorted within runs of ``length_group`` batches);
    otherwise in dataset order, with ``by_length`` in order of sub-token count (a batch's ``index`` says which
    segments it holds)."""
    generator = torch.Generator().manual_seed(seed)
    common = dict(
        num_workers=num_workers,
        pin_memory=pin_memory,
        generator=generator,
        collate_fn=functools.partial(collate, pad_id=pad_id),
    )
    lengths = dataset.token_lengths() if by_length else None
    if not shuffle and lengths is None:
        return torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=False, **common)
    if not shuffle:
        order = sorted(range(len(dataset)), key=lambda i: lengths[i])
        batches = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
        return torch.utils.data.DataLoader(dataset, batch_sampler=batches, **common)
    sampler = RankBatchSampler(len(dataset), batch_size, dist, generator, lengths, length_group)
    return torch.utils.data.DataLoader(dataset, batch_sampler=sampler, **common)
