#!/usr/bin/env bash
# ParCzech stage 5: EfficientPunct predictions in the scoring format: the TDNN alone (<tdnn-dir>/decode)
# and its per-head ensemble with the text-only model, each head's alpha chosen on dev by --alpha-rule on its own
# statistic (macro F1 over the 8 marks, [cap] F1; punct.scoring.ensemble; <out-dir>/decode, alpha.json).
set -euo pipefail

# Begin configuration section.
dev_split=dev          # where each head's alpha is chosen
splits="dev test"      # splits written
alpha_step=0.1         # alpha grid over [0, 1]
alpha_rule=paired-se   # paired-se: the dev argmax unless a mixture's gain over the better single model is within one
                       # SE of the paired bootstrap difference over the dev segments (egs/mustc's stage 8); one-se:
                       # the marginal SE of the best alpha's score (the rule before); argmax
first_word=auto        # each segment's first word: exclude (not scored, copied from the reference: the thesis),
                       # include, or auto (the TDNN's training config, first_word of conf/tdnn*.yaml)
# End configuration section.

echo "$0 $*"
. ./path.sh
. utils/parse_options.sh

if [ $# -ne 4 ]; then
  echo "Usage: $0 [options] <segments-dir> <text-emb-dir> <tdnn-dir> <out-dir>"
  echo "e.g.: $0 data/segments exp/emb_text exp/efficientpunct_tdnn exp/efficientpunct"
  echo "Main options: --splits \"dev test\", --dev-split dev, --alpha-step 0.1, --alpha-rule paired-se|one-se|argmax,"
  echo "              --first-word auto|include|exclude"
  exit 1
fi
segments_dir=$1
text_dir=$2
tdnn_dir=$3
dir=$4

for split in $dev_split $splits; do
  for f in $segments_dir/parczech_supervisions_${split}.jsonl.gz $text_dir/$split/post.scp $tdnn_dir/post/$split/post.scp; do
    [ -f $f ] || { echo "$0: no such file $f" >&2; exit 1; }
  done
done
mkdir -p $dir/log
python -m punct.bin.ensemble_itn --prefix parczech --segments-dir $segments_dir --text-post-dir $text_dir --tdnn-dir $tdnn_dir --out-dir $dir \
  --dev-split $dev_split --splits "${splits// /,}" --alpha-step $alpha_step --alpha-rule $alpha_rule --first-word $first_word
echo "$0: wrote $tdnn_dir/decode and $dir/decode (alphas: $(python -c "import json,sys; print(json.load(open(sys.argv[1]))['chosen_alpha'])" $dir/alpha.json))"
