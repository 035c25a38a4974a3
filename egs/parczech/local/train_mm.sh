#!/usr/bin/env bash
# Trains one ParCzech punctuation + case model (egs/parczech stage 4): the text-only baseline
# (--model text) or the cross-attention multimodal model (--model mm, with --positional and
# --random-audio variants), then decodes the dev and test segments with the best dev model.
# A config with sound_encoder: am uses the trained acoustic model --am-dir (frozen) as the audio encoder.
# A finished run whose options and inputs are unchanged is skipped; an interrupted one continues from its
# newest epoch-N.pt; a changed one retrains (or continues with --resume true): utils/fresh.sh.
# (In egs/parczech: the segments are parczech_{supervisions,recordings}_<split>.jsonl.gz.)
set -euo pipefail

# Begin configuration section.
. utils/train_options.sh   # cmd device nproc torchrun_opts amp seed resume overwrite
model=mm               # text or mm
model_config=conf/mm.yaml  # MmConfig values (conf/mm_mini.yaml for the mini corpus)
positional=false       # shared word-position embeddings on audio frames and text tokens
random_audio=false     # permute the audio samples (the thesis' random-audio control)
bert_model=            # text encoder folder or hub name; empty: the config's value
am_dir=                # the acoustic model of a config with sound_encoder: am (exp/am format); ignored otherwise
am_frames=             # sound_encoder: am: the AM's frames of every segment from <dir>/<split>/frames.scp
                       # (local/dump_am_frames.sh) instead of running the AM; random audio: from <dir>/random_audio
                       # (dumped with --random-audio-seed of this --seed); ignored for text only
num_threads=0          # torch threads (0: the config's value)
num_workers=           # DataLoader workers per process; empty: the config's, on cuda at least 2 (not with sound_encoder: am,
                       # whose frames are cached in the process that reads the data)
# End configuration section.

echo "$0 $*"
. ./path.sh
. utils/parse_options.sh
. utils/device.sh
. utils/fresh.sh

if [ $# -ne 2 ]; then
  echo "Usage: $0 [options] <segments-dir> <exp-dir>"
  echo "e.g.: $0 --model mm --positional true --model-config conf/mm_mini.yaml data/segments exp/mm_pe"
  echo "Main options: --model text|mm, --model-config FILE, --positional true|false, --random-audio true|false,"
  echo "              --bert-model DIR|NAME, --am-dir DIR (sound_encoder: am), --am-frames DIR,"
  echo "              $(train_usage)"
  exit 1
fi
data=$1
dir=$2

for f in $model_config $data/parczech_supervisions_train.jsonl.gz $data/parczech_supervisions_dev.jsonl.gz \
    $data/parczech_supervisions_test.jsonl.gz $data/parczech_recordings_train.jsonl.gz; do
  [ -f $f ] || { echo "$0: no such file $f" >&2; exit 1; }
done

opts=()
inputs="$model_config"
sound_encoder=$(python3 -c '
import sys, yaml
config = yaml.safe_load(open(sys.argv[1])) or {}
if not isinstance(config, dict):
    sys.exit(f"{sys.argv[1]}: not a YAML mapping of MmConfig values")
print(config.get("sound_encoder", "conv"))' $model_config)
if [ "$model" = mm ] && [ "$sound_encoder" = am ]; then
  # The frozen AM's frames are the audio (thesis 5.5): its absolute path goes into the model's config (and
  # so into every checkpoint), and its files into the stamp, so that a retrained AM retrains this model.
  for f in $am_dir/best-valid-loss.pt $am_dir/mfcc.yaml; do
    [ -f $f ] || { echo "$0: $model_config has sound_encoder am, but there is no $f (--am-dir; run.sh: stage 1)" >&2; exit 1; }
  done
  opts+=(--am-dir "$(readlink -f $am_dir)")
  inputs="$inputs $am_dir/best-valid-loss.pt $am_dir/mfcc.yaml"
  if [ -n "$am_frames" ]; then
    [ "$random_audio" = true ] && am_frames=$am_frames/random_audio   # local/dump_am_frames.sh --random-audio-seed
    for f in $am_frames/{train,dev,test}/frames.scp $am_frames/frames.json; do
      [ -f $f ] || { echo "$0: no such file $f (--am-frames: local/dump_am_frames.sh, for random audio with --random-audio-seed $seed)" >&2; exit 1; }
      inputs="$inputs $f"
    done
    opts+=(--am-frames "$(readlink -f $am_frames)")
  fi
fi
[ -n "$bert_model" ] && opts+=(--bert-model "$bert_model")
[ "$num_threads" -gt 0 ] && opts+=(--num-threads "$num_threads")
[ -n "$amp" ] && opts+=(--amp "$amp")   # empty: the model config's amp
job_threads=$( [ "$num_threads" -gt 0 ] && echo $num_threads || echo 1 )
if [ "$device" = cuda ]; then
  if [ -z "$num_workers" ] && [ "$sound_encoder" = am ]; then
    num_workers=$(config_value $model_config num_workers 0)
  fi
  num_workers=$(loader_workers cuda "$num_workers" $model_config)
  job_threads=$(gpu_job_threads $nproc $num_workers)   # one CPU per rank and per loader worker
fi
[ -n "$num_workers" ] && opts+=(--num-workers "$num_workers")
opts=(--model $model --prefix parczech --config $model_config --positional $positional --random-audio $random_audio --data-dir $data
      --exp-dir $dir --device $device --seed $seed "${opts[@]}")

for split in train dev test; do
  inputs="$inputs $data/parczech_supervisions_${split}.jsonl.gz $data/parczech_recordings_${split}.jsonl.gz"
done
stamp=$(make_stamp "nproc=$nproc ${opts[*]}" $inputs)
if ! $overwrite && is_done_and_fresh $dir/.done "$stamp"; then
  exit 0
fi
begin_stamped $dir/.done "$stamp" $resume $overwrite $dir/epoch-*.pt $dir/best-valid-f1.pt $dir/best-valid-f1.json $dir/decode
mkdir -p $dir/log

$cmd --num-threads $job_threads $dir/log/train_mm.log \
  $(launcher $nproc $torchrun_opts) -m punct.bin.train_mm "${opts[@]}" --resume
finish_stamped $dir/.done "$stamp"

echo "$0: trained $dir/best-valid-f1.pt; predictions in $dir/decode"
