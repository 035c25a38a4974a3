#!/usr/bin/env bash
# Stage 4: layer-12 (tdnnf12) frame embeddings, one (num_frames x dim) matrix per cut id at 100 frames/s,
# into kaldiio shards <out-dir>/<split>/emb.JOB.{ark,scp}, merged into <out-dir>/<split>/emb.scp.
# Finished shards (emb.JOB.scp.done) are skipped; an interrupted job leaves no .done and is redone.
set -euo pipefail

# Begin configuration section.
nj=4                     # parallel jobs (one shard per split and job)
cmd=utils/run.pl         # job runner of the JOB=1:nj network jobs ($decode_cmd; on cuda $cuda_cmd --gpu 1)
cpu_cmd=                 # job runner of the merge, which needs no GPU ($decode_cmd); empty: --cmd without GPUs
splits="train dev test"  # splits to dump
prefix=                  # required: cut manifest name prefix (e.g. mustc, parczech)
layer=12                 # layer to tap (12 = tdnnf12)
compression=two_byte     # none, two_byte (kaldiio method 3), speech_feature
device=auto              # auto, cpu or cuda
overwrite=false          # redo finished shards
benchmark_config=        # also log the dump throughput of a model of this size (e.g. conf/am.yaml)
# End configuration section.

echo "$0 $@"
. ./path.sh
. utils/parse_options.sh

if [ $# -ne 3 ]; then
  echo "Usage: $0 [options] <fbank-dir> <am-dir> <out-dir>"
  echo "e.g.:  $0 --prefix mustc --nj 4 --cmd \"\$decode_cmd\" data/fbank exp/am exp/emb_am"
  echo "main options: --prefix NAME (required) --nj N --cmd CMD --cpu-cmd CMD --splits \"train dev test\" --layer 12 --compression two_byte"
  exit 1
fi
[ -n "$prefix" ] || { echo "$0: --prefix is required (manifests are named <prefix>_..._<split>.jsonl.gz, e.g. --prefix mustc)" >&2; exit 1; }
fbank_dir=$1
am_dir=$2
dir=$3

for f in $am_dir/best-valid-loss.pt; do
  [ -f $f ] || { echo "$0: no such file $f"; exit 1; }
done
for split in $splits; do
  for f in $fbank_dir/${prefix}_cuts_${split}.jsonl.gz $fbank_dir/cmvn_${split}.json; do
    [ -f $f ] || { echo "$0: no such file $f"; exit 1; }
  done
done
# $dir/num_jobs: the --nj the shards were made with (the merge reads emb.1..N of each split).  A complete set made
# with another --nj is kept and finished at its own count; an incomplete one is redone at this --nj.
shard_nj=$nj
[ -f $dir/num_jobs ] && shard_nj=$(cat $dir/num_jobs)
if [ "$shard_nj" != "$nj" ]; then
  complete=true
  for split in $splits; do
    for n in $(seq $shard_nj); do [ -f $dir/$split/emb.$n.scp.done ] || complete=false; done
  done
  if $complete; then
    echo "$0: $dir holds a complete set of shards of --nj $shard_nj; keeping them (--nj $nj ignored)"
    nj=$shard_nj
  else
    echo "$0: $dir holds unfinished shards of --nj $shard_nj; redoing them with --nj $nj"
    for split in $splits; do rm -f $dir/$split/emb.*; done
  fi
fi
mkdir -p $dir
echo $nj > $dir/num_jobs
opt=
$overwrite && opt=--overwrite
# Shards dumped with an older model than the current one are redone (punct.bin.dump_am_embeddings
# compares each shard's .done marker with the model).
if [ -d $dir ] && [ -n "$(find $dir -name 'emb.*.scp.done' ! -newer $am_dir/best-valid-loss.pt)" ]; then
  echo "$0: $dir has shards of an older $am_dir/best-valid-loss.pt; dumping them again"
fi

$cmd JOB=1:$nj $dir/log/dump.JOB.log \
  python -m punct.bin.dump_am_embeddings --fbank-dir $fbank_dir --am-dir $am_dir --out-dir $dir \
    --splits $splits --prefix $prefix --layer $layer --compression $compression --device $device \
    --job JOB --nj $nj $opt
${cpu_cmd:-$cmd --gpu 0} $dir/log/merge.log \
  python -m punct.bin.dump_am_embeddings --fbank-dir $fbank_dir --am-dir $am_dir --out-dir $dir \
    --splits $splits --prefix $prefix --layer $layer --compression $compression --nj $nj --merge ${benchmark_config:+--benchmark-config $benchmark_config}
grep -h "throughput" $dir/log/dump.*.log $dir/log/merge.log | sed "s|^.*\] |$0: |" || true
grep -h "matrices" $dir/log/merge.log | sed "s|^.*\] |$0: |" || true
