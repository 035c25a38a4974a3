#!/usr/bin/env bash
# Scores ParCzech models from their decode/<split>.jsonl predictions (egs/parczech stage 6):
# per-class F1 with bootstrap 95 % intervals, macro F1, [cap] F1, PDP/PDR (all, shortest and
# longest 25 %), F1 by input length, plots, <out-dir>/RESULTS.md, and <out-dir>/results.json (the run in one
# file: the rows' scores, rule and counts per split, the run's seed, the AM's dev WER and the recognition WER where
# written) from which python -m punct.bin.results_table makes the RESULTS.md table.
set -euo pipefail

# Begin configuration section.
cmd=utils/run.pl       # job runner
splits=dev,test        # splits to score
segments=data/segments # stage-2 folder (training frequencies order the table's classes)
num_resamples=1000     # bootstrap resamples of the segments
seed=42                # bootstrap seed
run_seed=              # the run's seed, recorded in results.json
am_dir=                # acoustic model folder: its dev WER (wer_dev.txt) goes into results.json
words_dir=             # stage-2 recognised words: the WER of their <recording>.stats.json goes into results.json
first_word=auto        # each segment's first word: exclude (not scored), include, or auto (the rule the
                       # predictions were written under: first_word of conf/mm*.yaml, conf/tdnn*.yaml)
# End configuration section.

echo "$0 $*"
. ./path.sh
. utils/parse_options.sh

if [ $# -lt 2 ]; then
  echo "Usage: $0 [options] <out-dir> <model-dir>:<row name> [<model-dir>:<row name> ...]"
  echo "e.g.: $0 exp/results exp/text:text-only exp/mm:multimodal exp/mm_pe:multimodal+PE exp/mm_pe_random:random-audio"
  echo "Main options: --splits dev,test, --segments DIR, --num-resamples N, --seed N, --first-word auto|include|exclude, --cmd CMD"
  echo "              --run-seed N, --am-dir DIR, --words-dir DIR (facts of the run for results.json)"
  exit 1
fi
dir=$1
shift

for m in "$@"; do
  for split in ${splits//,/ }; do
    f=${m%%:*}/decode/$split.jsonl
    [ -f $f ] || { echo "$0: no such file $f" >&2; exit 1; }
  done
done
opts=()
[ -f $segments/parczech_supervisions_train.jsonl.gz ] && opts+=(--train-supervisions $segments/parczech_supervisions_train.jsonl.gz)
[ -n "$run_seed" ] && opts+=(--run-seed $run_seed)
[ -n "$am_dir" ] && opts+=(--am-dir $am_dir)
[ -n "$words_dir" ] && opts+=(--words-dir $words_dir)

mkdir -p $dir/log
$cmd $dir/log/score_itn.log \
  python -m punct.bin.score_itn --out-dir $dir --splits $splits --num-resamples $num_resamples --seed $seed \
    --first-word $first_word "${opts[@]}" "$@"
echo "$0: wrote $dir/RESULTS.md and $dir/results.json"
