#!/usr/bin/env bash
# Trains the EfficientPunct punctuation TDNN (stage 7) on fused [BERT ; layer-12] windows cut at
# load time.  One process, or --nproc N processes under torchrun (DDP: gloo on CPU, NCCL on GPU).
# A finished run whose options and inputs are unchanged is skipped; an interrupted one continues from its
# newest epoch-N.pt; a changed one retrains (or continues with --resume true): utils/fresh.sh.
set -euo pipefail

# Begin configuration section.
. utils/train_options.sh   # cmd device nproc torchrun_opts amp seed resume overwrite
model_config=conf/tdnn.yaml  # model and training values (conf/tdnn_mini.yaml for the mini corpus)
train_split=train
cuts_pattern=          # required: cut manifest in <cuts-dir>, {split} = split name (e.g. "mustc_cuts_{split}_ali.jsonl.gz")
dev_split=dev          # checkpoint selection by dev overall F1
num_threads=0          # torch threads per process (0: torch's default)
num_workers=           # DataLoader workers cutting windows, per process; empty: the config's, at least 2 on cuda
# End configuration section.

echo "$0 $*"
. ./path.sh
. utils/parse_options.sh

# Allocations above 128 KB (a batch's frames) from mmap, returned when freed: on glibc's heap the batches of ever
# changing sizes left stage 7's peak RSS at 1.66 GB after an epoch of 1.2 h of speech and 2.76 GB after 9.7 h; from
# mmap 1.26 and 1.56 GB, for about 30 % more CPU in the stage (the kernel zeroes the pages of every batch; both
# measured beside other jobs: benchmarks/bench_scale.py, docs/scaling.md); MALLOC_MMAP_THRESHOLD_=33554432 in the environment trades the memory back.
export MALLOC_MMAP_THRESHOLD_=${MALLOC_MMAP_THRESHOLD_:-131072}
. utils/device.sh
. utils/fresh.sh

if [ $# -ne 4 ]; then
  echo "Usage: $0 [options] <cuts-dir> <am-emb-dir> <bert-emb-dir> <exp-dir>"
  echo "e.g.: $0 --model-config conf/tdnn_mini.yaml --cuts-pattern \"mustc_cuts_{split}_ali.jsonl.gz\" data/fbank exp/emb_am exp/emb_bert exp/tdnn"
  echo "Main options: --model-config FILE, --cuts-pattern PATTERN (required), --num-workers N,"
  echo "              $(train_usage)"
  exit 1
fi
[ -n "$cuts_pattern" ] || { echo "$0: --cuts-pattern is required (e.g. --cuts-pattern \"mustc_cuts_{split}_ali.jsonl.gz\")" >&2; exit 1; }
cuts_dir=$1
am_dir=$2
bert_dir=$3
dir=$4
train_cuts=$cuts_dir/${cuts_pattern//\{split\}/$train_split}
dev_cuts=$cuts_dir/${cuts_pattern//\{split\}/$dev_split}

for f in $model_config $train_cuts $am_dir/$train_split/emb.scp $bert_dir/$train_split/vec.scp \
         $dev_cuts $am_dir/$dev_split/emb.scp $bert_dir/$dev_split/vec.scp; do
  [ -f $f ] || { echo "$0: no such file $f" >&2; exit 1; }
done

amp_opts=
[ -n "$amp" ] && [ "$amp" != none ] && amp_opts="--amp $amp"
opts="$amp_opts --config $model_config --cuts-dir $cuts_dir --cuts-pattern $cuts_pattern --am-emb-dir $am_dir --bert-emb-dir $bert_dir
  --train-split $train_split --dev-split $dev_split --exp-dir $dir --device $device --seed $seed --num-threads $num_threads"

# CPUs of the job: one per rank on the CPU; on cuda one per rank and per loader worker of each
job_threads=$nproc
if [ "$device" = cuda ]; then
  num_workers=$(loader_workers cuda "$num_workers" $model_config)
  job_threads=$(gpu_job_threads $nproc $num_workers)
fi
[ -n "$num_workers" ] && opts="$opts --num-workers $num_workers"

# Inputs: also the shards' .done markers (a shard redone in place leaves its merged scp unchanged).
marker=$dir/best-valid-f1.pt.done
stamp=$(make_stamp "nproc=$nproc $(echo $opts)" $model_config $train_cuts $dev_cuts \
  $am_dir/$train_split/emb.scp $bert_dir/$train_split/vec.scp $am_dir/$dev_split/emb.scp $bert_dir/$dev_split/vec.scp \
  $am_dir/$train_split/*.scp.done $bert_dir/$train_split/*.scp.done $am_dir/$dev_split/*.scp.done $bert_dir/$dev_split/*.scp.done)
if ! $overwrite && is_done_and_fresh $marker "$stamp"; then
  exit 0
fi
begin_stamped $marker "$stamp" $resume $overwrite $dir/epoch-*.pt $dir/best-valid-f1.pt
mkdir -p $dir/log

$cmd --num-threads $job_threads $dir/log/train_tdnn.log \
  $(launcher $nproc $torchrun_opts) -m punct.bin.train_tdnn $opts --resume latest --no-progress
finish_stamped $marker "$stamp"

echo "$0: trained $dir/best-valid-f1.pt"
