#!/usr/bin/env python3
"""Punctuate new audio with a trained EfficientPunct recipe (features, AM layer 12, forced alignment,
BERT, punctuation TDNN, ensemble at the recipe's alpha).

  # an exported model folder (punct-export; a recipe's exp/model after ./run.sh) instead of the recipe directory
  python -m punct.bin.punctuate --model egs/mustc/exp/model --wav talk.wav --transcript "so what did we learn" \\
      --out-dir out
  # Kaldi-style data directory files (utt2spk optional: per-speaker CMVN)
  python -m punct.bin.punctuate --recipe-dir egs/mustc --wav-scp data/new/wav.scp --text data/new/text \\
      --out-dir exp/punctuate/new
  # a lhotse cut manifest (transcript = first supervision's text)
  python -m punct.bin.punctuate --recipe-dir egs/mustc --cuts cuts.jsonl.gz --out-dir out
  # one file; --text is a transcript file, --transcript the transcript itself
  python -m punct.bin.punctuate --recipe-dir egs/mustc --wav talk.wav --transcript "so what did we learn" --out-dir out
  # no transcript: the acoustic model's greedy hypothesis is punctuated
  python -m punct.bin.punctuate --recipe-dir egs/mustc --wav-scp wav.scp --transcript-from am --out-dir out
  # a whole recording (minutes to hours) with its whole transcript: aligned in ~30 s chunks (bounded memory)
  python -m punct.bin.punctuate --recipe-dir egs/mustc --wav lecture.wav --text lecture.txt --long-form always \
      --out-dir out
  # words and times from an external recogniser (CTM: '<utt> 1 <start> <dur> <word>', times from the audio's start)
  python -m punct.bin.punctuate --recipe-dir egs/mustc --wav lecture.wav --ctm lecture.ctm --utt-id lecture \
      --out-dir out
  # live captions: raw PCM on stdin with a recogniser's CTM, each word printed within 1 s of its end
  sox talk.wav -t raw -r 16000 -b 16 -c 1 -e signed - | python -m punct.bin.punctuate --recipe-dir egs/mustc \
      --stream --wav - --ctm talk.ctm --latency 1.0 --cmvn egs/mustc/data/fbank/cmvn_train.json
  # fastest on CPUs: int8 AM and TDNN in ONNX Runtime (after python -m punct.bin.export_onnx), bf16 BERT
  python -m punct.bin.punctuate --recipe-dir egs/mustc --cuts cuts.jsonl.gz --backend onnx --bert-bf16 \
      --vectorised-features --out-dir out

By default the output equals what the recipe's stages computed and scored for the same audio and words (stage 1's
features, stage 4's quantised layer 12, stage 6's word vectors; the whole split gives stage 8's posteriors); the
speed options above trade that for time.

The options below are grouped by what they set: the models and the input, then one group per mode (offline
utterances, whole recordings, live captions), then speed and the machine.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

import torch

from punct.am.ctm import read_timed_words
from punct.inference.acoustic import merged_cmvn
from punct.inference.inputs import from_cuts, from_kaldi, from_pair, speaker_share
from punct.inference.model_folder import CMVN_FILE, efficientpunct_paths, read_model_folder
from punct.inference.model_folder import cmvn_file as model_cmvn_file
from punct.inference.model_folder import onnx_dir as model_onnx_dir
from punct.inference.outputs import collect_outputs, write_outputs, write_stream_outputs
from punct.inference.pipeline import Punctuator
from punct.inference.precision import PRECISIONS, set_bert_precision
from punct.inference.recipe import recipe_paths
from punct.inference.streaming import (
    LinePrinter,
    StreamingPunctuator,
    pcm_chunks,
    run_stream,
    stream_result,
    stream_segments,
    wav_chunks,
)
from punct.inference.stretches import LongFormConfig
from punct.labels import TimedWord
from punct.recognition.chunks import ChunkConfig
from punct.utils.cli import HelpFormatter, parse_and_log
from punct.utils.device import resolve_device
from punct.utils.jobs import add_job_arguments, check_job

OFFLINE_DESCRIPTION = """\
Writes ``<out-dir>/text[.JOB]`` (``<utt> <punctuated text>``), ``<out-dir>/punct[.JOB].jsonl`` (per word:
label, start/end seconds, TDNN/BERT/ensemble posteriors) and ``<out-dir>/failed[.JOB]`` (``<utt> <reason>:
<message>``).  An utterance that cannot be processed is reported and skipped; the exit code is 1 when
any failed (0 with --allow-failures, for steps/punctuate.sh which checks the merged list itself).
"""

LONG_FORM_DESCRIPTION = """\
Long recordings (--long-form; by default any utterance longer than --long-form-above seconds): one recording with
one transcript, no segments.  Its features and CMVN are computed over the whole recording (one speaker unless
--utt2spk says otherwise); the acoustic model runs on ~30 s chunks with 5 s overlap (--chunk-seconds,
--chunk-overlap); each chunk is aligned with its slice of the transcript by CTC segmentation and the chunks'
words are merged at the overlap midpoints, as an ITN recipe's recognition stage does with long audio
(punct.recognition.long_align).  The recording is then cut at pauses of --pause-split seconds or more (and
stretches longer than 30 s at their longest pause), and each stretch is punctuated as the recipe's segments are:
its own features with CMVN over all the stretches, the AM's layer 12, BERT over its words, the TDNN.  Memory is
bounded by one chunk and one stretch, plus the recording's samples and features (about 0.26 GB per hour).
With --ctm the words and times are the CTM's (no alignment; times relative to the utterance's audio); a bad CTM
line is an error naming file:line.
"""

STREAM_DESCRIPTION = """\
Live captions (--stream, punct.inference.streaming): the audio is read 0.1 s at a time (--stream-chunk) from a
file or, with ``--wav -``, as raw 16-bit mono PCM from stdin; a CTM word is taken as known once the audio has
reached its end.  Each word is printed with its mark (flushed; a line ends at a full stop or question mark) as
soon as its pause-delimited stretch is complete, where it gets exactly offline punctuate's result, or --latency
seconds of audio after its end, from the stretch so far as if the recording ended there.  CMVN uses fixed stats
(--cmvn, a stage-1 stats file; --cmvn-speaker: one speaker's stats of it).  With --segments (the recogniser's
utterances, Kaldi segments of recording --utt-id) each segment is one stretch, cut from the audio as the recipe
cuts its segments; given a recipe split's segments, stage 3's word times as the CTM and the speaker's stage-1 stats,
``--latency inf`` gives stage 8's posteriors.  With --out-dir, ``text`` and ``punct.jsonl`` as offline and
``stream.jsonl`` (per word: label, seconds of audio when printed, whether final).
"""

SEGMENTS_HELP = (
    "with --wav-scp: Kaldi segments '<utt> <recording> <start> <end>' (wav.scp lists recordings); with --stream: the "
    "recogniser's utterances (the lines of recording --utt-id), each punctuated as one stretch instead of the "
    "stretches between pauses"
)


def add_input_arguments(parser: argparse.ArgumentParser) -> None:
    """The input options: Kaldi files, a cut manifest or one audio file, and where the transcripts come from."""
    src = parser.add_argument_group("input (one of --wav-scp, --cuts, --wav)")
    src.add_argument("--wav-scp", type=Path, default=None, help="Kaldi wav.scp: '<utt> <path>' or '<utt> <command> |'")
    src.add_argument(
        "--text",
        type=Path,
        default=None,
        help="with --wav-scp: Kaldi text '<utt> <transcript>'; with --wav: a file holding the transcript",
    )
    src.add_argument(
        "--utt2spk", type=Path, default=None, help="with --wav-scp: '<utt> <speaker>' for per-speaker CMVN"
    )
    src.add_argument(
        "--segments",
        type=Path,
        default=None,
        help=SEGMENTS_HELP,
    )
    src.add_argument("--cuts", type=Path, default=None, help="lhotse cut manifest (transcript = supervision text)")
    src.add_argument("--wav", type=Path, default=None, help="one audio file ('-' with --stream: PCM on stdin)")
    src.add_argument("--transcript", default=None, help="with --wav: the transcript itself")
    src.add_argument("--utt-id", default=None, help="with --wav: the utterance id [file stem]")
    src.add_argument(
        "--transcript-from",
        choices=("input", "am"),
        default="input",
        help="input: the given transcripts; am: the acoustic model's greedy hypothesis (no transcript needed)",
    )
    src.add_argument(
        "--ctm",
        type=Path,
        default=None,
        help="words with times from an external recogniser ('<utt> <channel> <start> <dur> <word>', "
        "seconds from the start of the utterance's audio) instead of a transcript and alignment; "
        "implies long-form processing",
    )


def add_long_form_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of whole recordings (``--long-form``)."""
    long = parser.add_argument_group("whole recordings (--long-form, --ctm)", LONG_FORM_DESCRIPTION)
    long.add_argument(
        "--long-form",
        choices=("auto", "always", "never"),
        default="auto",
        help="process an utterance as one whole recording (aligned in chunks, bounded memory): "
        "always, never, or auto: when it is longer than --long-form-above",
    )
    long.add_argument(
        "--long-form-above",
        type=float,
        default=120.0,
        help="with --long-form auto: seconds above which an utterance is processed as a long recording",
    )
    long.add_argument(
        "--pause-split",
        type=float,
        default=1.0,
        help="a whole recording is punctuated in stretches cut at pauses of at least this many seconds "
        "(1.0: chosen against 0.4 on the mini recipe's dev talks, 3 seeds; benchmarks/longform/README.md)",
    )
    long.add_argument("--chunk-seconds", type=float, default=30.0, help="long-form alignment chunk length")
    long.add_argument("--chunk-overlap", type=float, default=5.0, help="overlap of consecutive chunks, seconds")


def add_stream_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of live captions (``--stream``)."""
    live = parser.add_argument_group("live captions (--stream)", STREAM_DESCRIPTION)
    live.add_argument(
        "--stream",
        action="store_true",
        help="read --wav (a file, or '-': raw 16-bit mono PCM at the recipe's rate on stdin) in chunks with "
        "--ctm's words, and print each word with its mark once it is final or --latency seconds old",
    )
    live.add_argument(
        "--latency",
        type=float,
        default=None,
        help="with --stream: seconds of audio after a word's end after which it is printed even if its "
        "stretch is still open ('inf': only complete stretches, the offline result)",
    )
    live.add_argument("--stream-chunk", type=float, default=0.1, help="with --stream: seconds of audio read at a time")


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """The model options: a trained recipe folder, any of whose files may be given instead."""
    models = parser.add_argument_group("models (--model, or a recipe's files)")
    models.add_argument(
        "--model",
        type=Path,
        default=None,
        help="an exported model folder (punct-export; the recipe's exp/model) instead of a recipe directory",
    )
    models.add_argument("--recipe-dir", type=Path, default=Path("."), help="trained recipe directory (e.g. egs/mustc)")
    models.add_argument("--feat-config", type=Path, default=None, help="[<recipe>/conf/mfcc.yaml]")
    models.add_argument("--am-model", type=Path, default=None, help="[<recipe>/exp/am/best-valid-loss.pt]")
    models.add_argument("--bert-model-dir", type=Path, default=None, help="[<recipe>/exp/bert/best-valid-f1]")
    models.add_argument("--tdnn-model", type=Path, default=None, help="[<recipe>/exp/tdnn/best-valid-f1.pt]")
    models.add_argument(
        "--results-json",
        type=Path,
        default=None,
        help="stage 8's results with chosen_alpha [<recipe>/exp/results/results.json]",
    )
    models.add_argument(
        "--alpha", type=float, default=None, help="ensemble weight of the TDNN [chosen_alpha of stage 8]"
    )


def add_speed_arguments(parser: argparse.ArgumentParser) -> None:
    """The options that trade exactness or portability for speed: int8, bfloat16, NumPy features, ONNX Runtime."""
    speed = parser.add_argument_group("speed (any mode; each trades the recipe's exact numbers for time)")
    speed.add_argument(
        "--quantize",
        nargs="*",
        choices=("bert", "tdnn"),
        default=None,
        help="dynamic int8 quantisation of the Linear layers of these parts (no value: bert); CPU only",
    )
    speed.add_argument(
        "--bert-precision",
        choices=PRECISIONS,
        default="float32",
        help="BERT in float32 (the recipe's, exact), under bfloat16 autocast (CPUs with AVX-512 BF16 / AMX, or "
        "GPUs), or the faster of the two as measured here at start-up (punct.inference.precision)",
    )
    speed.add_argument("--bert-bf16", action="store_true", help="the same as --bert-precision bf16")
    speed.add_argument(
        "--vectorised-features",
        action="store_true",
        help="NumPy MFCC instead of stage 1's kaldi-native-fbank: 3-7x faster features, equal to 1e-3 "
        "but no longer bit-identical to what the recipe scored",
    )
    speed.add_argument(
        "--backend",
        choices=("torch", "onnx"),
        default="torch",
        help="onnx: the AM and the TDNN's conv stack in ONNX Runtime, from --onnx-dir (CPU only)",
    )
    speed.add_argument(
        "--onnx-dir",
        type=Path,
        default=None,
        help="export of python -m punct.bin.export_onnx [<model>/onnx or <recipe>/exp/onnx]",
    )
    speed.add_argument(
        "--onnx-precision",
        choices=("int8", "float32"),
        default="int8",
        help="with --backend onnx: static int8 or float32 graphs",
    )


def add_chain_arguments(parser: argparse.ArgumentParser) -> None:
    """Where the CMVN stats come from (a stream needs fixed stats) and how BERT reads long transcripts: any mode."""
    cmvn = parser.add_argument_group("CMVN and BERT's chunks (any mode)")
    cmvn.add_argument(
        "--cmvn",
        default="speaker",
        help="speaker: CMVN per speaker (utt2spk / cut speaker; else per utterance) over the input; "
        "or a stage-1 stats file (data/fbank/cmvn_train.json) whose speakers are merged into one; or train: "
        "the --model folder's copy of that file",
    )
    cmvn.add_argument(
        "--cmvn-speaker",
        default=None,
        help="with a --cmvn stats file: that speaker's stats alone instead of all speakers merged",
    )
    cmvn.add_argument(
        "--max-length",
        type=int,
        default=0,
        help="BERT input length (tokens incl. specials); 0: the length BERT was trained on",
    )
    cmvn.add_argument(
        "--context", type=int, default=-1, help="BERT sub-tokens of context around chunk words; -1: the training value"
    )


def add_offline_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of offline punctuation (the default mode: utterances in, files out)."""
    offline = parser.add_argument_group("offline (the default mode)", OFFLINE_DESCRIPTION)
    offline.add_argument("--out-dir", type=Path, default=None, help="output folder (optional with --stream)")
    offline.add_argument("--group-size", type=int, default=16, help="utterances per BERT/TDNN batch")
    offline.add_argument("--allow-failures", action="store_true", help="exit 0 even when some utterances failed")
    add_job_arguments(offline)


def add_machine_arguments(parser: argparse.ArgumentParser) -> None:
    """Threads, device and seed."""
    machine = parser.add_argument_group("machine")
    machine.add_argument(
        "--threads",
        "--num-threads",
        dest="num_threads",
        type=int,
        default=1,
        help="CPU threads of torch and of ONNX Runtime",
    )
    machine.add_argument("--device", default="auto", help="auto, cpu or cuda")
    machine.add_argument("--seed", type=int, default=42, help="random seed (the pipeline itself is deterministic)")


def get_parser() -> argparse.ArgumentParser:
    """The options grouped by what they set: models and input, one group per mode, then speed and the machine."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    add_model_arguments(parser)
    add_input_arguments(parser)
    add_chain_arguments(parser)
    add_offline_arguments(parser)
    add_long_form_arguments(parser)
    add_stream_arguments(parser)
    add_speed_arguments(parser)
    add_machine_arguments(parser)
    return parser


def read_requests(args) -> list:
    given = [x for x in (args.wav_scp, args.cuts, args.wav) if x is not None]
    if len(given) != 1:
        raise SystemExit("punctuate: give exactly one of --wav-scp, --cuts, --wav")
    use_text = args.transcript_from == "input" and args.ctm is None
    if args.wav_scp is not None:
        if use_text and args.text is None:
            raise SystemExit("punctuate: --wav-scp needs --text (or --ctm, or --transcript-from am)")
        return from_kaldi(args.wav_scp, args.text if use_text else None, args.utt2spk, args.segments)
    if args.cuts is not None:
        return from_cuts(args.cuts, use_transcripts=use_text)
    transcript = None
    if use_text:
        if (args.text is None) == (args.transcript is None):
            raise SystemExit(
                "punctuate: --wav needs one of --text FILE or --transcript TEXT (or --ctm FILE, or "
                "--transcript-from am)"
            )
        if args.text is not None:
            if not args.text.is_file():
                raise SystemExit(f"punctuate: {args.text}: no such file")
            transcript = " ".join(args.text.read_text(encoding="utf-8").split())
        else:
            transcript = args.transcript
    return [from_pair(args.wav, transcript, args.utt_id)]


def read_word_times(path: Path) -> dict[str, list[TimedWord]]:
    """``--ctm``: each utterance's words with times (``punct.am.ctm.read_ctm``; errors name file:line)."""
    if not path.is_file():
        raise SystemExit(f"punctuate: {path}: no such file")
    try:
        return read_timed_words(path)
    except ValueError as e:
        raise SystemExit(f"punctuate: {e}") from None


def inference_device(args: argparse.Namespace) -> torch.device:
    """``--device`` resolved; ``--quantize`` is refused off the CPU before any model is read."""
    device = resolve_device(args.device)
    if args.bert_bf16 and args.bert_precision not in ("float32", "bf16"):
        raise ValueError(f"--bert-bf16 and --bert-precision {args.bert_precision}: give one of them")
    if (
        args.quantize is not None
        and "bert" in (args.quantize or ("bert",))
        and (args.bert_bf16 or args.bert_precision != "float32")
    ):
        raise ValueError("--quantize bert runs BERT in int8: it does not go with --bert-bf16 / --bert-precision")
    if args.quantize is not None and device.type != "cpu":
        raise ValueError(
            f"--quantize: dynamic int8 quantisation runs on the CPU only, but --device {args.device} "
            f"resolved to {device}; use --device cpu, or --bert-bf16 on the GPU"
        )
    return device


RECIPE_FILE_OPTIONS = ("feat_config", "am_model", "bert_model_dir", "tdnn_model", "results_json")


def load_punctuator(args: argparse.Namespace, device: torch.device, **kwargs) -> Punctuator:
    """The models of ``--model`` (an exported folder) or of ``--recipe-dir`` and its file options."""
    if args.model is None:
        return Punctuator.from_recipe(
            args.recipe_dir,
            feat_config=args.feat_config,
            am_checkpoint=args.am_model,
            bert_dir=args.bert_model_dir,
            tdnn_checkpoint=args.tdnn_model,
            results_json=args.results_json,
            alpha=args.alpha,
            device=device,
            **kwargs,
        )
    given = [f"--{name.replace('_', '-')}" for name in RECIPE_FILE_OPTIONS if getattr(args, name) is not None]
    if given:
        raise SystemExit(f"punctuate: --model reads every file from its folder; drop {', '.join(given)}")
    try:
        return Punctuator.from_model_dir(args.model, alpha=args.alpha, device=device, **kwargs)
    except (FileNotFoundError, ValueError) as e:
        raise SystemExit(f"punctuate: {e}") from None


def cmvn_stats_file(args: argparse.Namespace) -> Path:
    """``--cmvn FILE``, or with ``--cmvn train`` the --model folder's stage-1 stats of train."""
    if args.cmvn != "train":
        return Path(args.cmvn)
    if args.model is None:
        raise SystemExit("punctuate: --cmvn train reads the --model folder's stats; give --model or --cmvn FILE")
    stats = model_cmvn_file(read_model_folder(args.model, kind="efficientpunct"))
    if stats is None:
        raise SystemExit(f"punctuate: {args.model} holds no CMVN stats ({CMVN_FILE}); give --cmvn FILE")
    return stats


def onnx_source(args: argparse.Namespace) -> tuple[Path, Path, Path]:
    """``--backend onnx``: the export folder and the AM and TDNN checkpoints it must have been made from."""
    if args.model is not None:
        model = read_model_folder(args.model, kind="efficientpunct")
        paths = efficientpunct_paths(model)
        folder = args.onnx_dir or model_onnx_dir(model)
        if folder is None:
            raise SystemExit(f"punctuate: {args.model} holds no onnx/ graphs (export with --onnx-dir); give --onnx-dir")
    else:
        paths = recipe_paths(args.recipe_dir, am_checkpoint=args.am_model, tdnn_checkpoint=args.tdnn_model)
        folder = args.onnx_dir or args.recipe_dir / "exp" / "onnx"
    return folder, paths["am_checkpoint"], paths["tdnn_checkpoint"]


def build_punctuator(args: argparse.Namespace, device: torch.device) -> Punctuator:
    """The models on ``device``, quantised or in ONNX Runtime as the options say."""
    punctuator = load_punctuator(
        args,
        device,
        group_size=args.group_size,
        max_length=args.max_length,
        context=args.context,
        global_cmvn=None if args.cmvn == "speaker" else merged_cmvn(cmvn_stats_file(args), args.cmvn_speaker),
        vectorised_features=args.vectorised_features,
        long_form_config=LongFormConfig(
            long_form=args.long_form,
            long_form_above=args.long_form_above,
            chunk_config=ChunkConfig(chunk_seconds=args.chunk_seconds, overlap_seconds=args.chunk_overlap),
            pause_split=args.pause_split,
        ),
    )
    if args.quantize is not None:
        punctuator.quantize(args.quantize or ("bert",))
    set_bert_precision(punctuator, "bf16" if args.bert_bf16 else args.bert_precision)
    if args.backend == "onnx":
        folder, am_checkpoint, tdnn_checkpoint = onnx_source(args)
        punctuator.use_onnx(
            folder, args.onnx_precision, args.num_threads, am_checkpoint=am_checkpoint, tdnn_checkpoint=tdnn_checkpoint
        )
    return punctuator


def read_stream_segments(path: Path, utt_id: str) -> list[tuple[float, float | None]]:
    """``--segments``: the (start, end) seconds of the lines on recording ``utt_id``, in time order (end None: to
    the end of the audio); a malformed line is an error naming file:line."""
    from punct.io.kaldi_data_dir import read_segments

    try:
        table = read_segments(path)
    except (FileNotFoundError, ValueError) as e:
        raise SystemExit(f"punctuate: {e}") from None
    mine = sorted((seg.start, seg.end) for seg in table.values() if seg.recording_id == utt_id)
    if not mine:
        raise SystemExit(f"punctuate --stream: no segment of recording {utt_id!r} in {path}")
    return mine


def stream(args: argparse.Namespace) -> int:
    """``--stream``: one audio stream with its CTM, words printed as they are ready (``punct.inference.streaming``);
    with --out-dir, ``text``, ``punct.jsonl`` (as offline) and ``stream.jsonl`` (when each word was printed)."""
    if args.wav is None or args.ctm is None or args.latency is None:
        raise SystemExit("punctuate --stream needs --wav FILE|- (the audio), --ctm FILE (its words) and --latency S")
    if args.cmvn == "speaker":
        raise SystemExit(
            "punctuate --stream needs fixed CMVN stats: --cmvn <recipe>/data/fbank/cmvn_train.json (with --model: "
            "--cmvn train)"
        )
    table = read_word_times(args.ctm)
    utt_id = args.utt_id or (next(iter(table)) if len(table) == 1 else Path(str(args.wav)).stem)
    if utt_id not in table:
        raise SystemExit(f"punctuate --stream: no words of {utt_id!r} in {args.ctm} (give --utt-id)")
    spans = None if args.segments is None else read_stream_segments(args.segments, utt_id)
    punctuator = build_punctuator(args, inference_device(args))
    segments = None if spans is None else stream_segments(spans, punctuator.sampling_rate, str(args.segments))
    streamer = StreamingPunctuator(punctuator, args.latency, utt_id, segments)
    chunk = max(1, int(round(args.stream_chunk * streamer.rate)))
    from_stdin = str(args.wav) == "-"
    chunks = pcm_chunks(sys.stdin.buffer, chunk) if from_stdin else wav_chunks(args.wav, chunk, streamer.rate)
    printer = LinePrinter(sys.stdout)
    words, stats = run_stream(streamer, chunks, table[utt_id], printer)
    printer.close()
    summary = stats.summary()
    logging.info(
        "%s: %d words from %.1f s of audio; latency %s s: %d final; RTF %.4f (per chunk: p95 %.3f, max %.3f; CPU %.4f)",
        utt_id,
        len(words),
        summary["audio_seconds"],
        args.latency,
        sum(w.final for w in words),
        summary["rtf"],
        summary["rtf_chunk_p95"],
        summary["rtf_chunk_max"],
        summary["rtf_cpu"],
    )
    if args.out_dir is not None:
        write_stream_outputs(args.out_dir, stream_result(words, utt_id, punctuator.alpha, streamer.seconds), words)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_and_log(get_parser(), argv)
    check_job(args.job, args.nj)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.num_threads)
    if args.cmvn_speaker is not None and args.cmvn == "speaker":
        raise SystemExit("punctuate: --cmvn-speaker picks a speaker of a --cmvn stats file; give --cmvn FILE")
    if args.stream:
        return stream(args)
    if args.out_dir is None:
        raise SystemExit("punctuate: --out-dir is needed (except with --stream)")
    word_times = read_word_times(args.ctm) if args.ctm is not None else None
    requests = speaker_share(read_requests(args), args.job, args.nj)
    punctuator = build_punctuator(args, inference_device(args))
    start = time.perf_counter()
    lines = collect_outputs(punctuator.run(requests, word_times), echo=args.wav is not None)
    wall = time.perf_counter() - start
    paths = write_outputs(args.out_dir, f".{args.job}" if args.nj > 1 else "", lines)
    parts = ", ".join(f"{k} {v:.2f}" for k, v in punctuator.timer.seconds.items())
    logging.info(
        "%d of %d utterances punctuated (%d failed); %.1f s of audio in %.1f s (RTF %.4f; seconds: %s)",
        len(lines.text),
        len(requests),
        len(lines.failed),
        lines.audio_seconds,
        wall,
        wall / max(lines.audio_seconds, 1e-9),
        parts,
    )
    logging.info("wrote %s, %s, %s", *paths)
    if lines.failed and not args.allow_failures:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
