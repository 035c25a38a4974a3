#!/usr/bin/env bash
# Stage 2: trains the TDNN acoustic model (CTC over characters) and reports the greedy-decoding WER.
# Single process by default; --nproc N runs N DDP processes under torchrun (gloo on CPU, NCCL on GPU);
# --torchrun-opts passes e.g. "--nnodes 2 --node-rank 0 --rdzv-endpoint host:29400" for several nodes.
# A finished training whose options and inputs are unchanged is skipped (utils/fresh.sh; a changed one
# is retrained, or continued with --resume true); the WER of a split is redone when older than the model.
set -euo pipefail

# Begin configuration section.
cmd=utils/run.pl              # job runner of the training ($cuda_cmd --gpu N on a GPU cluster)
cpu_cmd=                      # job runner of the WER decode, which runs on the CPU ($decode_cmd); empty: --cmd without GPUs
am_config=conf/am.yaml        # model and training options
device=auto                   # auto, cpu or cuda
seed=42                       # random seed
nproc=1                       # processes (GPUs) per node; > 1 uses torchrun
amp=                          # mixed precision: none, bf16, fp16 (CUDA only), auto or fastest; empty: the config's amp
torchrun_opts=                # extra torchrun options (multi-node)
num_threads=0                 # torch CPU threads per process (0: torch default)
num_workers=                  # DataLoader workers per process; empty: the config's, at least 2 on cuda
resume=false                  # continue from the latest epoch-N.pt (an interrupted run of the same options always does)
overwrite=false               # retrain from scratch even if finished
decode_splits="dev test"      # splits for the WER check
max_dev_wer=                  # stop when the dev WER (%) is above this (AM learned nothing); empty: the am config's
                              # max_dev_wer; none: no check
hint=                         # the recipe's options that help an AM that learned nothing (added to the message)
prefix=                       # required: cut manifest name prefix (e.g. mustc, parczech)
train_opts=                   # extra flags for punct.bin.train_am (e.g. "--num-epochs 2")
extra_train_dirs=             # more stage-1 folders whose train split is added (AM-only training talks)
# End configuration section.

echo "$0 $@"
. ./path.sh
. utils/parse_options.sh
. utils/device.sh
. utils/fresh.sh

if [ $# -ne 2 ]; then
  echo "Usage: $0 [options] <fbank-dir> <exp-dir>"
  echo "e.g.:  $0 --prefix mustc --cmd \"\$train_cmd\" --am-config conf/am_mini.yaml data/fbank exp/am"
  echo "main options: --prefix NAME (required) --am-config FILE --nproc N --device auto|cpu|cuda --amp none|bf16|fp16|auto|fastest --resume true --overwrite true"
  echo "              --cmd CMD (training) --cpu-cmd CMD (decode) --num-workers N"
  echo "              --decode-splits \"dev test\" --max-dev-wer PERCENT|none --hint TEXT"
  echo "              --extra-train-dirs \"data/fbank_am\""
  exit 1
fi
[ -n "$prefix" ] || { echo "$0: --prefix is required (manifests are named <prefix>_..._<split>.jsonl.gz, e.g. --prefix mustc)" >&2; exit 1; }
fbank_dir=$1
dir=$2

for f in $am_config $fbank_dir/${prefix}_cuts_train.jsonl.gz $fbank_dir/${prefix}_cuts_dev.jsonl.gz \
    $fbank_dir/cmvn_train.json $fbank_dir/cmvn_dev.json; do
  [ -f $f ] || { echo "$0: no such file $f"; exit 1; }
done
for d in $extra_train_dirs; do
  for f in $d/${prefix}_cuts_train.jsonl.gz $d/cmvn_train.json; do
    [ -f $f ] || { echo "$0: no such file $f (--extra-train-dirs)"; exit 1; }
  done
done
mkdir -p $dir/log

opts="--config $am_config --fbank-dir $fbank_dir --exp-dir $dir --prefix $prefix --device $device --seed $seed --num-threads $num_threads $train_opts"
[ -n "$amp" ] && opts="$opts --amp $amp"
[ -n "$extra_train_dirs" ] && opts="$opts --extra-train-dirs $extra_train_dirs"
cpu_cmd=${cpu_cmd:-$cmd --gpu 0}
if [ "$device" = cuda ]; then
  # every rank and each of its loader workers get a CPU of their own
  num_workers=$(loader_workers cuda "$num_workers" $am_config)
  cmd="$cmd --num-threads $(gpu_job_threads $nproc $num_workers)"
fi
[ -n "$num_workers" ] && opts="$opts --num-workers $num_workers"
inputs="$am_config $fbank_dir/${prefix}_cuts_train.jsonl.gz $fbank_dir/${prefix}_cuts_dev.jsonl.gz $fbank_dir/cmvn_train.json $fbank_dir/cmvn_dev.json"
for d in $extra_train_dirs; do inputs="$inputs $d/${prefix}_cuts_train.jsonl.gz $d/cmvn_train.json"; done
marker=$dir/best-valid-loss.pt.done
stamp=$(make_stamp "nproc=$nproc $opts" $inputs)
if $overwrite || ! is_done_and_fresh $marker "$stamp"; then
  begin_stamped $marker "$stamp" $resume $overwrite $dir/epoch-*.pt $dir/best-valid-loss.pt $dir/wer_*.txt
  $cmd $dir/log/train.log $(launcher $nproc $torchrun_opts) -m punct.bin.train_am $opts --resume
  [ -f $dir/best-valid-loss.pt ] || { echo "$0: training wrote no $dir/best-valid-loss.pt (see $dir/log/train.log)"; exit 1; }
  finish_stamped $marker "$stamp"
fi

decode_splits_once() {  # the greedy WER of the splits whose wer_<split>.txt is missing or older than the model
  local todo= split
  for split in $decode_splits; do
    [ -f $dir/wer_${split}.txt ] && [ ! $marker -nt $dir/wer_${split}.txt ] || todo="$todo $split"
  done
  if [ -n "$todo" ]; then
    # a greedy decode of the dev and test features: small enough for the CPU, so it needs no GPU job
    $cpu_cmd $dir/log/decode.log python -m punct.bin.decode_am --fbank-dir $fbank_dir --exp-dir $dir \
      --splits $todo --prefix $prefix --device cpu
  fi
  for split in $decode_splits; do
    echo "$0: $split: $(cat $dir/wer_${split}.txt)"
  done
}

decode_splits_once
if [[ " $decode_splits " == *" dev "* ]]; then
  # an AM that learned nothing stops the recipe here, with the options that help (punct.am.dev_wer); before that it
  # trains on while the config gives it extra_epochs (resumed from its last epoch-N.pt, averaged and decoded again)
  while :; do
    verdict=$(python -m punct.bin.check_am_wer --config $am_config --wer-file $dir/wer_dev.txt --exp-dir $dir \
      ${max_dev_wer:+--max-dev-wer $max_dev_wer} --hint "$hint") \
      || { echo "$0: stopped: the AM's dev WER is above max_dev_wer (see the message above)" >&2; exit 1; }
    [[ $verdict == "train-to "* ]] || break
    epochs=${verdict#train-to }
    echo "$0: the dev WER is above max_dev_wer: training on to $epochs epochs (log: $dir/log/train_to_$epochs.log)"
    rm -f $dir/wer_*.txt  # decoded again below, also after an interruption
    $cmd $dir/log/train_to_$epochs.log $(launcher $nproc $torchrun_opts) -m punct.bin.train_am $opts --resume \
      --num-epochs $epochs
    decode_splits_once
  done
fi
