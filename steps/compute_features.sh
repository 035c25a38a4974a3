#!/usr/bin/env bash
# Stage 1: 40-dim hires MFCC by kaldi-native-fbank for every split, in nj jobs (each job a share
# of every split), then merged cuts (one cut per supervision, cut id = supervision id) and
# per-speaker CMVN stats.  A finished split is skipped when its marker (<fbank-dir>/<prefix>_cuts_<split>.jsonl.gz.done)
# holds the stamp of this run's feature config and manifests (utils/fresh.sh: the rule of the training steps);
# another --feat-config, an edited config or rewritten manifests compute the split again.
set -euo pipefail

# Begin configuration section.
nj=4                        # parallel jobs
cmd=utils/run.pl            # job runner ($train_cmd)
feat_config=conf/mfcc.yaml  # extractor options and CMVN mode
splits="train dev test"     # splits to process
prefix=                     # required: manifest name prefix (e.g. mustc, parczech)
overwrite=false             # recompute finished splits
# End configuration section.

echo "$0 $@"
. ./path.sh
. utils/parse_options.sh
. utils/fresh.sh

if [ $# -ne 2 ]; then
  echo "Usage: $0 [options] <manifest-dir> <fbank-dir>"
  echo "e.g.:  $0 --prefix mustc --nj 4 --cmd \"\$train_cmd\" data/manifests data/fbank"
  echo "main options: --prefix NAME (required) --nj N --cmd CMD --feat-config FILE --splits \"train dev test\" --overwrite true"
  exit 1
fi
[ -n "$prefix" ] || { echo "$0: --prefix is required (manifests are named <prefix>_..._<split>.jsonl.gz, e.g. --prefix mustc)" >&2; exit 1; }
manifest_dir=$1
fbank_dir=$2

[ -f $feat_config ] || { echo "$0: no such file $feat_config"; exit 1; }
todo=
declare -A stamps
for split in $splits; do
  manifests="$manifest_dir/${prefix}_recordings_${split}.jsonl.gz $manifest_dir/${prefix}_supervisions_${split}.jsonl.gz"
  for f in $manifests; do
    [ -f $f ] || { echo "$0: no such file $f"; exit 1; }
  done
  done_marker=$fbank_dir/${prefix}_cuts_${split}.jsonl.gz.done
  stamps[$split]=$(make_stamp "--feat-config $feat_config" $feat_config $manifests)
  if ! $overwrite && is_done_and_fresh $done_marker "${stamps[$split]}" "computing again"; then
    continue
  fi
  # the split and its job shards are redone (another config, rewritten manifests, an interrupted run)
  rm -f $done_marker $fbank_dir/split/${prefix}_cuts_${split}.*.jsonl.gz.done
  todo="$todo $split"
done
[ -z "$todo" ] && { echo "$0: nothing to do"; exit 0; }
opt=
$overwrite && opt=--overwrite

$cmd JOB=1:$nj $fbank_dir/log/compute.JOB.log \
  python -m punct.bin.compute_features --config $feat_config --manifest-dir $manifest_dir \
    --fbank-dir $fbank_dir --splits $todo --prefix $prefix --job JOB --nj $nj $opt
$cmd $fbank_dir/log/merge.log \
  python -m punct.bin.compute_features --config $feat_config --manifest-dir $manifest_dir \
    --fbank-dir $fbank_dir --splits $todo --prefix $prefix --nj $nj --merge
for split in $todo; do
  finish_stamped $fbank_dir/${prefix}_cuts_${split}.jsonl.gz.done "${stamps[$split]}"
done
grep -h "cuts with features\|CMVN stats of" $fbank_dir/log/merge.log | sed "s|^.*\] |$0: |" || true
echo "$0: features, cuts and CMVN stats in $fbank_dir"
