#!/usr/bin/env bash
# egs/mustc stage 8 (punct.bin.score_ensemble reads <cuts-dir>/<prefix>_cuts_<split>[_ali].jsonl.gz):
# per-word TDNN posteriors of the dev and test splits (steps/decode_tdnn.sh: fully
# convolutional, JOB=1:nj), the pause-only baseline (punct.bin.train_pause: a small classifier on the word times of
# the aligned cuts, fit on train and chosen on dev; skipped when done), then BERT-only / TDNN / ensemble / pause-only
# scores with alpha chosen on dev, paired bootstrap differences, RESULTS.md, JSON and plots.
# results.json and RESULTS.md say what was scored per split: the utterances and words of the stage-0
# supervisions (--supervisions-dir) that reached scoring, and why the others did not.
set -euo pipefail

# Begin configuration section.
cmd=utils/run.pl       # job runner for the posterior jobs
nj=2                   # posterior jobs per split
splits="dev test"      # first = where alpha is chosen, second = reported
prefix=mustc           # manifest name prefix
device=cpu             # device of the posterior jobs
am_model_dir=exp/am    # for the parameter counts only
bert_model_dir=exp/bert
alpha_step=0.1
paper_alpha=0.4
alpha_rule=paired-se    # paired-se: the dev argmax unless a mixture's gain over the better single model is within one
                        # SE of the paired bootstrap difference; one-se: the marginal SE of the best alpha; argmax
supervisions_dir=      # stage-0 manifests: RESULTS.md then says what was dropped before scoring
seed=                  # recorded in results.json; also the pause-only classifiers' seed
pause_dir=exp/pause    # the pause-only baseline's folder (trained here); none: no Pause only row
train_split=train      # the split the pause-only baseline is fit on
# End configuration section.

echo "$0 $*"
. ./path.sh
. utils/parse_options.sh

if [ $# -ne 5 ]; then
  echo "Usage: $0 [options] <cuts-dir> <am-emb-dir> <bert-emb-dir> <tdnn-dir> <out-dir>"
  echo "e.g.: $0 data/fbank exp/emb_am exp/emb_bert exp/tdnn exp/results"
  echo "Main options: --nj N, --cmd CMD, --splits \"dev test\", --device cpu|cuda, --pause-dir DIR|none"
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

steps/decode_tdnn.sh --cmd "$cmd" --nj $nj --splits "$splits" --device $device \
  --cuts-pattern "${prefix}_cuts_{split}_ali.jsonl.gz" $cuts_dir $am_dir $bert_dir $tdnn_dir

pause_opts=
if [ "$pause_dir" != none ]; then
  f=$cuts_dir/${prefix}_cuts_${train_split}_ali.jsonl.gz
  [ -f $f ] || { echo "$0: no such file $f (the pause-only baseline's training words; --pause-dir none: no baseline)" >&2; exit 1; }
  python -m punct.bin.train_pause --cuts-dir $cuts_dir --cuts-pattern "${prefix}_cuts_{split}_ali.jsonl.gz" \
    --train-split $train_split --dev-split $dev_split --decode-splits $splits --exp-dir $pause_dir ${seed:+--seed $seed}
  pause_opts="--pause-dir $pause_dir"
fi

python -m punct.bin.score_ensemble --prefix $prefix --cuts-dir $cuts_dir --bert-emb-dir $bert_dir --tdnn-post-dir $tdnn_dir/post \
  --dev-split $dev_split --test-split $test_split --alpha-step $alpha_step --paper-alpha $paper_alpha --alpha-rule $alpha_rule \
  --am-dir $am_model_dir --am-emb-dir $am_dir --bert-dir $bert_model_dir --tdnn-model $model --out-dir $dir \
  ${supervisions_dir:+--supervisions-dir $supervisions_dir} ${seed:+--seed $seed} $pause_opts

echo "$0: wrote $dir/RESULTS.md and $dir/results.json"
