#!/usr/bin/env bash
# Per-word posteriors of a trained punctuation TDNN for some splits, fully convolutionally (JOB=1:nj),
# merged into <tdnn-dir>/post/<split>/post.scp.  (egs/mustc/local/score.sh calls it, then scores;
# egs/parczech stage 5 scores with its local/ensemble_itn.sh.)  Posteriors older than the model are redone.
set -euo pipefail

# Begin configuration section.
cmd=utils/run.pl       # job runner
nj=2                   # posterior jobs per split
splits="dev test"      # splits to decode
cuts_pattern=          # required: cut manifest in <cuts-dir>, {split} = split name (e.g. "mustc_cuts_{split}_ali.jsonl.gz")
device=cpu             # device of the posterior jobs
# End configuration section.

echo "$0 $*"
. ./path.sh
. utils/parse_options.sh

if [ $# -ne 4 ]; then
  echo "Usage: $0 [options] <cuts-dir> <am-emb-dir> <text-emb-dir> <tdnn-dir>"
  echo "e.g.: $0 --cuts-pattern \"parczech_cuts_{split}.jsonl.gz\" data/fbank_segments exp/emb_am_segments exp/emb_text exp/efficientpunct_tdnn"
  echo "Main options: --nj N, --cmd CMD, --splits \"dev test\", --cuts-pattern PATTERN (required), --device cpu|cuda"
  exit 1
fi
[ -n "$cuts_pattern" ] || { echo "$0: --cuts-pattern is required (e.g. --cuts-pattern \"mustc_cuts_{split}_ali.jsonl.gz\")" >&2; exit 1; }
cuts_dir=$1
am_dir=$2
text_dir=$3
tdnn_dir=$4

model=$tdnn_dir/best-valid-f1.pt
[ -f $model ] || { echo "$0: no such file $model" >&2; exit 1; }
for split in $splits; do
  for f in $cuts_dir/${cuts_pattern//\{split\}/$split} $am_dir/$split/emb.scp $text_dir/$split/vec.scp; do
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
    python -m punct.bin.decode_tdnn --model $model --split $split --cuts-dir $cuts_dir --cuts-pattern "$cuts_pattern" \
      --am-emb-dir $am_dir --bert-emb-dir $text_dir --out-dir $post --device $device --job JOB --nj $nj
  for j in $(seq $nj); do cat $post/post.$j.scp; done > $post/post.scp.tmp
  mv $post/post.scp.tmp $post/post.scp
  echo "$0: $split: $(wc -l < $post/post.scp) utterances -> $post/post.scp"
done
