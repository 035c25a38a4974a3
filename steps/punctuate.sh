#!/usr/bin/env bash
# Punctuates new audio with a trained recipe (features, AM layer 12, forced alignment, BERT,
# punctuation TDNN, ensemble at stage 8's alpha), JOB=1:nj through $cmd, then merges the jobs'
# outputs into <out-dir>/text (<utt> <punctuated text>), <out-dir>/punct.jsonl (per-word posteriors)
# and <out-dir>/failed (<utt> <reason>).  Exits 1 when any utterance failed (the others are still written).
# A whole recording (minutes to hours; wav.scp without segments, its whole transcript in text) is aligned in
# 30 s chunks and punctuated one pause-delimited stretch at a time (--long-form; README in egs/mustc/local).
set -euo pipefail

# Begin configuration section.
cmd=utils/run.pl        # job runner ($decode_cmd in a recipe); on cuda each job asks it for one GPU (--gpu 1)
nj=2                    # parallel jobs (utterances are split evenly; per-speaker CMVN within a job)
recipe_dir=.            # trained recipe directory (conf/, exp/am, exp/bert, exp/tdnn, exp/results)
model=                  # an exported model folder (punct-export; a recipe's exp/model) instead of --recipe-dir
transcript_from=input   # input: the data dir's text; am: the acoustic model's greedy hypothesis
alpha=                  # ensemble weight of the TDNN; empty: stage 8's choice (exp/results/results.json)
device=cpu              # auto, cpu or cuda (auto: cuda when the backend offers a GPU, utils/device.sh)
num_threads=1           # torch threads per job
quantize=false          # dynamic int8 quantisation of BERT's Linear layers
bert_bf16=false         # BERT under bfloat16 autocast (CPUs with AVX-512 BF16 / AMX, GPUs)
bert_precision=float32  # float32 (exact), bf16, or fastest: the faster of the two as measured at start-up
vectorised_features=false  # NumPy MFCC instead of stage 1's kaldi-native-fbank (faster; equal to 1e-3, not bit-identical)
backend=torch           # onnx: AM + TDNN in ONNX Runtime from <recipe-dir>/exp/onnx (python -m punct.bin.export_onnx)
onnx_precision=int8     # with backend=onnx: int8 or float32
cmvn=speaker            # speaker: per-speaker CMVN over the data (utt2spk); or a stats file (data/fbank/cmvn_train.json)
long_form=auto          # whole recordings aligned in 30 s chunks (bounded memory): auto (above long_form_above), always, never
long_form_above=120     # seconds; with long_form=auto, longer utterances are processed as whole recordings
ctm=                    # words + times of an external recogniser ('<utt> 1 <start> <dur> <word>'); no text, no alignment
# End configuration section.

echo "$0 $*"
. ./path.sh
. utils/parse_options.sh
. utils/device.sh

if [ $# -ne 2 ]; then
  echo "Usage: $0 [options] <data-dir> <out-dir>"
  echo "  <data-dir> holds wav.scp and text (optionally segments and utt2spk), Kaldi style."
  echo "e.g.: $0 --nj 2 --cmd \"\$decode_cmd\" data/new exp/punctuate/new"
  echo "Main options: --nj N, --cmd CMD, --device cpu|cuda|auto, --recipe-dir DIR or --model DIR (punct-export's folder),"
  echo "  --transcript-from input|am, --alpha A, --quantize true,"
  echo "  --backend onnx [--onnx-precision int8|float32], --bert-bf16 true, --bert-precision fastest,"
  echo "  --long-form auto|always|never [--long-form-above 120] (a whole recording with its whole transcript),"
  echo "  --ctm FILE (an external recogniser's words and times instead of <data-dir>/text)"
  exit 1
fi
data=$1
dir=$2

need="$data/wav.scp"
[ "$transcript_from" = input ] && [ -z "$ctm" ] && need="$need $data/text"
[ -n "$ctm" ] && need="$need $ctm"
if [ -n "$model" ]; then
  need="$need $model/punct_export.json"   # punctuate checks the folder's files itself, naming any missing one
else
  need="$need $recipe_dir/exp/am/best-valid-loss.pt $recipe_dir/exp/bert/best-valid-f1/punct_model.json"
  need="$need $recipe_dir/exp/tdnn/best-valid-f1.pt"
fi
for f in $need; do
  [ -f $f ] || { echo "$0: no such file $f" >&2; exit 1; }
done
if [ "$backend" = onnx ] && [ -z "$model" ] && [ ! -f $recipe_dir/exp/onnx/export.json ]; then
  echo "$0: no ONNX export in $recipe_dir/exp/onnx; make it with" >&2
  echo "  python -m punct.bin.export_onnx --recipe-dir $recipe_dir --cuts <train cuts, e.g. data/fbank/mustc_cuts_train.jsonl.gz>" >&2
  exit 1
fi
mkdir -p $dir/log
device=$(resolve_device $device) || exit 1
# Every job asks its runner for its CPU threads and, on cuda, for a GPU of its own (run.pl: CUDA_VISIBLE_DEVICES,
# slurm.pl: --gres=gpu:1), whatever runner --cmd names.
cmd="$cmd --num-threads $num_threads"
[ "$device" = cuda ] && cmd="$cmd --gpu 1"

[ -n "$model" ] && models=(--model $model) || models=(--recipe-dir $recipe_dir)
opts=("${models[@]}" --wav-scp $data/wav.scp --transcript-from $transcript_from --device $device
      --num-threads $num_threads --out-dir $dir --allow-failures --cmvn $cmvn --long-form $long_form
      --long-form-above $long_form_above)
[ "$transcript_from" = input ] && [ -z "$ctm" ] && opts+=(--text $data/text)
[ -n "$ctm" ] && opts+=(--ctm $ctm)
[ -f $data/utt2spk ] && opts+=(--utt2spk $data/utt2spk)
[ -f $data/segments ] && opts+=(--segments $data/segments)
[ -n "$alpha" ] && opts+=(--alpha $alpha)
$quantize && opts+=(--quantize)
$bert_bf16 && opts+=(--bert-bf16)
[ "$bert_precision" != float32 ] && opts+=(--bert-precision $bert_precision)
$vectorised_features && opts+=(--vectorised-features)
[ "$backend" = onnx ] && opts+=(--backend onnx --onnx-precision $onnx_precision)

$cmd JOB=1:$nj $dir/log/punctuate.JOB.log \
  python -m punct.bin.punctuate "${opts[@]}" --job JOB --nj $nj

for name in text punct.jsonl failed; do
  base=${name%.jsonl}; ext=${name#$base}
  for n in $(seq $nj); do
    if [ $nj -gt 1 ]; then cat $dir/$base.$n$ext; else cat $dir/$name; fi
  done > $dir/$name.tmp
  mv $dir/$name.tmp $dir/$name
done
if [ $nj -gt 1 ]; then
  for n in $(seq $nj); do rm -f $dir/text.$n $dir/punct.$n.jsonl $dir/failed.$n; done
fi

num_ok=$(wc -l < $dir/text)
num_failed=$(wc -l < $dir/failed)
echo "$0: $num_ok utterances punctuated in $dir/text (posteriors: $dir/punct.jsonl)"
if [ $num_failed -gt 0 ]; then
  echo "$0: $num_failed utterance(s) failed, listed in $dir/failed:" >&2
  head -n 5 $dir/failed >&2
  exit 1
fi
