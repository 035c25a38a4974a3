#!/usr/bin/env bash
# ParCzech stage 4: the frozen acoustic model's pooled frames of every segment, for a model config with
# sound_encoder: am, in nj jobs, merged into <out-dir>/<split>/frames.scp; with --random-audio-seed N also those of
# the random-audio control trained with --seed N (its permuted samples) in <out-dir>/random_audio.  The cross-attention
# models read them (local/train_mm.sh --am-frames) instead of each running the AM over every segment itself.
# Nothing to do for sound_encoder: conv.  Skipped when done with the same config, AM and segments
# (utils/fresh.sh); an interrupted dump of the same inputs keeps its finished shards.
set -euo pipefail

# Begin configuration section.
nj=2                       # parallel jobs
cmd=utils/run.pl           # job runner ($decode_cmd)
splits="train dev test"    # splits to dump
model_config=conf/mm.yaml  # MmConfig values: sound_encoder, am_layer, am_frame_stride, sample_rate
random_audio_seed=         # also the random-audio control's frames, for its --seed; empty: not
# End configuration section.

echo "$0 $*"
. ./path.sh
. utils/parse_options.sh
. utils/device.sh   # config_value
. utils/fresh.sh

if [ $# -ne 3 ]; then
  echo "Usage: $0 [options] <segments-dir> <am-dir> <out-dir>"
  echo "e.g.:  $0 --nj 2 --cmd \"\$decode_cmd\" --model-config conf/mm_small.yaml data/segments exp/am exp/am_frames"
  echo "main options: --nj N --cmd CMD --splits \"train dev test\" --model-config FILE --random-audio-seed N"
  exit 1
fi
data=$1
am=$2/best-valid-loss.pt
dir=$3

if [ "$(config_value $model_config sound_encoder conv)" != am ]; then
  echo "$0: $model_config reads no AM frames (sound_encoder is not am): nothing to dump"
  exit 0
fi
for f in $model_config $am $2/mfcc.yaml; do
  [ -f $f ] || { echo "$0: no such file $f" >&2; exit 1; }
done
for split in $splits; do
  for kind in supervisions recordings; do
    f=$data/parczech_${kind}_${split}.jsonl.gz
    [ -f $f ] || { echo "$0: no such file $f" >&2; exit 1; }
  done
done

options=(--config $model_config --am-dir $2 --data-dir $data --prefix parczech --splits "${splits// /,}" --out-dir $dir --nj $nj)
[ -n "$random_audio_seed" ] && options+=(--random-audio-seed $random_audio_seed)
inputs="$model_config $am $2/mfcc.yaml"
for split in $splits; do
  inputs="$inputs $data/parczech_supervisions_${split}.jsonl.gz $data/parczech_recordings_${split}.jsonl.gz"
done
stamp=$(make_stamp "${options[*]}" $inputs)
if is_done_and_fresh $dir/.done "$stamp" "computing again"; then
  exit 0
fi
begin_stamped $dir/.done "$stamp" false false $dir/*/frames.* $dir/frames.json $dir/random_audio
$cmd JOB=1:$nj $dir/log/dump.JOB.log python -m punct.bin.dump_am_frames "${options[@]}" --job JOB
$cmd $dir/log/merge.log python -m punct.bin.dump_am_frames "${options[@]}" --merge
finish_stamped $dir/.done "$stamp"
for scp in $dir/*/frames.scp $dir/random_audio/*/frames.scp; do
  if [ -f $scp ]; then echo "$0: $(wc -l < $scp) segments -> $scp"; fi   # no random_audio: the glob stays as it is
done
