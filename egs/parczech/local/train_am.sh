#!/usr/bin/env bash
# Stage 1 of egs/parczech: trains the CTC acoustic model on the utterances of local/prepare_am_data.sh
# (the mini corpus) or steps/import_am_data.sh (--am-data) (features by steps/compute_features.sh), optionally starting
# from another trained AM with the same layer dims (--init, e.g. ../mustc/exp/am/best-valid-loss.pt:
# the from-scratch model spends many epochs on the CTC blank plateau).  Training resumes from the
# latest <exp-dir>/epoch-N.pt, so a finished training is not redone.  The feature config is copied to
# <exp-dir>/mfcc.yaml: with best-valid-loss.pt it makes the folder usable by local/recognise_long.sh.
set -euo pipefail

# Begin configuration section.
cmd=utils/run.pl              # job runner of the training ($train_cmd; on cuda $cuda_cmd --gpu N)
cpu_cmd=                      # job runner of the --init conversion and the WER decode ($decode_cmd); empty: --cmd without GPUs
am_config=conf/am_mini.yaml   # model and training options
feat_config=conf/mfcc.yaml    # the features of <fbank-dir>
init=                         # checkpoint of a trained AM to start from (empty: random initialisation)
device=auto                   # auto, cpu or cuda
seed=42                       # random seed
num_threads=2                 # torch CPU threads (stage 1 runs alone: 2 threads, 7.2 against 6.1 batches/s with 1)
nproc=1                       # processes under torchrun (GPUs; on the CPU one-thread gloo processes: run.sh --am-cpu-ranks)
amp=                          # mixed precision: none, bf16, fp16, auto or fastest; empty: the am config's amp
max_dev_wer=                  # stop when the dev WER (%) is above this; empty: the am config's max_dev_wer; none: no check
# End configuration section.

echo "$0 $*"
. ./path.sh
. utils/parse_options.sh
. utils/fresh.sh

if [ $# -ne 2 ]; then
  echo "Usage: $0 [options] <fbank-dir> <exp-dir>"
  echo "e.g.: $0 --am-config conf/am_mini_init.yaml --init ../mustc/exp/am/best-valid-loss.pt data/am_fbank exp/am"
  echo "Options: --cmd CMD, --cpu-cmd CMD, --am-config YAML, --feat-config YAML, --init CHECKPOINT, --device DEV, --seed N,"
  echo "         --max-dev-wer PERCENT|none"
  exit 1
fi
fbank=$1
dir=$2

for f in $am_config $feat_config $fbank/parczech_cuts_train.jsonl.gz $fbank/parczech_cuts_dev.jsonl.gz $init; do
  if [ ! -f "$f" ]; then echo "$0: no such file: $f" >&2; exit 1; fi
done
mkdir -p $dir/log
# Training continues from the newest checkpoint (--resume true below: the --init checkpoint is epoch-0.pt),
# but only of a model of the same data, config and init: <exp-dir>/inputs.stamp records them, and a model of
# other ones (e.g. the mini corpus' utterances, then --am-data) or of unrecorded ones is removed and trained
# again from scratch.
stamp=$(make_stamp "init=$init" $am_config $init $fbank/parczech_cuts_train.jsonl.gz $fbank/parczech_cuts_dev.jsonl.gz \
  $fbank/cmvn_train.json $fbank/cmvn_dev.json)
if ls $dir/epoch-*.pt $dir/best-valid-loss.pt > /dev/null 2>&1 && \
    { [ ! -f $dir/inputs.stamp ] || [ "$(cat $dir/inputs.stamp)" != "$stamp" ]; }; then
  echo "$0: $dir was trained on other data, config or init; training again from scratch"
  rm -f $dir/epoch-*.pt $dir/best-valid-loss.pt $dir/best-valid-loss.pt.done
fi
printf '%s\n' "$stamp" > $dir/inputs.stamp.tmp && mv $dir/inputs.stamp.tmp $dir/inputs.stamp
if [ -n "$init" ] && ! ls $dir/epoch-*.pt > /dev/null 2>&1; then
  ${cpu_cmd:-$cmd --gpu 0} $dir/log/init.log python -m punct.bin.init_am --config $am_config --source $init --fbank-dir $fbank \
    --prefix parczech --exp-dir $dir --seed $seed
fi
# the job asks for every process' threads (on the CPU --nproc N runs N DDP processes of --num-threads each)
steps/train_am.sh --cmd "$cmd --num-threads $((num_threads * nproc))" --cpu-cmd "${cpu_cmd:-$cmd --gpu 0}" --am-config $am_config --prefix parczech --decode-splits dev --resume true \
  --num-threads $num_threads --device $device --seed $seed --nproc $nproc --amp "$amp" --max-dev-wer "$max_dev_wer" \
  --hint "more hours: ./run.sh --am-data DIR; a trained AM to start from: --am-init CKPT (e.g. ../mustc/exp/am/best-valid-loss.pt); a trained recogniser instead: --asr-model DIR or --am-dir DIR" \
  $fbank $dir
cp $feat_config $dir/mfcc.yaml
