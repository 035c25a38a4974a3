#!/usr/bin/env bash
# Stage 3: CTC forced alignment of every supervision's reference words with the trained AM, in nj jobs.
# Writes <fbank-dir>/<prefix>_cuts_<split>_ali.jsonl.gz (word AlignmentItems), <am-dir>/ali/<split>.ctm,
# <split>.failed (unalignable cuts with reasons) and, given --word-times-dir, <split>.ali_error.txt.
set -euo pipefail

# Begin configuration section.
nj=4                     # parallel jobs
cmd=utils/run.pl         # job runner of the JOB=1:nj network jobs ($decode_cmd; on cuda $cuda_cmd --gpu 1)
cpu_cmd=                 # job runner of the merge, which needs no GPU ($decode_cmd); empty: --cmd without GPUs
splits="train dev test"  # splits to align
prefix=                  # required: cut manifest name prefix (e.g. mustc, parczech)
max_fail=0.05            # fail when a larger share of a split cannot be aligned
min_aligned=1            # fail when fewer cuts of a split are aligned
word_times_dir=          # corpus data folder with <split>/txt/<split>.word_times.jsonl (mini corpus)
device=auto              # auto, cpu or cuda
overwrite=false          # redo finished jobs
# End configuration section.

echo "$0 $@"
. ./path.sh
. utils/parse_options.sh

if [ $# -ne 2 ]; then
  echo "Usage: $0 [options] <fbank-dir> <am-dir>"
  echo "e.g.:  $0 --prefix mustc --nj 4 --cmd \"\$decode_cmd\" --word-times-dir data/corpus_mini_natural/data data/fbank exp/am"
  echo "main options: --prefix NAME (required) --nj N --cmd CMD --cpu-cmd CMD --splits \"train dev test\" --max-fail 0.05 --min-aligned 1 --word-times-dir DIR"
  exit 1
fi
[ -n "$prefix" ] || { echo "$0: --prefix is required (manifests are named <prefix>_..._<split>.jsonl.gz, e.g. --prefix mustc)" >&2; exit 1; }
fbank_dir=$1
dir=$2

for f in $dir/best-valid-loss.pt; do
  [ -f $f ] || { echo "$0: no such file $f"; exit 1; }
done
todo=
for split in $splits; do
  for f in $fbank_dir/${prefix}_cuts_${split}.jsonl.gz $fbank_dir/cmvn_${split}.json; do
    [ -f $f ] || { echo "$0: no such file $f"; exit 1; }
  done
  # Finished only when aligned after the model was trained: a retrained AM realigns.
  done_marker=$fbank_dir/${prefix}_cuts_${split}_ali.jsonl.gz.done
  if [ -f $done_marker ] && [ $done_marker -nt $dir/best-valid-loss.pt ] && ! $overwrite; then
    echo "$0: split $split is aligned; skipping"
  else
    todo="$todo $split"
  fi
done
[ -z "$todo" ] && { echo "$0: nothing to do"; exit 0; }
opt=
$overwrite && opt=--overwrite
wt=
[ -n "$word_times_dir" ] && wt="--word-times-dir $word_times_dir"

$cmd JOB=1:$nj $dir/ali/log/align.JOB.log \
  python -m punct.bin.align --fbank-dir $fbank_dir --am-dir $dir --splits $todo --prefix $prefix \
    --device $device --job JOB --nj $nj $opt
${cpu_cmd:-$cmd --gpu 0} $dir/ali/log/merge.log \
  python -m punct.bin.align --fbank-dir $fbank_dir --am-dir $dir --splits $todo --prefix $prefix \
    --nj $nj --merge --max-fail $max_fail --min-aligned $min_aligned $wt || {
  grep -h "ERROR" $dir/ali/log/merge.log | sed "s|^.*\] |$0: |" >&2
  echo "$0: stopped: too little aligned (see $dir/ali/log/merge.log)" >&2
  exit 1
}
grep -h "cuts aligned\|word-start error" $dir/ali/log/merge.log | sed "s|^.*\] |$0: |" || true
