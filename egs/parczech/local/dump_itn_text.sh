#!/usr/bin/env bash
# ParCzech stage 5 (EfficientPunct): per-word vectors and punctuation + case posteriors of the text-only
# model (exp/text) for every split of the segments, in nj jobs, merged into <out-dir>/<split>/{vec,post}.scp.
# Finished shards are skipped; shards older than the model are redone.
set -euo pipefail

# Begin configuration section.
nj=2                     # parallel jobs per split
cmd=utils/run.pl         # job runner ($decode_cmd)
splits="train dev test"  # splits to dump
device=auto              # auto, cpu or cuda
# End configuration section.

echo "$0 $*"
. ./path.sh
. utils/parse_options.sh

if [ $# -ne 3 ]; then
  echo "Usage: $0 [options] <segments-dir> <text-exp-dir> <out-dir>"
  echo "e.g.:  $0 --nj 2 --cmd \"\$decode_cmd\" data/segments exp/text exp/emb_text"
  echo "main options: --nj N --cmd CMD --splits \"train dev test\" --device auto|cpu|cuda"
  exit 1
fi
segments_dir=$1
model=$2/best-valid-f1.pt
dir=$3

for f in $model; do
  [ -f $f ] || { echo "$0: no such file $f" >&2; exit 1; }
done
for split in $splits; do
  f=$segments_dir/parczech_supervisions_${split}.jsonl.gz
  [ -f $f ] || { echo "$0: no such file $f" >&2; exit 1; }
done

for split in $splits; do
  opt=
  if [ -f $dir/$split/post.scp ] && [ $model -nt $dir/$split/post.scp ]; then opt=--overwrite; fi
  $cmd JOB=1:$nj $dir/$split/log/dump.JOB.log \
    python -m punct.bin.dump_itn_text --checkpoint $model --supervisions $segments_dir/parczech_supervisions_${split}.jsonl.gz \
      --out-dir $dir/$split --device $device --job JOB --nj $nj $opt
  for kind in vec post; do
    for j in $(seq $nj); do cat $dir/$split/$kind.$j.scp; done > $dir/$split/$kind.scp.tmp
    # an unchanged scp keeps its time stamp, so that steps/train_tdnn.sh does not retrain for nothing
    if cmp -s $dir/$split/$kind.scp.tmp $dir/$split/$kind.scp; then rm $dir/$split/$kind.scp.tmp
    else mv $dir/$split/$kind.scp.tmp $dir/$split/$kind.scp; fi
  done
  echo "$0: $split: $(wc -l < $dir/$split/post.scp) segments -> $dir/$split/{vec,post}.scp"
done
