#!/usr/bin/env bash
# Trains the multimodal model of stage 4 under variants of its config on a finished run's data (data/segments and
# the AM), so that a conf/mm*.yaml value is chosen on dev: one training per variant and seed in
# <out-dir>/<variant>_s<seed>, then the dev table of python -m punct.bin.mm_dev_table in <out-dir>/dev_table.md.
# Every variant keeps its last 3 epochs and averages them (average_epochs 3), so that one training also gives the
# dev scores of the dev-loss epoch, the dev-F1 epoch, the last epoch and the average.
#
#   local/mm_variants.sh --seeds "42 2" exp/variants base: cw0:punct_class_weight_power=0 s4:am_frame_stride=4
set -euo pipefail

# Begin configuration section.
model_config=conf/mm_small.yaml  # the config the variants change
seeds="42 2"                     # one training per variant and seed
jobs=2                           # trainings at once (one thread each)
am_dir=exp/am                    # the run's acoustic model (sound_encoder: am)
amp=                             # --amp of every training; empty: the config's
# End configuration section.

echo "$0 $*"
. ./path.sh
. utils/parse_options.sh

if [ $# -lt 2 ]; then
  echo "Usage: $0 [options] <out-dir> <name>:[key=value,key=value...] ..."
  echo "e.g.: $0 --seeds \"42 2\" exp/variants base: full:mm_attention=full conv:sound_encoder=conv"
  echo "Options: --model-config YAML, --seeds \"N ...\", --jobs N, --am-dir DIR, --amp MODE"
  exit 1
fi
out=$1; shift
mkdir -p $out

trainings=()
for variant in "$@"; do
  name=${variant%%:*}
  [[ "$variant" == *:* ]] || { echo "$0: a variant is <name>:[key=value,...], got '$variant'" >&2; exit 1; }
  python3 - $model_config $out/$name.yaml "${variant#*:}" <<'PY'
import sys

import yaml

config = yaml.safe_load(open(sys.argv[1])) or {}
for item in filter(None, sys.argv[3].split(",")):
    key, sep, value = item.partition("=")
    if not sep or key not in config:
        sys.exit(f"{sys.argv[1]}: no value {key!r} to change (a variant item is key=value)")
    config[key] = yaml.safe_load(value)
config.update(keep_last_epochs=3, average_epochs=3)
with open(sys.argv[2], "w") as f:
    yaml.safe_dump(config, f, sort_keys=False)
PY
  for seed in $seeds; do trainings+=("$name $seed"); done
done

train_one() {  # <variant> <seed>
  local log=$out/$1_s$2.log
  if local/train_mm.sh --model mm --model-config $out/$1.yaml --am-dir $am_dir --device cpu --seed $2 \
      ${amp:+--amp $amp} data/segments $out/$1_s$2 > $log 2>&1; then
    echo "$0: trained $out/$1_s$2"
  else
    echo "$0: $out/$1_s$2 failed: see $log" >&2
    return 1
  fi
}

failed=0 running=0
for training in "${trainings[@]}"; do
  train_one $training &
  running=$((running + 1))
  if [ $running -ge $jobs ]; then
    wait -n || failed=1
    running=$((running - 1))
  fi
done
while [ $running -gt 0 ]; do
  wait -n || failed=1
  running=$((running - 1))
done
[ $failed = 0 ] || exit 1
dirs=()
for training in "${trainings[@]}"; do
  set -- $training
  dirs+=($out/$1_s$2)
done
python -m punct.bin.mm_dev_table "${dirs[@]}" > $out/dev_table.md
cat $out/dev_table.md
