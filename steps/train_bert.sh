#!/usr/bin/env bash
# Fine-tunes a BERT-like encoder + EfficientPunct MLP head for per-word punctuation (stage 5),
# with cross-entropy, CE + token-level supervised contrastive loss, or focal loss.
# The best dev overall-F1 model goes to <exp-dir>/best-valid-f1/ (encoder, tokenizer, heads).
# A finished run whose options and inputs are unchanged is skipped; an interrupted one continues from its
# newest epoch-N.pt; a changed one retrains (or continues with --resume true): utils/fresh.sh.
set -euo pipefail

# Begin configuration section.
. utils/train_options.sh   # cmd device nproc torchrun_opts amp seed resume overwrite
model_config=conf/bert.yaml  # training values (conf/bert_mini.yaml for the mini corpus)
bert_model=            # encoder folder or hub name; empty: the config's value (empty there: offline MiniLM)
loss=                  # ce, scl or focal; empty: the config's value
extra_text=            # optional plain text file of punctuated prose added to the training data
normalize_config=      # YAML mark -> label mapping of the extra text (the corpus preparation's); empty: defaults
num_threads=0          # torch threads (0: the config's value / torch's default)
# End configuration section.

echo "$0 $*"
. ./path.sh
. utils/parse_options.sh
. utils/device.sh
. utils/fresh.sh

if [ $# -ne 3 ]; then
  echo "Usage: $0 [options] <train-supervisions> <dev-supervisions> <exp-dir>"
  echo "e.g.: $0 --model-config conf/bert_mini.yaml --loss scl data/manifests/mustc_supervisions_train.jsonl.gz \\"
  echo "        data/manifests/mustc_supervisions_dev.jsonl.gz exp/bert"
  echo "Main options: --model-config FILE, --bert-model DIR|NAME, --loss ce|scl|focal, --extra-text FILE,"
  echo "              --normalize-config FILE (the extra text's mark -> label mapping),"
  echo "              $(train_usage)"
  exit 1
fi
train=$1
dev=$2
dir=$3

for f in $model_config $train $dev ${extra_text:+$extra_text} ${normalize_config:+$normalize_config}; do
  [ -f $f ] || { echo "$0: no such file $f" >&2; exit 1; }
done

opts=()
[ -n "$bert_model" ] && opts+=(--bert-model "$bert_model")
[ -n "$loss" ] && opts+=(--loss "$loss")
[ -n "$extra_text" ] && opts+=(--extra-text "$extra_text")
[ -n "$normalize_config" ] && opts+=(--normalize-config "$normalize_config")
[ "$num_threads" -gt 0 ] && opts+=(--num-threads "$num_threads")
[ -n "$amp" ] && [ "$amp" != none ] && opts+=(--amp "$amp")
# every rank gets a CPU of its own (the text batches are made in the training process: no loader workers)
[ "$device" = cuda ] && cmd="$cmd --num-threads $(gpu_job_threads $nproc 0)"
opts=(--config $model_config --train $train --dev $dev --exp-dir $dir --device $device --seed $seed "${opts[@]}")

stamp=$(make_stamp "nproc=$nproc ${opts[*]}" $model_config $train $dev ${extra_text:+$extra_text} ${normalize_config:+$normalize_config})
if ! $overwrite && is_done_and_fresh $dir/.done "$stamp"; then
  exit 0
fi
begin_stamped $dir/.done "$stamp" $resume $overwrite $dir/epoch-*.pt $dir/best-valid-f1 $dir/best-valid-f1.json
mkdir -p $dir/log

$cmd $dir/log/train_bert.log \
  $(launcher $nproc $torchrun_opts) -m punct.bin.train_bert "${opts[@]}" --resume
finish_stamped $dir/.done "$stamp"

echo "$0: trained $dir/best-valid-f1"
