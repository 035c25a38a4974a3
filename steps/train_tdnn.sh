#!/usr/bin/env bash
# Trains the EfficientPunct punctuation TDNN (stage 7) on fused [BERT ; layer-12] windows cut at
# load time.  One process, or --nproc N processes under torchrun (DDP: gloo on CPU, NCCL on GPU).
# An interrupted run continues from its newest epoch-N.pt; a finished one is skipped.
set -euo pipefail

# Begin configuration section.
cmd=utils/run.pl       # job runner ($cuda_cmd for a GPU)
model_config=conf/tdnn.yaml  # model and training values (conf/tdnn_mini.yaml for the mini corpus)
train_split=train
cuts_pattern=          # required: cut manifest in <cuts-dir>, {split} = split name (e.g. "mustc_cuts_{split}_ali.jsonl.gz")
dev_split=dev          # checkpoint selection by dev overall F1
nproc=1                # processes (ranks) under torchrun; 1 = plain python
torchrun_opts=         # extra torchrun options (several nodes: "--nnodes 2 --node-rank 0 --rdzv-endpoint host:29400")
amp=none               # mixed precision: none, bf16 or fp16 (fp16: CUDA only)
device=auto            # auto, cpu or cuda
num_threads=0          # torch threads per process (0: torch's default)
seed=42
overwrite=false        # retrain from scratch even if finished
# End configuration section.

echo "$0 $*"
. ./path.sh
. utils/parse_options.sh
. utils/device.sh

if [ $# -ne 4 ]; then
  echo "Usage: $0 [options] <cuts-dir> <am-emb-dir> <bert-emb-dir> <exp-dir>"
  echo "e.g.: $0 --model-config conf/tdnn_mini.yaml --cuts-pattern \"mustc_cuts_{split}_ali.jsonl.gz\" data/fbank exp/emb_am exp/emb_bert exp/tdnn"
  echo "Main options: --model-config FILE, --nproc N (torchrun ranks), --device auto|cpu|cuda, --amp none|bf16|fp16, --cmd CMD, --overwrite true,"
  echo "              --cuts-pattern PATTERN (required)"
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

# A finished model is kept unless its config or its training inputs changed since.
if [ -f $dir/best-valid-f1.pt.done ] && ! $overwrite; then
  stale=
  # (the shards' .done markers: a shard redone in place leaves its merged scp unchanged)
  for f in $model_config $train_cuts $am_dir/$train_split/emb.scp $bert_dir/$train_split/vec.scp \
           $am_dir/$train_split/*.scp.done $bert_dir/$train_split/*.scp.done; do
    [ $f -nt $dir/best-valid-f1.pt.done ] && stale="$stale $f"
  done
  if [ -z "$stale" ]; then
    echo "$0: $dir/best-valid-f1.pt is done; skipping (--overwrite true to retrain)"
    exit 0
  fi
  echo "$0: newer than the trained model:$stale; training again"
  overwrite=true
fi
if $overwrite; then
  rm -f $dir/epoch-*.pt $dir/best-valid-f1.pt $dir/best-valid-f1.pt.done
fi
mkdir -p $dir/log

amp_opts=
[ "$amp" != none ] && amp_opts="--amp $amp"
$cmd --num-threads $nproc $dir/log/train_tdnn.log \
  $(launcher $nproc $torchrun_opts) -m punct.bin.train_tdnn $amp_opts --config $model_config --cuts-dir $cuts_dir --cuts-pattern "$cuts_pattern" --am-emb-dir $am_dir --bert-emb-dir $bert_dir \
    --train-split $train_split --dev-split $dev_split --exp-dir $dir --resume latest \
    --device $device --seed $seed --num-threads $num_threads --no-progress

echo "$0: trained $dir/best-valid-f1.pt"
