#!/usr/bin/env bash
# Stage 8: per-word TDNN posteriors of the dev and test splits (fully convolutional, JOB=1:nj),
# then BERT-only / TDNN / ensemble scores with alpha chosen on dev, RESULTS.md, JSON and plots.
set -euo pipefail

# Begin configuration section.
cmd=utils/run.pl       # job runner for the posterior jobs
nj=2                   # posterior jobs per split
splits="dev test"      # first = where alpha is chosen, second = reported
device=cpu             # device of the posterior jobs
am_model_dir=exp/am    # for the parameter counts only
bert_model_dir=exp/bert
alpha_step=0.1
paper_alpha=0.4
# End configuration section.

echo "$0 $*"
. ./path.sh
. utils/parse_options.sh

if [ $# -ne 5 ]; then
  echo "Usage: $0 [options] <cuts-dir> <am-emb-dir> <bert-emb-dir> <tdnn-dir> <out-dir>"
  echo "e.g.: $0 data/fbank exp/emb_am exp/emb_bert exp/tdnn exp/results"
  echo "Main options: --nj N, --cmd CMD, --splits \"dev test\", --device cpu|cuda"
  exit 1
fi
cuts_dir=$1
am_dir=$2
bert_dir=$3
tdnn_dir=$4
dir=$5

set -- $splits
dev_split=$1
test_split=$2
model=$tdnn_dir/best-valid-f1.pt
for f in $model; do
  [ -f $f ] || { echo "$0: no such file $f" >&2; exit 1; }
done
for split in $splits; do
  for f in $cuts_dir/mustc_cuts_${split}_ali.jsonl.gz $am_dir/$split/emb.scp $bert_dir/$split/vec.scp $bert_dir/$split/post.scp; do
    [ -f $f ] || { echo "$0: no such file $f" >&2; exit 1; }
  done
done

for split in $splits; do
  post=$tdnn_dir/post/$split
  # Posteriors of an older model are stale: redo them when the model is newer.
  if [ -f $post/post.scp ] && [ $model -nt $post/post.scp ]; then
    rm -f $post/post.*.scp.done $post/post.scp
  fi
  $cmd JOB=1:$nj $post/log/decode.JOB.log \
    python -m punct.bin.decode_tdnn --model $model --split $split --cuts-dir $cuts_dir \
      --am-emb-dir $am_dir --bert-emb-dir $bert_dir --out-dir $post --device $device --job JOB --nj $nj
  for j in $(seq $nj); do cat $post/post.$j.scp; done > $post/post.scp.tmp
  mv $post/post.scp.tmp $post/post.scp
done

python -m punct.bin.score_ensemble --cuts-dir $cuts_dir --bert-emb-dir $bert_dir --tdnn-post-dir $tdnn_dir/post \
  --dev-split $dev_split --test-split $test_split --alpha-step $alpha_step --paper-alpha $paper_alpha \
  --am-dir $am_model_dir --bert-dir $bert_model_dir --tdnn-model $model --out-dir $dir

echo "$0: wrote $dir/RESULTS.md"
